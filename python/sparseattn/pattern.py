"""Attention patterns: which keys each query may attend (docs/contract.md §3).

A :class:`Pattern` is a description independent of sizes, like the CLI's pattern flags;
each method materializes it for the sizes it is given with the library's ``materialize()``
(pattern/pattern.h), the one canonical layout every kernel, the oracle and the
graph module read.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from . import _arrays
from . import _sparseattn as _C


@dataclass(frozen=True)
class BlockMask:
    """A pattern in block-sparse form, the fields of FlexAttention's ``BlockMask``.

    Queries and keys are cut into blocks of ``block_size`` tokens (the last block may be
    partial). For each (head, query block) the key blocks holding at least one allowed
    pair are split into *full* blocks (every pair allowed: no per-element mask needed) and
    *partial* ones (a ``mask_mod`` must say which pairs).

    Attributes
    ----------
    block_size : int
        Tokens per block side.
    seq_len_q, seq_len_k : int
        Sequence lengths in tokens.
    kv_num_blocks : ndarray of int32, shape [1, num_heads, num_q_blocks]
        Number of partial key blocks per query block.
    kv_indices : ndarray of int32, shape [1, num_heads, num_q_blocks, num_k_blocks]
        Their indices, ascending, first ``kv_num_blocks`` entries valid, padded with 0.
    full_kv_num_blocks, full_kv_indices : ndarray of int32
        The same for full blocks.

    Notes
    -----
    ``torch.nn.attention.flex_attention.BlockMask.from_kv_blocks(kv_num_blocks,
    kv_indices, full_kv_num_blocks, full_kv_indices, BLOCK_SIZE=block_size,
    mask_mod=...)`` takes these arrays (after ``torch.from_numpy``); the ``mask_mod``
    must reproduce :meth:`Pattern.mask` on partial blocks.
    """

    block_size: int
    seq_len_q: int
    seq_len_k: int
    kv_num_blocks: np.ndarray
    kv_indices: np.ndarray
    full_kv_num_blocks: np.ndarray
    full_kv_indices: np.ndarray

    def to_dense(self) -> np.ndarray:
        """Block map, uint8 [num_heads, num_q_blocks, num_k_blocks]: 0 no allowed pair,
        1 partial block, 2 full block."""
        _, h, nq = self.kv_num_blocks.shape
        nk = self.kv_indices.shape[-1]
        out = np.zeros((h, nq, nk), dtype=np.uint8)
        for hh in range(h):
            for r in range(nq):
                out[hh, r, self.kv_indices[0, hh, r, : self.kv_num_blocks[0, hh, r]]] = 1
                out[hh, r, self.full_kv_indices[0, hh, r, : self.full_kv_num_blocks[0, hh, r]]] = 2
        return out


def _block_mask_table(block_mask: Any) -> Tuple[np.ndarray, Tuple[int, int]]:
    """An object with FlexAttention's four tables (a :class:`BlockMask`, torch's BlockMask)
    -> (block_indices, its own (block_size_q, block_size_k)): ``block_size`` (ours),
    ``BLOCK_SIZE`` (torch's, an int or a pair), else FlexAttention's default 128."""
    if not (hasattr(block_mask, "kv_num_blocks") and hasattr(block_mask, "kv_indices")):
        raise _arrays.invalid("block_mask", type(block_mask).__name__,
                              "must be a folder of FlexAttention's .npy tables or a BlockMask "
                              "(kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices)")
    own: Any = getattr(block_mask, "block_size", None)
    if own is None:
        own = getattr(block_mask, "BLOCK_SIZE", _C.flex_block_size)
    pair = tuple(own) if isinstance(own, (tuple, list)) else (own, own)
    if len(pair) != 2:
        raise _arrays.invalid("block_mask.BLOCK_SIZE", own, "must be an int or a pair (q, k)")
    full_num = getattr(block_mask, "full_kv_num_blocks", None)
    full_idx = getattr(block_mask, "full_kv_indices", None)
    table = _C.block_indices_from_block_mask(
        _arrays.int_array(block_mask.kv_num_blocks, "kv_num_blocks"),
        _arrays.int_array(block_mask.kv_indices, "kv_indices"),
        None if full_num is None else _arrays.int_array(full_num, "full_kv_num_blocks"),
        None if full_idx is None else _arrays.int_array(full_idx, "full_kv_indices"))
    return table, (pair[0], pair[1])


def _window_of(window: Any, attention_window: Any) -> Any:
    """The one-sided window W from ``window`` or HF Longformer's ``attention_window`` (the
    total width 2W), as ``--window`` and ``--attention-window`` (contract §3.12)."""
    if attention_window is None:
        if window is None:
            raise _arrays.invalid("window", None, "give window (one-sided W) or "
                                  "attention_window (HF's total width 2W)")
        return window
    n = _arrays.integer("attention_window", attention_window, 0,
                        allowed="must be an even integer >= 0 (HF's total width 2W)")
    if n % 2:
        raise _arrays.invalid("attention_window", n, "must be even: it is HF's total width 2W "
                              "(W = N/2 keys on each side)")
    if window is not None:
        raise _arrays.invalid("attention_window", n,
                              "replaces window (one-sided W = N/2): give one of them")
    return n // 2


class Pattern:
    """Which keys each query may attend (docs/contract.md §3); build with a constructor.

    Constructors: :meth:`dense`, :meth:`window`, :meth:`longformer`, :meth:`random`,
    :meth:`bigbird`, :meth:`bigbird_etc`, :meth:`hierarchical`, :meth:`explicit`,
    :meth:`per_head`. A constructor checks the parameters that do not depend on the
    sequence length (``ValueError`` with the CLI's message, e.g. ``invalid window = -1:
    must be an integer >= 0 (one-sided, in steps)``); the methods that take sizes check
    the rest (global positions inside the sequence, random table entries, ...).

    Conventions (contract §2, §3): ``True`` means "may attend"; when ``seq_len_q !=
    seq_len_k`` query ``i`` sits at key position ``i + seq_len_k - seq_len_q``
    (bottom-right alignment); allowed keys form a set (a key listed twice counts once).
    """

    __slots__ = ("_spec", "_default_heads", "_block_size")

    def __init__(self, _spec: Any, _default_heads: Optional[int] = None,
                 _block_size: int = 128) -> None:
        if not isinstance(_spec, _C.Spec):
            raise TypeError("build a Pattern with a constructor, e.g. Pattern.window(4)")
        self._spec = _spec
        self._default_heads = _default_heads
        self._block_size = _block_size

    # ---- constructors ------------------------------------------------------------------
    @staticmethod
    def _make(kind: str, *, causal: bool = False, window: Any = 0, dilation: Any = 1,
              global_tokens: Sequence[int] = (), num_random: Any = 0, block_size: Any = 64,
              num_random_blocks: Any = 0, num_global_tokens: Any = 0, seed: Any = 0,
              random_table: Any = None, segment_ids: Any = None, mask: Any = None,
              heads: Sequence["Pattern"] = (), default_heads: Optional[int] = None,
              left: Any = None, right: Any = None, chunk_size: Any = None,
              kernel_size: Any = None) -> "Pattern":
        if not isinstance(causal, (bool, np.bool_)):
            raise _arrays.invalid("causal", causal, "must be True or False")
        g = [_arrays.integer("global_tokens", x) for x in global_tokens]

        def optional_int(name: str, value: Any) -> Optional[int]:
            return None if value is None else _arrays.integer(name, value)
        spec = _C.make_spec(
            kind, bool(causal), _arrays.integer("window", window),
            _arrays.integer("dilation", dilation), g, _arrays.integer("num_random", num_random),
            _arrays.integer("block_size", block_size),
            _arrays.integer("num_random_blocks", num_random_blocks),
            _arrays.integer("num_global_tokens", num_global_tokens), _arrays.seed(seed),
            None if random_table is None else _arrays.int_array(random_table, "random_table"),
            None if segment_ids is None else _arrays.int_array(segment_ids, "segment_ids"),
            None if mask is None else _arrays.mask_array(mask, "mask"),
            [h._spec for h in heads], optional_int("left", left), optional_int("right", right),
            optional_int("chunk_size", chunk_size), optional_int("kernel_size", kernel_size))
        block_kind = kind in ("bigbird", "bigbird-etc")
        return Pattern(spec, default_heads, int(block_size) if block_kind else 128)

    @classmethod
    def dense(cls, causal: bool = False) -> "Pattern":
        """Every key; with ``causal``, keys at or before the query's position (contract §3).

        Parameters
        ----------
        causal : bool
            Keep key ``j`` for query ``i`` only when ``j <= i + seq_len_k - seq_len_q``.
        """
        return cls._make("dense", causal=causal)

    @staticmethod
    def _reaches(window: Optional[int], left: Optional[int], right: Optional[int],
                 attention_window: Optional[int] = None) -> Dict[str, Any]:
        """The window keywords of :meth:`_make`: ``window`` (or HF's ``attention_window``)
        alone, or ``left`` and ``right`` together (contract §3.3, §3.12); anything else is
        refused naming what is wrong."""
        if attention_window is not None:
            if left is not None or right is not None:
                raise _arrays.invalid("attention_window", attention_window,
                                      "must not be given with left and right")
            window = _window_of(window, attention_window)
        if left is None and right is None:
            if window is None:
                raise _arrays.invalid("window", None, "give window W, or left and right "
                                      "(the (left, right) window)")
            return {"window": window}
        if window is not None:
            raise _arrays.invalid("window", window, "must not be given with left and right: "
                                  "the pair replaces the symmetric window")
        return {"left": left, "right": right}

    @classmethod
    def window(cls, window: Optional[int] = None, dilation: int = 1, causal: bool = False,
               left: Optional[int] = None, right: Optional[int] = None, *,
               attention_window: Optional[int] = None) -> "Pattern":
        """Sliding window: keys ``p + dilation*t`` for ``|t| <= window`` (``t <= 0`` if
        causal), ``p`` the query's key position (contract §3.3; Beltagy et al. 2020 §3.1);
        or, with ``left`` and ``right``, ``-left <= t <= right``: FlashAttention's
        ``window_size=(left, right)``.

        Parameters
        ----------
        window : int, optional
            One-sided half-width W in window steps, >= 0; W = 2 allows 5 keys. HF
            Longformer's ``attention_window`` is 2W. Give it, or ``left`` and ``right``.
        dilation : int
            Tokens between neighbouring window keys, >= 1.
        causal : bool
            Only keys at or before the query's position (``right`` acts as 0).
        left, right : int, optional
            Window steps before and after the query's position, each >= -1 (-1 =
            unbounded); both or neither. ``left = right = W`` is ``window=W``.
        attention_window : int, optional
            HF Longformer's ``attention_window``, the total width 2W (even, >= 0): sets
            ``window = attention_window // 2``; give it or ``window``, not both
            (``--attention-window``, contract §3.12).

        Raises
        ------
        ValueError
            ``window < 0``, ``dilation < 1``, ``left`` or ``right`` below -1, one of
            ``left``/``right`` alone, ``window`` together with them, a non-integer; both of
            ``window`` and ``attention_window``, an odd ``attention_window``.
        """
        return cls._make("window", dilation=dilation, causal=causal,
                         **cls._reaches(window, left, right, attention_window))

    @classmethod
    def preset(cls, preset: str, layer: int) -> "Pattern":
        """The pattern of one layer of a model preset (models/*.json; docs/models.md,
        contract §6.4): ``sparseattn mask --preset PRESET --layer L``. Every head of the
        layer has it (grouped heads share their layer's pattern).

        Parameters
        ----------
        preset : str
            A name of :func:`sparseattn.preset_names` (e.g. ``"gemma-2-9b"``).
        layer : int
            The layer, counted from 0, in ``[0, num_layers)``.

        Raises
        ------
        ValueError
            An unknown preset (the message lists the known ones), a layer out of range (the
            message names the range), a layer whose pattern kind this version lacks.
        """
        if not isinstance(preset, str):
            raise _arrays.invalid("preset", preset, "must be a preset name (preset_names())")
        spec, _ = _C.preset_layer(preset, _arrays.integer("layer", layer), None, None, None)
        return Pattern(spec)

    @classmethod
    def chunked(cls, chunk_size: int, causal: bool = False) -> "Pattern":
        """Chunked local attention (Llama 4; FlashAttention 3's ``attention_chunk``): query
        ``i`` at key position ``p`` attends the keys ``j`` with ``p // chunk_size ==
        j // chunk_size`` (``j <= p`` if causal); a query before the first key (``p < 0``)
        attends none (contract §3.14).

        Parameters
        ----------
        chunk_size : int
            Tokens per chunk C, >= 1; beyond ``max(seq_len_q, seq_len_k)`` it acts as that.
        causal : bool
            Only keys at or before the query's position.

        Raises
        ------
        ValueError
            ``chunk_size < 1``, a non-integer.
        """
        return cls._make("chunked", chunk_size=chunk_size, causal=causal)

    @classmethod
    def selected(cls, kv_indices: Any, duplicates: str = "once",
                 causal: bool = False) -> "Pattern":
        """Attention over a given selection of keys per query (contract §3.16), as DeepSeek
        Sparse Attention's top-k keys and NSA's selected tokens are consumed.

        Parameters
        ----------
        kv_indices : array of int, shape [B_sel, H_sel, seq_len_q, K]
            Keys per query: -1 is an empty slot, else a key in [0, seq_len_k). ``B_sel`` is 1
            or the batch; ``H_sel`` is 1 (every head), ``H_kv`` (query head h reads row
            h // g, as it reads kv head h // g) or ``num_heads``. ``K >= 1``, may exceed
            ``seq_len_k``.
        duplicates : {"once", "count"}
            A key listed twice in a row counts once (set semantics) or twice in the softmax.
        causal : bool
            Drop listed keys after the query's position ``i + seq_len_k - seq_len_q``.

        Raises
        ------
        ValueError
            A rank other than 4, ``K < 1``, an entry below -1 (``kv_indices[b,h,i,k] =
            ...``); entries ``>= seq_len_k`` and shapes are checked when sizes are known.
        """
        if not isinstance(causal, (bool, np.bool_)):
            raise _arrays.invalid("causal", causal, "must be True or False")
        if not isinstance(duplicates, str):
            raise _arrays.invalid("duplicates", duplicates, "must be \"once\" or \"count\"")
        spec = _C.make_selected_spec("selected", _arrays.int_array(kv_indices, "kv_indices"),
                                     bool(causal), duplicates, None, None)
        return Pattern(spec)

    @classmethod
    def selected_blocks(cls, block_indices: Any = None, block_size_q: Optional[int] = None,
                        block_size_k: Optional[int] = None, causal: bool = False,
                        block_mask: Any = None) -> "Pattern":
        """Attention over a given selection of key blocks per query block (contract §3.17):
        every query of query block m attends every key of each key block its row lists (MoBA,
        NSA's selection branch with ``block_size_q = 1``; FlexAttention's BlockMask).

        Parameters
        ----------
        block_indices : array of int, shape [B_sel, H_sel, ceil(seq_len_q / block_size_q), K]
            Key blocks per query block: -1 is an empty slot, else a block in
            [0, ceil(seq_len_k / block_size_k)). ``B_sel``, ``H_sel`` as in :meth:`selected`.
            Give this or ``block_mask``.
        block_size_q, block_size_k : int
            Tokens per query block and per key block, each >= 1; last blocks may be partial.
            Required with ``block_indices``; with ``block_mask`` they default to its own block
            size (``BlockMask.block_size``, torch's ``BLOCK_SIZE``), else 128.
        causal : bool
            Per token: keys after the query's position are dropped.
        block_mask : str or os.PathLike or BlockMask, optional
            FlexAttention's BlockMask in place of ``block_indices`` (as the CLI's
            ``--block-mask DIR``): a folder holding ``kv_num_blocks.npy``,
            ``kv_indices.npy`` and optionally ``full_kv_num_blocks.npy`` with
            ``full_kv_indices.npy``, or an object with those attributes (a
            :class:`BlockMask`, a ``torch.nn.attention.flex_attention.BlockMask``). Read as
            :meth:`from_block_mask` reads the arrays.

        Raises
        ------
        ValueError
            A block size below 1, a rank other than 4, ``K < 1``, an entry below -1; both or
            neither of ``block_indices`` and ``block_mask``; a ``block_mask`` refused as
            :meth:`from_block_mask` refuses it (naming the file for a folder).
        """
        if block_mask is not None:
            if block_indices is not None:
                raise _arrays.invalid("block_mask", type(block_mask).__name__,
                                      "replaces block_indices: give one of them")
            if isinstance(block_mask, (str, os.PathLike)):
                block_indices = _C.read_block_mask(os.fspath(block_mask))
                own: Tuple[int, int] = (_C.flex_block_size, _C.flex_block_size)
            else:
                block_indices, own = _block_mask_table(block_mask)
            block_size_q = own[0] if block_size_q is None else block_size_q
            block_size_k = own[1] if block_size_k is None else block_size_k
        elif block_indices is None:
            raise _arrays.invalid("block_indices", None, "give block_indices or block_mask")
        if not isinstance(causal, (bool, np.bool_)):
            raise _arrays.invalid("causal", causal, "must be True or False")
        bq = _arrays.integer("block_size_q", block_size_q,
                             allowed="must be an integer >= 1 (tokens per query block)")
        bk = _arrays.integer("block_size_k", block_size_k,
                             allowed="must be an integer >= 1 (tokens per key block)")
        spec = _C.make_selected_spec("selected-blocks",
                                     _arrays.int_array(block_indices, "block_indices"),
                                     bool(causal), "once", bq, bk)
        return Pattern(spec, None, bq if bq == bk else 128)

    @classmethod
    def from_block_mask(cls, kv_num_blocks: Any, kv_indices: Any, block_size_q: int = 128,
                        block_size_k: int = 128, full_kv_num_blocks: Any = None,
                        full_kv_indices: Any = None, causal: bool = False) -> "Pattern":
        """The selected-blocks pattern of FlexAttention's BlockMask tables (contract §3.17):
        the inverse of :meth:`block_mask`, as ``BlockMask.from_kv_blocks`` takes them.

        Query block m of (batch b, head h) attends every key of the first
        ``kv_num_blocks[b, h, m]`` blocks of ``kv_indices[b, h, m, :]`` and, when given, of
        the first ``full_kv_num_blocks[b, h, m]`` of ``full_kv_indices[b, h, m, :]``. A
        partial block comes back whole: the ``mask_mod`` that refines it per token is not in
        the tables, so the import inverts the export exactly only for patterns made of
        whole blocks (``causal=True`` restores a causal ``mask_mod``'s diagonal blocks).

        Parameters
        ----------
        kv_num_blocks : array of int, shape [B, H, Q_blocks]
            Blocks listed per query block, in [0, KV_blocks]. NumPy arrays, torch tensors
            (CPU) or anything ``np.asarray`` reads; int32 as FlexAttention stores them.
        kv_indices : array of int, shape [B, H, Q_blocks, KV_blocks]
            Key-block indices; the first ``kv_num_blocks`` of a row are read and must lie in
            [0, KV_blocks); the rest is padding, never read (any value).
        block_size_q, block_size_k : int
            FlexAttention's ``BLOCK_SIZE`` pair (one int there stands for both): tokens per
            query block and per key block, each >= 1. Default 128, FlexAttention's.
        full_kv_num_blocks, full_kv_indices : array of int, optional
            The full blocks, the same shapes; both or neither. A block listed in both
            tables counts once.
        causal : bool
            Per token: keys after the query's position ``i + seq_len_k - seq_len_q`` are
            dropped.

        Returns
        -------
        Pattern
            ``Pattern.selected_blocks(block_indices, block_size_q, block_size_k, causal)``
            with ``block_indices`` [B, H, Q_blocks, K] (ascending, -1 padded, K the longest
            row, at least 1): B and H read as ``B_sel`` and ``H_sel`` (contract §3.16).

        Raises
        ------
        ValueError
            A shape other than the above (``kv_indices shape = ...``), one of the full pair
            without the other, a count outside [0, KV_blocks] (``kv_num_blocks[b,h,m]``), a
            read index outside [0, KV_blocks) (``kv_indices[b,h,m,s]``), a block size below
            1; ``Q_blocks`` other than ``ceil(seq_len_q / block_size_q)`` and indices beyond
            ``ceil(seq_len_k / block_size_k)`` when the sizes are known.

        References
        ----------
        ``torch.nn.attention.flex_attention.BlockMask.from_kv_blocks`` (docs/peers.md).
        """
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            missing = "full_kv_indices" if full_kv_indices is None else "full_kv_num_blocks"
            other = "full_kv_num_blocks" if full_kv_indices is None else "full_kv_indices"
            raise _arrays.invalid(missing, None,
                                  f"must be given with {other} (the full pair is both or neither)")
        full = [None if x is None else _arrays.int_array(x, n)
                for x, n in ((full_kv_num_blocks, "full_kv_num_blocks"),
                             (full_kv_indices, "full_kv_indices"))]
        table = _C.block_indices_from_block_mask(_arrays.int_array(kv_num_blocks, "kv_num_blocks"),
                                                 _arrays.int_array(kv_indices, "kv_indices"),
                                                 full[0], full[1])
        return cls.selected_blocks(table, block_size_q, block_size_k, causal)

    @classmethod
    def neighborhood(cls, kernel_size: int, dilation: int = 1,
                     causal: bool = False) -> "Pattern":
        """1-D neighborhood attention (NATTEN; Hassani et al. 2023): every query attends
        exactly ``kernel_size`` keys of its residue class modulo ``dilation``, the nearest
        ones, the window shifted inward at the sequence ends instead of clipped; with
        ``causal`` the ``kernel_size`` keys ending at the query (fewer at the start)
        (contract §3.15). Requires ``seq_len_q <= seq_len_k``.

        Parameters
        ----------
        kernel_size : int
            Keys per query K, odd, in [1, seq_len_k] (checked when sizes are known).
        dilation : int
            Tokens between neighbouring keys D, >= 1, with ``K * D <= seq_len_k``.
        causal : bool
            The K keys of the class ending at the query's position.

        Raises
        ------
        ValueError
            ``kernel_size`` even or below 1, ``dilation < 1``, a non-integer; when sizes are
            known, ``kernel_size > seq_len_k``, ``kernel_size * dilation > seq_len_k``,
            ``seq_len_q > seq_len_k``.
        """
        return cls._make("neighborhood", kernel_size=kernel_size, dilation=dilation,
                         causal=causal)

    @classmethod
    def longformer(cls, window: Optional[int] = None, global_tokens: Sequence[int] = (),
                   dilation: int = 1, causal: bool = False, left: Optional[int] = None,
                   right: Optional[int] = None, *,
                   attention_window: Optional[int] = None) -> "Pattern":
        """Longformer: a window plus global tokens, which attend every key and are attended
        by every query (Beltagy et al. 2020, §3.1; contract §3).

        Parameters
        ----------
        window, dilation, causal, left, right, attention_window
            As :meth:`window`.
        global_tokens : sequence of int
            Global token positions in [0, seq_len_k) (checked when sizes are known).
        """
        return cls._make("longformer", dilation=dilation, causal=causal,
                         global_tokens=list(global_tokens),
                         **cls._reaches(window, left, right, attention_window))

    @classmethod
    def random(cls, window: Optional[int] = None, num_random: int = 0,
               global_tokens: Sequence[int] = (), dilation: int = 1, causal: bool = False,
               seed: int = 0, left: Optional[int] = None, right: Optional[int] = None, *,
               attention_window: Optional[int] = None) -> "Pattern":
        """Longformer plus ``num_random`` random keys per query, drawn without replacement
        from the keys not already allowed, by the counter-based PRNG keyed with (seed,
        head, row) (contract §3; pattern/prng.h). Fewer when fewer remain.

        Parameters
        ----------
        window, dilation, causal, global_tokens, left, right, attention_window
            As :meth:`longformer` (``window=None`` with ``left`` and ``right``).
        num_random : int
            Random keys per query, >= 0.
        seed : int
            PRNG seed in [0, 2^64). The draws made are :meth:`random_table`.
        """
        return cls._make("random", dilation=dilation, causal=causal,
                         global_tokens=list(global_tokens), num_random=num_random, seed=seed,
                         **cls._reaches(window, left, right, attention_window))

    @classmethod
    def bigbird(cls, block_size: int, num_random_blocks: int = 0, seed: int = 0,
                random_table: Any = None) -> "Pattern":
        """BigBird ITC block-sparse pattern (Zaheer et al. 2020, §2 and App. D; contract §3):
        with nb = ceil(seq_len / block_size) blocks, query blocks 0 and nb-1 are global
        (attend everything); every query attends blocks 0 and nb-1 and its neighbour blocks
        q-1, q, q+1; query blocks 1 .. nb-2 add ``num_random_blocks`` random blocks drawn
        from the blocks not already allowed. Self-attention only (seq_len_q == seq_len_k).

        Parameters
        ----------
        block_size : int
            Tokens per block, >= 1; the last block may be partial.
        num_random_blocks : int
            Random key blocks per query block, >= 0; fewer when fewer remain.
        seed : int
            PRNG seed in [0, 2^64), used when ``random_table`` is None.
        random_table : array of int, shape [num_heads or 1, nb - 2, num_random_blocks], optional
            The random key blocks of query blocks 1 .. nb-2 (HF's ``rand_attn`` layout;
            nb = ceil(seq_len / block_size)), entries in [0, nb); replaces the PRNG draw.
            :meth:`random_table` returns this array for a seeded pattern.
        """
        default_heads = None
        if random_table is not None:
            t = _arrays.int_array(random_table, "random_table")
            default_heads = int(t.shape[0]) if t.ndim == 3 else None
            random_table = t
        return cls._make("bigbird", block_size=block_size, num_random_blocks=num_random_blocks,
                         seed=seed, random_table=random_table, default_heads=default_heads)

    @classmethod
    def bigbird_etc(cls, block_size: int, num_random_blocks: int = 0,
                    num_global_tokens: int = 0, seed: int = 0) -> "Pattern":
        """BigBird ETC (Zaheer et al. 2020, §2, App. D; contract §3): ``num_global_tokens``
        extra global tokens sit first, attend all and are attended by all; the other tokens
        form blocks starting after them, each attending its neighbour blocks and
        ``num_random_blocks`` random blocks (no global blocks of their own).

        Parameters
        ----------
        block_size, num_random_blocks, seed
            As :meth:`bigbird`.
        num_global_tokens : int
            Global tokens in [0, seq_len].
        """
        return cls._make("bigbird-etc", block_size=block_size,
                         num_random_blocks=num_random_blocks,
                         num_global_tokens=num_global_tokens, seed=seed)

    @classmethod
    def hierarchical(cls, segment_ids: Any) -> "Pattern":
        """Two-level, HIBERT-style: a token attends its own segment (a maximal run of equal
        ids) and every segment's last token, its representative (contract §3). Self-attention
        only.

        Parameters
        ----------
        segment_ids : array of int, shape [seq_len]
            One segment id per token, non-decreasing (checked when sizes are known).
        """
        return cls._make("hierarchical", segment_ids=segment_ids)

    @classmethod
    def explicit(cls, mask: Any) -> "Pattern":
        """A given boolean mask (contract §3).

        Parameters
        ----------
        mask : array of bool or 0/1 ints, shape [seq_len_q, seq_len_k] or
               [num_heads, seq_len_q, seq_len_k]
            True (1) where query i may attend key j.
        """
        m = _arrays.mask_array(mask, "mask")
        return cls._make("explicit", mask=m,
                         default_heads=int(m.shape[0]) if m.ndim == 3 else None)

    @classmethod
    def per_head(cls, heads: Sequence["Pattern"]) -> "Pattern":
        """One pattern per head (contract §3): head h uses ``heads[h]``.

        Parameters
        ----------
        heads : sequence of Pattern
            Not themselves per-head; ``num_heads`` must then equal ``len(heads)``.
        """
        heads = list(heads)
        for i, h in enumerate(heads):
            if not isinstance(h, Pattern):
                raise _arrays.invalid(f"heads[{i}]", type(h).__name__, "must be a Pattern")
        return cls._make("per-head", heads=heads, default_heads=len(heads))

    # ---- properties ------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """The kind as the CLI spells it: ``"window"``, ``"bigbird-etc"``, ``"per-head"``..."""
        return str(self._spec.kind)

    def __repr__(self) -> str:
        return f"Pattern.{self._spec.describe()}"

    def _heads(self, num_heads: Optional[int]) -> int:
        if num_heads is None:
            return self._default_heads or 1
        return _arrays.integer("num_heads", num_heads, 1)

    def _sizes(self, seq_len_q: Any, seq_len_k: Any) -> Tuple[int, int]:
        n = _arrays.integer("seq_len_q", seq_len_q, 1)
        m = n if seq_len_k is None else _arrays.integer("seq_len_k", seq_len_k, 1)
        return n, m

    # ---- materialized views ----------------------------------------------------------
    def mask(self, seq_len_q: Optional[int] = None, seq_len_k: Optional[int] = None,
             num_heads: Optional[int] = None, key_padding_mask: Any = None, *,
             key_padding_polarity: str = "keep", causal_align: str = "bottom-right",
             padding_align: str = "full", global_mask: Any = None,
             cu_seqlens_q: Any = None, cu_seqlens_k: Any = None) -> np.ndarray:
        """The allowed mask, True where query i may attend key j (contract §2, §3).

        The same array as ``sparseattn mask`` writes: ``dense_mask()`` of each head's
        canonical layout, with key padding applied (padded keys and padded query rows
        attend nothing).

        Parameters
        ----------
        seq_len_q : int
            Query tokens, >= 1.
        seq_len_k : int, optional
            Key tokens, >= 1; default ``seq_len_q``.
        num_heads : int, optional
            Heads, >= 1; default ``len(heads)`` for :meth:`per_head`, the mask's first
            dimension for a rank-3 :meth:`explicit` mask, else 1.
        key_padding_mask : array of bool, shape [batch, seq_len_k], optional
            True = real token (with ``key_padding_polarity="keep"``).
        key_padding_polarity, causal_align, padding_align : str
            The convention flags of ``sparseattn mask`` (docs/conventions.md, contract
            §1.6): ``key_padding_polarity="ignore"`` reads True as padding (PyTorch's mask);
            ``causal_align="top-left"`` places query i at key position i (PyTorch's
            ``is_causal`` tril); ``padding_align="valid"`` places each batch element's
            causal diagonal and window by its own valid key count under right padding
            (contract §2.6).
        global_mask : array of bool, shape [batch, seq_len_k], optional
            Longformer's per-batch global tokens (``mask --global-mask``, contract §3.12):
            the pattern must be :meth:`longformer` without ``global_tokens``; one mask per
            batch element.
        cu_seqlens_q, cu_seqlens_k : array of int, [B + 1], optional
            A packed batch (``mask --cu-seqlens-q``, contract §2.10): the mask is then
            ``[total_q, total_k]`` (``[num_heads, total_q, total_k]``), block diagonal,
            each sequence's block its own pattern's; leave ``seq_len_q`` out.

        Returns
        -------
        ndarray of bool
            [seq_len_q, seq_len_k] for one head, [num_heads, seq_len_q, seq_len_k]
            otherwise; [batch, num_heads, seq_len_q, seq_len_k] with a key padding mask
            or a global mask of batch > 1 (the CLI's shapes).

        Raises
        ------
        ValueError
            Sizes < 1, parameters that do not fit the sizes.
        MemoryError
            The mask would not fit in physical memory.
        """
        if cu_seqlens_q is not None or cu_seqlens_k is not None:  # contract §2.10
            if seq_len_q is not None or seq_len_k is not None:
                raise _arrays.invalid("seq_len_q", seq_len_q, "must be left out with "
                                      "cu_seqlens_q (the lists give the sizes)")
            if key_padding_mask is not None or global_mask is not None:
                raise _arrays.invalid("key_padding_mask", "given", "must not be given with "
                                      "cu_seqlens_q: a packed batch has no padding")
            h = self._heads(num_heads)
            packed = _C.varlen_mask(self._spec, h,
                                    None if cu_seqlens_q is None else np.asarray(cu_seqlens_q),
                                    None if cu_seqlens_k is None else np.asarray(cu_seqlens_k))
            packed = packed.view(np.bool_)
            return packed[0] if h == 1 else packed
        if seq_len_q is None:
            raise _arrays.invalid("seq_len_q", "missing", "must be an integer >= 1")
        n, m = self._sizes(seq_len_q, seq_len_k)
        h = self._heads(num_heads)
        kpm = None if key_padding_mask is None else _arrays.mask_array(key_padding_mask,
                                                                        "key_padding_mask")
        gm = None if global_mask is None else _arrays.mask_array(global_mask, "global_mask")
        for name, value in (("key_padding_polarity", key_padding_polarity),
                            ("causal_align", causal_align), ("padding_align", padding_align)):
            if not isinstance(value, str):
                raise _arrays.invalid(name, value, "must be a string")
        out = _C.convention_mask(self._spec, h, n, m, kpm, key_padding_polarity, causal_align,
                                 padding_align, gm).view(np.bool_)
        b = out.shape[0]
        if b > 1:
            return out
        single: np.ndarray = out[0, 0] if h == 1 else out[0]
        return single

    def info(self, seq_len_q: Optional[int] = None, seq_len_k: Optional[int] = None,
             num_heads: Optional[int] = None, head_dim: int = 64,
             key_padding_mask: Any = None, *, cu_seqlens_q: Any = None,
             cu_seqlens_k: Any = None, cache_seqlens: Any = None,
             block_table: Any = None) -> Dict[str, Any]:
        """What the pattern costs, before running anything: ``sparseattn info --json``.

        Parameters
        ----------
        seq_len_q, seq_len_k, num_heads
            As :meth:`mask`.
        head_dim : int
            Head dimension for the FLOP count, >= 1.
        key_padding_mask : array of bool, shape [batch, seq_len_k], optional
            True = real token: the counts then leave padded keys and padded query rows
            out, as ``sparseattn info --key-padding-mask``.
        cu_seqlens_q, cu_seqlens_k : array of int, [B + 1], optional
            A packed batch (``info --cu-seqlens-q --cu-seqlens-k``, contract §2.10): the
            counts of each sequence's own pattern, summed; leave ``seq_len_q`` and
            ``seq_len_k`` out (the lists give the lengths).
        cache_seqlens : array of int, [B], optional
            A KV cache filled to ``cache_seqlens[b]`` keys per element (``info
            --cache-seqlens S.npy --seq-len L_q``, contract §2.11): ``seq_len_q`` queries per
            element against its filled slots; leave ``seq_len_k`` out.
        block_table : array of int, [B, max_pages], optional
            Refused, as ``info --block-table`` is: paging moves keys but changes no count
            (contract §2.12); give ``cache_seqlens`` alone.

        Returns
        -------
        dict
            ``pattern`` (description), ``num_heads``, ``seq_len_q``, ``seq_len_k``,
            ``head_dim``, ``nnz`` (allowed (head, query, key) triples), ``dense_pairs``,
            ``density``, ``keys_per_row`` {min, mean, max}, ``empty_rows``, ``tiles``
            {listed, full, partial}, ``random_draws``, ``random_shortfall``, ``flops``
            (4 · nnz · head_dim per batch element, the FlashAttention paper's count),
            ``dense_flops``, ``flops_fraction``. Under a layout (api/layout_info.h):
            ``layout`` ("varlen" or "kv_cache"), ``pattern``, ``num_heads``, ``head_dim``,
            ``num_sequences``, ``total_q``, ``total_k``, ``nnz``, ``empty_rows``,
            ``flops``, ``dense_flops``, ``flops_fraction``, for a packed batch
            ``mask_pairs`` and ``mask_flops_fraction``, and ``sequences`` (one dict per
            sequence or element: ``seq_len_q``, ``seq_len_k``, ``nnz``, ``empty_rows``,
            ``flops``, ``density``).

        Raises
        ------
        ValueError
            Sizes < 1, parameters that do not fit the sizes; under a layout, the keywords
            it leaves out given, a bad list (naming ``cu_seqlens_q[b]``,
            ``cache_seqlens[b]``), ``block_table`` given.
        """
        layouts = (cu_seqlens_q, cu_seqlens_k, cache_seqlens, block_table)
        if any(x is not None for x in layouts):  # contract §2.10-§2.12: api/layout_info.h
            return self._layout_info(seq_len_q, seq_len_k, num_heads, head_dim,
                                     key_padding_mask, layouts)
        if seq_len_q is None:
            raise _arrays.invalid("seq_len_q", "missing", "must be an integer >= 1 (or give "
                                  "cu_seqlens_q/cu_seqlens_k or cache_seqlens)")
        n, m = self._sizes(seq_len_q, seq_len_k)
        kpm = None if key_padding_mask is None else _arrays.mask_array(key_padding_mask,
                                                                        "key_padding_mask")
        return _C.info(self._spec, self._heads(num_heads), n, m,
                       _arrays.integer("head_dim", head_dim, 1), kpm)

    def _layout_info(self, seq_len_q: Any, seq_len_k: Any, num_heads: Any, head_dim: Any,
                     key_padding_mask: Any, layouts: Tuple[Any, ...]) -> Dict[str, Any]:
        """:meth:`info` under a layout, refusing what the CLI's ``info`` refuses there."""
        packed = layouts[0] is not None or layouts[1] is not None
        if seq_len_k is not None:
            raise _arrays.invalid("seq_len_k", seq_len_k, "must be left out with a sequence "
                                  "layout: the layout gives each sequence's keys")
        if key_padding_mask is not None:
            raise _arrays.invalid("key_padding_mask", "given", "must not be given with a "
                                  "sequence layout: it has no padding (contract §2.10-§2.11)")
        if packed and seq_len_q is not None:
            raise _arrays.invalid("seq_len_q", seq_len_q, "must be left out with cu_seqlens_q/"
                                  "cu_seqlens_k: the lists give each sequence's lengths")
        n = 0
        if not packed and layouts[2] is not None:
            if seq_len_q is None:
                raise _arrays.invalid("seq_len_q", "missing", "must be one length L_q >= 1 (the "
                                      "queries of each element) with cache_seqlens")
            n = _arrays.integer("seq_len_q", seq_len_q, 1)
        arrays = [None if x is None else _arrays.to_numpy(x, name) for x, name in
                  zip(layouts, ("cu_seqlens_q", "cu_seqlens_k", "cache_seqlens", "block_table"))]
        info: Dict[str, Any] = _C.layout_info(self._spec, self._heads(num_heads),
                                              _arrays.integer("head_dim", head_dim, 1), n,
                                              *arrays)
        return info

    def random_table(self, seq_len: int, num_heads: Optional[int] = None) -> np.ndarray:
        """The random draws this pattern makes from its seed (contract §3).

        Parameters
        ----------
        seq_len : int
            Tokens (self-attention), >= 1.
        num_heads : int, optional
            As :meth:`mask`.

        Returns
        -------
        ndarray of int64
            bigbird: [num_heads, nb - 2, num_random_blocks], key-block indices of query
            blocks 1 .. nb-2 — HF's ``rand_attn`` layout; pass it back as
            ``Pattern.bigbird(..., random_table=t)`` for the same mask. bigbird-etc:
            [num_heads, nb, num_random_blocks]. random: [num_heads, seq_len,
            num_random] key indices. -1 marks a draw that could not be made (fewer
            candidates than asked; contract §3). Shape [num_heads, 0, 0] for kinds
            without draws.
        """
        n, _ = self._sizes(seq_len, None)
        return _C.random_table(self._spec, self._heads(num_heads), n)

    def block_mask(self, seq_len_q: int, seq_len_k: Optional[int] = None,
                   block_size: Optional[int] = None, num_heads: Optional[int] = None) -> BlockMask:
        """The block-sparse form FlexAttention-style and block-sparse kernels consume.

        Read off the canonical layout tiled at ``block_size`` (the layout every kernel
        uses; for bigbird at its own block size, the pattern's block table itself).

        Parameters
        ----------
        seq_len_q, seq_len_k, num_heads
            As :meth:`mask`.
        block_size : int, optional
            Tokens per block side, >= 1; default the pattern's ``block_size`` for bigbird
            kinds, else 128 (FlexAttention's default).

        Returns
        -------
        BlockMask
        """
        n, m = self._sizes(seq_len_q, seq_len_k)
        h = self._heads(num_heads)
        bs = _arrays.integer("block_size", self._block_size if block_size is None else block_size, 1)
        d = _C.block_mask(self._spec, h, n, m, bs)
        return BlockMask(block_size=bs, seq_len_q=n, seq_len_k=m, **d)
