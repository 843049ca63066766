"""A fake PyCUDA: device memory, one context, a stream that really defers, and kernel contracts.

The fake checks what no CPU run could otherwise: every driver call happens on the thread that
owns the context, device reads and writes stay inside live allocations (uninitialized memory is
garbage, not zeros), launch grids cover their data, asynchronous copies read pinned host memory,
and close() frees everything, then pops and detaches the context on the owner thread.

Work queued on a stream runs only when something waits for it (an event or the stream is
synchronized, or a call on the legacy default stream, which waits for every stream), and an
asynchronous copy reads its host buffer when it runs, as a DMA engine does: a host that refills
a pinned buffer before the copy from it has finished uploads the wrong rows.

Kernels are emulated by their contracts in numpy; test_kernel_models.py mirrors their index
arithmetic and test_equivalence.py runs the real ones.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from custom_components.alto.gpu import plan

INT32_MIN = np.iinfo(np.int32).min
INT64_MAX = np.iinfo(np.int64).max


class FakeError(Exception):
    """Stands in for pycuda.driver.Error."""


class FakeGpu:
    """Device memory as numpy byte arrays in a sparse address space, plus one context."""

    def __init__(self, capability: tuple[int, int] = (9, 0)) -> None:
        """No allocation, no context yet; a device of compute ``capability``."""
        self.capability = capability
        self.allocations: dict[int, np.ndarray] = {}
        self.next_base = 1 << 40
        self.owner: threading.Thread | None = None
        self.context_state = "none"
        self.launches: list[str] = []
        self.alloc_count = 0
        self.uploaded = 0  # bytes copied host to device
        self.async_copies = 0
        self.pinned: list[np.ndarray] = []  # live page-locked host buffers
        self.streams: list[FakeStream] = []
        self.rng = np.random.default_rng(0)  # the order candidates arrive in

    def check_thread(self) -> None:
        """Assert a driver call runs on the owner thread with the context current."""
        assert self.context_state == "current", f"driver call with context {self.context_state}"
        assert threading.current_thread() is self.owner, "driver call off the owner thread"

    def wait_all(self) -> None:
        """Run everything queued on every stream: the legacy default stream waits for it."""
        for stream in self.streams:
            stream.run(len(stream.queue))

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

    def read(self, ptr: int, count: int, dtype: Any) -> np.ndarray:
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
        """Free the allocation (which waits for queued work); asserts it was not freed before."""
        self.gpu.check_thread()
        self.gpu.wait_all()
        assert self.base in self.gpu.allocations, "double free"
        del self.gpu.allocations[self.base]


class FakeHostAllocation:
    """The ``.base`` of a page-locked array: freed once, on the owner thread."""

    def __init__(self, gpu: FakeGpu, array: np.ndarray) -> None:
        """Page-locked memory holding ``array``'s bytes."""
        self.gpu, self.array = gpu, array

    def free(self) -> None:
        """Release the page-locked memory."""
        self.gpu.check_thread()
        assert any(p is self.array for p in self.gpu.pinned), "double free of pinned memory"
        self.gpu.pinned = [p for p in self.gpu.pinned if p is not self.array]


class FakeStream:
    """A stream whose work runs only when waited for."""

    def __init__(self, gpu: FakeGpu) -> None:
        """An empty stream of ``gpu``."""
        gpu.check_thread()
        self.gpu = gpu
        self.queue: list[Callable[[], None]] = []
        self.done = 0  # operations run so far
        gpu.streams.append(self)

    def run(self, upto: int) -> None:
        """Run the queued operations before position ``upto``."""
        while self.done < upto:
            self.queue[self.done]()
            self.done += 1

    def synchronize(self) -> None:
        """Run everything queued."""
        self.gpu.check_thread()
        self.run(len(self.queue))


class FakeEvent:
    """An event: recorded at a stream position, or on the default stream (all work so far)."""

    def __init__(self, gpu: FakeGpu) -> None:
        """An unrecorded event."""
        self.gpu = gpu
        self.mark: tuple[FakeStream, int] | None = None

    def record(self, stream: FakeStream | None = None) -> None:
        """Mark the stream's current end; the default stream first runs everything."""
        self.gpu.check_thread()
        if stream is None:
            self.gpu.wait_all()
            self.mark = None
        else:
            self.mark = (stream, len(stream.queue))

    def synchronize(self) -> None:
        """Wait until the recorded work has run (at once for an unrecorded event)."""
        self.gpu.check_thread()
        if self.mark is not None:
            stream, upto = self.mark
            stream.run(upto)

    def time_since(self, other: FakeEvent) -> float:
        """Milliseconds between two events (a constant)."""
        return 1.0


class FakeFunction:
    """A kernel, run in numpy with the launch shape and arguments checked."""

    def __init__(self, gpu: FakeGpu, name: str) -> None:
        """The kernel ``name`` of ``gpu``."""
        self.gpu, self.name, self.format = gpu, name, ""

    def prepare(self, arg_format: str) -> FakeFunction:
        """Take the argument format of later calls."""
        self.format = arg_format
        return self

    def _checked(self, args: tuple[int, ...]) -> None:
        self.gpu.check_thread()
        assert len(args) == len(self.format)
        for code, value in zip(self.format, args, strict=True):
            assert type(value) is int, f"{self.name}: {code} argument {value!r} is not an int"
            bits = 32 if code == "i" else 64
            assert -(2 ** (bits - 1)) <= value < 2**bits

    def prepared_call(
        self, grid: tuple[int, ...], block: tuple[int, ...], *args: int, shared_size: int = 0
    ) -> None:
        """Launch on the default stream: wait for every stream, then run the kernel."""
        self._checked(args)
        self.gpu.wait_all()
        self.gpu.launches.append(self.name)
        getattr(self, self.name)(grid, block, shared_size, args)

    def prepared_async_call(
        self,
        grid: tuple[int, ...],
        block: tuple[int, ...],
        stream: FakeStream,
        *args: int,
        shared_size: int = 0,
    ) -> None:
        """Queue the kernel on ``stream``."""
        self._checked(args)
        assert isinstance(stream, FakeStream)
        self.gpu.launches.append(self.name)
        stream.queue.append(lambda: getattr(self, self.name)(grid, block, shared_size, args))

    def score_rows(self, grid, block, shared, args) -> None:
        """One query per grid row, memory bound."""
        codes, queries, scores, group_max, n, row_bytes = args
        assert block == (plan.ROWS_THREADS, 1, 1)
        assert shared == 0
        assert grid[0] * (plan.ROWS_THREADS // 32) >= plan.groups_for(n)
        self._scores(codes, queries, scores, group_max, n=n, row_bytes=row_bytes, q=grid[1])

    def score_mma(self, grid, block, shared, args) -> None:
        """A batch on the tensor cores (compute capability 8.0+)."""
        codes, queries, scores, group_max, n, row_bytes, q = args
        assert self.gpu.capability >= (8, 0), "mma on a device without int8 mma"
        assert block == (plan.MMA_THREADS, 1, 1)
        assert shared == 0
        assert grid[0] * plan.MMA_ROWS >= n
        assert grid[1] * plan.MMA_QUERIES >= q
        self._scores(codes, queries, scores, group_max, n=n, row_bytes=row_bytes, q=q)

    def _scores(self, codes, queries, scores, group_max, *, n, row_bytes, q) -> None:
        gpu = self.gpu
        assert row_bytes % plan.SLICE == 0
        rows = gpu.read(codes, n * row_bytes, np.int8).reshape(n, row_bytes).astype(np.int64)
        qs = gpu.read(queries, q * row_bytes, np.int8).reshape(q, row_bytes).astype(np.int64)
        full = qs @ rows.T
        gpu.write(scores, full.astype(np.int32))
        groups = plan.groups_for(n)
        padded = np.full((q, groups * plan.GROUP_ROWS), INT32_MIN, dtype=np.int64)
        padded[:, :n] = full
        gpu.write(group_max, padded.reshape(q, groups, -1).max(axis=2).astype(np.int32))

    def group_threshold(self, grid, block, shared, args) -> None:
        """Per query, the m-th largest group maximum; counts reset."""
        group_max, bar, counts, groups, m = args
        assert block == (plan.THRESHOLD_THREADS, 1, 1)
        assert 1 <= m <= groups
        q = grid[0]
        values = self.gpu.read(group_max, q * groups, np.int32).reshape(q, groups)
        self.gpu.write(bar, np.sort(values, axis=1)[:, groups - m].astype(np.int32))
        self.gpu.write(counts, np.zeros(q, np.int32))

    def gather_candidates(self, grid, block, shared, args) -> None:
        """Rows at or above the threshold, in an arbitrary order, into capped lists."""
        scores, ids, _group_max, bar, c_scores, c_ids, counts, n, groups, cap = args
        gpu = self.gpu
        assert block == (plan.GATHER_THREADS, 1, 1)
        assert grid[0] * plan.GATHER_THREADS >= groups  # one lane per group
        all_ids = gpu.read(ids, n, np.int64)
        for y in range(grid[1]):
            row_scores = gpu.read(scores + 4 * y * n, n, np.int32)
            threshold = int(gpu.read(bar + 4 * y, 1, np.int32)[0])
            kept = gpu.rng.permutation(np.flatnonzero(row_scores >= threshold))
            count = int(gpu.read(counts + 4 * y, 1, np.int32)[0]) + len(kept)
            gpu.write(counts + 4 * y, np.array([count], np.int32))
            kept = kept[:cap]
            gpu.write(c_scores + 4 * y * cap, row_scores[kept])
            gpu.write(c_ids + 8 * y * cap, all_ids[kept])

    def topk_pass(self, grid, block, shared, args) -> None:
        """One top-k selection pass over tiles of scores."""
        s_in, i_in, counts, s_out, i_out, s_stride, i_stride, o_stride, count, m = args
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
            inputs = count
            if counts:
                inputs = min(count, int(gpu.read(counts + 4 * y, 1, np.int32)[0]))
            for x in range(grid[0]):
                base = x * tile
                valid = max(0, min(tile, inputs - base))
                scores = gpu.read(s_in + 4 * (y * s_stride + base), valid, np.int32)
                ids = gpu.read(i_in + 8 * (y * i_stride + base), valid, np.int64)
                order = np.lexsort((ids, -scores.astype(np.int64)))[:m]
                best_s = np.full(m, INT32_MIN, dtype=np.int32)
                best_i = np.full(m, INT64_MAX, dtype=np.int64)
                best_s[: len(order)], best_i[: len(order)] = scores[order], ids[order]
                gpu.write(s_out + 4 * (y * o_stride + x * m), best_s)
                gpu.write(i_out + 8 * (y * o_stride + x * m), best_i)

    def pack_rows(self, grid, block, shared, args) -> None:
        """Device rows from one staged piece of a column block."""
        src, codes, row0, cols, dim, row_bytes = args
        assert block == (plan.PACK_THREADS, 1, 1)
        assert grid[:2] == (-(-cols // plan.PACK_ROWS), row_bytes // plan.SLICE)
        lines = self.gpu.read(src, dim * cols, np.int8).reshape(dim, cols)
        self.gpu.write(codes + row0 * row_bytes, plan.pack_rows(lines.T, row_bytes))


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
        gpu.check_thread()
        gpu.wait_all()
        gpu.uploaded += src.nbytes
        gpu.write(int(dest), src)

    def memcpy_htod_async(dest: int, src: np.ndarray, stream: FakeStream) -> None:
        gpu.check_thread()
        assert isinstance(stream, FakeStream), "an asynchronous copy needs a stream"
        assert src.flags.c_contiguous
        assert any(np.shares_memory(src, p) for p in gpu.pinned), "async copy from pageable memory"
        gpu.uploaded += src.nbytes
        gpu.async_copies += 1
        # The copy reads the host buffer when it runs, not when it is queued.
        stream.queue.append(lambda: gpu.write(int(dest), src))

    def memcpy_dtoh(dest: np.ndarray, src: int) -> None:
        gpu.wait_all()
        dest.view(np.uint8).reshape(-1)[...] = gpu.span(int(src), dest.nbytes)

    def memcpy_dtod(dest: int, src: int, size: int) -> None:
        gpu.wait_all()
        gpu.span(int(dest), size)[...] = gpu.span(int(src), size)

    def pagelocked_empty(shape: int, dtype: Any) -> np.ndarray:
        gpu.check_thread()
        array = np.full(shape, 0x5A, dtype=np.uint8).view(dtype)
        gpu.pinned.append(array)
        # numpy keeps the buffer's owner as .base, as PyCUDA's HostAllocation is.
        return np.frombuffer(_Buffer(array, FakeHostAllocation(gpu, array)), dtype=dtype)

    class SourceModule:
        def __init__(self, source: str, *, no_extern_c: bool, cache_dir: str, arch: str) -> None:
            gpu.check_thread()
            assert no_extern_c
            assert arch == "sm_{}{}".format(*gpu.capability)
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
    driver.memcpy_htod, driver.memcpy_htod_async = memcpy_htod, memcpy_htod_async
    driver.memcpy_dtoh, driver.memcpy_dtod = memcpy_dtoh, memcpy_dtod
    driver.pagelocked_empty = pagelocked_empty
    driver.Stream = lambda: FakeStream(gpu)
    driver.Event = lambda: FakeEvent(gpu)
    compiler.SourceModule = SourceModule
    for name, module in (
        ("pycuda", package),
        ("pycuda.driver", driver),
        ("pycuda.compiler", compiler),
    ):
        monkeypatch.setitem(sys.modules, name, module)


class _Buffer:
    """A host array's bytes behind an owner object, which numpy exposes as the view's .base."""

    def __init__(self, array: np.ndarray, owner: FakeHostAllocation) -> None:
        self._array, self._owner = array, owner

    def __buffer__(self, flags: int) -> memoryview:
        return memoryview(self._array)

    def free(self) -> None:
        self._owner.free()


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
        """The device's compute capability."""
        return self.gpu.capability

    def make_context(self) -> FakeContext:
        """Make the context current on the calling thread, which becomes the owner."""
        assert self.gpu.context_state == "none"
        self.gpu.owner = threading.current_thread()
        self.gpu.context_state = "current"
        return FakeContext(self.gpu)
