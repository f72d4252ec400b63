"""Attention through the project's kernels, and the check against the float64 oracle.

Shapes (docs/contract.md §1): q [batch, num_heads, seq_len_q, head_dim], k [batch,
num_heads, seq_len_k, head_dim], v [batch, num_heads, seq_len_k, head_dim_v]; missing
leading dimensions mean 1 (rank 2 or 3 inputs), and outputs keep q's leading dimensions.
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import numpy as np

from . import _arrays
from . import _layouts
from . import _sparseattn as _C
from .pattern import Pattern
from .report import CheckReport, TensorReport  # noqa: F401 (re-exported)


def _pattern(pattern: Any) -> Pattern:
    if not isinstance(pattern, Pattern):
        raise TypeError(f"pattern must be a sparseattn.Pattern, not {type(pattern).__name__}")
    return pattern


def _scale(scale: Any) -> Optional[float]:
    return None if scale is None else _arrays.real("scale", scale)


def _padding(key_padding_mask: Any) -> Optional[np.ndarray]:
    if key_padding_mask is None:
        return None
    return _arrays.mask_array(key_padding_mask, "key_padding_mask")


def _out_shapes(q: np.ndarray, o: np.ndarray, lse: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    lead = q.shape[:-1]  # o and lse keep q's leading dimensions (contract §1)
    return o.reshape(lead + o.shape[-1:]), lse.reshape(lead)


def impls(backward: bool = False) -> List[Dict[str, Any]]:
    """The kernel registry, as ``sparseattn impls --json`` prints it.

    Parameters
    ----------
    backward : bool
        False: the forward implementations. True: the backward ones (dq, dk, dv;
        docs/backward.md), as ``sparseattn impls --backward --json`` prints them.

    Returns
    -------
    list of dict
        One per implementation compiled into this build, in ladder order: ``name``,
        ``target`` ("reference", "cpu", "cuda"), ``dtype``, ``exact`` (False for the
        approximations; forward only), ``forward`` (backward only: the forward kernel whose
        o and lse it consumes, i.e. the ``impl`` of :func:`attend` that selects it with
        ``dout``), ``patterns`` served, ``reference`` (the kernel it must match), ``atol``,
        ``rtol`` (docs/numerics.md), ``summary``.
    """
    if not isinstance(backward, (bool, np.bool_)):
        raise _arrays.invalid("backward", backward, "must be True or False")
    return _C.grad_impls() if backward else _C.impls()


def cpu_isa() -> str:
    """The SIMD build the optimized CPU kernels run, and what the CPU supports: one line,
    e.g. ``"avx512 (supported: avx2, avx512; avx512_bf16: yes)"``.

    The choice is made at run time (optimized/cpu/isa.h): ``SPARSEATTN_CPU_ISA=avx2|avx512``
    when set, otherwise the widest build the CPU can run. Benchmarks record it.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        ``SPARSEATTN_CPU_ISA`` names a build this CPU cannot run.
    """
    return _C.cpu_isa()


def bf16_engine() -> str:
    """The engine the bf16 twins of k01–k06 (``cpu_k01_dense_flash_bf16`` … ``cpu_k06_generic_tiles_bf16``) run in this process, and why: one
    line, e.g. ``"widen (vdpbf16ps 0.50× the FMA FLOP rate)"``, ``"dot (vdpbf16ps 0.98× the
    FMA FLOP rate)"``, ``"widen (SPARSEATTN_BF16_ENGINE; no AVX512-BF16)"``,
    ``"widen (avx2 build)"``, ``"amx (AMX-BF16; vdpbf16ps 0.50× the FMA FLOP rate)"``.

    The engines round differently (docs/numerics.md), so the choice is made once per
    process (optimized/cpu/kernels_bf16.h, contract §4.6): the AMX ("amx") engine where the
    CPU has AMX-BF16 and AVX512-BF16 and Linux grants the tile state; else the ``vdpbf16ps``
    ("dot") engine where the CPU has AVX512-BF16 and a ~30 ms one-thread probe finds its
    FLOP rate at least 0.75× the float32 FMA's, the widening engine otherwise;
    ``SPARSEATTN_BF16_ENGINE=dot|widen`` fixes it (``auto``, the default, allows AMX).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        ``SPARSEATTN_BF16_ENGINE`` is not auto, dot or widen, or is dot on a CPU without
        AVX512-BF16; or ``SPARSEATTN_CPU_ISA`` names a build this CPU cannot run.
    """
    return _C.bf16_engine()


class AttendResult(NamedTuple):
    """What :func:`attend` returns when ``dout`` is given: a tuple that unpacks as
    ``o, lse, dq, dk, dv = attend(..., dout=do)`` and names its fields (``r.dq``).

    Attributes
    ----------
    o : ndarray, [..., seq_len_q, head_dim_v]
    lse : ndarray, [..., seq_len_q]
        As without ``dout``, in the forward kernel's dtype.
    dq : ndarray, q's shape
    dk : ndarray, k's shape
    dv : ndarray, v's shape
        The gradients of ``sum(dout * o)`` with respect to q, k, v (docs/contract.md §7,
        docs/backward.md), in the backward kernel's dtype: float64 for the reference
        ladder (b1..b3), float32 for the optimized kernels.
    """

    o: np.ndarray
    lse: np.ndarray
    dq: np.ndarray
    dk: np.ndarray
    dv: np.ndarray


class AttendGlobalResult(NamedTuple):
    """What :func:`attend` returns when ``dout`` is given with Longformer's global
    projections (``q_global``, ``k_global``, ``v_global``): ``o, lse, dq, dk, dv,
    dq_global, dk_global, dv_global = attend(...)``.

    Attributes
    ----------
    o, lse, dq, dk, dv
        As :class:`AttendResult`: dq, dk, dv come from the rows that read q, k, v.
    dq_global : ndarray, q_global's shape
    dk_global : ndarray, k_global's shape
    dv_global : ndarray, v_global's shape
        The gradients of ``sum(dout * o)`` with respect to the global projections: the
        global query rows read only them (docs/contract.md §7.5), float64.
    """

    o: np.ndarray
    lse: np.ndarray
    dq: np.ndarray
    dk: np.ndarray
    dv: np.ndarray
    dq_global: np.ndarray
    dk_global: np.ndarray
    dv_global: np.ndarray


def _compat_args(compat: Optional[str], global_mask: Any, q_global: Any, k_global: Any,
                 v_global: Any, bshd: bool) -> Tuple[str, Optional[np.ndarray], List[np.ndarray]]:
    """The compatibility mode's arguments (docs/contract.md §3.12) as the binding takes them:
    compat ("" or "hf-bigbird"), the global mask (uint8 [batch, seq_len_k]) and the three
    projections (bhsd), or [] when none is given."""
    if compat not in (None, "hf-bigbird"):
        raise _arrays.invalid("compat", compat, "must be hf-bigbird or None")
    gm = None if global_mask is None else _arrays.mask_array(global_mask, "global_mask")
    given = [x is not None for x in (q_global, k_global, v_global)]
    if any(given) and not all(given):
        raise _arrays.invalid("q_global", "None" if q_global is None else _given(q_global),
                              "q_global, k_global and v_global go together")
    proj: List[np.ndarray] = []
    if all(given):
        for x, n in ((q_global, "q_global"), (k_global, "k_global"), (v_global, "v_global")):
            a = _arrays.float_array(x, n)
            if bshd and a.ndim >= 3:
                a = np.ascontiguousarray(np.swapaxes(a, -3, -2))
            proj.append(a)
    return compat or "", gm, proj


def _score_mods(softcap: Any, alibi_slopes: Any, sinks: Any) -> Tuple[Any, Any, Any]:
    """softcap=, alibi_slopes=, sinks= as the module takes them (contract §2.8–§2.9)."""
    cap = None if softcap is None else _arrays.real("softcap", softcap)
    slopes = None if alibi_slopes is None else _arrays.float_array(alibi_slopes, "alibi_slopes")
    s = None if sinks is None else _arrays.float_array(sinks, "sinks")
    return cap, slopes, s


def _preset_call(preset: Any, layer: Any, pattern: Any, given: Dict[str, Any],
                 shapes: Tuple[Any, Any, Any], sinks: Any) -> Tuple[Pattern, float, Optional[float]]:
    """``preset=``, ``layer=`` of attend and check (contract §6.4): the layer's Pattern,
    scale and softcap; what the preset fixes must not be given beside it, q, k, v must have
    its heads and head_dim, and ``sinks`` is required exactly when the model has them."""
    if preset is None:
        if layer is not None:
            raise _arrays.invalid("layer", layer, "selects a layer of a preset; give preset")
        return _pattern(pattern), given["scale"], given["softcap"]
    if not isinstance(preset, str):
        raise _arrays.invalid("preset", preset, "must be a preset name (preset_names())")
    if pattern is not None:
        raise _arrays.invalid("pattern", pattern, f"preset {preset} fixes the pattern; leave "
                              "pattern out (or pass Pattern.preset(preset, layer))")
    for name, value in given.items():
        if value is not None:
            raise _arrays.invalid(name, value, f"preset {preset} fixes the pattern, scale and "
                                  f"softcap; leave {name} out")
    if layer is None:
        raise _arrays.invalid("layer", "missing", f"preset {preset} needs layer=L (counted "
                              "from 0)")
    spec, meta = _C.preset_layer(preset, _arrays.integer("layer", layer),
                                 *(list(s) for s in shapes))
    if meta["sinks"] and sinks is None:
        raise _arrays.invalid("sinks", "missing", f"{preset} has learned sinks (one logit per "
                              "query head, weights not shipped): give sinks=, float "
                              f"[{meta['num_heads']}]")
    if not meta["sinks"] and sinks is not None:
        raise _arrays.invalid("sinks", "given", f"{preset} has no sinks; leave sinks out")
    return Pattern(spec), meta["scale"], meta["softcap"]


def _masked_score_text(masked_score: Union[str, float]) -> str:
    return masked_score if isinstance(masked_score, str) else repr(float(masked_score))


def attend(q: Any, k: Any, v: Any, pattern: Optional[Pattern] = None,
           impl: str = "a1_dense_masked",
           scale: Optional[float] = None, key_padding_mask: Any = None,
           dout: Any = None, *, layout: str = "bhsd", lse_base: str = "e",
           key_padding_polarity: str = "keep", masked_score: Union[str, float] = "-inf",
           padded_queries: str = "zero", causal_align: str = "bottom-right",
           padding_align: str = "full", compat: Optional[str] = None, global_mask: Any = None,
           q_global: Any = None, k_global: Any = None, v_global: Any = None,
           softcap: Optional[float] = None, alibi_slopes: Any = None, sinks: Any = None,
           preset: Optional[str] = None, layer: Optional[int] = None,
           cu_seqlens_q: Any = None, cu_seqlens_k: Any = None, cache_seqlens: Any = None,
           block_table: Any = None,
           ) -> Union[Tuple[np.ndarray, np.ndarray], AttendResult, AttendGlobalResult,
                      AttendSinksResult]:
    """Sparse attention with one registered kernel (default: the float64 oracle), and
    with ``dout`` its backward pass.

    ``o_i = sum_{j in A(i)} softmax_j(scale * q_i . k_j) v_j`` over the keys ``A(i)`` the
    pattern allows (docs/contract.md §2); ``lse_i = log sum_{j in A(i)} exp(scale * q_i .
    k_j)``. A row with no allowed key gives ``o = 0``, ``lse = -inf``.

    Parameters
    ----------
    q : array, [batch, num_heads, seq_len_q, head_dim] (leading dims optional)
        A NumPy array or anything exporting DLPack or ``__array__`` (a CPU
        ``torch.Tensor``, a JAX array), float16, float32 or float64, finite.
        C-contiguous float32/float64 is read in place (no NumPy-side copy).
    k : array, [batch, num_kv_heads, seq_len_k, head_dim]
        ``num_kv_heads`` divides q's ``num_heads``: with fewer kv heads than query heads
        (grouped-query attention) query head ``h`` reads kv head ``h // (num_heads //
        num_kv_heads)`` (``repeat_interleave``; docs/contract.md §2.7).
    v : array, [batch, num_kv_heads, seq_len_k, head_dim_v]
    pattern : Pattern, or None with ``preset``
    impl : str
        A registry name (:func:`impls`): ``a0_dense`` ... ``a5_flash_tiled`` (float64
        reference ladder), ``cpu_k01_dense_flash`` ... (float32, OpenMP), ``cuda_*``
        (when built with CUDA and a device is present), ``performer_favor``, ``nystrom``
        (approximations, not exact).
    scale : float, optional
        Score scale, finite; default ``1/sqrt(head_dim)`` (contract §4).
    key_padding_mask : array of bool, [batch, seq_len_k], optional
        True = real token. Padded keys leave every A(i); padded query rows are fully
        masked (contract §2).
    dout : array, o's shape [batch, num_heads, seq_len_q, head_dim_v], optional
        The gradient of a loss with respect to ``o`` (leading 1s may be omitted), finite.
        Given, the backward entry that consumes ``impl``'s o and lse runs after the
        forward pass — the one ``sparseattn attend --impl IMPL --dout DO.npy`` runs:
        ``a1_dense_masked`` -> ``b1_dense_masked_grad`` (the gradient oracle),
        ``a2_sparse_rows`` -> b2, ``a5_flash_tiled`` -> b3, ``cpu_k06_generic_tiles`` ->
        ``cpu_kb02_generic_dq_lanes_grad``, ``cpu_k08_selected_gather`` and its bf16 twin
        ``cpu_k08_selected_gather_bf16`` -> ``cpu_kb03_selected_gather_grad`` and
        ``cpu_kb03_selected_gather_grad_bf16``, ``cuda_c08_generic_f32`` -> cb01
        (``impls(backward=True)`` lists them; docs/backward.md).
    layout, lse_base, key_padding_polarity
        Convention flags of ``sparseattn attend`` (docs/conventions.md, contract §1.6):
        ``layout="bshd"`` takes q, k, v and returns o (and dout, dq, dk, dv) as [batch, seq_len, num_heads, d]
        (lse stays [batch, num_heads, seq_len_q]); ``lse_base="2"`` returns lse / ln 2;
        ``key_padding_polarity="ignore"`` reads True as padding (PyTorch's mask).
    masked_score : str or float
        ``"-inf"`` (default): masked keys leave the softmax. A finite value (``-1e9``,
        ``-1e6``): every masked score *is* that value (``masked_fill``; a row with no
        allowed key gets the mean of v), as ``sparseattn attend --masked-score``
        (contract §1.6); needs ``impl="a1_dense_masked"``. With ``dout`` the gradients
        are that function's (contract §7.6).
    padded_queries : {"zero"}
        ``sparseattn attend --padded-queries``: attend writes padded query rows as ``o =
        0``, ``lse = -inf`` (contract §2.4), so only ``"zero"`` is accepted; ``"any"`` is
        :func:`check`'s (it leaves those rows uncompared) and is refused here, as by the CLI.
    causal_align : {"bottom-right", "top-left"}
        ``sparseattn attend --causal-align`` (contract §1.6): ``"top-left"`` places query i
        at key position i when ``seq_len_q != seq_len_k`` (PyTorch's ``is_causal`` tril).
    padding_align : {"full", "valid"}
        ``sparseattn attend --padding-align`` (contract §2.6): ``"valid"`` places each batch
        element's causal diagonal and window by its own valid key count under right
        padding, as FlashAttention does (``key_padding_mask`` must then be right padding);
        with ``seq_len_q != seq_len_k`` each batch element runs on its own aligned pattern
        (an explicit mask), so ``impl`` must serve explicit masks. Full under the
        compatibility modes.
    compat, global_mask, q_global, k_global, v_global
        The compatibility modes of ``sparseattn attend`` (docs/contract.md §3.12,
        docs/peers.md): ``compat="hf-bigbird"`` (HF's block listing, a block listed twice
        counted twice; pattern bigbird with a ``random_table``; ``impl`` a1_dense_masked or
        cpu_k07_hf_listing); ``global_mask`` [batch, seq_len_k] bool (Longformer's per-batch
        global tokens); ``q_global``, ``k_global``, ``v_global`` shaped like q, k, v
        (Longformer's global projections: a global query's row reads only them). With
        ``dout`` under any of these ``impl`` must be ``a1_dense_masked`` and the gradients
        are the mode's float64 definition (contract §7.4–§7.5); with the projections the
        result also carries ``dq_global``, ``dk_global``, ``dv_global``.
    softcap : float, optional
        Logit softcap ``c`` > 0, finite: each allowed scaled score ``s`` becomes
        ``c * tanh(s / c)`` before ALiBi and the mask (Gemma 2; docs/contract.md §2.8).
    alibi_slopes : array, [num_heads] or [batch, num_heads] (of q), optional
        ALiBi slopes, finite: each allowed score gets ``-a * |p - j|`` with ``p = i +
        seq_len_k - seq_len_q`` (FlashAttention 2's definition; contract §2.8).
    sinks : array, [num_heads] (of q), optional
        One learned sink logit per query head, finite: it joins every real row's softmax
        denominator with a zero value, so ``lse`` includes it and a real row with no
        allowed key has ``lse = sink``, ``o = 0`` (gpt-oss; contract §2.9).
        A kernel that does not read grouped heads or one of these refuses them by name
        (``impls()`` lists each kernel's ``features``); none of them combines with
        ``masked_score`` or ``compat`` yet. With ``dout`` and ``sinks`` the result is an
        :class:`AttendSinksResult`, which adds ``dsinks`` (contract §2.9, §7.7).
    preset, layer : str, int, optional
        One layer of a model preset (docs/models.md, contract §6.4; ``sparseattn attend
        --preset NAME --layer L``): the layer's pattern, the model's scale and softcap.
        ``pattern``, ``scale``, ``softcap``, ``alibi_slopes`` and the compatibility modes
        are then refused (the preset fixes them); q must have the preset's ``num_heads``, k
        and v its ``num_kv_heads``, q and k its ``head_dim``; ``sinks`` is required when
        the model has sinks (their values are weights, not shipped) and refused otherwise.
    cu_seqlens_q, cu_seqlens_k : array of int32/int64, [B + 1], optional
        A packed variable-length batch (FlashAttention's varlen; docs/contract.md §2.10):
        q ``[total_q, num_heads, head_dim]``, k and v ``[total_k, num_kv_heads, d]``;
        sequence ``b`` is q rows ``cu_seqlens_q[b] .. cu_seqlens_q[b+1] - 1`` against k
        rows ``cu_seqlens_k[b] .. cu_seqlens_k[b+1] - 1``, with its own positions and its
        own pattern. Returns o ``[total_q, num_heads, head_dim_v]`` and lse ``[num_heads,
        total_q]``; with ``dout`` (packed like o) an :class:`AttendSinksResult` whose dq,
        dk, dv are packed like q, k, v (``dsinks`` None without sinks).
    cache_seqlens : array of int32/int64, [batch], optional
        Decoding against a KV cache (``flash_attn_with_kvcache``; contract §2.11): k and v
        ``[batch, num_kv_heads, L_cache, d]``, of which element b's first
        ``cache_seqlens[b]`` slots are its keys; query i sits at ``i + cache_seqlens[b] -
        seq_len_q``. The other slots are never read. Forward only.
    block_table : array of int32/int64, [batch, max_pages], optional
        Paged KV (contract §2.12; needs ``cache_seqlens``): k and v are page pools
        ``[num_pages, num_kv_heads, page_size, d]`` and key t of element b lives in page
        ``block_table[b][t // page_size]``. Under a layout ``key_padding_mask``, the
        compatibility modes and the conventions other than ``layout`` (a cache only) and
        ``lse_base`` keep their defaults.

    Returns
    -------
    o : ndarray, [..., seq_len_q, head_dim_v]
        In the kernel's own dtype: float64 for the reference ladder, float32 for the
        optimized kernels (their inputs are q, k, v rounded to float32).
    lse : ndarray, [..., seq_len_q]
        Natural log; -inf on fully masked rows. An approximation may have no estimate for
        some rows (Nyströmformer): NaN there, with a ``RuntimeWarning``.
    dq, dk, dv : ndarray, the shapes of q, k, v as given (only with ``dout``)
        Then the result is an :class:`AttendResult` ``(o, lse, dq, dk, dv)``: the
        gradients of ``sum(dout * o)`` (docs/contract.md §7: ``dV = P^T dO``, ``dS = P *
        (dO V^T - rowsum(dO * O))``, ``dQ = scale dS K``, ``dK = scale dS^T Q``), in the
        backward kernel's dtype. A fully masked row's dq and a padded or unattended key's
        dk, dv are exactly 0 (contract §7.2). For PyTorch: ``torch.from_numpy(r.dq)``.
    dq_global, dk_global, dv_global : ndarray (with ``dout`` and the projections only)
        Then the result is an :class:`AttendGlobalResult`.

    Raises
    ------
    ValueError
        Bad shapes, dtypes, non-finite inputs, a bad scale, an unknown ``impl`` or one that
        does not serve the pattern, pattern parameters that do not fit the sizes — with the
        CLI's one-line message (contract §5). With ``dout``: a ``dout`` that is not o's
        shape (``invalid dout shape = ...``) or holds NaN/Inf (``invalid dout[b,h,i,e] =
        nan: must be finite``), an ``impl`` without a backward pass (``invalid impl = ...:
        has no backward pass (needed by dout); implementations with one: ...``).
    MemoryError
        A buffer that would not fit in memory.
    RuntimeError
        A CUDA kernel without a device.

    Notes
    -----
    The kernels (forward and backward) run with the GIL released: threads may call
    ``attend`` concurrently.
    """
    if preset is None:
        p = _pattern(pattern)
    if not isinstance(impl, str):
        raise _arrays.invalid("impl", impl, "must be a kernel name (sparseattn.impls())")
    if layout not in ("bhsd", "bshd"):
        raise _arrays.invalid("layout", layout, "must be bhsd or bshd")
    if str(lse_base) not in ("e", "2"):
        raise _arrays.invalid("lse_base", lse_base, "must be e or 2")
    if key_padding_polarity not in ("keep", "ignore"):
        raise _arrays.invalid("key_padding_polarity", key_padding_polarity,
                              "must be keep or ignore")
    if padded_queries == "any":
        raise _arrays.invalid("padded_queries", padded_queries,
                              "must be zero for attend: it writes padded rows as o = 0, lse = "
                              "-inf (contract §2.4); 'any' only tells check not to compare them")
    if padded_queries != "zero":
        raise _arrays.invalid("padded_queries", padded_queries, "must be zero or any")
    qa, ka, va = (_arrays.float_array(x, n) for x, n in ((q, "q"), (k, "k"), (v, "v")))
    layouts = {"cu_seqlens_q": cu_seqlens_q, "cu_seqlens_k": cu_seqlens_k,
               "cache_seqlens": cache_seqlens, "block_table": block_table}
    if _layouts.requested(layouts):  # contract §2.10-§2.12: every sequence on its own
        _layouts.refuse_defaults(
            {"key_padding_mask": (key_padding_mask, None),
             "masked_score": (str(masked_score), "-inf"),
             "causal_align": (causal_align, "bottom-right"),
             "padding_align": (padding_align, "full"),
             "key_padding_polarity": (key_padding_polarity, "keep"), "compat": (compat, None),
             "global_mask": (global_mask, None), "q_global": (q_global, None),
             "k_global": (k_global, None), "v_global": (v_global, None)},
            "cu_seqlens_q" if cu_seqlens_q is not None else "cache_seqlens")
        p, scale, softcap = _preset_call(
            preset, layer, pattern, {"scale": scale, "softcap": softcap,
                                     "alibi_slopes": alibi_slopes},
            _layouts.shapes_for_preset(qa, ka, va, cu_seqlens_q is not None), sinks)
        da = None if dout is None else _arrays.float_array(dout, "dout")
        out = _layouts.attend(qa, ka, va, p._spec, impl, _scale(scale), da, layout, lse_base,
                              _score_mods(softcap, alibi_slopes, sinks), layouts)
        return out if da is None else AttendSinksResult(*out)
    bshd = layout == "bshd"
    swap = (lambda x: np.ascontiguousarray(np.swapaxes(x, -3, -2)) if x.ndim >= 3 else x)
    da = None if dout is None else _arrays.float_array(dout, "dout")
    if bshd:  # [..., seq_len, num_heads, d] -> [..., num_heads, seq_len, d]
        qa, ka, va = (swap(x) for x in (qa, ka, va))
        da = None if da is None else swap(da)
    p, scale, softcap = _preset_call(
        preset, layer, pattern,
        {"scale": scale, "softcap": softcap, "alibi_slopes": alibi_slopes, "compat": compat,
         "global_mask": global_mask, "q_global": q_global, "k_global": k_global,
         "v_global": v_global}, (qa.shape, ka.shape, va.shape), sinks)
    pad = _padding(key_padding_mask)
    if pad is not None and key_padding_polarity == "ignore":
        pad = np.ascontiguousarray((pad == 0).astype(pad.dtype))
    mode, gm, proj = _compat_args(compat, global_mask, q_global, k_global, v_global, bshd)
    mods = _score_mods(softcap, alibi_slopes, sinks)
    o, lse, nan_rows, dq, dk, dv, dqg, dkg, dvg, dsinks = _C.attend(
        qa, ka, va, p._spec, impl, _scale(scale), pad, da, _masked_score_text(masked_score),
        mode, gm, proj, str(causal_align), str(padding_align), *mods)
    if nan_rows:
        warnings.warn(f"{impl} has no lse estimate for {nan_rows} rows (NaN there)",
                      RuntimeWarning, stacklevel=2)
    o, lse = _out_shapes(qa, o, lse)
    if str(lse_base) == "2":
        lse = lse / np.log(2.0)
    if bshd and o.ndim >= 3:
        o = swap(o)
    if da is None:
        return o, lse
    # The gradients keep the shapes of q, k, v as given (the CLI keeps its files' ranks).
    dq, dk, dv = dq.reshape(qa.shape), dk.reshape(ka.shape), dv.reshape(va.shape)
    if bshd:
        dq, dk, dv = swap(dq), swap(dk), swap(dv)
    if dsinks is not None:
        return AttendSinksResult(o, lse, dq, dk, dv, dsinks)
    if dqg is None:
        return AttendResult(o, lse, dq, dk, dv)
    # The projections' gradients keep the projections' shapes as given.
    dqg, dkg, dvg = (g.reshape(x.shape) for g, x in zip((dqg, dkg, dvg), proj))
    if bshd:
        dqg, dkg, dvg = swap(dqg), swap(dkg), swap(dvg)
    return AttendGlobalResult(o, lse, dq, dk, dv, dqg, dkg, dvg)


class AttendSinksResult(NamedTuple):
    """What :func:`attend` returns with ``dout`` and ``sinks``: :class:`AttendResult`'s
    fields and the sinks' gradient.

    Attributes
    ----------
    o, lse, dq, dk, dv
        As :class:`AttendResult`; with fewer kv heads than query heads dk and dv have the
        kv heads (each the sum over its group, docs/contract.md §2.7).
    dsinks : ndarray of float64, [num_heads]
        ``d sum(dout * o) / d sinks``: ``-sum_{b,i} exp(sinks[h] - lse[b,h,i]) *
        <dout[b,h,i], o[b,h,i]>`` (docs/contract.md §2.9).
    """

    o: np.ndarray
    lse: np.ndarray
    dq: np.ndarray
    dk: np.ndarray
    dv: np.ndarray
    dsinks: np.ndarray


class Timing(NamedTuple):
    """What :func:`time_impl` returns.

    Attributes
    ----------
    seconds : ndarray of float64, [repeats]
        Wall-clock seconds of each timed call of the kernel, in call order.
    o : ndarray, [..., seq_len_q, head_dim_v]
    lse : ndarray, [..., seq_len_q]
        The last timed call's output, in the kernel's dtype (as :func:`attend` returns it).
    """

    seconds: np.ndarray
    o: np.ndarray
    lse: np.ndarray


def time_impl(q: Any, k: Any, v: Any, pattern: Pattern, impl: str, *, repeats: int = 5,
              warmup: int = 1, scale: Optional[float] = None,
              key_padding_mask: Any = None, softcap: Optional[float] = None,
              alibi_slopes: Any = None, sinks: Any = None, layout: str = "bhsd",
              cu_seqlens_q: Any = None, cu_seqlens_k: Any = None, cache_seqlens: Any = None,
              block_table: Any = None) -> Timing:
    """Times one registered kernel on prepared inputs: kernel time only, once it is checked.

    The inputs are converted and the pattern built once, untimed (the same preparation
    :func:`attend` does: q, k, v to float64 for the oracle, rounded to float32 for the
    float32 kernels); then the kernel's ``run`` is called ``warmup`` times untimed and
    ``repeats`` times timed, each call into a fresh output (its allocation is part of the
    call), with the GIL released. The first untimed call is checked against the float64
    oracle at the kernel's registry tolerance (contract §4.2, §4.7; the whole output up
    to 2048² query-key pairs, 16 rows of every (batch, head) above): an exact kernel that
    fails is never timed. The C++ harness ``api/measure.h`` does all of this, as for the
    benchmarks. Used by ``tools/peers_bench.py`` (``make peers-bench``, docs/benchmarks.md
    "Peers").

    Parameters
    ----------
    q : array, [batch, num_heads, seq_len_q, head_dim] (leading dims optional)
    k : array, [batch, num_heads, seq_len_k, head_dim]
    v : array, [batch, num_heads, seq_len_k, head_dim_v]
        As :func:`attend` takes them (float16/32/64, finite).
    pattern : Pattern
    impl : str
        A registry name (:func:`impls`) that serves ``pattern``.
    repeats : int
        Timed calls, >= 1.
    warmup : int
        Untimed calls before them, >= 0; the first is the checked one, which is made
        even when ``warmup`` is 0.
    scale : float, optional
        Score scale, finite; default ``1/sqrt(head_dim)`` (contract §4).
    key_padding_mask : array of bool, [batch, seq_len_k], optional
        True = real token (contract §2).
    softcap, alibi_slopes, sinks
        As :func:`attend` (contract §2.8–§2.9); ``impl`` must read them.
    layout, cu_seqlens_q, cu_seqlens_k, cache_seqlens, block_table
        A sequence layout of :func:`attend` (contract §2.10–§2.12; ``layout="bshd"`` for a
        cache only). Then each timed call is the whole layout call as ``attend`` makes it —
        the walk's reading of each sequence included (a kernel that reads a cache in place
        gets it whole) — and the first call is checked against every sequence's oracle.

    Returns
    -------
    Timing
        ``(seconds, o, lse)``: ``seconds`` [repeats] wall clock per call (a monotonic
        clock read around ``run``); ``o`` and ``lse`` of the last call, equal to what
        :func:`attend` returns for the same arguments.

    Raises
    ------
    ValueError
        Bad ``repeats`` (``invalid repeats = 0: ...``) or ``warmup``, an unknown ``impl``
        or one that does not serve the pattern (``invalid impl = ...``), an exact kernel
        whose checked call fails (``invalid impl = NAME: failed its check against the
        oracle a1_dense_masked (o: ...): not timed``), and every input error
        :func:`attend` raises (contract §5).
    MemoryError
        A buffer that would not fit in memory.

    Notes
    -----
    Wall-clock time: on a shared machine other load inflates it. Compare kernels by ratios
    taken in one run, interleaved (``tools/peers_bench.py`` does).
    """
    p = _pattern(pattern)
    if not isinstance(impl, str):
        raise _arrays.invalid("impl", impl, "must be a kernel name (sparseattn.impls())")
    n = _arrays.integer("repeats", repeats, 1, allowed="must be an integer >= 1 (timed calls)")
    w = _arrays.integer("warmup", warmup, 0, allowed="must be an integer >= 0 (untimed calls first)")
    qa, ka, va = (_arrays.float_array(x, name) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    layouts = {"cu_seqlens_q": cu_seqlens_q, "cu_seqlens_k": cu_seqlens_k,
               "cache_seqlens": cache_seqlens, "block_table": block_table}
    if _layouts.requested(layouts):  # contract §2.10-§2.12
        _layouts.refuse_defaults({"key_padding_mask": (key_padding_mask, None)},
                                 "cu_seqlens_q" if cu_seqlens_q is not None else "cache_seqlens")
        seconds, o, lse = _layouts.time_impl(qa, ka, va, p._spec, impl, _scale(scale), n, w,
                                             layout, _score_mods(softcap, alibi_slopes, sinks),
                                             layouts)
        return Timing(np.asarray(seconds, dtype=np.float64), o, lse)
    if layout != "bhsd":
        raise _arrays.invalid("layout", layout, "must be bhsd without a cache (time_impl takes "
                              "bhsd arrays; bshd only with cache_seqlens)")
    seconds, o, lse = _C.time_impl(qa, ka, va, p._spec, impl, _scale(scale),
                                   _padding(key_padding_mask), n, w,
                                   *_score_mods(softcap, alibi_slopes, sinks))
    o, lse = _out_shapes(qa, o, lse)
    return Timing(np.asarray(seconds, dtype=np.float64), o, lse)


def _candidate(x: Any, name: str) -> Tuple[np.ndarray, str]:
    a = _arrays.to_numpy(x, name)
    if a.dtype.kind != "f" or a.dtype.itemsize not in (2, 4, 8):
        raise _arrays.invalid(f"{name} dtype", a.dtype, "must be float16, float32 or float64")
    dtype = {2: "float16", 4: "float32", 8: "float64"}[a.dtype.itemsize]
    return _arrays.float_array(a, name), dtype


def _given(x: Any) -> str:
    """How an error message shows an array argument: its shape (the CLI shows a path)."""
    shape = getattr(x, "shape", None)
    return "array" if shape is None else f"array of shape {tuple(shape)}"


def _require_dout(dout: Any, given: Dict[str, Any]) -> None:
    """Gradient candidates: each needs dout; dout needs at least one (as the CLI's flags)."""
    for name, x in given.items():
        if x is not None and dout is None:
            raise _arrays.invalid(name, _given(x), "needs dout (the gradient of o)")
    if dout is not None and all(x is None for x in given.values()):
        raise _arrays.invalid("dout", _given(dout),
                              "asks for gradient checks: give at least one of dq, dk, dv")


def check(q: Any, k: Any, v: Any, pattern: Optional[Pattern], o: Any, lse: Any = None,
          atol: Optional[float] = None, rtol: Optional[float] = None,
          scale: Optional[float] = None, key_padding_mask: Any = None, dout: Any = None,
          dq: Any = None, dk: Any = None, dv: Any = None, *,
          layout: str = "bhsd", lse_base: str = "e", padded_queries: str = "zero",
          key_padding_polarity: str = "keep", causal_align: str = "bottom-right",
          masked_score: Union[str, float] = "-inf", padding_align: str = "full",
          compat: Optional[str] = None,
          global_mask: Any = None, q_global: Any = None, k_global: Any = None,
          v_global: Any = None, dq_global: Any = None, dk_global: Any = None,
          dv_global: Any = None, probes: str = "auto",
          probe_budget: float = 5.0, tolerance_rule: str = "table", factor: float = 2.0,
          floor: float = 1e-6, naive_dtype: Optional[str] = None,
          softcap: Optional[float] = None, alibi_slopes: Any = None,
          sinks: Any = None, preset: Optional[str] = None,
          layer: Optional[int] = None, cu_seqlens_q: Any = None, cu_seqlens_k: Any = None,
          cache_seqlens: Any = None, block_table: Any = None,
          dsinks: Any = None) -> CheckReport:
    """Compares a candidate output (and its gradients) with the float64 oracles.

    The same computation as ``sparseattn check`` (docs/contract.md §4): the oracle
    ``a1_dense_masked`` runs on q, k, v; each candidate tensor is judged element by
    element, non-finite values first, then ``|x - ref| <= atol + rtol * |ref|``; ``-inf``
    matches ``-inf`` (a fully masked row's lse). With ``dout``, candidate gradients are
    judged the same way against the gradient oracle ``b1_dense_masked_grad``
    (docs/contract.md §7.3, docs/backward.md) — ``sparseattn check --dout DO.npy
    --candidate-dq DQ.npy ...``.

    Parameters
    ----------
    q, k, v, pattern, scale, key_padding_mask
        As :func:`attend`.
    o : array, [batch, num_heads, seq_len_q, head_dim_v] (leading 1s may be omitted)
        The candidate output, float16/32/64; its dtype picks the default tolerance.
    lse : array, [batch, num_heads, seq_len_q], optional
        The candidate log-sum-exp (natural log; -inf on fully masked rows).
    atol, rtol : float, optional
        Finite, >= 0. Default by each candidate's dtype (docs/numerics.md): float64
        1e-12/1e-12, float32 2e-5/2e-4, float16 2e-3/2e-3. Given, they apply to every
        candidate, gradients included.
    dout : array, o's shape, optional
        The gradient of the loss with respect to o the candidate gradients were computed
        for; finite. Needs at least one of dq, dk, dv.
    dq, dk, dv : array, the shapes of q, k, v (leading 1s may be omitted), optional
        Candidate gradients of ``sum(dout * o)`` with respect to q, k, v, float16/32/64;
        each needs ``dout``. A fully masked row's dq and a padded key's dk, dv must be 0
        (contract §7.2).
    layout, lse_base, padded_queries, key_padding_polarity, causal_align, masked_score, padding_align
        The convention flags of ``sparseattn check`` (docs/conventions.md, contract §1.6):
        ``layout="bshd"`` reads q, k, v, o (and dout, dq, dk, dv) as [batch, seq_len, num_heads, d];
        ``lse_base="2"``; ``padded_queries="any"``; ``key_padding_polarity="ignore"``
        (PyTorch's mask); ``causal_align="top-left"``; ``masked_score=-1e9``. With
        ``dout`` under a finite ``masked_score`` the gradients are judged against that
        function's (``masked_score_grad``, contract §7.6). ``padding_align="valid"``: each
        batch element's causal diagonal and window placed by its valid key count under
        right padding, as FlashAttention does (contract §2.6; ``key_padding_mask`` must
        then be right padding).
    compat, global_mask, q_global, k_global, v_global
        As :func:`attend`: the oracle is the compatibility mode's float64 definition
        (contract §3.12) and, with ``dout``, so are the gradients (``hf_listing_grad``,
        ``longformer_compat_grad``; contract §7.4–§7.5).
    dq_global, dk_global, dv_global : array, the projections' shapes, optional
        Candidate gradients of the global projections; each needs ``dout`` and
        ``q_global``, ``k_global``, ``v_global``.
    dsinks : array, [num_heads], optional
        Candidate gradient of the sinks (contract §7.7), judged against
        ``b1_dense_masked_grad``'s dσ; needs ``dout`` and ``sinks``. ``sparseattn check
        --candidate-dsinks``; the report's ``dsinks``.
    probes : {"auto", "always", "never"}
        The cause probes of a failing check (docs/contract.md §4.9): ``"auto"`` runs them
        within ``probe_budget``, ``"always"`` on every failing row with no budget,
        ``"never"`` not at all. ``sparseattn check --probes``.
    probe_budget : float
        Seconds of wall clock the probes may take, finite, > 0 (default 5); the report's
        ``probes["not_run"]`` lists those it left out. ``sparseattn check --probe-budget``.
    tolerance_rule : {"table", "reference-error"}
        ``"table"`` (default): ``atol + rtol * |ref|`` by the candidate's dtype.
        ``"reference-error"`` (contract §4.10): pass when the candidate's max and mean error
        are at most ``factor`` times those of a naive implementation in ``naive_dtype``,
        plus ``floor``; o and lse only (refused with ``dout`` and under the compatibility
        modes). ``sparseattn check --tolerance-rule``.
    factor : float
        F for ``"reference-error"``, finite, >= 1 (``--factor``).
    floor : float
        Absolute error floor for ``"reference-error"``, finite, >= 0 (``--floor``).
    naive_dtype : {"float32", "float16", "bfloat16"}, optional
        The naive implementation's precision; default the candidate o's dtype (float16
        for a float16 o, else float32), as ``--naive-dtype``.
    softcap, alibi_slopes, sinks
        As :func:`attend`: the oracle uses them (contract §2.8–§2.9), and a failing check's
        probes try their usual mistakes (sinks ignored or in only one of lse and p, softcap
        missing, before the scale or after the mask, ALiBi's sign or alignment, and with
        grouped kv heads a kv head read as ``h mod num_kv_heads``).
    preset, layer : str, int, optional
        As :func:`attend` (``sparseattn check --preset NAME --layer L``): pass ``None`` as
        ``pattern``; the oracle uses the layer's pattern, the model's scale and softcap.
    cu_seqlens_q, cu_seqlens_k, cache_seqlens, block_table : array of int, optional
        The sequence layouts of :func:`attend` (docs/contract.md §2.10–§2.12): o (and lse)
        in the shapes attend returns under them; each sequence is judged against its own
        oracle and the report's batch index is the sequence's. With ``cu_seqlens_q``,
        ``dout`` [total_q, num_heads, head_dim_v] and ``dq``, ``dk``, ``dv`` packed like q,
        k, v (and ``dsinks``) are judged sequence by sequence against
        ``b1_dense_masked_grad`` (contract §7.8), a failure located by sequence; with a
        cache they are refused (decoding is forward only). The global projections'
        gradients, the reference-error rule and the conventions other than ``layout`` and
        ``lse_base`` are refused with them.

    Returns
    -------
    CheckReport
        ``report.passed``, ``report.summary()``, ``report.to_dict()`` (the CLI's JSON);
        ``report.dq`` etc. with ``dout``.

    Raises
    ------
    ValueError
        As :func:`attend`; a candidate of the wrong shape or dtype (naming
        ``layout="bshd"`` when the shapes fit it, grouped-query attention when q and k
        differ only in num_heads); ``probes`` or ``probe_budget`` out of range; a gradient without
        ``dout`` (``invalid dq = ...: needs dout``), ``dout`` without a gradient, a
        ``dout`` of the wrong shape or holding NaN/Inf (``invalid dout ...``);
        ``padding_align="valid"`` without ``key_padding_mask`` or with a row that is not
        right padding (``invalid key_padding_mask = batch element b: ...``).
    """
    if preset is None:
        _pattern(pattern)
    if layout not in ("bhsd", "bshd"):
        raise _arrays.invalid("layout", layout, "must be bhsd or bshd")
    qa, ka, va = (_arrays.float_array(x, n) for x, n in ((q, "q"), (k, "k"), (v, "v")))
    oa, o_dtype = _candidate(o, "o")
    layouts = {"cu_seqlens_q": cu_seqlens_q, "cu_seqlens_k": cu_seqlens_k,
               "cache_seqlens": cache_seqlens, "block_table": block_table}
    if _layouts.requested(layouts):  # contract §2.10-§2.12: each sequence, its own oracle
        _layouts.refuse_defaults(
            {"key_padding_mask": (key_padding_mask, None),
             "dq_global": (dq_global, None), "dk_global": (dk_global, None),
             "dv_global": (dv_global, None),
             "padded_queries": (padded_queries, "zero"),
             "key_padding_polarity": (key_padding_polarity, "keep"),
             "causal_align": (causal_align, "bottom-right"),
             "masked_score": (str(masked_score), "-inf"),
             "padding_align": (padding_align, "full"), "compat": (compat, None),
             "global_mask": (global_mask, None), "q_global": (q_global, None),
             "k_global": (k_global, None), "v_global": (v_global, None),
             "tolerance_rule": (tolerance_rule, "table")},
            "cu_seqlens_q" if cu_seqlens_q is not None else "cache_seqlens")
        p, scale, softcap = _preset_call(
            preset, layer, pattern, {"scale": scale, "softcap": softcap,
                                     "alibi_slopes": alibi_slopes},
            _layouts.shapes_for_preset(qa, ka, va, cu_seqlens_q is not None), sinks)
        la, lse_dtype = (None, "float64") if lse is None else _candidate(lse, "lse")
        a = None if atol is None else _arrays.real("atol", atol, 0.0)
        r = None if rtol is None else _arrays.real("rtol", rtol, 0.0)
        # Gradients of a packed batch (contract §7.8): packed like their inputs.
        layout_grads = {"dq": dq, "dk": dk, "dv": dv, "dsinks": dsinks}
        _require_dout(dout, layout_grads)
        candidates = [(None, "float64") if x is None else _candidate(x, name)
                      for name, x in layout_grads.items()]
        da = None if dout is None else _arrays.float_array(dout, "dout")
        return CheckReport._from(_layouts.check(
            qa, ka, va, p._spec, oa, o_dtype, la, lse_dtype, a, r, _scale(scale), layout,
            lse_base, probes, _arrays.real("probe_budget", probe_budget, 0.0),
            _score_mods(softcap, alibi_slopes, sinks), layouts, da,
            [c[0] for c in candidates], [c[1] for c in candidates]))
    if layout == "bshd":  # [..., seq_len, num_heads, d] -> [..., num_heads, seq_len, d]
        qa, ka, va, oa = (np.ascontiguousarray(np.swapaxes(x, -3, -2)) if x.ndim >= 3 else x
                          for x in (qa, ka, va, oa))
    p, scale, softcap = _preset_call(
        preset, layer, pattern,
        {"scale": scale, "softcap": softcap, "alibi_slopes": alibi_slopes, "compat": compat,
         "global_mask": global_mask, "q_global": q_global, "k_global": k_global,
         "v_global": v_global}, (qa.shape, ka.shape, va.shape), sinks)
    la, lse_dtype = (None, "float64") if lse is None else _candidate(lse, "lse")
    a = None if atol is None else _arrays.real("atol", atol, 0.0)
    r = None if rtol is None else _arrays.real("rtol", rtol, 0.0)
    conventions = {"lse_base": str(lse_base), "padded_queries": padded_queries,
                   "key_padding_polarity": key_padding_polarity, "causal_align": causal_align,
                   "masked_score": _masked_score_text(masked_score),
                   "padding_align": padding_align}
    mode, gm, proj = _compat_args(compat, global_mask, q_global, k_global, v_global,
                                  layout == "bshd")
    # Gradient candidates: each needs dout; dout needs at least one (as the CLI's flags).
    given = {"dq": dq, "dk": dk, "dv": dv, "dq_global": dq_global, "dk_global": dk_global,
             "dv_global": dv_global, "dsinks": dsinks}
    _require_dout(dout, given)
    da = None if dout is None else _arrays.float_array(dout, "dout")
    if da is not None and layout == "bshd":
        da = np.ascontiguousarray(np.swapaxes(da, -3, -2)) if da.ndim >= 3 else da
    grads: List[Optional[np.ndarray]] = []
    dtypes: List[str] = []
    for name, x in given.items():
        ga, g_dtype = (None, "float64") if x is None else _candidate(x, name)
        if ga is not None and layout == "bshd" and ga.ndim >= 3:
            ga = np.ascontiguousarray(np.swapaxes(ga, -3, -2))
        grads.append(ga)
        dtypes.append(g_dtype)
    return CheckReport._from(_C.check(qa, ka, va, p._spec, oa, o_dtype, la, lse_dtype, a, r,
                                      _scale(scale), _padding(key_padding_mask), conventions,
                                      da, grads, dtypes, mode, gm, proj, layout, str(probes),
                                      _arrays.real("probe_budget", probe_budget, 0.0),
                                      str(tolerance_rule), _arrays.real("factor", factor, 1.0),
                                      _arrays.real("floor", floor, 0.0),
                                      "" if naive_dtype is None else str(naive_dtype),
                                      *_score_mods(softcap, alibi_slopes, sinks)))


def performer_favor(q: Any, k: Any, v: Any, num_features: int = 256, seed: int = 0,
                    orthogonal: bool = True,
                    scale: Optional[float] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Performer FAVOR+: dense softmax attention approximated with positive (orthogonal)
    random features (Choromanski et al. 2021, §2.2-2.4, Lemma 1). NOT exact: its error
    against the oracle is a measurement (docs/approximations.md), never a tolerance.

    Parameters
    ----------
    q, k, v, scale
        As :func:`attend` (dense, not causal, no key padding).
    num_features : int
        Random features m, >= 1.
    seed : int
        Seed of the projection's PRNG, [0, 2^64); a pure function of (seed, head).
    orthogonal : bool
        Orthogonal random features (§2.4); False: i.i.d. Gaussian rows (§2.3).

    Returns
    -------
    o : ndarray of float64, [..., seq_len_q, head_dim_v]
    lse : ndarray of float64, [..., seq_len_q]
        The estimate of log sum_j exp(scale * q_i . k_j).

    Raises
    ------
    ValueError
        As :func:`attend`; ``num_features < 1``.
    RuntimeError
        A row's estimated normalizer underflowed to 0.
    """
    qa, ka, va = (_arrays.float_array(x, n) for x, n in ((q, "q"), (k, "k"), (v, "v")))
    if not isinstance(orthogonal, (bool, np.bool_)):
        raise _arrays.invalid("orthogonal", orthogonal, "must be True or False")
    o, lse = _C.performer_favor(qa, ka, va, _arrays.integer("num_features", num_features),
                                _arrays.seed(seed), bool(orthogonal), _scale(scale))
    return _out_shapes(qa, o, lse)


def nystrom(q: Any, k: Any, v: Any, num_landmarks: int = 64, pinv: str = "iterative",
            pinv_iterations: int = 6,
            scale: Optional[float] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Nyströmformer: dense softmax attention through segment-mean landmarks (Xiong et al.
    2021, §3, eq. 15). NOT exact (docs/approximations.md).

    Parameters
    ----------
    q, k, v, scale
        As :func:`attend` (dense, not causal, no key padding).
    num_landmarks : int
        Landmarks c, 1 <= c <= min(seq_len_q, seq_len_k).
    pinv : {"iterative", "exact"}
        The paper's 6-step iterative pseudo-inverse (eq. 14), or Eigen's exact one.
    pinv_iterations : int
        Iterations of the iterative pseudo-inverse, >= 0.

    Returns
    -------
    o : ndarray of float64, [..., seq_len_q, head_dim_v]
    lse : ndarray of float64, [..., seq_len_q]
        NaN on rows where the approximation has no positive normalizer (a
        ``RuntimeWarning`` says how many).
    """
    qa, ka, va = (_arrays.float_array(x, n) for x, n in ((q, "q"), (k, "k"), (v, "v")))
    if not isinstance(pinv, str):
        raise _arrays.invalid("pinv", pinv, "must be iterative or exact")
    o, lse, undefined = _C.nystrom(qa, ka, va, _arrays.integer("num_landmarks", num_landmarks),
                                   pinv, _arrays.integer("pinv_iterations", pinv_iterations),
                                   _scale(scale))
    if undefined:
        warnings.warn(f"nystrom has no lse estimate for {undefined} rows (NaN there)",
                      RuntimeWarning, stacklevel=2)
    return _out_shapes(qa, o, lse)
