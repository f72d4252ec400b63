"""The report :func:`sparseattn.check` returns (docs/contract.md §4.9).

The C++ check builds it (``api/check_result.h``) and renders it in one place
(``api/check_render.h``): :meth:`CheckReport.to_dict` is the JSON ``sparseattn check``
prints, :meth:`CheckReport.summary` is ``sparseattn check --format text``'s output byte
for byte, :meth:`TensorReport.line` its line for one tensor. The attributes here are that
JSON's fields, non-finite numbers as floats (the JSON's ``"nan"``, ``"inf"``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

_NUMBERS = ("max_abs_error", "max_rel_error", "worst_candidate", "worst_reference",
            "budget_used", "error_over_tolerance")


@dataclass(frozen=True)
class TensorReport:
    """The checker's verdict on one tensor (the ``o``, ``lse``, ``dq``, ``dk``, ``dv``
    objects of ``sparseattn check``; every one has these fields). ``passed`` is the JSON's
    ``pass``.

    Attributes
    ----------
    tensor : str
        ``"o"``, ``"lse"``, ``"dq"``, ``"dk"``, ``"dv"``, ``"dq_global"``, ``"dk_global"``,
        ``"dv_global"`` or ``"dsinks"``.
    rows_are : str
        ``"query"`` (o, lse, dq, dq_global), ``"key"`` (dk, dv, dk_global, dv_global) or
        ``"head"`` (dsinks, viewed as [1, num_heads, 1]): what a row of the tensor is.
    num_elements, num_compared : int
        The tensor's elements, and those compared (rows skipped under
        ``padded_queries="any"`` are not). ``nothing_compared`` (no element compared) fails.
    max_abs_error : float
        NaN when a candidate NaN was compared, inf for another non-finite mismatch;
        ``max_abs_error_finite`` (and ``max_rel_error_finite``) range over the elements
        where both values are finite.
    worst_index : tuple of int
        The first NaN mismatch, else the element of the largest error over its allowance.
    error_over_tolerance : float
        That element's ``|x - ref| / (atol + rtol*|ref|)`` (= ``budget_used``), <= 1 passes.
    mismatches, rows : dict
        Per ``"batch,head"``: mismatched elements, failing rows as ranges (``"1-32,40"``).
    worst_row, first_nonfinite : dict or None
        The worst element's row in full (``allowed_keys`` of a query row,
        ``allowed_queries`` of a key row) and the first NaN/Inf where the oracle is finite.
    probable_cause : str
        On failure: the cause named for this tensor (``"unknown: ..."`` when none).
    """

    tensor: str
    passed: bool
    reason: str
    num_elements: int
    num_nonfinite: int
    num_mismatched: int
    max_abs_error: float
    max_rel_error: float
    worst_index: Tuple[int, ...]
    worst_candidate: Optional[float]
    worst_reference: Optional[float]
    budget_used: Optional[float]
    atol: float
    rtol: float
    mismatches: Dict[str, int] = field(default_factory=dict)
    rows: Dict[str, str] = field(default_factory=dict)
    worst_row: Optional[Dict[str, Any]] = None
    first_nonfinite: Optional[Dict[str, Any]] = None
    error_over_tolerance: Optional[float] = None
    error_over_tolerance_means: str = ""
    rows_truncated: Optional[str] = None
    num_compared: int = 0
    max_abs_error_finite: float = 0.0
    max_rel_error_finite: float = 0.0
    nothing_compared: bool = False
    rows_are: str = "query"
    reference_error: Optional[Dict[str, Any]] = None
    probable_cause: Optional[str] = None
    # The C++ report (_sparseattn.TensorReport) this one reads: its renderer writes line().
    native: Any = field(default=None, repr=False, compare=False)

    @staticmethod
    def _from(native: Any) -> "TensorReport":
        d = json.loads(native.json())
        d["passed"] = d.pop("pass")
        d["worst_index"] = tuple(d["worst_index"])
        for key in _NUMBERS:  # "nan", "inf", "-inf" in the JSON
            if isinstance(d.get(key), str):
                d[key] = float(d[key])
        known = {f.name for f in fields(TensorReport)}
        return TensorReport(native=native, **{k: val for k, val in d.items() if k in known})

    def to_dict(self) -> Dict[str, Any]:
        """This tensor's object in the JSON ``sparseattn check`` prints."""
        return json.loads(self.native.json())

    def line(self) -> str:
        """One line in the manner of ``torch.testing.assert_close``."""
        return str(self.native.line())


@dataclass(frozen=True)
class CheckReport:
    """``sparseattn check``'s report as attributes (``passed`` is the JSON's ``pass``).

    Attributes
    ----------
    oracle : str
        ``"a1_dense_masked"``, the float64 oracle (contract §4).
    pattern : str
        The pattern's description.
    shape : dict
        batch, num_heads, seq_len_q, seq_len_k, head_dim, head_dim_v.
    o : TensorReport
    lse : TensorReport or None
        Present when a candidate lse was given.
    passed : bool
        Every checked tensor within ``atol + rtol * |oracle|``, element by element, and
        every one compared at least one element.
    gradient_oracle : str or None
        ``"b1_dense_masked_grad"``, the float64 gradient oracle (contract §7.3), when
        ``dout`` was given.
    dq, dk, dv : TensorReport or None
        Present when that candidate gradient was given (with ``dout``).
    dq_global, dk_global, dv_global : TensorReport or None
        The global projections' gradients, when given (contract §7.5).
    dsinks : TensorReport or None
        The sinks' gradient, when given (with ``dout`` and ``sinks``; contract §7.7).
    compat : str or None
        ``"hf-bigbird"`` when that mode's definition was the oracle.
    global_projections : bool or None
        True under Longformer's global projections.
    probable_cause : str or None
        On failure: the mistake the candidate matches (cause probes, contract §4.9), e.g.
        ``"scale 1/head_dim (candidate matches the oracle with --scale 0.125)"``, or
        ``"unknown: ..."``.
    hint : str or None
        On a failing o: the peer convention that would explain it (api/convention_hint.h).
    rows_not_compared : int or None
        (batch, head, query row) triples skipped under ``padded_queries="any"``.
    """

    oracle: str
    pattern: str
    shape: Dict[str, int]
    o: TensorReport
    lse: Optional[TensorReport]
    passed: bool
    gradient_oracle: Optional[str] = None
    dq: Optional[TensorReport] = None
    dk: Optional[TensorReport] = None
    dv: Optional[TensorReport] = None
    probable_cause: Optional[str] = None
    probes: Optional[Dict[str, Any]] = None
    conventions: str = ""
    hint: Optional[str] = None
    rows_not_compared: Optional[int] = None
    tolerance_rule: Optional[str] = None
    dq_global: Optional[TensorReport] = None
    dk_global: Optional[TensorReport] = None
    dv_global: Optional[TensorReport] = None
    dsinks: Optional[TensorReport] = None
    compat: Optional[str] = None
    global_projections: Optional[bool] = None
    # The C++ report (_sparseattn.CheckResult): summary() and to_dict() are its renderer's.
    native: Any = field(default=None, repr=False, compare=False)

    @staticmethod
    def _from(native: Any) -> "CheckReport":
        d = json.loads(native.json())

        def report(name: str) -> Optional[TensorReport]:
            t = getattr(native, name)
            return None if t is None else TensorReport._from(t)

        return CheckReport(oracle=d["oracle"], pattern=d["pattern"], shape=d["shape"],
                           o=TensorReport._from(native.o), lse=report("lse"),
                           passed=d["pass"], gradient_oracle=d.get("gradient_oracle"),
                           dq=report("dq"), dk=report("dk"), dv=report("dv"),
                           probable_cause=d.get("probable_cause"), probes=d.get("probes"),
                           conventions=d.get("conventions", ""), hint=d.get("hint"),
                           rows_not_compared=d.get("rows_not_compared"),
                           tolerance_rule=d.get("tolerance_rule"), dq_global=report("dq_global"),
                           dk_global=report("dk_global"), dv_global=report("dv_global"),
                           dsinks=report("dsinks"), compat=d.get("compat"), global_projections=d.get("global_projections"),
                           native=native)

    def __bool__(self) -> bool:
        return self.passed

    def _tensors(self) -> List[TensorReport]:
        return [t for t in (self.o, self.lse, self.dq, self.dk, self.dv, self.dq_global,
                            self.dk_global, self.dv_global, self.dsinks) if t is not None]

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object ``sparseattn check`` prints, field for field."""
        return json.loads(self.native.json())

    def summary(self) -> str:
        """``sparseattn check --format text``'s output on the same inputs, byte for byte:
        verdict, pattern and shape, one line per tensor; on failure where it fails, the
        probable cause (and, when that is unknown, a hint read off the report)."""
        return str(self.native.text())

    def __str__(self) -> str:
        return self.summary()
