"""Assertions for test suites, in the spirit of ``torch.testing.assert_close``."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from .attention import CheckReport, check
from .pattern import Pattern


def assert_matches_oracle(q: Any, k: Any, v: Any, pattern: Pattern, o: Any, lse: Any = None,
                          atol: Optional[float] = None, rtol: Optional[float] = None,
                          scale: Optional[float] = None, key_padding_mask: Any = None,
                          dout: Any = None, dq: Any = None, dk: Any = None,
                          dv: Any = None) -> CheckReport:
    """Asserts that ``o`` (and ``lse``, and with ``dout`` the gradients ``dq``, ``dk``,
    ``dv``) match the float64 oracles on q, k, v and ``pattern``.

    Runs :func:`sparseattn.check` (docs/contract.md §4: NaN/Inf fail first, then
    ``|x - ref| <= atol + rtol * |ref|`` element by element; gradients against
    ``b1_dense_masked_grad``, contract §7.3 and docs/backward.md).

    Parameters
    ----------
    q, k, v, pattern, o, lse, atol, rtol, scale, key_padding_mask, dout, dq, dk, dv
        As :func:`sparseattn.check`; tolerances default by each candidate's dtype.

    Returns
    -------
    CheckReport
        The passing report.

    Raises
    ------
    AssertionError
        The candidate does not match; the message is ``report.summary()``: how many
        elements differ, the greatest difference and where, the tolerance used.
    ValueError
        Bad input (as :func:`sparseattn.check`).
    """
    report = check(q, k, v, pattern, o, lse=lse, atol=atol, rtol=rtol, scale=scale,
                   key_padding_mask=key_padding_mask, dout=dout, dq=dq, dk=dk, dv=dv)
    if not report.passed:
        raise AssertionError(report.summary())
    return report


def split_packed(x: Any, cu_seqlens: Any, axis: int = 0) -> List[np.ndarray]:
    """Splits a packed tensor into its sequences (docs/contract.md §2.10).

    Parameters
    ----------
    x : array
        Packed along ``axis``: o ``[total_q, num_heads, head_dim_v]`` (axis 0) as
        :func:`sparseattn.attend` returns it under ``cu_seqlens_q``, or lse ``[num_heads,
        total_q]`` (axis 1).
    cu_seqlens : array of int, [B + 1]
        The offsets the tensor was packed with: 0, non-decreasing, ending at
        ``x.shape[axis]``.
    axis : int
        The packed axis.

    Returns
    -------
    list of ndarray
        ``B`` views, sequence ``b`` being ``x`` at ``cu_seqlens[b] .. cu_seqlens[b+1] - 1``
        along ``axis`` (empty sequences give empty arrays).

    Raises
    ------
    ValueError
        ``cu_seqlens`` not integer, not starting at 0, decreasing, or not ending at the
        packed length (``invalid cu_seqlens[i] = ...``).
    """
    a = np.asarray(x)
    cu = np.asarray(cu_seqlens)
    if cu.ndim != 1 or cu.size < 2 or cu.dtype.kind not in "iu":
        raise ValueError(f"invalid cu_seqlens = {cu!r}: must be integer [B + 1], B >= 1")
    total = a.shape[axis]
    if cu[0] != 0:
        raise ValueError(f"invalid cu_seqlens[0] = {cu[0]}: must be 0")
    for i in range(1, cu.size):
        if cu[i] < cu[i - 1]:
            raise ValueError(f"invalid cu_seqlens[{i}] = {cu[i]}: must be >= cu_seqlens[{i - 1}]")
    if cu[-1] != total:
        raise ValueError(f"invalid cu_seqlens[{cu.size - 1}] = {cu[-1]}: must be the packed "
                         f"length {total}")
    return [np.take(a, np.arange(cu[b], cu[b + 1]), axis=axis) for b in range(cu.size - 1)]
