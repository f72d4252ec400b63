"""Model presets (models/*.json; docs/models.md, contract §6.4): a real model's attention
stack, layer by layer, for ``sparseattn info --preset`` and ``sparseattn reach --preset``.

A preset replaces the pattern: its layers' patterns, heads and head dimension are the
model's, so these functions take the preset's name where :meth:`Pattern.info` and
:func:`reach` take a :class:`Pattern`.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import _arrays
from . import _sparseattn as _C


def preset_names() -> List[str]:
    """The presets there are (``sparseattn models``): file names of models/ without
    ``.json``, sorted; ``$SPARSEATTN_MODELS_DIR`` names another folder."""
    return list(_C.preset_names())


def preset_info(preset: str, seq_len: int, layer: Optional[int] = None) -> Dict[str, Any]:
    """What a model's attention costs at ``seq_len``: ``sparseattn info --preset PRESET
    --seq-len N [--layer L] --json``.

    Parameters
    ----------
    preset : str
        A name of :func:`preset_names` (e.g. ``"mistral-7b-v0.1"``).
    seq_len : int
        Tokens, >= 1 (self-attention).
    layer : int, optional
        Only this layer, 0-based, in [0, num_layers); default every layer.

    Returns
    -------
    dict
        ``preset``, ``model``, ``seq_len``, ``num_heads``, ``num_kv_heads``, ``head_dim``,
        ``kv_bytes_per_value``; ``layers`` (per layer: ``type``, ``pattern``,
        ``keys_per_query``, ``flops``, ``dense_flops`` (4 · nnz · head_dim · num_heads per
        batch element), ``kv_cache_tokens``, ``kv_cache_bytes`` (None for an encoder));
        ``total`` (``flops``, ``dense_flops``, ``speedup_bound``, the KV-cache bytes).

    Raises
    ------
    ValueError
        An unknown preset (``invalid preset = ...``), ``seq_len < 1``, a layer out of range.
    """
    if not isinstance(preset, str):
        raise _arrays.invalid("preset", preset, "must be a preset name (preset_names())")
    n = _arrays.integer("seq_len", seq_len, 1)
    lay = None if layer is None else _arrays.integer("layer", layer, 0)
    return _C.preset_info(preset, n, lay)


def preset_reach(preset: str, seq_len: int) -> Dict[str, Any]:
    """How information flows through a model's attention stack at ``seq_len``:
    ``sparseattn reach --preset PRESET --seq-len N --json`` (docs/information-flow.md).

    Parameters
    ----------
    preset : str
        A name of :func:`preset_names`.
    seq_len : int
        Tokens, >= 1.

    Returns
    -------
    dict
        ``preset``, ``model``, ``seq_len``, ``num_layers``, ``engine`` (closed-form band
        reach or the bitset graph); ``layers`` (per layer: ``connected_fraction``,
        ``last_query_coverage``, ``reaches_token_0``); ``first_reach_depth`` (None: never),
        ``first_reach_within_stack``, ``mixing_depth``, ``diameter``,
        ``mean_shortest_path``, ``never_connected``, ``connected_fraction``, ``hops``.

    Raises
    ------
    ValueError
        An unknown preset, ``seq_len < 1``, a stack too large for the bitset graph.
    """
    if not isinstance(preset, str):
        raise _arrays.invalid("preset", preset, "must be a preset name (preset_names())")
    return _C.preset_reach(preset, _arrays.integer("seq_len", seq_len, 1))
