"""CudaBackend's host side against a fake PyCUDA that emulates device memory and the kernels.

The fake checks what no CPU run could otherwise: every driver call happens on the thread that
owns the context, device reads and writes stay inside live allocations (uninitialized memory is
garbage, not zeros), launch grids cover their data, and close() frees everything, then pops and
detaches the context on the owner thread. The kernels are emulated by their contracts in numpy;
test_topk_plan.py mirrors the real top-k network and test_equivalence.py runs the real kernels.
"""

from __future__ import annotations

import logging
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.gpu import plan
from custom_components.alto.gpu.backend import CpuBackend, CudaBackend, select_backend
from custom_components.alto.memory import selection
from custom_components.alto.memory.matrix import CodeMatrix, Snapshot


class FakeError(Exception):
    """Stands in for pycuda.driver.Error."""


class FakeGpu:
    """Device memory as numpy byte arrays in a sparse address space, plus one context."""

    def __init__(self) -> None:
        """No allocation, no context yet."""
        self.allocations: dict[int, np.ndarray] = {}
        self.next_base = 1 << 40
        self.owner: threading.Thread | None = None
        self.context_state = "none"
        self.launches: list[str] = []
        self.alloc_count = 0
        self.uploaded = 0  # bytes copied host to device

    def check_thread(self) -> None:
        """Assert a driver call runs on the owner thread with the context current."""
        assert self.context_state == "current", f"driver call with context {self.context_state}"
        assert threading.current_thread() is self.owner, "driver call off the owner thread"

    def alloc(self, nbytes: int) -> FakeAllocation:
        """Allocate ``nbytes`` filled with garbage, far from every other allocation."""
        self.check_thread()
        base = self.next_base
        self.next_base += 1 << 40
        self.alloc_count += 1
        self.allocations[base] = np.full(max(nbytes, 1), 0xA5, dtype=np.uint8)  # garbage
        return FakeAllocation(self, base)

    def base_of(self, ptr: int) -> int:
        """The base of the allocation holding ``ptr``."""
        return next(b for b, memory in self.allocations.items() if b <= ptr < b + len(memory))

    def span(self, ptr: int, nbytes: int) -> np.ndarray:
        """The bytes at ``ptr``; asserts they lie inside one allocation."""
        self.check_thread()
        for base, memory in self.allocations.items():
            if base <= ptr < base + len(memory):
                assert ptr + nbytes <= base + len(memory), "access past the end of an allocation"
                return memory[ptr - base : ptr - base + nbytes]
        raise AssertionError(f"access to unallocated device address {ptr:#x}")

    def read(self, ptr: int, count: int, dtype: type) -> np.ndarray:
        """A copy of ``count`` values of ``dtype`` at ``ptr``."""
        size = np.dtype(dtype).itemsize
        return self.span(ptr, count * size).copy().view(dtype)

    def write(self, ptr: int, values: np.ndarray) -> None:
        """Write ``values``' bytes at ``ptr``."""
        raw = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
        self.span(ptr, len(raw))[...] = raw


class FakeAllocation:
    """Device memory as PyCUDA hands it out: an int address that can be freed once."""

    def __init__(self, gpu: FakeGpu, base: int) -> None:
        """The allocation at ``base`` of ``gpu``."""
        self.gpu, self.base = gpu, base

    def __int__(self) -> int:
        """The device address."""
        return self.base

    def free(self) -> None:
        """Free the allocation; asserts it was not freed before."""
        self.gpu.check_thread()
        assert self.base in self.gpu.allocations, "double free"
        del self.gpu.allocations[self.base]


class FakeContext:
    """A device context that checks it is popped and detached on its owner thread."""

    def __init__(self, gpu: FakeGpu) -> None:
        """The context of ``gpu``."""
        self.gpu = gpu

    def pop(self) -> None:
        """Pop the context off the owner thread's stack."""
        self.gpu.check_thread()
        self.gpu.context_state = "popped"

    def detach(self) -> None:
        """Detach the context; asserts it was popped first, on the owner thread."""
        assert self.gpu.context_state == "popped", "detach before pop"
        assert threading.current_thread() is self.gpu.owner, "detach off the owner thread"
        self.gpu.context_state = "detached"


class FakeDevice:
    """The one device of a ``FakeGpu``."""

    def __init__(self, gpu: FakeGpu, ordinal: int) -> None:
        """Device ``ordinal`` (only 0 exists)."""
        assert ordinal == 0
        self.gpu = gpu

    def name(self) -> str:
        """The device's name."""
        return "Fake H200"

    def compute_capability(self) -> tuple[int, int]:
        """The device's compute capability (an H200's)."""
        return (9, 0)

    def make_context(self) -> FakeContext:
        """Make the context current on the calling thread, which becomes the owner."""
        assert self.gpu.context_state == "none"
        self.gpu.owner = threading.current_thread()
        self.gpu.context_state = "current"
        return FakeContext(self.gpu)


class FakeFunction:
    """A kernel, run in numpy with the launch shape and arguments checked."""

    def __init__(self, gpu: FakeGpu, name: str) -> None:
        """The kernel ``name`` of ``gpu``."""
        self.gpu, self.name, self.format = gpu, name, ""

    def prepare(self, arg_format: str) -> FakeFunction:
        """Take the argument format of later calls."""
        self.format = arg_format
        return self

    def prepared_call(
        self, grid: tuple[int, ...], block: tuple[int, ...], *args: int, shared_size: int = 0
    ) -> None:
        """Launch the kernel: check the arguments against the format, then run it."""
        self.gpu.check_thread()
        assert len(args) == len(self.format)
        for code, value in zip(self.format, args, strict=True):
            assert type(value) is int, f"{self.name}: {code} argument {value!r} is not an int"
            bits = 32 if code == "i" else 64
            assert -(2 ** (bits - 1)) <= value < 2**bits
        self.gpu.launches.append(self.name)
        getattr(self, self.name)(grid, block, shared_size, args)

    def score_one(self, grid, block, shared, args) -> None:
        """The one-query scoring kernel."""
        codes, query, out, n, words = args
        assert block == (plan.SCORE_ONE_THREADS, 1, 1)
        assert shared == words * 4
        assert grid[0] * plan.SCORE_ONE_THREADS // 32 >= n
        self._scores((codes, query, out, n, words, 1))

    def score_batch(self, grid, block, shared, args) -> None:
        """The batch scoring kernel."""
        n, q = args[3], args[5]
        assert block == (plan.BATCH_THREADS, 1, 1)
        assert shared == 0
        assert grid[0] * plan.BATCH_ROWS >= n
        assert grid[1] * plan.BATCH_QUERIES >= q
        self._scores(args)

    def _scores(self, args) -> None:
        codes, queries, out, n, words, q = args
        gpu = self.gpu
        rows = gpu.read(codes, n * words * 4, np.int8).reshape(n, words * 4).astype(np.int64)
        qs = gpu.read(queries, q * words * 4, np.int8).reshape(q, words * 4).astype(np.int64)
        gpu.write(out, (qs @ rows.T).astype(np.int32))

    def topk_pass(self, grid, block, shared, args) -> None:
        """One top-k selection pass over tiles of scores."""
        s_in, i_in, s_out, i_out, s_stride, i_stride, o_stride, count, m = args
        gpu, tile = self.gpu, plan.TOPK_TILE
        assert block == (plan.TOPK_THREADS, 1, 1)
        assert shared == 0
        assert (grid[0] - 1) * tile < count <= grid[0] * tile
        assert 1 <= m <= tile // 4
        # Blocks run concurrently on a GPU: a pass must never write the buffers it reads.
        assert {gpu.base_of(s_in), gpu.base_of(i_in)}.isdisjoint(
            {gpu.base_of(s_out), gpu.base_of(i_out)}
        )
        for y in range(grid[1]):
            for x in range(grid[0]):
                base = x * tile
                valid = min(tile, count - base)
                scores = gpu.read(s_in + 4 * (y * s_stride + base), valid, np.int32)
                ids = gpu.read(i_in + 8 * (y * i_stride + base), valid, np.int64)
                order = np.lexsort((ids, -scores.astype(np.int64)))[:m]
                best_s = np.full(m, np.iinfo(np.int32).min, dtype=np.int32)
                best_i = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
                best_s[: len(order)], best_i[: len(order)] = scores[order], ids[order]
                gpu.write(s_out + 4 * (y * o_stride + x * m), best_s)
                gpu.write(i_out + 8 * (y * o_stride + x * m), best_i)


def install_fake(monkeypatch: pytest.MonkeyPatch, gpu: FakeGpu, **fail: Exception) -> None:
    """Put fake pycuda, pycuda.driver and pycuda.compiler into sys.modules."""
    driver = types.ModuleType("pycuda.driver")
    compiler = types.ModuleType("pycuda.compiler")
    package = types.ModuleType("pycuda")
    package.__path__ = []
    package.driver, package.compiler = driver, compiler

    def init() -> None:
        if "init" in fail:
            raise fail["init"]

    def memcpy_htod(dest: int, src: np.ndarray) -> None:
        gpu.uploaded += src.nbytes
        gpu.write(int(dest), src)

    def memcpy_dtoh(dest: np.ndarray, src: int) -> None:
        dest.view(np.uint8).reshape(-1)[...] = gpu.span(int(src), dest.nbytes)

    def memcpy_dtod(dest: int, src: int, size: int) -> None:
        gpu.span(int(dest), size)[...] = gpu.span(int(src), size)

    class Event:
        def record(self) -> None:
            gpu.check_thread()

        def synchronize(self) -> None:
            gpu.check_thread()

        def time_since(self, other: Event) -> float:
            return 1.0

    class SourceModule:
        def __init__(self, source: str, *, no_extern_c: bool, cache_dir: str, arch: str) -> None:
            gpu.check_thread()
            assert no_extern_c
            assert arch == "sm_90"
            assert Path(cache_dir).is_dir()
            if "compile" in fail:
                raise fail["compile"]
            self.source = source

        def get_function(self, name: str) -> FakeFunction:
            assert 'extern "C" __global__ void __launch_bounds__' in self.source
            assert f"\n{name}(" in self.source
            return FakeFunction(gpu, name)

    driver.Error = FakeError
    driver.init = init
    driver.Device = lambda ordinal: FakeDevice(gpu, ordinal)
    driver.mem_alloc = gpu.alloc
    driver.memcpy_htod, driver.memcpy_dtoh, driver.memcpy_dtod = (
        memcpy_htod,
        memcpy_dtoh,
        memcpy_dtod,
    )
    driver.Event = Event
    compiler.SourceModule = SourceModule
    for name, module in (
        ("pycuda", package),
        ("pycuda.driver", driver),
        ("pycuda.compiler", compiler),
    ):
        monkeypatch.setitem(sys.modules, name, module)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpu:
    """A fake GPU in place of PyCUDA."""
    fake = FakeGpu()
    install_fake(monkeypatch, fake)
    return fake


class Rows:
    """Codes and ids appended so far, and the reference's answer over them."""

    def __init__(self, d: int) -> None:
        """No rows of ``d`` codes yet."""
        self.codes = np.zeros((0, d), np.int8)
        self.ids = np.zeros(0, np.int64)

    def append(self, codes: np.ndarray, ids: np.ndarray) -> None:
        """Append rows, as the backend is given them."""
        self.codes = np.concatenate([self.codes, codes])
        self.ids = np.concatenate([self.ids, ids])

    def __len__(self) -> int:
        """The number of rows appended."""
        return len(self.ids)


def hits(rows: Rows, queries: np.ndarray, k: int) -> list[list[tuple[int, int]]]:
    """The reference's top k per query over the rows."""
    return selection.top_k_batch(rows.codes, rows.ids, queries, k)


@pytest.mark.parametrize("d", [13, 768])
def test_backend_matches_reference_through_growth(gpu: FakeGpu, tmp_path: Path, d: int) -> None:
    """Backend matches reference through growth."""
    rng = np.random.default_rng(d)
    backend = CudaBackend(tmp_path / "cache")
    try:
        assert backend.name == "cuda:Fake H200"
        matrix = Rows(d)
        alphabet = 1 if d == 13 else 127  # d=13: codes in {-1, 0, 1}, ties everywhere
        for size in (0, 1, 700, 400, 3000, 1, 2500):  # crosses capacity 1024, 2048, 4096, 8192
            codes = rng.integers(-alphabet, alphabet + 1, size=(size, d), dtype=np.int8)
            ids = rng.integers(-(2**62), 2**62, size=size)
            backend.append(codes, ids)
            matrix.append(codes, ids)
            queries = rng.integers(-alphabet, alphabet + 1, size=(3, d), dtype=np.int8)
            for k in (1, 2, 16, 1024):
                assert backend.top_k(queries[0], k) == hits(matrix, queries[:1], k)[0]
                assert not len(matrix) or "score_one" in gpu.launches[-4:]
                assert backend.top_k_batch(queries, k) == hits(matrix, queries, k)
        assert len(matrix) > plan.TOPK_TILE  # so more than one top-k pass ran
    finally:
        backend.close()
    assert gpu.context_state == "detached"
    assert not gpu.allocations


def test_every_batch_size_and_set_matrix(gpu: FakeGpu, tmp_path: Path) -> None:
    """Every batch size and set matrix."""
    rng = np.random.default_rng(1)
    codes = rng.integers(-2, 3, size=(300, 40), dtype=np.int8)
    ids = rng.permutation(300) * 3 - 400
    backend = CudaBackend(tmp_path)
    try:
        backend.set_matrix(codes[:10], ids[:10])
        backend.set_matrix(codes, ids)  # replaces, same dimension: buffers are reused
        matrix = Rows(40)
        matrix.append(codes, ids)
        for batch in [*range(1, 65), 65, 130]:  # > 64 is split into launches of 64
            queries = rng.integers(-2, 3, size=(batch, 40), dtype=np.int8)
            assert backend.top_k_batch(queries, 7) == hits(matrix, queries, 7)
        assert backend.top_k_batch(queries, 0) == [[]] * 130
        allocated = gpu.alloc_count
        for batch in (1, 64, 2):
            backend.top_k_batch(queries[:batch], 7)
        assert gpu.alloc_count == allocated  # scratch buffers are reused, not reallocated
        backend.set_matrix(np.zeros((0, 8), np.int8), np.zeros(0, np.int64))
        assert backend.top_k(np.ones(8, np.int8), 5) == []
    finally:
        backend.close()
    assert gpu.context_state == "detached"
    assert not gpu.allocations


async def test_async_calls_and_errors_keep_the_backend_usable(gpu: FakeGpu, tmp_path: Path) -> None:
    """Async calls and errors keep the backend usable."""
    codes = np.array([[1, 2], [2, 1], [1, 2]], dtype=np.int8)
    backend = CudaBackend(tmp_path)
    try:
        backend.append(codes, np.array([5, 4, 3]))
        query = np.array([1, 2], dtype=np.int8)
        assert await backend.async_top_k(query, 2) == [(3, 5), (5, 5)]
        assert await backend.async_top_k_batch(query[None], 5) == [[(3, 5), (5, 5), (4, 4)]]
        with pytest.raises(ValueError, match="exceeds the GPU limit"):
            backend.top_k(query, plan.MAX_K + 1)
        with pytest.raises(ValueError, match="query dimension 3 != matrix dimension 2"):
            backend.top_k(np.ones(3, np.int8), 1)  # raised on the owner thread, delivered here
        with pytest.raises(ValueError, match="code dimension 3 != matrix dimension 2"):
            backend.append(np.ones((1, 3), np.int8), np.array([1]))
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


# -- snapshots -----------------------------------------------------------------------------


def random_rows(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Random rows with ties everywhere, and distinct ids of both signs."""
    codes = rng.integers(-2, 3, size=(n, d), dtype=np.int8)  # ties everywhere
    return codes, rng.permutation(10 * n)[:n].astype(np.int64) - 5 * n


def mask_where(tags: set[int]) -> Callable[[Snapshot], np.ndarray]:
    """A mask function: the rows whose tag is in ``tags``."""
    return lambda snapshot: np.isin(snapshot.tags, list(tags))


def test_load_uploads_only_the_rows_the_device_lacks(gpu: FakeGpu, tmp_path: Path) -> None:
    """Load uploads only the rows the device lacks."""
    rng = np.random.default_rng(3)
    d, row_bytes = 24, 24  # 24 codes pack into 6 words of 4 bytes
    codes, ids = random_rows(rng, 900, d)
    matrix = CodeMatrix(d, block_rows=64)
    matrix.append(codes[:700], ids[:700], np.zeros(700))
    queries = rng.integers(-2, 3, size=(3, d), dtype=np.int8)
    backend = CudaBackend(tmp_path)
    try:
        backend.load(matrix.snapshot())
        assert gpu.uploaded >= 700 * row_bytes
        assert backend.top_k_batch(queries, 9) == selection.top_k_batch(
            codes[:700], ids[:700], queries, 9
        )
        gpu.uploaded = 0
        matrix.append(codes[700:], ids[700:], np.zeros(200))
        backend.load(matrix.snapshot())  # the same matrix, grown: its new rows only
        assert 200 * row_bytes <= gpu.uploaded < 300 * (row_bytes + 8)
        assert backend.top_k_batch(queries, 9) == selection.top_k_batch(codes, ids, queries, 9)
        gpu.uploaded = 0
        matrix.retag(np.arange(5), np.ones(5))
        backend.load(matrix.snapshot())  # same rows, other tags: nothing to upload
        assert gpu.uploaded == 0
        other = CodeMatrix(d, block_rows=64)  # a compaction: another matrix, all of it
        other.append(codes[::-1], ids[::-1], np.zeros(900))
        backend.load(other.snapshot())
        assert gpu.uploaded >= 900 * row_bytes
        assert backend.top_k_batch(queries, 9) == selection.top_k_batch(codes, ids, queries, 9)
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
