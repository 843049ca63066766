"""The kernels' arithmetic on the CPU (models.py) against memory.selection, over ragged sizes.

Rows not a multiple of a tile or a group, d not a multiple of a k-slice, a second query tile
with one n-tile, k up to MAX_K, codes at +-127 and alphabets that tie almost every score: each
mirror must give the reference's exact scores, and the whole selection its exact answer.
"""

from __future__ import annotations

import numpy as np
import pytest

from custom_components.alto.gpu import plan
from custom_components.alto.memory import selection

from . import models


def rows_and_queries(
    seed: int, n: int, d: int, q: int, alphabet: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes, distinct ids and queries over ``alphabet``; with 127, some rows at +-127."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(-alphabet, alphabet + 1, size=(n, d), dtype=np.int8)
    queries = rng.integers(-alphabet, alphabet + 1, size=(q, d), dtype=np.int8)
    if alphabet == 127:
        codes[: n // 7] = np.sign(codes[: n // 7]) * 127
        queries[0] = 127
    ids = rng.permutation(np.unique(rng.integers(-(2**62), 2**62, size=n + 8)))[:n]
    return codes, ids.astype(np.int64), queries


def reference_group_max(scores: np.ndarray) -> np.ndarray:
    """Each query's best score per group of GROUP_ROWS consecutive rows."""
    q, n = scores.shape
    groups = plan.groups_for(n)
    padded = np.full((q, groups * plan.GROUP_ROWS), np.iinfo(np.int64).min)
    padded[:, :n] = scores
    return padded.reshape(q, groups, plan.GROUP_ROWS).max(axis=2)


def device_rows(codes: np.ndarray) -> np.ndarray:
    """The device layout: each row padded with zeros to a multiple of SLICE."""
    return plan.pack_rows(codes, plan.row_bytes_for(codes.shape[1]))


@pytest.mark.parametrize(
    ("n", "d", "q", "alphabet"),
    [
        (1, 1, 2, 127),
        (255, 31, 2, 1),
        (257, 33, 9, 127),
        (300, 64, 64, 2),
        (513, 100, 65, 127),  # a second query tile holding one query
        (40, 768, 3, 127),  # 24 k-slices through the three-stage ring
    ],
)
def test_mma_tiling_gives_exact_scores_and_group_maxima(
    n: int, d: int, q: int, alphabet: int
) -> None:
    """Every score and group maximum score_mma writes is the reference's; it writes them all."""
    codes, _, queries = rows_and_queries(n + d + q, n, d, q, alphabet)
    scores, group_max = models.score_mma(device_rows(codes), device_rows(queries))
    expected = selection.scores(codes, queries)
    assert np.array_equal(scores, expected)
    assert np.array_equal(group_max, reference_group_max(expected))


@pytest.mark.parametrize(
    ("n", "d", "q", "alphabet"),
    [(1, 1, 1, 127), (33, 31, 2, 1), (100, 200, 1, 127), (65, 768, 1, 2)],
)
def test_row_kernel_gives_exact_scores_and_group_maxima(
    n: int, d: int, q: int, alphabet: int
) -> None:
    """score_rows' lanes, vectors and shuffles give the reference's scores and group maxima."""
    codes, _, queries = rows_and_queries(n * d, n, d, q, alphabet)
    scores, group_max = models.score_rows(device_rows(codes), device_rows(queries))
    expected = selection.scores(codes, queries)
    assert np.array_equal(scores, expected)
    assert np.array_equal(group_max, reference_group_max(expected))


def test_the_fragment_layout_is_not_symmetric() -> None:
    """The mma model tells its registers apart: swapping two of A's registers changes D."""
    rng = np.random.default_rng(0)
    a = rng.integers(-127, 128, size=(32, 4, 4))
    b = rng.integers(-127, 128, size=(32, 2, 4))
    straight, swapped = np.zeros((32, 4), np.int64), np.zeros((32, 4), np.int64)
    models.mma_m16n8k32(straight, a, b)
    models.mma_m16n8k32(swapped, a[:, [0, 2, 1, 3]], b)
    assert not np.array_equal(straight, swapped)


@pytest.mark.parametrize("seed", range(40))
def test_radix_threshold_is_the_mth_largest(seed: int) -> None:
    """group_threshold's digits find the m-th largest value, with multiplicity, at any sign."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 3000))
    spread = [3, 300, 2**20, 2**31 - 1][seed % 4]
    values = rng.integers(-spread, spread, size=size).astype(np.int64)
    values[rng.random(size) < 0.05] = [np.iinfo(np.int32).min + 1, 2**31 - 1][seed % 2]
    for m in {1, 2, size // 3 + 1, size}:
        assert models.group_threshold(values, m) == np.sort(values)[size - m]


@pytest.mark.parametrize("seed", range(12))
def test_candidate_lists_hold_every_row_at_the_threshold(seed: int) -> None:
    """A list holds exactly the rows scoring at or above the threshold, until it overflows."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    scores = rng.integers(-20, 20, size=n)
    ids = rng.permutation(n).astype(np.int64) * 3
    group_max = reference_group_max(scores[None])[0]
    bar = int(rng.choice(scores))
    capacity = int(rng.integers(1, 2 * n))
    c_scores, c_ids, count = models.gather_candidates(
        scores, ids, group_max, bar, capacity=capacity, rng=rng
    )
    chosen = np.flatnonzero(scores >= bar)
    assert count == len(chosen)
    written = min(count, capacity)
    assert np.array_equal(scores[np.argsort(ids)][np.searchsorted(np.sort(ids), c_ids[:written])],
                          c_scores[:written])  # fmt: skip
    assert len(set(c_ids[:written].tolist())) == written
    assert set(c_ids[:written].tolist()) <= set(ids[chosen].tolist())
    if count <= capacity:
        assert set(c_ids[:count].tolist()) == set(ids[chosen].tolist())


@pytest.mark.parametrize(
    ("shape", "alphabet", "ks", "lists"),
    [
        ((1300, 40, 3), 127, (1, 7, 100, 1000, plan.MAX_K), (plan.TOPK_TILE, plan.CANDIDATES)),
        ((1300, 40, 3), 1, (1, 16, plan.MAX_K), (plan.TOPK_TILE, plan.CANDIDATES)),
        ((2000, 33, 2), 127, (1, 5, 16), (64, 256)),  # lists of 256, 4-pass chains of 64
        ((2000, 33, 2), 1, (1, 16), (64, 256)),  # ties at the threshold overflow the lists
        ((700, 5, 2), 0, (3,), (64, 128)),  # all rows tie: every list overflows
    ],
)
def test_selection_over_the_mma_model_is_the_reference(
    shape: tuple[int, int, int], alphabet: int, ks: tuple[int, ...], lists: tuple[int, int]
) -> None:
    """Scores from the mma model, then threshold, lists and passes: the reference's answer.

    ``shape`` is (rows, d, queries); ``lists`` the top-k tile and the candidate capacity.
    """
    n, d, q = shape
    tile, capacity = lists
    codes, ids, queries = rows_and_queries(n + q, n, d, q, alphabet)
    scores, group_max = models.score_mma(device_rows(codes), device_rows(queries))
    rng = np.random.default_rng(n)
    for k in ks:
        got = list(models.select(scores, group_max, ids, k, rng=rng, tile=tile, capacity=capacity))
        assert got == selection.top_k_batch(codes, ids, queries, k), k


def test_the_paths_each_family_takes() -> None:
    """The family above reaches the lists, their overflow and the pass over all scores."""
    assert plan.filtered(2000, 16, 256)
    assert not plan.filtered(1300, 16)
    assert not plan.filtered(2000, 64, 256)  # 63 groups hold fewer than 64 distinct rows
    assert plan.filtered(plan.CANDIDATES + 1, 16)
    assert not plan.filtered(plan.GROUP_ROWS * 100, 101)


@pytest.mark.parametrize(("dim", "cols"), [(1, 1), (31, 65), (33, 64), (100, 130), (768, 7)])
def test_pack_rows_builds_the_device_layout(dim: int, cols: int) -> None:
    """pack_rows turns a staged column piece into padded device rows, every byte written."""
    rng = np.random.default_rng(dim + cols)
    codes = rng.integers(-127, 128, size=(cols, dim), dtype=np.int8)
    lines = np.ascontiguousarray(codes.T)  # how a column block piece is staged
    assert np.array_equal(models.pack_rows(lines, plan.row_bytes_for(dim)), device_rows(codes))
