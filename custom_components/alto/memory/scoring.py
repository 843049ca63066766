"""Exact selection over the resident matrix, scored by onnxruntime's integer GEMM or by numpy.

``top_k`` / ``top_k_batch`` return exactly what the reference ``selection.top_k_batch`` returns
for the snapshot's rows (restricted to ``allowed`` ones, when given): same ids, same scores, same
order. Only the arithmetic is delegated; the selection itself is ``selection.best``.

The library path is onnxruntime's ``MatMulInteger`` (MLAS kernels), installed with chromadb. Its
operand A is unsigned, so a query is offset into it in one of two forms, whichever is exact here:

- ``offset``: ``A = q + 128`` in [1, 255]. Several queries: zero point 128 for A, which MLAS
  folds into its kernel (the library's usual quantized form). One query: zero point 0, so MLAS
  takes its GEMV path (one pass over each block), and ``q . c = A . c - 128 * sum(c)`` with the
  row sums that come with the matrix. Exact only where the kernel adds u8 * s8 products without
  a 16-bit intermediate: VNNI's ``VPDPBUSD``, ARM's dot products. x86 kernels without VNNI use
  ``VPMADDUBSW``, which adds two products into a saturating int16: 2 * 255 * 127 overflows it.
- ``split``: the query's positive and negative parts, each in [0, 127], and
  ``q . c = P . c - N . c``. Two products per query, exact on every MLAS kernel: two products of
  127 * 127 (32,258) fit an int16.

At construction the scorer runs the offset form on inputs that saturate a 16-bit pair sum, in
both MLAS shapes used (GEMV and GEMM, with remainders in every dimension), and keeps it only if
it equals numpy there; otherwise it proves the split form the same way, and a library that can
prove neither is not used (``default_scorer`` falls back to numpy).

Scores are computed for a group of queries at a time into one int32 ``[queries, rows]`` array
of at most ``SCORE_BYTES``, so a batch over a large matrix never holds more than that.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from . import onnx_graph as onnx
from .matrix import Snapshot
from .selection import CODE_MAX, best, matmul_dtype

_LOGGER = logging.getLogger(__name__)

type Hits = list[tuple[int, int]]
# Chooses rows of a snapshot: a bool mask over its rows (e.g. what one viewer may see).
type Allowed = Callable[[Snapshot], np.ndarray]

SCORE_BYTES = 32 << 20
# int32 holds every score while d * 127 * 127 <= 2**31 - 1.
INT32_DIM = (2**31 - 1) // (CODE_MAX * CODE_MAX)
_CHUNK_COLUMNS = 4096  # numpy casts this many columns of a block at a time (12 MiB of float32)


class Scorer(Protocol):
    """Exact integer scores of query codes against one block of the matrix."""

    name: str

    def block_scores(self, queries: np.ndarray, block: np.ndarray, sums: np.ndarray) -> np.ndarray:
        """Exact ``[q, b]``: ``queries`` int8 ``[q, d]`` times ``block`` int8 ``[d, b]``.

        ``sums``: the block's rows' code sums, int32 ``[b]``.
        """
        ...


def score_dtype(dim: int) -> type[np.int32] | type[np.int64]:
    """The narrowest integer dtype that holds every score of ``dim``-long codes."""
    return np.int32 if dim <= INT32_DIM else np.int64


class NumpyScorer:
    """Scores with numpy's matmul, float32 while that is exact (``selection.matmul_dtype``)."""

    name = "numpy"

    def block_scores(self, queries: np.ndarray, block: np.ndarray, sums: np.ndarray) -> np.ndarray:
        """Exact ``[q, b]`` scores through numpy's matmul, a chunk of columns at a time."""
        dim, width = block.shape
        dtype = matmul_dtype(dim)
        left = queries.astype(dtype)
        out = np.empty((len(queries), width), dtype=score_dtype(dim))
        for start in range(0, width, _CHUNK_COLUMNS):
            part = block[:, start : start + _CHUNK_COLUMNS]
            # The product holds exact integers; assigning it to the integer array rounds nothing.
            out[:, start : start + part.shape[1]] = left @ part.astype(dtype)
        return out


def zero_point_model() -> bytes:
    """``Y = MatMulInteger(A, C, Z)``: A's zero point ``Z`` (a uint8 scalar) is subtracted."""
    return onnx.model(
        nodes=[onnx.node("MatMulInteger", ("A", "C", "Z"), "Y")],
        inputs=[
            onnx.value_info("A", onnx.UINT8, ("q", "d")),
            onnx.value_info("C", onnx.INT8, ("d", "n")),
            onnx.value_info("Z", onnx.UINT8, ()),
        ],
        outputs=[onnx.value_info("Y", onnx.INT32, ("q", "n"))],
    )


def offset_model() -> bytes:
    """``Y = MatMulInteger(A, C) - S`` with ``A = q + 128`` and ``S = 128 * sums`` ([1, n])."""
    return onnx.model(
        nodes=[
            onnx.node("MatMulInteger", ("A", "C"), "AC"),
            onnx.node("Sub", ("AC", "S"), "Y"),
        ],
        inputs=[
            onnx.value_info("A", onnx.UINT8, ("q", "d")),
            onnx.value_info("C", onnx.INT8, ("d", "n")),
            onnx.value_info("S", onnx.INT32, (1, "n")),
        ],
        outputs=[onnx.value_info("Y", onnx.INT32, ("q", "n"))],
    )


def split_model() -> bytes:
    """``Y = MatMulInteger(P, C) - MatMulInteger(N, C)``.

    ``P`` and ``N`` are the query's positive and negative parts.
    """
    return onnx.model(
        nodes=[
            onnx.node("MatMulInteger", ("P", "C"), "PC"),
            onnx.node("MatMulInteger", ("N", "C"), "NC"),
            onnx.node("Sub", ("PC", "NC"), "Y"),
        ],
        inputs=[
            onnx.value_info("P", onnx.UINT8, ("q", "d")),
            onnx.value_info("N", onnx.UINT8, ("q", "d")),
            onnx.value_info("C", onnx.INT8, ("d", "n")),
        ],
        outputs=[onnx.value_info("Y", onnx.INT32, ("q", "n"))],
    )


# The largest dimension whose int32 accumulation cannot overflow, per form: |A| <= 255 or 127.
_FORM_MAX_DIM = {"offset": (2**31 - 1) // (255 * CODE_MAX), "split": INT32_DIM}
# Per form, the graphs for one query and for several.
_FORM_MODELS = {"offset": (offset_model, zero_point_model), "split": (split_model, split_model)}
_ZERO_POINT = np.array(128, dtype=np.uint8)


def session_options(ort: Any) -> Any:
    """Options for every selection session.

    Quiet, and no worker threads spinning after a call (they would keep the cores of a shared
    Home Assistant host busy between turns).
    """
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


class OnnxScorer:
    """Scores with onnxruntime's ``MatMulInteger`` (see the module docstring for the forms).

    ``form`` forces one form (tests); by default the offset form where it proves exact, else the
    split form. Raises ImportError without onnxruntime and RuntimeError when no form proves
    exact. ``InferenceSession.run`` may be called from several threads at once.
    """

    name = "onnxruntime"

    def __init__(self, form: str | None = None) -> None:
        """Build the sessions and prove them exact (see the class docstring)."""
        import onnxruntime as ort  # noqa: PLC0415  (numpy stands in when it is missing)

        self._numpy = NumpyScorer()
        for candidate in [form] if form else ["offset", "split"]:
            self.form = candidate
            self._one, self._many = (
                ort.InferenceSession(
                    model(), session_options(ort), providers=["CPUExecutionProvider"]
                )
                for model in _FORM_MODELS[candidate]
            )
            if self._proves_exact():
                return
        raise RuntimeError("onnxruntime MatMulInteger is not exact on this machine")

    def block_scores(self, queries: np.ndarray, block: np.ndarray, sums: np.ndarray) -> np.ndarray:
        """Exact ``[q, b]`` scores from the sessions (numpy past the form's dimension)."""
        if block.shape[0] > _FORM_MAX_DIM[self.form]:  # int32 accumulation could overflow
            return self._numpy.block_scores(queries, block, sums)
        session = self._one if len(queries) == 1 else self._many
        if self.form == "split":  # [-127, 127] splits into two parts in [0, 127], bits as uint8
            positive = np.maximum(queries, 0).view(np.uint8)
            negative = np.negative(np.minimum(queries, 0)).view(np.uint8)
            feed = {"P": positive, "N": negative, "C": block}
        elif len(queries) == 1:
            shifted = queries.view(np.uint8) ^ 0x80  # q + 128, as an unsigned byte
            feed = {"A": shifted, "C": block, "S": (sums * 128)[np.newaxis]}
        else:
            feed = {"A": queries.view(np.uint8) ^ 0x80, "C": block, "Z": _ZERO_POINT}
        scores: np.ndarray = session.run(None, feed)[0]
        return scores

    def _proves_exact(self) -> bool:
        """Check the scorer equals numpy on inputs that trip the kernels' edge cases.

        The inputs saturate a 16-bit pair sum if a kernel has one, hold one query (GEMV) and
        several (GEMM), with a remainder in every dimension.
        """
        rng = np.random.default_rng(0)
        for dim, width in ((769, 67), (64, 33)):
            patterns = [
                np.full((3, dim), CODE_MAX, dtype=np.int8),
                np.full((3, dim), -CODE_MAX, dtype=np.int8),
                np.resize(np.array([CODE_MAX, -CODE_MAX], dtype=np.int8), (3, dim)),
                rng.integers(-CODE_MAX, CODE_MAX + 1, size=(3, dim), dtype=np.int8),
            ]
            queries = np.concatenate(patterns)
            block = np.ascontiguousarray(np.resize(queries, (width, dim)).T)
            sums = block.sum(axis=0, dtype=np.int32)
            for rows in (queries[:1], queries[4:5], queries):
                got = self.block_scores(rows, block, sums)
                if not np.array_equal(got, self._numpy.block_scores(rows, block, sums)):
                    return False
        return True


@functools.cache
def default_scorer() -> Scorer:
    """The library scorer when onnxruntime loads and passes its self-check, else numpy.

    Falling back logs one warning saying why. One per process: a session is shared by every
    caller.
    """
    try:
        return OnnxScorer()
    except Exception as err:  # noqa: BLE001 - ImportError, onnxruntime's own errors, the self-check
        _LOGGER.warning("onnxruntime selection unavailable, using numpy: %s", err)
        return NumpyScorer()


def _check_queries(queries: np.ndarray, snapshot: Snapshot) -> None:
    # -128 has no [0, 127] part to split into, and no quantized embedding produces it.
    if queries.dtype != np.int8 or queries.ndim != 2:
        raise ValueError("queries are a two-dimensional int8 code matrix")
    if queries.size and queries.min() < -CODE_MAX:
        raise ValueError("query codes must lie in [-127, 127]")
    if len(snapshot) and queries.shape[1] != snapshot.dim:
        raise ValueError(f"query dimension {queries.shape[1]} != matrix dimension {snapshot.dim}")


def scores(snapshot: Snapshot, queries: np.ndarray, scorer: Scorer) -> np.ndarray:
    """Exact scores ``[q, n]`` of int8 ``queries [q, d]`` against every row of ``snapshot``.

    The query codes lie in [-127, 127].
    """
    _check_queries(queries, snapshot)
    out = np.empty((len(queries), len(snapshot)), dtype=score_dtype(snapshot.dim))
    for block in snapshot.blocks:  # a wider last block is scored whole: its first columns kept
        scored = scorer.block_scores(queries, block.codes, block.sums)
        out[:, block.first : block.first + block.width] = scored[:, : block.width]
    return out


def top_k(
    snapshot: Snapshot,
    query: np.ndarray,
    k: int,
    *,
    scorer: Scorer | None = None,
    allowed: np.ndarray | None = None,
) -> Hits:
    """``top_k_batch`` of one int8 query vector."""
    query = np.asarray(query)
    if query.dtype != np.int8 or query.ndim != 1:
        raise ValueError("a query is a one-dimensional int8 code vector")
    return top_k_batch(snapshot, query[np.newaxis], k, scorer=scorer, allowed=allowed)[0]


def top_k_batch(
    snapshot: Snapshot,
    queries: np.ndarray,
    k: int,
    *,
    scorer: Scorer | None = None,
    allowed: np.ndarray | None = None,
) -> list[Hits]:
    """At most k (id, score) per query.

    ``selection.top_k_batch`` over the snapshot's rows, or over the rows where the bool mask
    ``allowed`` is set. ``scorer`` defaults to ``default_scorer()``.
    """
    queries = np.asarray(queries)
    _check_queries(queries, snapshot)
    eligible = len(snapshot) if allowed is None else int(np.count_nonzero(allowed))
    if allowed is not None and np.shape(allowed) != (len(snapshot),):
        raise ValueError("allowed must be a mask with one entry per row")
    if k <= 0 or eligible == 0:
        return [[] for _ in range(len(queries))]
    scorer = scorer or default_scorer()
    group = max(1, SCORE_BYTES // (np.dtype(score_dtype(snapshot.dim)).itemsize * len(snapshot)))
    hits: list[Hits] = []
    for start in range(0, len(queries), group):
        scored = scores(snapshot, queries[start : start + group], scorer)
        if allowed is not None:
            scored[:, ~allowed] = np.iinfo(scored.dtype).min  # below every real score
        hits += [best(row, snapshot.ids, k, eligible=eligible) for row in scored]
    return hits
