"""The sequence layouts of docs/contract.md §2.10–§2.12 for :func:`sparseattn.attend` and
:func:`sparseattn.check`: packed variable-length batches (``cu_seqlens_q``,
``cu_seqlens_k``), a KV cache filled to ``cache_seqlens``, paged KV (``block_table``).

The C++ side (``api/layout_check.h``) runs the oracle and every kernel one sequence at a
time, as ``sparseattn attend --cu-seqlens-q ...`` does; this module only checks that the
keywords that mean nothing under a layout keep their defaults, and converts the arrays.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _arrays
from . import _sparseattn as _C

#: The layout keywords, in the order the C++ binding takes them.
LAYOUT_KEYWORDS = ("cu_seqlens_q", "cu_seqlens_k", "cache_seqlens", "block_table")


def requested(layouts: Dict[str, Any]) -> bool:
    """Whether any layout keyword was given."""
    return any(layouts[name] is not None for name in LAYOUT_KEYWORDS)


def index_array(x: Any, name: str) -> Optional[np.ndarray]:
    """``x`` as an integer NumPy array (the C++ side refuses floats, naming ``name``)."""
    return None if x is None else _arrays.to_numpy(x, name)


def refuse_defaults(given: Dict[str, Tuple[Any, Any]], with_name: str) -> None:
    """Raises ValueError naming the first keyword whose value is not its default: under a
    layout it has no meaning (contract §2.10–§2.11). An array is shown as ``given``."""
    for name, (value, default) in given.items():
        if not (value is default or (value is not None and default is not None
                                     and isinstance(value, str) and value == default)):
            shown = value if isinstance(value, (str, int, float)) else "given"
            why = (f"must keep its default with {with_name} (the layout says which keys "
                   "exist; contract §2.10-§2.12)")
            raise _arrays.invalid(name, shown, why)


def shapes_for_preset(qa: np.ndarray, ka: np.ndarray, va: np.ndarray,
                      packed: bool) -> Tuple[Any, Any, Any]:
    """The shapes a preset's heads are checked on: a packed [total, H, d] as [1, H, total, d]."""
    if not packed:
        return qa.shape, ka.shape, va.shape
    return tuple((1, x.shape[1], x.shape[0], x.shape[2]) if x.ndim == 3 else x.shape
                 for x in (qa, ka, va))


def attend(qa: np.ndarray, ka: np.ndarray, va: np.ndarray, spec: Any, impl: str,
           scale: Optional[float], dout: Optional[np.ndarray], layout: str, lse_base: str,
           mods: Tuple[Any, Any, Any], layouts: Dict[str, Any]) -> Tuple[Any, ...]:
    """``_C.attend_layout``: (o, lse) or, with ``dout``, (o, lse, dq, dk, dv, dsinks)."""
    arrays = [index_array(layouts[n], n) for n in LAYOUT_KEYWORDS]
    return _C.attend_layout(qa, ka, va, spec, impl, scale, *arrays, layout, str(lse_base),
                            *mods, dout)


def check(qa: np.ndarray, ka: np.ndarray, va: np.ndarray, spec: Any, o: np.ndarray,
          o_dtype: str, lse: Optional[np.ndarray], lse_dtype: str, atol: Optional[float],
          rtol: Optional[float], scale: Optional[float], layout: str, lse_base: str,
          probes: str, probe_budget: float, mods: Tuple[Any, Any, Any],
          layouts: Dict[str, Any], dout: Optional[np.ndarray] = None,
          grads: Optional[List[Optional[np.ndarray]]] = None,
          grad_dtypes: Optional[List[str]] = None) -> Any:
    """``_C.check_layout``: the CheckResult of every sequence against its own oracle; with
    ``dout``, also of the gradient candidates ``grads`` (dq, dk, dv, dsinks; contract §7.8)."""
    arrays = [index_array(layouts[n], n) for n in LAYOUT_KEYWORDS]
    return _C.check_layout(qa, ka, va, spec, o, o_dtype, lse, lse_dtype, atol, rtol, scale,
                           *arrays, layout, str(lse_base), probes, probe_budget, *mods, dout,
                           grads or [None] * 4, grad_dtypes or ["float64"] * 4)


def time_impl(qa: np.ndarray, ka: np.ndarray, va: np.ndarray, spec: Any, impl: str,
              scale: Optional[float], repeats: int, warmup: int, layout: str,
              mods: Tuple[Any, Any, Any], layouts: Dict[str, Any]) -> Tuple[Any, Any, Any]:
    """``_C.time_layout``: (seconds per timed call, o, lse) of the layout's walk."""
    arrays = [index_array(layouts[n], n) for n in LAYOUT_KEYWORDS]
    return _C.time_layout(qa, ka, va, spec, impl, scale, *arrays, layout, repeats, warmup,
                          *mods)
