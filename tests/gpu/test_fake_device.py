"""CudaBackend's host side against the fake PyCUDA of fake_cuda.py.

Selection must equal memory.selection's through every path the plan takes (one query or a
batch, tensor cores or not, the candidate lists or all scores, an overflowing list), and loads
must move only new rows, through pinned buffers, without refilling a buffer still being read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.gpu import plan
from custom_components.alto.gpu.backend import CpuBackend, CudaBackend, select_backend
from custom_components.alto.memory import selection
from custom_components.alto.memory.matrix import CodeMatrix, Snapshot

from .fake_cuda import FakeError, FakeEvent, FakeGpu, install_fake


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpu:
    """A fake H200 in place of PyCUDA."""
    fake = FakeGpu()
    install_fake(monkeypatch, fake)
    return fake


def snapshot_of(codes: np.ndarray, ids: np.ndarray, block_rows: int = 4096) -> Snapshot:
    """A snapshot of these rows, in blocks of ``block_rows``."""
    matrix = CodeMatrix(codes.shape[1], block_rows=block_rows)
    matrix.append(codes, ids, np.zeros(len(ids)))
    return matrix.snapshot()


def random_rows(
    rng: np.random.Generator, n: int, d: int, alphabet: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Random rows (ties everywhere for a small alphabet), and distinct ids of both signs."""
    codes = rng.integers(-alphabet, alphabet + 1, size=(n, d), dtype=np.int8)
    return codes, rng.permutation(10 * n)[:n].astype(np.int64) - 5 * n


def closed(gpu: FakeGpu) -> bool:
    """Whether everything the backend held is released."""
    return gpu.context_state == "detached" and not gpu.allocations and not gpu.pinned


@pytest.mark.parametrize(("d", "capability"), [(13, (9, 0)), (768, (9, 0)), (40, (7, 5))])
def test_backend_matches_reference_through_growth(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, d: int, capability: tuple[int, int]
) -> None:
    """Loads that grow one matrix keep the reference's answers, on the mma and dp4a paths."""
    gpu = FakeGpu(capability)
    install_fake(monkeypatch, gpu)
    rng = np.random.default_rng(d)
    backend = CudaBackend(tmp_path / "cache")
    try:
        assert backend.name == "cuda:Fake H200"
        matrix = CodeMatrix(d, block_rows=1000)
        alphabet = 1 if d == 13 else 127  # d=13: codes in {-1, 0, 1}, ties everywhere
        for size in (0, 1, 700, 400, 3000, 1, 2500):  # crosses capacity 1024, 2048, 4096, 8192
            codes, ids = random_rows(rng, size, d, alphabet)
            matrix.append(codes, ids + 10**6 * len(matrix), np.zeros(size))
            snapshot = matrix.snapshot()
            backend.load(snapshot)
            all_codes = snapshot.take(np.arange(len(snapshot)))
            queries = rng.integers(-alphabet, alphabet + 1, size=(3, d), dtype=np.int8)
            for k in (1, 2, 16, 1024):
                expected = selection.top_k_batch(all_codes, snapshot.ids, queries, k)
                assert backend.top_k(queries[0], k) == expected[0]
                assert not len(snapshot) or "score_rows" in gpu.launches[-4:]
                assert backend.top_k_batch(queries, k) == expected
                scorer = "score_mma" if capability >= (8, 0) else "score_rows"
                assert not len(snapshot) or scorer in gpu.launches[-4:]
        assert len(matrix) > plan.TOPK_TILE  # so more than one top-k pass ran
    finally:
        backend.close()
    assert closed(gpu)


def test_every_batch_size(gpu: FakeGpu, tmp_path: Path) -> None:
    """Every batch size from 1 to 130 (split into launches of 64) gives the reference's answer."""
    rng = np.random.default_rng(1)
    codes, ids = random_rows(rng, 300, 40)
    backend = CudaBackend(tmp_path)
    try:
        backend.load(snapshot_of(codes[:10], ids[:10]))
        backend.load(snapshot_of(codes, ids))  # another matrix, same dimension: buffers stay
        for batch in [*range(1, 65), 65, 130]:
            queries = rng.integers(-2, 3, size=(batch, 40), dtype=np.int8)
            assert backend.top_k_batch(queries, 7) == selection.top_k_batch(codes, ids, queries, 7)
        assert backend.top_k_batch(queries, 0) == [[]] * 130
        allocated = gpu.alloc_count
        for batch in (1, 64, 2):
            backend.top_k_batch(queries[:batch], 7)
        assert gpu.alloc_count == allocated  # scratch buffers are reused, not reallocated
        backend.load(CodeMatrix(8).snapshot())
        assert backend.top_k(np.ones(8, np.int8), 5) == []
    finally:
        backend.close()
    assert closed(gpu)


def threshold(scores: np.ndarray, m: int) -> int:
    """The m-th largest maximum of the groups of GROUP_ROWS consecutive scores."""
    groups = -(-len(scores) // plan.GROUP_ROWS)
    padded = np.full(groups * plan.GROUP_ROWS, np.iinfo(np.int64).min)
    padded[: len(scores)] = scores
    return int(np.sort(padded.reshape(groups, -1).max(axis=1))[groups - m])


@pytest.mark.parametrize("tensor_cores", [True, False])
@pytest.mark.parametrize(("alphabet", "k"), [(127, 1), (127, 16), (2, 16), (127, 1024), (0, 5)])
def test_candidate_lists_and_their_overflow(
    gpu: FakeGpu, tmp_path: Path, alphabet: int, k: int, tensor_cores: bool
) -> None:
    """Past CANDIDATES rows the threshold prunes; a list overflowed by ties falls back, exactly.

    alphabet 0 makes every code 0: all rows tie, every list overflows and the host selects over
    all scores again; alphabet 2 makes heavy ties at the threshold.
    """
    rng = np.random.default_rng(alphabet + k)
    n, d = plan.GROUP_ROWS * plan.MAX_K + 3000, 8
    codes, ids = random_rows(rng, n, d, alphabet)
    queries = rng.integers(-2, 3, size=(5, d), dtype=np.int8)
    backend = CudaBackend(tmp_path, tensor_cores=tensor_cores)
    try:
        backend.load(snapshot_of(codes, ids))
        for batch in (queries[:1], queries):
            gpu.launches.clear()
            expected = selection.top_k_batch(codes, ids, batch, k)
            assert backend.top_k_batch(batch, k) == expected
            assert gpu.launches[1:3] == ["group_threshold", "gather_candidates"]
            overflow = any(
                (row >= threshold(row, k)).sum() > plan.CANDIDATES
                for row in selection.scores(codes, batch)
            )
            assert overflow if alphabet == 0 else k == plan.MAX_K or not overflow
            lists = len(plan.topk_passes(plan.CANDIDATES, k))
            everything = len(plan.topk_passes(n, k)) if overflow else 0
            assert gpu.launches[3:].count("topk_pass") == lists + everything
    finally:
        backend.close()


async def test_async_calls_and_errors_keep_the_backend_usable(gpu: FakeGpu, tmp_path: Path) -> None:
    """Async calls and errors keep the backend usable."""
    codes = np.array([[1, 2], [2, 1], [1, 2]], dtype=np.int8)
    backend = CudaBackend(tmp_path)
    try:
        backend.load(snapshot_of(codes, np.array([5, 4, 3])))
        query = np.array([1, 2], dtype=np.int8)
        assert await backend.async_top_k(query, 2) == [(3, 5), (5, 5)]
        assert await backend.async_top_k_batch(query[None], 5) == [[(3, 5), (5, 5), (4, 4)]]
        with pytest.raises(ValueError, match="exceeds the GPU limit"):
            backend.top_k(query, plan.MAX_K + 1)
        with pytest.raises(ValueError, match="query dimension 3 != matrix dimension 2"):
            backend.top_k(np.ones(3, np.int8), 1)  # raised on the owner thread, delivered here
        assert backend.top_k(query, 1) == [(3, 5)]
    finally:
        backend.close()
    assert not any(t.name == "alto-cuda" for t in threading.enumerate())


def test_select_backend_auto_uses_cuda_when_it_works(gpu: FakeGpu, tmp_path: Path) -> None:
    """Select backend auto uses cuda when it works."""
    backend = select_backend("auto", tmp_path / "kernels")
    try:
        assert backend.name == "cuda:Fake H200"
        assert gpu.launches == []
    finally:
        backend.close()


@pytest.mark.parametrize("stage", ["init", "compile"])
def test_failures_release_the_context_and_fall_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture, stage: str
) -> None:
    """Failures release the context and fall back."""
    fake = FakeGpu()
    install_fake(monkeypatch, fake, **{stage: FakeError(f"{stage} failed\nsecond line")})
    with caplog.at_level(logging.WARNING):
        backend = select_backend("auto", tmp_path)
    assert isinstance(backend, CpuBackend)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].getMessage().endswith(f"FakeError: {stage} failed")
    assert fake.context_state == ("none" if stage == "init" else "detached")
    assert not any(t.name == "alto-cuda" for t in threading.enumerate())


# -- loads -----------------------------------------------------------------------------------


def mask_where(tags: set[int]) -> Callable[[Snapshot], np.ndarray]:
    """A mask function: the rows whose tag is in ``tags``."""
    return lambda snapshot: np.isin(snapshot.tags, list(tags))


def test_load_uploads_only_the_rows_the_device_lacks(gpu: FakeGpu, tmp_path: Path) -> None:
    """A grown snapshot uploads its new rows; a retag nothing; another matrix all of its rows."""
    rng = np.random.default_rng(3)
    d, row_bytes = 24, 24 + 8  # the host sends d codes and an 8-byte id per row
    codes, ids = random_rows(rng, 900, d)
    matrix = CodeMatrix(d, block_rows=64)
    matrix.append(codes[:700], ids[:700], np.zeros(700))
    queries = rng.integers(-2, 3, size=(3, d), dtype=np.int8)
    backend = CudaBackend(tmp_path)
    try:
        backend.load(matrix.snapshot())
        assert gpu.uploaded == 700 * row_bytes
        assert gpu.async_copies == -(-700 // 64)  # one per block: a block fits a buffer
        assert backend.top_k_batch(queries, 9) == selection.top_k_batch(
            codes[:700], ids[:700], queries, 9
        )
        gpu.uploaded = 0
        matrix.append(codes[700:], ids[700:], np.zeros(200))
        backend.load(matrix.snapshot())  # the same matrix, grown: its new rows only
        assert gpu.uploaded == 200 * row_bytes
        assert backend.top_k_batch(queries, 9) == selection.top_k_batch(codes, ids, queries, 9)
        gpu.uploaded = 0
        matrix.retag(np.arange(5), np.ones(5))
        backend.load(matrix.snapshot())  # same rows, other tags: nothing to upload
        assert gpu.uploaded == 0
        other = CodeMatrix(d, block_rows=64)  # a compaction: another matrix, all of it
        other.append(codes[::-1], ids[::-1], np.zeros(900))
        backend.load(other.snapshot())
        assert gpu.uploaded == 900 * row_bytes
        assert backend.top_k_batch(queries, 9) == selection.top_k_batch(codes, ids, queries, 9)
    finally:
        backend.close()
    assert closed(gpu)


@pytest.mark.parametrize("stage_bytes", [40 * 7, 40 * 64, 40 * 1000])
def test_pieces_through_the_pinned_buffers(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stage_bytes: int
) -> None:
    """Blocks cut into pieces of a small staging buffer, in two pinned buffers, arrive intact.

    The fake's stream runs a copy only when it is waited for, and the copy reads its pinned
    buffer then: refilling a buffer before its copy ran would load another piece's rows.
    """
    monkeypatch.setattr(plan, "STAGE_BYTES", stage_bytes)
    rng = np.random.default_rng(stage_bytes)
    d = 40
    codes, ids = random_rows(rng, 1500, d, 127)
    matrix = CodeMatrix(d, block_rows=256)
    matrix.append(codes[:1000], ids[:1000], np.zeros(1000))
    queries = rng.integers(-127, 128, size=(4, d), dtype=np.int8)
    backend = CudaBackend(tmp_path)
    try:
        backend.load(matrix.snapshot())
        matrix.append(codes[1000:], ids[1000:], np.zeros(500))
        backend.load(matrix.snapshot())
        expected = len(plan.upload_pieces(256, 0, 1000, stage_bytes // d))
        expected += len(plan.upload_pieces(256, 1000, 1500, stage_bytes // d))
        assert gpu.async_copies == expected
        for k in (1, 50, 1024):
            got = backend.top_k_batch(queries, k)
            assert got == selection.top_k_batch(codes, ids, queries, k)
    finally:
        backend.close()
    assert closed(gpu)


def test_the_fake_catches_a_refilled_buffer(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without the wait on a buffer's event, the fake's deferred copies load the wrong rows."""
    monkeypatch.setattr(plan, "STAGE_BYTES", 16 * 50)
    monkeypatch.setattr(FakeEvent, "synchronize", lambda self: None)
    rng = np.random.default_rng(6)
    codes, ids = random_rows(rng, 400, 16, 127)
    backend = CudaBackend(tmp_path)
    try:
        backend.load(snapshot_of(codes, ids))
        queries = rng.integers(-127, 128, size=(4, 16), dtype=np.int8)
        assert backend.top_k_batch(queries, 20) != selection.top_k_batch(codes, ids, queries, 20)
    finally:
        backend.close()


@pytest.mark.parametrize("hidden_share", [0.1, 0.9])
def test_allowed_rows_through_the_kernels_or_the_host(
    gpu: FakeGpu, tmp_path: Path, hidden_share: float
) -> None:
    """Few hidden rows: the kernels select k plus them; too many for MAX_K: the host scores."""
    rng = np.random.default_rng(4)
    n, d = 3 * plan.MAX_K, 16
    codes, ids = random_rows(rng, n, d)
    tags = (rng.random(n) < hidden_share).astype(np.int32)  # tag 1: hidden
    matrix = CodeMatrix(d)
    matrix.append(codes, ids, tags)
    queries = rng.integers(-2, 3, size=(4, d), dtype=np.int8)
    visible = tags == 0
    backend = CudaBackend(tmp_path)
    try:
        backend.load(matrix.snapshot())
        for k in (1, 16, 200):
            launched = len(gpu.launches)
            got = backend.top_k_batch(queries, k, allowed=mask_where({0}))
            assert got == selection.top_k_batch(codes[visible], ids[visible], queries, k)
            assert (len(gpu.launches) > launched) == (k + (~visible).sum() <= plan.MAX_K)
    finally:
        backend.close()


async def test_async_allowed_rows(gpu: FakeGpu, tmp_path: Path) -> None:
    """The async calls honour the allowed rows."""
    rng = np.random.default_rng(5)
    codes, ids = random_rows(rng, 300, 8)
    tags = np.arange(300) % 3
    matrix = CodeMatrix(8)
    matrix.append(codes, ids, tags)
    query = rng.integers(-2, 3, size=8, dtype=np.int8)
    backend = CudaBackend(tmp_path)
    try:
        assert await backend.async_top_k(query, 5, allowed=mask_where({0})) == []  # nothing loaded
        backend.load(matrix.snapshot())
        keep = tags != 1
        expected = selection.top_k(codes[keep], ids[keep], query, 5)
        assert await backend.async_top_k(query, 5, allowed=mask_where({0, 2})) == expected
    finally:
        backend.close()
