#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets into tests/fuzz/corpus/<target>/.

Standard library only (no NumPy), deterministic: rerunning it rewrites the same named
files. Seeds are starting points, not tests: libFuzzer mutates them. The files named by a
SHA-1 next to them are inputs fuzzing runs found that add coverage, merged in with
`build-fuzz/<target> -merge=1 tests/fuzz/corpus/<target> build-fuzz/corpus/<target>`
(docs/robustness.md).

  fuzz_npy      valid .npy files of every accepted dtype and version, plus the malformed
                cases the reader must refuse (Fortran order, big-endian, truncated data,
                trailing bytes, a header length beyond the file, a shape that overflows).
  fuzz_pattern  byte strings read by FuzzedDataProvider (integers are taken from the end,
                so all-zero and all-0xff strings reach the two ends of every range).
  fuzz_check    likewise.
"""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(descr, shape, data=b"", version=(1, 0), fortran=False, pad=True):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shape_text)
    prefix_len = 10 if version[0] == 1 else 12
    if pad:
        header += " " * ((64 - (prefix_len + len(header) + 1) % 64) % 64)
    header += "\n"
    length = struct.pack("<H", len(header)) if version[0] == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes(version) + length + header.encode("latin-1") + data


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def npy_seeds():
    s = {}
    s["f8_2x3"] = npy("<f8", (2, 3), struct.pack("<6d", 0.5, -1.0, 2.0, float("inf"), float("nan"), 0.0))
    s["f4_3"] = npy("<f4", (3,), struct.pack("<3f", 1.0, -2.5, 3.25))
    s["f2_4"] = npy("<f2", (4,), struct.pack("<4e", 1.0, -0.5, 65504.0, 6e-8))
    s["u1_mask_2x2"] = npy("|u1", (2, 2), bytes([1, 0, 0, 1]))
    s["b1_mask_3"] = npy("|b1", (3,), bytes([1, 1, 0]))
    s["i4_2"] = npy("<i4", (2,), struct.pack("<2i", -7, 2**31 - 1))
    s["i8_1x1x2"] = npy("<i8", (1, 1, 2), struct.pack("<2q", 0, -(2**63)))
    s["f8_scalar"] = npy("<f8", (), struct.pack("<d", 3.0))
    s["f8_empty"] = npy("<f8", (0, 5))
    s["v2_f8_2"] = npy("<f8", (2,), struct.pack("<2d", 1.0, 2.0), version=(2, 0))
    s["v3_f4_1"] = npy("<f4", (1,), struct.pack("<f", 1.0), version=(3, 0))
    s["unpadded_i8_1"] = npy("<i8", (1,), struct.pack("<q", 5), pad=False)
    s["bad_fortran"] = npy("<f8", (2, 2), struct.pack("<4d", 1, 2, 3, 4), fortran=True)
    s["bad_big_endian"] = npy(">f8", (1,), struct.pack(">d", 1.0))
    s["bad_truncated_data"] = npy("<f8", (4,), struct.pack("<2d", 1.0, 2.0))
    s["bad_trailing_bytes"] = npy("<f4", (1,), struct.pack("<2f", 1.0, 2.0))
    s["bad_huge_shape"] = npy("<f8", (2**62, 2**62))
    s["bad_zero_then_huge"] = npy("<f8", (0, 2**62))
    s["bad_mask_value"] = npy("|u1", (2,), bytes([1, 7]))
    structured = b"{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }\n"
    s["bad_structured"] = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(structured)) + structured
    s["bad_header_length"] = b"\x93NUMPY\x01\x00\xff\xff{'descr'"
    s["bad_magic"] = b"\x93NUMPX\x01\x00"
    for name, data in s.items():
        write("fuzz_npy", name, data)


def byte_seeds(target, count, rng):
    write(target, "zeros_64", bytes(64))
    write(target, "ones_64", b"\xff" * 64)
    for n in range(count):
        write(target, "random_%02d" % n, bytes(rng.randrange(256) for _ in range(rng.choice([16, 48, 128, 400]))))


def main():
    rng = random.Random(2026)
    npy_seeds()
    byte_seeds("fuzz_pattern", 12, rng)
    byte_seeds("fuzz_check", 12, rng)


if __name__ == "__main__":
    main()
