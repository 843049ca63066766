"""Exact integer selection: the reference every scoring backend must match bit for bit.

Each embedding is L2-normalized and quantized once to int8; a query's score against a row is the
exact integer dot product of their codes. Integers make the ranking independent of summation
order, so numpy here, the CUDA kernels in ``gpu/`` and a replay on another machine select the same
rows with the same scores. Ties are broken by object id ascending, so the order is total.

Pure numpy, no Home Assistant import: the GPU tests and the benchmark load it standalone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

CODE_MAX = 127
# float32 holds every integer up to 2**24 exactly. A dot product of d codes in [-127, 127] has
# every partial sum bounded by d * 127 * 127, so while that bound stays below 2**24 a float32
# BLAS matmul is exact in any summation order (FMA included): d <= 1040.
_FLOAT32_EXACT = 2**24
# Rows cast per step, so a large matrix never has a full float32/int64 copy (1M x 768 would be
# 3 GB / 6 GB): each query casts one slab into a reused buffer and multiplies it.
_CHUNK_ROWS = 4096


def quantize(vectors: np.ndarray | Sequence[float] | Sequence[Sequence[float]]) -> np.ndarray:
    """L2-normalize each row in float64, then ``rint(x * 127)`` clipped to [-127, 127], int8.

    ``np.rint`` rounds half to even. The norm uses ``math.fsum`` (a correctly rounded sum), and
    every other step is a single correctly rounded IEEE operation, so the codes do not depend on
    the BLAS or SIMD path of the machine that computes them. A zero row stays all zeros. Accepts
    one vector (1-D, returns 1-D) or a matrix (2-D).
    """
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim not in (1, 2):
        raise ValueError(f"expected a vector or a matrix, got {x.ndim} dimensions")
    if not np.isfinite(x).all():
        raise ValueError("vectors must be finite")
    rows = np.atleast_2d(x)
    squares = (rows * rows).tolist()
    norms = np.array([math.sqrt(math.fsum(r)) for r in squares], dtype=np.float64).reshape(-1, 1)
    unit = rows / np.where(norms > 0.0, norms, 1.0)
    codes: np.ndarray = np.clip(np.rint(unit * CODE_MAX), -CODE_MAX, CODE_MAX).astype(np.int8)
    return codes[0] if x.ndim == 1 else codes


def matmul_dtype(dim: int) -> type[np.float32] | type[np.int64]:
    """The dtype whose matmul of ``dim``-long code vectors is exact and fastest.

    Float32 BLAS while ``dim * 127 * 127 < 2**24`` (see ``_FLOAT32_EXACT``), else int64.
    """
    return np.float32 if dim * CODE_MAX * CODE_MAX < _FLOAT32_EXACT else np.int64


def _check_codes(codes: np.ndarray, name: str, ndim: tuple[int, ...]) -> None:
    if codes.dtype != np.int8:
        raise TypeError(f"{name} must be int8 codes, got {codes.dtype}")
    if codes.ndim not in ndim:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndim))} dimensions")


def scores(codes: np.ndarray, query_codes: np.ndarray) -> np.ndarray:
    """Exact integer dot products of int8 ``codes [n, d]`` with ``query_codes [d]`` or ``[q, d]``.

    Returns int64 ``[n]`` for one query, ``[q, n]`` for a batch. Codes must lie in [-127, 127]
    (``quantize`` and ``validate_rows`` guarantee it). float32 BLAS while ``d * 127 * 127 < 2**24``
    (exact, see ``_FLOAT32_EXACT``; the result is cast to int64 losslessly); otherwise an int64
    matmul, which is exact for any d but runs in numpy's own slower integer loop.
    """
    _check_codes(codes, "codes", (2,))
    _check_codes(query_codes, "query_codes", (1, 2))
    n, d = codes.shape
    queries = np.atleast_2d(query_codes)
    if queries.shape[1] != d:
        raise ValueError(f"query dimension {queries.shape[1]} != matrix dimension {d}")
    dtype = matmul_dtype(d)
    right = queries.astype(dtype).T
    out = np.empty((len(queries), n), dtype=np.int64)
    slab = np.empty((min(n, _CHUNK_ROWS), d), dtype=dtype)
    for start in range(0, n, _CHUNK_ROWS):
        part = codes[start : start + _CHUNK_ROWS]
        buf = slab[: len(part)]
        buf[...] = part
        # Assigning the float32 product into int64 casts exact integers; nothing rounds.
        out[:, start : start + len(part)] = (buf @ right).T
    return out[0] if query_codes.ndim == 1 else out


def best(
    row_scores: np.ndarray, ids: np.ndarray, k: int, *, eligible: int | None = None
) -> list[tuple[int, int]]:
    """The k best (id, score): score descending, then id ascending; ties are never cut arbitrarily.

    The k-th best score is found with a partition; every row scoring at least that much is a
    candidate (so all rows tied at the boundary compete), and a lexsort on (-score, id) orders
    the candidates exactly. ``eligible`` (default: every row) says how many rows may be chosen:
    a caller that filters rows sets the others to the score dtype's minimum, below any real
    score, so with at most ``eligible`` rows chosen none of them ever is.
    """
    n = len(row_scores)
    m = min(k, n if eligible is None else eligible)
    if m <= 0:
        return []
    if m < n:
        threshold = np.partition(row_scores, n - m)[n - m]
        candidates = np.flatnonzero(row_scores >= threshold)
    else:
        candidates = np.arange(n)
    order = np.lexsort((ids[candidates], -row_scores[candidates]))[:m]
    chosen = candidates[order]
    return list(zip(ids[chosen].tolist(), row_scores[chosen].tolist(), strict=True))


def validate_rows(codes: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Check rows for a matrix: int8 ``[m, d]`` codes in [-127, 127], one integer id per row.

    -128 is refused because every exactness bound assumes |code| <= 127. Returns the codes and
    the ids as int64 (views where no conversion is needed).
    """
    _check_codes(codes, "codes", (2,))
    ids = np.asarray(ids)
    if ids.ndim != 1 or len(ids) != len(codes):
        raise ValueError("ids must be one-dimensional with one id per row")
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"ids must be integers, got {ids.dtype}")
    if codes.size and codes.min() < -CODE_MAX:
        raise ValueError("codes must lie in [-127, 127]")
    return codes, ids.astype(np.int64, copy=False)


def top_k(
    codes: np.ndarray, ids: np.ndarray, query_codes: np.ndarray, k: int
) -> list[tuple[int, int]]:
    """At most k (object id, score) pairs for one query, score descending then id ascending."""
    _check_codes(query_codes, "query_codes", (1,))
    return top_k_batch(codes, ids, query_codes[np.newaxis], k)[0]


def top_k_batch(
    codes: np.ndarray, ids: np.ndarray, queries: np.ndarray, k: int
) -> list[list[tuple[int, int]]]:
    """``top_k`` for each row of ``queries [q, d]``, scored in one matmul."""
    _check_codes(codes, "codes", (2,))
    _check_codes(queries, "queries", (2,))
    ids = np.asarray(ids, dtype=np.int64)
    if ids.shape != (len(codes),):
        raise ValueError("ids must be one-dimensional with one id per row")
    if k <= 0 or len(codes) == 0:
        return [[] for _ in range(len(queries))]
    return [best(row, ids, k) for row in scores(codes, queries)]
