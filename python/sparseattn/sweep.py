"""Time kernels on one pattern over a range of sequence lengths: ``sparseattn sweep``.

The same engine as the command line (api/sweep.h): every (kernel, seq_len) point is checked
against the float64 oracle before it is timed (docs/contract.md §4), and a kernel that fails
is never timed. The CLI also writes sweep.json, sweep.csv and figures; here the result is a
:class:`SweepResult` (docs/benchmarks.md, "Your own pattern: sparseattn sweep").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _arrays
from . import _sparseattn as _C
from .pattern import Pattern


@dataclass(frozen=True)
class SweepPoint:
    """One (kernel, seq_len) of a sweep: a row of ``sweep.csv``.

    Attributes
    ----------
    impl : str
        The kernel (a registry name, :func:`sparseattn.impls`).
    pattern : str
        ``"pattern"`` (the swept pattern) or ``"dense"`` (the dense baseline).
    seq_len : int
        Tokens, self-attention (seq_len_q = seq_len_k).
    validated : bool
        The checked call matched the oracle at the kernel's tolerance; only then timed.
    oracle : str
        ``"full"`` (the whole output checked) or ``"sampled rows"`` (large seq_len).
    repeats : int
        Timed calls made.
    median_s, min_s, max_s : float or None
        Wall-clock seconds per call; None when not validated (never timed).
    cpu_median_s, cpu_min_s, cpu_max_s : float or None
        The process's CPU seconds per call (all threads summed) over the same calls: what
        the fits read on a busy machine (:attr:`SweepResult.fit_measure`).
    others_runnable : float or None
        Other runnable threads just before the point (/proc/stat procs_running less the
        reader; None where unreadable).
    flops, dense_flops : float
        4 · nnz · head_dim and its dense count, per batch element.
    density : float
        Allowed pairs over all pairs.
    failure : str or None
        Why validation failed or the kernel threw (None when validated).
    peak_bytes : int or None
        Extra heap of the checked call: measured by the CLI only (its heap counter replaces
        the program's ``operator new``, which a Python extension must not do), so None.
    """

    impl: str
    pattern: str
    seq_len: int
    validated: bool
    oracle: str
    repeats: int
    median_s: Optional[float]
    min_s: Optional[float]
    max_s: Optional[float]
    flops: float
    dense_flops: float
    density: float
    failure: Optional[str] = None
    peak_bytes: Optional[int] = None
    cpu_median_s: Optional[float] = None
    cpu_min_s: Optional[float] = None
    cpu_max_s: Optional[float] = None
    others_runnable: Optional[float] = None


@dataclass(frozen=True)
class SweepFit:
    """The fitted time law of one series: log(time) over log(seq_len), time the median
    wall time or, on a busy machine, the median CPU time (``measure``).

    Attributes
    ----------
    impl, pattern : str
        As :class:`SweepPoint`.
    slope : float or None
        The fitted exponent (1 for O(n), 2 for O(n²)); None with fewer than two points.
    points : int
        Timed points with ``seq_len >= fit_from`` the fit used.
    flop_slope : float or None
        The exponent of the FLOP count over the same points: what ``slope`` should match.
    measure : str
        ``"wall"`` or ``"cpu"``: the clock fitted.
    """

    impl: str
    pattern: str
    slope: Optional[float]
    points: int
    flop_slope: Optional[float] = None
    measure: str = "wall"


@dataclass(frozen=True)
class SweepResult:
    """What :func:`sweep` measured: the fields of ``sweep.json``.

    Attributes
    ----------
    pattern : str
        The pattern's description.
    num_heads, head_dim : int
        The sizes every point ran at (batch 1).
    num_kv_heads : int
        Heads of k and v (grouped-query heads when fewer than ``num_heads``, contract §2.7).
    score_mods : str
        The score modifiers every point ran with, e.g. ``"softcap=50, sinks"``; ``""`` for
        none (contract §2.8–§2.9).
    seq_lens : list of int
        The sequence lengths asked for, ascending.
    repeats : int
    max_seconds : float
    fit_from : int
    dense_baseline : str or None
        The kernel timed on the dense pattern (None: no baseline).
    points : list of SweepPoint
        In the order measured.
    fits : list of SweepFit
        One per series (kernel on its pattern), in measured order.
    notes : list of str
        Why a kernel stopped growing, was skipped or failed.
    skipped : list of (str, str)
        (impl, reason) of kernels that never ran (a CUDA kernel without a device).
    failures : int
        Points that failed validation; the CLI then exits 1.
    context : dict
        Where and when: ``machine``, ``date``, ``commit``, ``load_average``,
        ``omp_threads``, ``omp_wait_policy``.
    threads : int
        OpenMP threads of every call.
    fit_measure : str
        ``"wall"`` or ``"cpu"``: the clock the fits read; ``"cpu"`` when the machine was busy.
    load : dict
        The verdict: ``busy``, ``fit_measure``, ``others_runnable``, ``source``
        (``"procs_running"``, ``"load average"`` or ``"none"``), ``cores``, ``threads``.
    """

    pattern: str
    num_heads: int
    head_dim: int
    seq_lens: List[int]
    repeats: int
    max_seconds: float
    fit_from: int
    dense_baseline: Optional[str]
    points: List[SweepPoint]
    fits: List[SweepFit]
    notes: List[str]
    skipped: List[Tuple[str, str]]
    failures: int
    context: Dict[str, Any] = field(default_factory=dict)
    num_kv_heads: int = 0
    score_mods: str = ""
    threads: int = 1
    fit_measure: str = "wall"
    load: Dict[str, Any] = field(default_factory=dict)

    def fit(self, impl: str, pattern: str = "pattern") -> Optional[SweepFit]:
        """The fit of ``impl`` on ``pattern`` (``"pattern"`` or ``"dense"``), or None."""
        for f in self.fits:
            if f.impl == impl and f.pattern == pattern:
                return f
        return None


_CONTEXT_KEYS = ("machine", "date", "commit", "load_average", "omp_threads", "omp_wait_policy")


def sweep(pattern: Pattern, seq_len: Union[int, str, Sequence[int]], *, impl: str = "auto",
          target: Optional[str] = None, num_heads: Optional[int] = None, head_dim: int = 64,
          dtype: str = "any", repeats: int = 5, max_seconds: float = 30.0,
          dense_baseline: str = "auto", fit_from: int = 0, quiet: bool = True,
          key_padding_mask: Any = None, num_kv_heads: Optional[int] = None,
          softcap: Optional[float] = None, alibi_slopes: Any = None,
          sinks: Any = None, threads: Union[int, str, None] = None) -> SweepResult:
    """Times every chosen kernel on ``pattern`` over ``seq_len``, each point validated
    against the float64 oracle first: ``sparseattn sweep`` (docs/benchmarks.md).

    A point is one (kernel, seq_len): one untimed call checked against the oracle
    (docs/contract.md §4; the whole output while seq_len² <= 2048², sampled rows above),
    then ``repeats`` timed calls of the kernel alone on inputs prepared once. A kernel that
    fails validation is reported and never timed; a kernel stops growing seq_len when its
    next point is predicted to take longer than ``max_seconds``. With ``num_kv_heads``,
    ``softcap``, ``alibi_slopes`` or ``sinks`` every point's problem and its oracle carry
    them (docs/contract.md §2.7–§2.9), and only kernels whose registry features serve them
    run.

    Parameters
    ----------
    pattern : Pattern
        The pattern swept (self-attention: seq_len_q = seq_len_k).
    seq_len : int, str or sequence of int
        Sequence lengths in tokens, each >= 1, ascending: ``1024``, ``[1024, 4096]``, or the
        CLI's text ``"1024:8192"`` (1024, 8192 and the powers of two between) or
        ``"1024,2048"``.
    impl : str
        ``"auto"`` (every exact registry kernel that serves the pattern) or
        ``"NAME[,NAME...]"``; each named kernel must be exact and serve the pattern.
    target : {"cpu", "reference", "cuda"}, optional
        Only kernels of this target; default any.
    num_heads : int, optional
        Heads, in [1, 65536]; default as :meth:`Pattern.mask` (``len(heads)`` for
        :meth:`Pattern.per_head`).
    head_dim : int
        Head dimension, in [1, 65536].
    dtype : {"any", "float32", "float64", "float16", "bfloat16"}
        Only kernels of this dtype.
    repeats : int
        Timed calls per point, in [1, 1000].
    max_seconds : float
        Budget of one point (checked call + timed calls) in seconds, finite, > 0.
    dense_baseline : str
        ``"auto"`` (``cpu_k01_dense_flash`` on the dense pattern, same q, k, v, unless the
        pattern is dense already), ``"none"``, or an exact kernel's name.
    fit_from : int
        Fit slopes on points with ``seq_len >= fit_from``, >= 0.
    quiet : bool
        No progress line on stderr (the CLI's ``--quiet``; default True here).
    key_padding_mask : array of bool, shape [1, seq_len], optional
        True = real token (``sweep --key-padding-mask``); its length fixes the sequence, so
        ``seq_len`` must then be that one length.
    num_kv_heads : int, optional
        Heads of k and v, in [1, num_heads], dividing ``num_heads`` (grouped-query heads,
        contract §2.7; ``sweep --num-kv-heads``); default ``num_heads``.
    softcap : float, optional
        Logit softcap ``c``, finite, > 0: each allowed scaled score ``s`` becomes
        ``c * tanh(s / c)`` (contract §2.8; ``sweep --softcap``).
    alibi_slopes : array, [num_heads], optional
        ALiBi slopes, finite: each allowed score gets ``-slope * |p - j|`` (contract §2.8).
    sinks : array, [num_heads], optional
        One learned sink logit per query head, finite (contract §2.9).
    threads : int or "auto", optional
        OpenMP threads of every call, in [1, 1024] (``sweep --threads``); default (None or
        ``"auto"``) the cores
        the other runnable threads leave free (/proc/stat), at least 1. The caller's thread
        count is restored afterwards.

    Returns
    -------
    SweepResult

    Raises
    ------
    ValueError
        A bad argument (named by its keyword, e.g. ``invalid max_seconds = 0: ...``), an
        unknown or unsuitable ``impl``, no kernel left to run, a pattern that does not fit
        the smallest seq_len.

    Notes
    -----
    On a busy machine (other runnable threads would share the sweep's cores) the fits read
    CPU time instead of wall time, :attr:`SweepResult.fit_measure` says so and a note warns.
    The sweep runs with the GIL released. ``peak_bytes`` is not measured here (see
    :class:`SweepPoint`); ``sparseattn sweep`` measures it.
    """
    if not isinstance(pattern, Pattern):
        raise _arrays.invalid("pattern", type(pattern).__name__, "must be a Pattern")
    for name, value in (("impl", impl), ("dtype", dtype), ("dense_baseline", dense_baseline)):
        if not isinstance(value, str):
            raise _arrays.invalid(name, value, "must be a string")
    if target is not None and not isinstance(target, str):
        raise _arrays.invalid("target", target, "must be cpu, reference or cuda")
    if isinstance(seq_len, str):
        lens: Any = seq_len
    elif isinstance(seq_len, Iterable):  # a list, a tuple, a NumPy array
        lens = [_arrays.integer("seq_len", n, 1) for n in seq_len]
    else:
        lens = [_arrays.integer("seq_len", seq_len, 1)]
    seconds = _arrays.real("max_seconds", max_seconds)
    if not isinstance(quiet, bool):
        raise _arrays.invalid("quiet", quiet, "must be True or False")
    kv_heads = 0 if num_kv_heads is None else _arrays.integer("num_kv_heads", num_kv_heads, 1)
    cap = None if softcap is None else _arrays.real("softcap", softcap)
    slopes = None if alibi_slopes is None else _arrays.float_array(alibi_slopes, "alibi_slopes")
    sink_logits = None if sinks is None else _arrays.float_array(sinks, "sinks")
    n_threads = (0 if threads is None or (isinstance(threads, str) and threads == "auto")
                 else _arrays.integer("threads", threads, 1, 1024,
                                      "must be 'auto' or an integer in [1, 1024]"))
    d = _C.sweep(pattern._spec, pattern._heads(num_heads), _arrays.integer("head_dim", head_dim, 1),
                 lens, impl, target or "", dtype, _arrays.integer("repeats", repeats, 1),
                 seconds, dense_baseline, _arrays.integer("fit_from", fit_from, 0), quiet,
                 None if key_padding_mask is None
                 else _arrays.mask_array(key_padding_mask, "key_padding_mask"),
                 kv_heads, cap, slopes, sink_logits, n_threads)
    return SweepResult(
        pattern=d["pattern"], num_heads=d["num_heads"], head_dim=d["head_dim"],
        seq_lens=list(d["seq_lens"]), repeats=d["repeats"], max_seconds=d["max_seconds"],
        fit_from=d["fit_from"], dense_baseline=d["dense_baseline"],
        points=[SweepPoint(**p) for p in d["points"]],
        fits=[SweepFit(**f) for f in d["fits"]], notes=list(d["notes"]),
        skipped=[(s["impl"], s["reason"]) for s in d["skipped"]], failures=d["failures"],
        context={k: d[k] for k in _CONTEXT_KEYS if k in d},
        num_kv_heads=d["num_kv_heads"], score_mods=d["score_mods"], threads=d["threads"],
        fit_measure=d["fit_measure"], load=dict(d["load"]))
