"""Assertions for test suites, in the spirit of ``torch.testing.assert_close``."""
from __future__ import annotations

from typing import Any, Optional

from .attention import CheckReport, check
from .pattern import Pattern


def assert_matches_oracle(q: Any, k: Any, v: Any, pattern: Pattern, o: Any, lse: Any = None,
                          atol: Optional[float] = None, rtol: Optional[float] = None,
                          scale: Optional[float] = None,
                          key_padding_mask: Any = None) -> CheckReport:
    """Asserts that ``o`` (and ``lse``) match the float64 oracle on q, k, v and ``pattern``.

    Runs :func:`sparseattn.check` (docs/contract.md §4: NaN/Inf fail first, then
    ``|x - ref| <= atol + rtol * |ref|`` element by element).

    Parameters
    ----------
    q, k, v, pattern, o, lse, atol, rtol, scale, key_padding_mask
        As :func:`sparseattn.check`; tolerances default by the candidate's dtype.

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
                   key_padding_mask=key_padding_mask)
    if not report.passed:
        raise AssertionError(report.summary())
    return report
