"""The GPU top-k algorithm on the CPU: a numpy mirror of topk_pass driven by the host's plan.

The mirror repeats kernels.cu's bitonic network (same pairs, directions, comparison and
sentinels), so these tests check the algorithm and the multi-pass bookkeeping on any machine;
test_equivalence.py checks the compiled kernels themselves on a GPU.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.gpu import plan
from custom_components.alto.memory import selection

KERNELS = Path(plan.__file__).with_name("kernels.cu")
SENTINEL_SCORE = np.iinfo(np.int32).min
SENTINEL_ID = np.iinfo(np.int64).max


def bitonic(scores: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """kernels.cu's sort, one vectorized step per stage (a stage's pairs are disjoint)."""
    s, d = scores.copy(), ids.copy()
    size = len(s)
    t = np.arange(size // 2)
    span = 2
    while span <= size:
        stride = span // 2
        while stride:
            i = 2 * t - (t & (stride - 1))
            j = i + stride
            forward = (i & span) == 0
            si, sj, di, dj = s[i], s[j], d[i], d[j]
            swap = ((sj > si) | ((sj == si) & (dj < di))) == forward
            s[i[swap]], s[j[swap]] = sj[swap], si[swap]
            d[i[swap]], d[j[swap]] = dj[swap], di[swap]
            stride //= 2
        span *= 2
    return s, d


def topk_pass(
    scores: np.ndarray, ids: np.ndarray, step: plan.TopkPass, m: int, tile: int
) -> tuple[np.ndarray, np.ndarray]:
    """One launch for one query: every block sorts its tile and keeps its best m."""
    out_s = np.empty(step.blocks * m, dtype=np.int32)
    out_i = np.empty(step.blocks * m, dtype=np.int64)
    for block in range(step.blocks):
        base = block * tile
        valid = min(tile, step.count - base)
        size = 1 << max(valid - 1, 0).bit_length()
        s = np.full(size, SENTINEL_SCORE, dtype=np.int32)
        d = np.full(size, SENTINEL_ID, dtype=np.int64)
        s[:valid], d[:valid] = scores[base : base + valid], ids[base : base + valid]
        s, d = bitonic(s, d)
        keep = min(m, size)
        out_s[block * m : block * m + keep] = s[:keep]
        out_i[block * m : block * m + keep] = d[:keep]
        out_s[block * m + keep : (block + 1) * m] = SENTINEL_SCORE
        out_i[block * m + keep : (block + 1) * m] = SENTINEL_ID
    return out_s, out_i


def gpu_top_k(scores: np.ndarray, ids: np.ndarray, k: int, tile: int) -> list[tuple[int, int]]:
    """The kernels' top k, simulated pass by pass as `plan` lays them out."""
    m = min(k, len(scores))
    passes = plan.topk_passes(len(scores), m, tile)
    s, d = scores.astype(np.int32), ids
    for step in passes:
        assert step.count == len(s)
        s, d = topk_pass(s, d, step, m, tile)
    assert len(s) == m
    return list(zip(d.tolist(), s.tolist(), strict=True))


def tie_heavy(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores with many ties, and distinct random ids."""
    scores = rng.integers(-40, 40, size=n).astype(np.int64)
    ids = rng.permutation(np.unique(rng.integers(-(2**62), 2**62, size=n + 8)))[:n]
    return scores, ids.astype(np.int64)


def reference(scores: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The host's exact top k."""
    return selection.best(scores, ids, k)


@pytest.mark.parametrize(
    ("n", "k"),
    [(1, 1), (1, 16), (5, 16), (4096, 16), (4097, 16), (4097, 1024), (20000, 1024), (20000, 1)],
)
def test_kernel_tile_matches_reference(n: int, k: int) -> None:
    """The kernels' tiled top k equals the host's exact top k, ties included."""
    rng = np.random.default_rng(n + k)
    scores, ids = tie_heavy(rng, n)
    assert gpu_top_k(scores, ids, k, plan.TOPK_TILE) == reference(scores, ids, k)


@pytest.mark.parametrize("seed", range(8))
def test_deep_pass_chains_with_a_small_tile(seed: int) -> None:
    """A 16-wide tile forces many passes and many partial tiles over few candidates."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    k = int(rng.integers(1, 5))
    scores, ids = tie_heavy(rng, n)
    assert gpu_top_k(scores, ids, k, tile=16) == reference(scores, ids, k)


def test_bitonic_sorts_by_score_then_id() -> None:
    """Bitonic sorts by score then id."""
    rng = np.random.default_rng(9)
    scores, ids = tie_heavy(rng, 512)
    s, d = bitonic(scores.astype(np.int32), ids)
    assert list(zip(d.tolist(), s.tolist(), strict=True)) == reference(scores, ids, 512)


def test_plan_shapes() -> None:
    """The passes shrink to one block; impossible plans are refused."""
    passes = plan.topk_passes(1_000_000, 16)
    assert passes[0] == plan.TopkPass(1_000_000, 245)
    assert passes[-1].blocks == 1
    assert all(b.count < a.count for a, b in itertools.pairwise(passes))
    assert plan.topk_passes(10, 10) == [plan.TopkPass(10, 1)]
    for m, count in ((0, 10), (plan.MAX_K + 1, 10**6), (5, 4)):
        with pytest.raises(ValueError, match="need 1 <= m <= "):
            plan.topk_passes(count, m)


def test_pack_words_keeps_bytes_in_order_and_pads_with_zeros() -> None:
    """Pack words keeps bytes in order and pads with zeros."""
    rng = np.random.default_rng(10)
    codes = rng.integers(-127, 128, size=(7, 13), dtype=np.int8)
    packed = plan.pack_words(codes, plan.words_for(13))
    assert packed.dtype == np.int32
    assert packed.shape == (7, 4)
    raw = packed.view(np.int8)
    assert np.array_equal(raw[:, :13], codes)
    assert not raw[:, 13:].any()
    # __dp4a sums byte-lane products, so the packed dot product is the code dot product.
    query = plan.pack_words(codes[:1], 4).view(np.int8).astype(np.int64)
    assert np.array_equal((raw.astype(np.int64) * query).sum(1), selection.scores(codes, codes[0]))


def test_kernel_constants_match_the_host_plan() -> None:
    """Kernel constants match the host plan."""
    defines = dict(re.findall(r"^#define (\w+) (\d+)", KERNELS.read_text(), flags=re.M))
    for name in (
        "TOPK_TILE",
        "TOPK_THREADS",
        "SCORE_ONE_THREADS",
        "BATCH_THREADS",
        "BATCH_ROWS",
        "BATCH_QUERIES",
    ):
        assert int(defines[name]) == getattr(plan, name), name
