"""The GPU top-k algorithm on the CPU: models.py's mirror of topk_pass driven by the host's plan.

The mirror repeats kernels.cu's bitonic network (same pairs, directions, comparison and
sentinels), so these tests check the algorithm, the multi-pass bookkeeping, candidate lists
shorter than their capacity and the host's layout helpers on any machine; test_equivalence.py
checks the compiled kernels themselves on a GPU.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.gpu import plan
from custom_components.alto.memory import selection

from . import models

KERNELS = Path(plan.__file__).with_name("kernels.cu")


def gpu_top_k(
    scores: np.ndarray, ids: np.ndarray, k: int, tile: int, count: int | None = None
) -> list[tuple[int, int]]:
    """The kernels' top k, simulated pass by pass as `plan` lays them out."""
    m = min(k, len(scores) if count is None else count)
    passes = plan.topk_passes(len(scores), m, tile)
    return models.reduce(scores.astype(np.int64), ids, passes, m, tile=tile, count=count)


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
    s, d = models.bitonic(scores, ids)
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


@pytest.mark.parametrize("seed", range(8))
def test_a_short_candidate_list_reads_only_its_count(seed: int) -> None:
    """With a count, slots past it are never read: garbage there changes nothing."""
    rng = np.random.default_rng(seed)
    capacity, count = 600, int(rng.integers(1, 600))
    scores, ids = tie_heavy(rng, capacity)
    scores[count:] = 10**6  # would win every comparison if it were read
    k = int(rng.integers(1, min(count, 16) + 1))
    expected = reference(scores[:count], ids[:count], k)
    assert gpu_top_k(scores, ids, k, tile=64, count=count) == expected


def test_pack_rows_keeps_bytes_in_order_and_pads_with_zeros() -> None:
    """Pack rows keeps bytes in order and pads with zeros to whole k-slices."""
    rng = np.random.default_rng(10)
    codes = rng.integers(-127, 128, size=(7, 45), dtype=np.int8)
    assert [plan.row_bytes_for(d) for d in (1, 32, 33, 45, 768)] == [32, 32, 64, 64, 768]
    packed = plan.pack_rows(codes, plan.row_bytes_for(45))
    assert packed.shape == (7, 64)
    assert np.array_equal(packed[:, :45], codes)
    assert not packed[:, 45:].any()
    raw = packed.astype(np.int64)
    assert np.array_equal(raw @ raw[0], selection.scores(codes, codes[0]))


@pytest.mark.parametrize("seed", range(20))
def test_upload_pieces_cover_new_rows_once(seed: int) -> None:
    """Pieces cover [start, end) in order, each inside one block and at most `most` rows."""
    rng = np.random.default_rng(seed)
    block_rows, most = int(rng.integers(1, 50)), int(rng.integers(1, 80))
    start = int(rng.integers(0, 300))
    end = start + int(rng.integers(0, 300))
    pieces = plan.upload_pieces(block_rows, start, end, most)
    covered = [p.row + i for p in pieces for i in range(p.rows)]
    assert covered == list(range(start, end))
    for p in pieces:
        assert 1 <= p.rows <= most
        assert p.row == p.block * block_rows + p.column
        assert p.column + p.rows <= block_rows
    # a piece starts inside a block only where the load starts or the last piece was full
    for before, piece in itertools.pairwise(pieces):
        assert piece.column == 0 or (piece.block == before.block and before.rows == most)


def test_kernel_constants_match_the_host_plan() -> None:
    """Every #define the host mirrors has the host's value."""
    defines = dict(re.findall(r"^#define (\w+) (\d+)", KERNELS.read_text(), flags=re.M))
    mirrored = {name for name in defines if hasattr(plan, name)}
    assert mirrored == set(defines) - {"FULL_MASK", "SENTINEL_ID"}
    for name in mirrored:
        assert int(defines[name]) == getattr(plan, name), name
    assert plan.MAX_K <= plan.TOPK_TILE // 4
    assert plan.MAX_DIM * 127 * 127 < 2**31 <= (plan.MAX_DIM + 1) * 127 * 127
    # score_mma's staging ring fits the static shared-memory limit
    assert plan.MMA_STAGES * (plan.MMA_ROWS + plan.MMA_QUERIES) * plan.MMA_STRIDE <= 48 * 1024
