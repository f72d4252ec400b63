"""Argument checks and array conversion shared by the public functions.

Every bad argument raises ``ValueError`` with the one-line form the CLI uses,
``invalid <argument> = <value>: <allowed>`` (docs/contract.md §5).
"""
from __future__ import annotations

import math
import operator
from typing import Any, Optional

import numpy as np

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def invalid(name: str, value: Any, allowed: str) -> ValueError:
    """The ValueError every check raises: ``invalid name = value: allowed``."""
    return ValueError(f"invalid {name} = {value}: {allowed}")


def integer(name: str, value: Any, lo: int = _INT64_MIN, hi: int = _INT64_MAX,
            allowed: Optional[str] = None) -> int:
    """``value`` as a Python int in [lo, hi] (bool refused: it is not a count)."""
    if isinstance(value, bool):
        raise invalid(name, value, allowed or "must be an integer")
    try:
        v = operator.index(value)
    except TypeError:
        raise invalid(name, value, allowed or "must be an integer") from None
    if v < lo or v > hi:
        if allowed is None:
            allowed = (f"must be an integer >= {lo}" if hi == _INT64_MAX
                       else f"must be an integer in [{lo}, {hi}]")
        raise invalid(name, v, allowed)
    return v


def seed(value: Any) -> int:
    """A PRNG seed: an integer in [0, 2^64)."""
    return integer("seed", value, 0, 2**64 - 1, "must be an integer in [0, 2^64)")


def real(name: str, value: Any, lo: float = -math.inf) -> float:
    """A finite real number >= lo (contract §5: no NaN or infinite scale or tolerance)."""
    allowed = "must be a finite real number" + ("" if lo == -math.inf else f" >= {lo:g}")
    if isinstance(value, bool):
        raise invalid(name, value, allowed)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise invalid(name, value, allowed) from None
    if not math.isfinite(x) or x < lo:
        raise invalid(name, value, allowed)
    return x


def to_numpy(x: Any, name: str) -> np.ndarray:
    """A NumPy view of ``x`` without a copy where the source allows one.

    numpy arrays pass through; objects exporting DLPack (a CPU ``torch.Tensor``, a JAX
    array) are wrapped with ``np.from_dlpack`` (shared memory); anything else with
    ``__array__`` or a nested sequence goes through ``np.asarray``.
    """
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, BufferError, RuntimeError, ValueError) as e:
            detach = getattr(x, "detach", None)  # a torch tensor that requires grad
            if detach is not None:
                try:
                    return np.from_dlpack(detach())
                except (TypeError, BufferError, RuntimeError, ValueError):
                    pass
            raise invalid(name, type(x).__name__,
                          f"must be readable as a CPU array (DLPack export failed: {e})") from None
    try:
        return np.asarray(x)
    except Exception as e:  # noqa: BLE001 -- any conversion failure is a bad argument
        raise invalid(name, type(x).__name__, f"must be an array ({e})") from None


def float_array(x: Any, name: str) -> np.ndarray:
    """C-contiguous native float32 or float64: ``x`` itself when it already is one (read
    in place by the C++ side), otherwise one converted copy (float16 -> float64, exact).
    Raises ValueError for non-floating dtypes."""
    a = to_numpy(x, name)
    if a.dtype.kind != "f" or a.dtype.itemsize not in (2, 4, 8):
        raise invalid(f"{name} dtype", a.dtype, "must be float16, float32 or float64")
    native = a.dtype.isnative
    if a.dtype.itemsize == 2:
        return np.ascontiguousarray(a, dtype=np.float64)
    want = np.float32 if a.dtype.itemsize == 4 else np.float64
    if native and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(a, dtype=want)


def mask_array(x: Any, name: str) -> np.ndarray:
    """A C-contiguous uint8 array of 0/1 from a bool or integer array (1 = may attend,
    or for key padding 1 = real token; one polarity everywhere)."""
    a = to_numpy(x, name)
    if a.dtype == np.bool_:
        return np.ascontiguousarray(a).view(np.uint8)
    if a.dtype.kind not in "iu":
        raise invalid(f"{name} dtype", a.dtype, "must be bool or uint8 (0/1)")
    if a.size and (a.min() < 0 or a.max() > 1):
        bad = a[(a < 0) | (a > 1)].flat[0]
        raise invalid(f"{name} entry", int(bad), "must be 0 or 1")
    return np.ascontiguousarray(a, dtype=np.uint8)


def int_array(x: Any, name: str) -> np.ndarray:
    """A C-contiguous int64 array from any integer array."""
    a = to_numpy(x, name)
    if a.dtype.kind not in "iu":
        raise invalid(f"{name} dtype", a.dtype, "must be an integer dtype")
    if a.dtype == np.uint64 and a.size and a.max() > _INT64_MAX:
        raise invalid(f"{name} entry", int(a.max()), "must be below 2^63")
    return np.ascontiguousarray(a, dtype=np.int64)
