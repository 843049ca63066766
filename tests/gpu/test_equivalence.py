"""On a CUDA host: the compiled kernels select exactly what memory.selection selects.

Skipped cleanly where PyCUDA, a driver or a device is missing. Two backends serve the module
(one owner thread and one compile each): batches on the tensor cores, and batches with __dp4a
as devices without int8 mma score them. Each test loads its own snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.gpu import plan
from custom_components.alto.gpu.backend import CudaBackend
from custom_components.alto.memory import selection
from custom_components.alto.memory.matrix import CodeMatrix, Snapshot

cuda = pytest.importorskip("pycuda.driver")
try:
    cuda.init()
    if cuda.Device.count() == 0:
        pytest.skip("no CUDA device", allow_module_level=True)
except cuda.Error as err:
    pytest.skip(f"CUDA unavailable: {err}", allow_module_level=True)

KS = [*range(1, 41), 63, 64, 65, 100, 511, 512, 1000, plan.MAX_K]


@pytest.fixture(scope="module", params=[True, False], ids=["mma", "dp4a"])
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CudaBackend]:
    """One CUDA backend per batch path, its kernels compiled once."""
    gpu = CudaBackend(tmp_path_factory.mktemp("kernels"), tensor_cores=request.param)
    yield gpu
    gpu.close()


def matrix(seed: int, n: int, d: int, alphabet: int = 127) -> tuple[np.ndarray, np.ndarray]:
    """Random codes over ``alphabet`` and distinct random ids, from ``seed``."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(-alphabet, alphabet + 1, size=(n, d), dtype=np.int8)
    ids = rng.permutation(np.unique(rng.integers(-(2**62), 2**62, size=n + 8)))[:n]
    return codes, ids.astype(np.int64)


def queries(seed: int, q: int, d: int, alphabet: int = 127) -> np.ndarray:
    """Random query codes over ``alphabet``, from ``seed``."""
    return np.random.default_rng(seed).integers(-alphabet, alphabet + 1, (q, d), dtype=np.int8)


def snapshot_of(codes: np.ndarray, ids: np.ndarray) -> Snapshot:
    """A snapshot holding these rows."""
    rows = CodeMatrix(codes.shape[1])
    rows.append(codes, ids, np.zeros(len(ids)))
    return rows.snapshot()


def test_device_name(backend: CudaBackend) -> None:
    """The backend is named after its CUDA device."""
    assert backend.name.startswith("cuda:")


@pytest.mark.parametrize(("d", "alphabet"), [(768, 127), (61, 1), (1100, 127), (3, 2)])
def test_every_k(backend: CudaBackend, d: int, alphabet: int) -> None:
    """Every k up to `plan.MAX_K` gives the host reference's answer, one query or a batch."""
    codes, ids = matrix(d, 5000, d, alphabet)
    backend.load(snapshot_of(codes, ids))
    qs = queries(d + 1, 4, d, alphabet)
    for k in KS:
        assert backend.top_k(qs[0], k) == selection.top_k(codes, ids, qs[0], k), k
        assert backend.top_k_batch(qs, k) == selection.top_k_batch(codes, ids, qs, k), k


@pytest.mark.parametrize(("d", "alphabet"), [(768, 127), (33, 1)])
def test_every_k_through_the_candidate_lists(backend: CudaBackend, d: int, alphabet: int) -> None:
    """Past CANDIDATES rows (and MAX_K groups) every k goes through the threshold, exactly."""
    n = plan.GROUP_ROWS * plan.MAX_K + 777
    assert plan.filtered(n, plan.MAX_K)
    codes, ids = matrix(d + 2, n, d, alphabet)
    backend.load(snapshot_of(codes, ids))
    qs = queries(d + 3, 5, d, alphabet)
    for k in KS:
        assert backend.top_k(qs[0], k) == selection.top_k(codes, ids, qs[0], k), k
        assert backend.top_k_batch(qs, k) == selection.top_k_batch(codes, ids, qs, k), k


@pytest.mark.parametrize("d", [768, 61])
def test_every_batch_size(backend: CudaBackend, d: int) -> None:
    """Every batch size from 1 to 130 queries gives the host reference's answer."""
    codes, ids = matrix(7, 3000, d, 1 if d == 61 else 127)
    backend.load(snapshot_of(codes, ids))
    for q in [*range(1, 65), 65, 130]:
        qs = queries(q, q, d, 1 if d == 61 else 127)
        assert backend.top_k_batch(qs, 16) == selection.top_k_batch(codes, ids, qs, 16), q


@pytest.mark.parametrize("n", [100, 40_000])
def test_ties_duplicates_and_extremes(backend: CudaBackend, n: int) -> None:
    """Ties, duplicate rows, extreme codes and extreme ids give the reference's answer.

    At 40,000 rows, for large k, the duplicates tie at the threshold in more rows than a list
    holds: the lists overflow and the selection runs over all scores again.
    """
    d = 768
    base = queries(3, 4, d)
    codes = np.concatenate([np.repeat(base, n // 4, axis=0), np.full((10, d), 127, np.int8)])
    codes = np.concatenate([codes, -codes[:10]])
    ids = np.random.default_rng(4).permutation(len(codes)).astype(np.int64)
    ids[:3] = [2**63 - 1, -(2**63), 0]
    backend.load(snapshot_of(codes, ids))
    qs = np.concatenate([base, np.full((1, d), 127, np.int8), np.full((1, d), -127, np.int8)])
    for k in (1, 49, 50, 51, 200, 1024):
        assert backend.top_k(qs[0], k) == selection.top_k(codes, ids, qs[0], k), k
        assert backend.top_k_batch(qs, k) == selection.top_k_batch(codes, ids, qs, k), k


def test_empty_one_row_and_k_beyond_n(backend: CudaBackend) -> None:
    """An empty matrix, a single row and k beyond the rows give the reference's answer."""
    d = 40
    q = queries(5, 2, d)
    backend.load(CodeMatrix(d).snapshot())
    assert backend.top_k(q[0], 5) == []
    assert backend.top_k_batch(q, 5) == [[], []]
    codes, ids = matrix(6, 1, d)
    backend.load(snapshot_of(codes, ids))
    assert backend.top_k(q[0], 5) == selection.top_k(codes, ids, q[0], 5)
    assert backend.top_k(q[0], 0) == []
    codes, ids = matrix(6, 37, d)
    backend.load(snapshot_of(codes, ids))
    assert backend.top_k_batch(q, plan.MAX_K) == selection.top_k_batch(codes, ids, q, plan.MAX_K)


def test_growth_in_place(backend: CudaBackend) -> None:
    """Loads of one growing matrix cross every capacity doubling and keep the exact answer."""
    d = 96
    codes, ids = matrix(8, 20000, d, 2)
    q = queries(9, 3, d, 2)
    grown = CodeMatrix(d, block_rows=3000)
    end = 0
    for size in (1, 5, 1000, 18, 1100, 3000, 14876):  # crosses 1024, 2048, 4096, 8192, 16384
        grown.append(codes[end : end + size], ids[end : end + size], np.zeros(size))
        backend.load(grown.snapshot())  # the new rows only
        end += size
        for k in (1, 16, 1024):
            got = backend.top_k_batch(q, k)
            assert got == selection.top_k_batch(codes[:end], ids[:end], q, k), (end, k)
    assert end == len(codes)


def test_small_pieces_through_the_pinned_buffers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Blocks cut into many pieces by a small staging buffer arrive intact, new rows only."""
    monkeypatch.setattr(plan, "STAGE_BYTES", 100 * 1000)  # 130 rows of 768 codes a piece
    codes, ids = matrix(17, 9000, 768)
    grown = CodeMatrix(768, block_rows=1000)
    grown.append(codes[:5000], ids[:5000], np.zeros(5000))
    gpu = CudaBackend(tmp_path)
    try:
        gpu.load(grown.snapshot())
        grown.append(codes[5000:], ids[5000:], np.zeros(4000))
        gpu.load(grown.snapshot())
        qs = queries(18, 8, 768)
        for k in (1, 16, 1024):
            assert gpu.top_k_batch(qs, k) == selection.top_k_batch(codes, ids, qs, k), k
    finally:
        gpu.close()


@pytest.mark.parametrize("k", [16, 1024])
def test_large_matrix(backend: CudaBackend, k: int) -> None:
    """300,000 rows through the threshold and candidate lists give the reference's answer."""
    codes, ids = matrix(10, 300_000, 768)
    backend.load(snapshot_of(codes, ids))
    qs = queries(11, 64, 768)
    assert backend.top_k(qs[0], k) == selection.top_k(codes, ids, qs[0], k)
    assert backend.top_k_batch(qs, k) == selection.top_k_batch(codes, ids, qs, k)


async def test_async_on_the_owner_thread(backend: CudaBackend) -> None:
    """The async calls give the reference's answer through the owner thread."""
    codes, ids = matrix(12, 500, 64)
    backend.load(snapshot_of(codes, ids))
    q = queries(13, 2, 64)
    assert await backend.async_top_k(q[0], 9) == selection.top_k(codes, ids, q[0], 9)
    assert await backend.async_top_k_batch(q, 9) == selection.top_k_batch(codes, ids, q, 9)


def test_close_releases_the_context(tmp_path: Path) -> None:
    """Closing the backend stops its owner thread, which releases the context."""
    gpu = CudaBackend(tmp_path)
    gpu.load(snapshot_of(*matrix(14, 10, 8)))
    gpu.close()
    assert not gpu._owner.alive


@pytest.mark.parametrize("hidden_every", [7, 400])  # many hidden rows: host; few: the kernels
def test_snapshots_grown_on_the_device_and_allowed_rows(
    backend: CudaBackend, hidden_every: int
) -> None:
    """Snapshots grown on the device and masks of allowed rows give the reference's answer."""
    codes, ids = matrix(15, 40_000, 768)
    tags = (np.arange(40_000) % hidden_every == 0).astype(np.int32)  # tag 1: hidden
    grown = CodeMatrix(768)
    grown.append(codes[:30_000], ids[:30_000], tags[:30_000])
    backend.load(grown.snapshot())
    grown.append(codes[30_000:], ids[30_000:], tags[30_000:])
    backend.load(grown.snapshot())  # uploads the 10,000 new rows only
    qs = queries(16, 5, 768)
    assert backend.top_k_batch(qs, 16) == selection.top_k_batch(codes, ids, qs, 16)
    keep = tags == 0
    got = backend.top_k_batch(qs, 16, allowed=lambda snapshot: snapshot.tags == 0)
    assert got == selection.top_k_batch(codes[keep], ids[keep], qs, 16)
