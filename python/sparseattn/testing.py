"""Assertions for test suites, in the spirit of ``torch.testing.assert_close``."""
from __future__ import annotations

from typing import Any, Optional

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
