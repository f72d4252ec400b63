# Type stub of the private C++ module (python/src/module.cpp). The public API, with its
# docstrings, is in the package's .py files; these functions take already-checked
# arguments (C-contiguous float32/float64, uint8 and int64 arrays).
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

class Spec:
    @property
    def kind(self) -> str: ...
    def describe(self) -> str: ...

def make_spec(kind: str, causal: bool, window: int, dilation: int, global_tokens: List[int],
              num_random: int, block_size: int, num_random_blocks: int,
              num_global_tokens: int, seed: int, random_table: Optional[np.ndarray],
              segment_ids: Optional[np.ndarray], mask: Optional[np.ndarray],
              per_head: List[Spec], window_left: Optional[int] = None,
              window_right: Optional[int] = None, chunk_size: Optional[int] = None,
              kernel_size: Optional[int] = None) -> Spec: ...
def mask(spec: Spec, num_heads: int, seq_len_q: int, seq_len_k: int,
         key_padding_mask: Optional[np.ndarray]) -> np.ndarray: ...
def info(spec: Spec, num_heads: int, seq_len_q: int, seq_len_k: int,
         head_dim: int, key_padding_mask: Optional[np.ndarray]) -> Dict[str, Any]: ...
# python/src/mask_bindings.cpp: api/convention_mask.h, [batch, num_heads, seq_len_q, seq_len_k].
def convention_mask(spec: Spec, num_heads: int, seq_len_q: int, seq_len_k: int,
                    key_padding_mask: Optional[np.ndarray], key_padding_polarity: str,
                    causal_align: str, padding_align: str,
                    global_mask: Optional[np.ndarray]) -> np.ndarray: ...
def random_table(spec: Spec, num_heads: int, seq_len: int) -> np.ndarray: ...
def block_mask(spec: Spec, num_heads: int, seq_len_q: int, seq_len_k: int,
               block_size: int) -> Dict[str, np.ndarray]: ...
# (o, lse, NaN lse rows, dq, dk, dv, dq_global, dk_global, dv_global, dsinks); the
# gradients are None without dout; projections: [] or [q_global, k_global, v_global];
# softcap, alibi_slopes, sinks: contract §2.8-§2.9 (dsinks only with sinks and dout).
def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, spec: Spec, impl: str,
           scale: Optional[float], key_padding_mask: Optional[np.ndarray],
           dout: Optional[np.ndarray], masked_score: str, compat: str,
           global_mask: Optional[np.ndarray], projections: List[np.ndarray],
           causal_align: str, padding_align: str, softcap: Optional[float],
           alibi_slopes: Optional[np.ndarray],
           sinks: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray, int,
                                                 Optional[np.ndarray], Optional[np.ndarray],
                                                 Optional[np.ndarray], Optional[np.ndarray],
                                                 Optional[np.ndarray], Optional[np.ndarray],
                                                 Optional[np.ndarray]]: ...
# (seconds of each timed call, o and lse of the last one).
def time_impl(q: np.ndarray, k: np.ndarray, v: np.ndarray, spec: Spec, impl: str,
              scale: Optional[float], key_padding_mask: Optional[np.ndarray], repeats: int,
              warmup: int, softcap: Optional[float], alibi_slopes: Optional[np.ndarray],
              sinks: Optional[np.ndarray]) -> Tuple[List[float], np.ndarray, np.ndarray]: ...
# grads: [dq, dk, dv, dq_global, dk_global, dv_global, dsinks] candidates (None: not checked),
# grad_dtypes their own dtypes; compat, global_mask, projections as for attend.
def check(q: np.ndarray, k: np.ndarray, v: np.ndarray, spec: Spec, o: np.ndarray,
          o_dtype: str, lse: Optional[np.ndarray], lse_dtype: str, atol: Optional[float],
          rtol: Optional[float], scale: Optional[float],
          key_padding_mask: Optional[np.ndarray], conventions: Dict[str, str],
          dout: Optional[np.ndarray], grads: List[Optional[np.ndarray]],
          grad_dtypes: List[str], compat: str, global_mask: Optional[np.ndarray],
          projections: List[np.ndarray], layout: str, probes: str,
          probe_budget: float, tolerance_rule: str, factor: float, floor: float,
          naive_dtype: str, softcap: Optional[float], alibi_slopes: Optional[np.ndarray],
          sinks: Optional[np.ndarray]) -> CheckResult: ...

# contract §2.10-§2.12 (python/src/layout_bindings.cpp): (o, lse), or with dout
# (o, lse, dq, dk, dv, dsinks); cu_seqlens_q/k, cache_seqlens, block_table integer arrays.
def attend_layout(q: np.ndarray, k: np.ndarray, v: np.ndarray, spec: Spec, impl: str,
                  scale: Optional[float], cu_seqlens_q: Optional[np.ndarray],
                  cu_seqlens_k: Optional[np.ndarray], cache_seqlens: Optional[np.ndarray],
                  block_table: Optional[np.ndarray], layout: str, lse_base: str,
                  softcap: Optional[float], alibi_slopes: Optional[np.ndarray],
                  sinks: Optional[np.ndarray],
                  dout: Optional[np.ndarray]) -> Tuple[np.ndarray, ...]: ...
def time_layout(q: np.ndarray, k: np.ndarray, v: np.ndarray, spec: Spec, impl: str,
                scale: Optional[float], cu_seqlens_q: Optional[np.ndarray],
                cu_seqlens_k: Optional[np.ndarray], cache_seqlens: Optional[np.ndarray],
                block_table: Optional[np.ndarray], layout: str, repeats: int, warmup: int,
                softcap: Optional[float], alibi_slopes: Optional[np.ndarray],
                sinks: Optional[np.ndarray]) -> Tuple[List[float], np.ndarray, np.ndarray]: ...
def varlen_mask(spec: Spec, num_heads: int, cu_seqlens_q: Optional[np.ndarray],
                cu_seqlens_k: Optional[np.ndarray]) -> np.ndarray: ...
# `info --json` under a layout (api/layout_info.h); seq_len_q 0 for a packed batch.
def layout_info(spec: Spec, num_heads: int, head_dim: int, seq_len_q: int,
                cu_seqlens_q: Optional[np.ndarray], cu_seqlens_k: Optional[np.ndarray],
                cache_seqlens: Optional[np.ndarray],
                block_table: Optional[np.ndarray]) -> Dict[str, Any]: ...
def check_layout(q: np.ndarray, k: np.ndarray, v: np.ndarray, spec: Spec, o: np.ndarray,
                 o_dtype: str, lse: Optional[np.ndarray], lse_dtype: str,
                 atol: Optional[float], rtol: Optional[float], scale: Optional[float],
                 cu_seqlens_q: Optional[np.ndarray], cu_seqlens_k: Optional[np.ndarray],
                 cache_seqlens: Optional[np.ndarray], block_table: Optional[np.ndarray],
                 layout: str, lse_base: str, probes: str, probe_budget: float,
                 softcap: Optional[float], alibi_slopes: Optional[np.ndarray],
                 sinks: Optional[np.ndarray], dout: Optional[np.ndarray],
                 gradients: Sequence[Optional[np.ndarray]],
                 gradient_dtypes: Sequence[str]) -> CheckResult: ...

# check's report (api/check_result.h; python/src/report_bindings.cpp), read-only. json()
# and text() are the one renderer's (api/check_render.h): the CLI's JSON and --format text.
class TensorReport:
    tensor: str
    rows_are: str
    passed: bool
    nothing_compared: bool
    reason: str
    num_elements: int
    num_compared: int
    num_nonfinite: int
    num_mismatched: int
    max_abs_error: float
    max_rel_error: float
    max_abs_error_finite: float
    max_rel_error_finite: float
    worst_index: Tuple[int, ...]
    worst_candidate: float
    worst_reference: float
    error_over_tolerance: float
    atol: float
    rtol: float
    rows_truncated: int
    probable_cause: str
    def json(self) -> str: ...
    def line(self) -> str: ...

class CheckResult:
    passed: bool
    oracle: str
    pattern: str
    conventions: str
    o: TensorReport
    lse: Optional[TensorReport]
    dq: Optional[TensorReport]
    dk: Optional[TensorReport]
    dv: Optional[TensorReport]
    dq_global: Optional[TensorReport]
    dk_global: Optional[TensorReport]
    dv_global: Optional[TensorReport]
    dsinks: Optional[TensorReport]
    compat: str
    global_projections: bool
    gradient_oracle: str
    tolerance_rule: str
    rows_not_compared: int
    probable_cause: str
    hint: str
    def json(self) -> str: ...
    def text(self) -> str: ...
def performer_favor(q: np.ndarray, k: np.ndarray, v: np.ndarray, num_features: int,
                    seed: int, orthogonal: bool,
                    scale: Optional[float]) -> Tuple[np.ndarray, np.ndarray]: ...
def nystrom(q: np.ndarray, k: np.ndarray, v: np.ndarray, num_landmarks: int, pinv: str,
            pinv_iterations: int,
            scale: Optional[float]) -> Tuple[np.ndarray, np.ndarray, int]: ...
def reach(layers: Sequence[Tuple[Spec, int]], seq_len: int, num_layers: int, token: int,
          path: Optional[Tuple[int, int]], level: str) -> Dict[str, Any]: ...
def analyze(q: np.ndarray, k: np.ndarray, spec: Spec, windows: Optional[List[int]],
            scale: Optional[float]) -> Dict[str, Any]: ...
def extend_positions(table: np.ndarray, length: int, alpha: float) -> np.ndarray: ...
def impls() -> List[Dict[str, Any]]: ...
def grad_impls() -> List[Dict[str, Any]]: ...
def cpu_isa() -> str: ...
# python/src/sweep_bindings.cpp: the fields of sweep.json (api/sweep.h); seq_len is the CLI's
# text or the lengths.
def sweep(spec: Spec, num_heads: int, head_dim: int, seq_len: Any, impl: str, target: str,
          dtype: str, repeats: int, max_seconds: float, dense_baseline: str, fit_from: int,
          quiet: bool, key_padding_mask: Optional[np.ndarray], num_kv_heads: int,
          softcap: Optional[float], alibi_slopes: Optional[np.ndarray],
          sinks: Optional[np.ndarray], threads: int) -> Dict[str, Any]: ...
# python/src/field_bindings.cpp: core/field.h's spelling table and spell_flag().
def field_spellings() -> List[Dict[str, str]]: ...
def spell_flag(flag: str, spelling: str = "keyword") -> str: ...
# python/src/preset_bindings.cpp: api/preset_results.h's JSON.
def preset_names() -> List[str]: ...
def preset_reach(preset: str, seq_len: int) -> Dict[str, Any]: ...
def preset_info(preset: str, seq_len: int, layer: Optional[int]) -> Dict[str, Any]: ...
def preset_layer(preset: str, layer: int, q_shape: Optional[Sequence[int]], k_shape: Optional[Sequence[int]], v_shape: Optional[Sequence[int]]) -> Tuple[Spec, Dict[str, Any]]: ...
# selected attention (python/src/selected_bindings.cpp, contract §3.16-§3.18)
def make_selected_spec(kind: str, table: np.ndarray, causal: bool, duplicates: str,
                       block_size_q: Optional[int], block_size_k: Optional[int]) -> Spec: ...
def block_indices_from_block_mask(kv_num_blocks: np.ndarray, kv_indices: np.ndarray,
                                  full_kv_num_blocks: Optional[np.ndarray],
                                  full_kv_indices: Optional[np.ndarray]) -> np.ndarray: ...
def read_block_mask(dir: str) -> np.ndarray: ...
flex_block_size: int
def select_topk(scores: np.ndarray, top_k: int, causal: bool) -> np.ndarray: ...
def select_dsa(index_q: np.ndarray, index_k: np.ndarray, weights: np.ndarray,
               top_k: int) -> np.ndarray: ...
def dsa_index_scores(index_q: np.ndarray, index_k: np.ndarray, weights: np.ndarray) -> np.ndarray: ...
def select_moba(q: np.ndarray, k: np.ndarray, chunk_size: int, top_k: int) -> np.ndarray: ...
def select_nsa(scores: np.ndarray, block_size_k: int, num_selected: int, num_initial: int,
               num_local: int, seq_len_k: int) -> np.ndarray: ...
