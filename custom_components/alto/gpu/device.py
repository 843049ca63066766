"""CUDA state for exact selection: context, compiled kernels, resident code matrix, scratch.

Every method, the constructor and ``close()`` included, runs on the one thread that owns the
context (see ``worker.OwnerThread``); nothing here is thread-safe by itself. PyCUDA is imported
here only, so the rest of Alto imports without it. The launch sequence is kernels.cu's header.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..memory.matrix import Snapshot
from . import plan

_KERNELS = Path(__file__).with_name("kernels.cu")
_MIN_CAPACITY = 1024


class _Scratch:
    """A device buffer reused across calls, reallocated (doubling) only when too small."""

    def __init__(self, cuda: Any) -> None:
        self._cuda = cuda
        self._alloc: Any = None
        self._size = 0

    def get(self, nbytes: int) -> Any:
        if nbytes > self._size:
            size = max(nbytes, 2 * self._size)
            self.free()
            self._alloc = self._cuda.mem_alloc(size)
            self._size = size
        return self._alloc

    def free(self) -> None:
        if self._alloc is not None:
            self._alloc.free()
            self._alloc = None
            self._size = 0


class _Staging:
    """Two pinned host buffers, one device buffer and a stream: the upload's pipeline.

    The host fills one pinned buffer while the other's transfer runs; ``done[i]`` is recorded
    after the transfer that reads buffer ``i``, so the host waits on it before refilling it.
    """

    def __init__(self, cuda: Any) -> None:
        self.stream = cuda.Stream()
        self.host = [cuda.pagelocked_empty(plan.STAGE_BYTES, np.int8) for _ in range(2)]
        self.done = [cuda.Event() for _ in range(2)]
        self.device = cuda.mem_alloc(plan.STAGE_BYTES)

    def free(self) -> None:
        self.stream.synchronize()
        self.device.free()
        for buffer in self.host:
            buffer.base.free()


class _Source(NamedTuple):
    """The input of a top-k pass: scores and ids, their per-query strides, optional counts."""

    scores: int
    ids: int
    score_stride: int
    id_stride: int
    counts: int  # device address of per-query counts, 0 for none


class CudaDevice:
    """One device context with the code matrix resident and grown in place."""

    def __init__(self, cache_dir: Path, ordinal: int = 0, *, tensor_cores: bool = True) -> None:
        """Create a context on device ``ordinal``; compiled kernels are cached in ``cache_dir``.

        Batches score on the tensor cores where the device has int8 mma (compute capability
        8.0+) and ``tensor_cores`` allows it, otherwise one query at a time with __dp4a.
        """
        # PyCUDA is optional: imported only here, on the owner thread, when CUDA is attempted.
        import pycuda.driver as cuda  # noqa: PLC0415
        from pycuda.compiler import SourceModule  # noqa: PLC0415

        cuda.init()  # pycuda.driver.Error when the driver finds no usable device
        device = cuda.Device(ordinal)
        self._cuda = cuda
        self._ctx = device.make_context()  # pushed on this (the owner) thread
        try:
            major, minor = device.compute_capability()
            cache_dir.mkdir(parents=True, exist_ok=True)
            module = SourceModule(
                _KERNELS.read_text(encoding="utf-8"),
                no_extern_c=True,
                cache_dir=str(cache_dir),
                arch=f"sm_{major}{minor}",
            )
            # Prepared launches pack arguments with a fixed format (P pointer, q int64, i int32).
            self._score_rows = module.get_function("score_rows").prepare("PPPPii")
            self._score_mma = module.get_function("score_mma").prepare("PPPPiii")
            self._threshold = module.get_function("group_threshold").prepare("PPPii")
            self._gather = module.get_function("gather_candidates").prepare("PPPPPPPiii")
            self._topk_pass = module.get_function("topk_pass").prepare("PPPPPqqqii")
            self._pack_rows = module.get_function("pack_rows").prepare("PPqiii")
            self._module = module
        except BaseException:
            self._ctx.pop()
            self._ctx.detach()
            raise
        self.name = f"cuda:{device.name()}"
        self.tensor_cores = tensor_cores and major >= 8
        self._dim = 0
        self._row_bytes = 0
        self._n = 0
        self._capacity = 0
        self._codes: Any = None
        self._ids: Any = None
        self._staging: _Staging | None = None
        self._scratch = {
            key: _Scratch(cuda)
            for key in (
                "query",
                "scores",
                "groups",
                "bar",
                "cs",
                "ci",
                "s0",
                "i0",
                "s1",
                "i1",
                "out",
            )
        }

    # -- matrix --------------------------------------------------------------------------

    def load(self, snapshot: Snapshot, start: int) -> None:
        """Hold ``snapshot``'s rows, given that its first ``start`` are resident already.

        ``start`` is 0, or the row count of the last snapshot loaded when that one came from the
        same matrix (``Snapshot.origin``), whose rows this one repeats. Each piece of new rows
        is copied once into a pinned buffer, transferred asynchronously, and turned into device
        rows by pack_rows; the host fills the next buffer while a transfer runs.
        """
        dim, end = snapshot.dim, len(snapshot)
        if dim > plan.MAX_DIM:
            raise ValueError(f"dimension {dim} overflows int32 scores")
        if dim != self._dim:
            self._free_matrix()
            self._dim, self._row_bytes, start = dim, plan.row_bytes_for(dim), 0
        self._n = min(start, self._n)
        if end > self._capacity:
            self._grow(max(end, 2 * self._capacity, _MIN_CAPACITY))
        if end > self._n:
            self._upload(snapshot, self._n, end)
        self._n = end

    def _upload(self, snapshot: Snapshot, start: int, end: int) -> None:
        cuda, dim = self._cuda, self._dim
        if self._staging is None:
            self._staging = _Staging(cuda)
        staging = self._staging
        pieces = plan.upload_pieces(snapshot.block_rows, start, end, plan.STAGE_BYTES // dim)
        for index, piece in enumerate(pieces):
            host, done = staging.host[index % 2], staging.done[index % 2]
            done.synchronize()  # the transfer that last read this buffer has finished
            lines = host[: dim * piece.rows].reshape(dim, piece.rows)
            block = snapshot.blocks[piece.block].codes
            np.copyto(lines, block[:, piece.column : piece.column + piece.rows])
            cuda.memcpy_htod_async(staging.device, lines, staging.stream)
            self._pack_rows.prepared_async_call(
                (-(-piece.rows // plan.PACK_ROWS), self._row_bytes // plan.SLICE, 1),
                (plan.PACK_THREADS, 1, 1),
                staging.stream,
                int(staging.device),
                int(self._codes),
                piece.row,
                piece.rows,
                dim,
                self._row_bytes,
            )
            done.record(staging.stream)
        staging.stream.synchronize()
        cuda.memcpy_htod(int(self._ids) + start * 8, np.ascontiguousarray(snapshot.ids[start:end]))

    def _grow(self, capacity: int) -> None:
        """New buffers of ``capacity`` rows; resident rows are copied device to device."""
        cuda = self._cuda
        codes = cuda.mem_alloc(capacity * self._row_bytes)
        ids = cuda.mem_alloc(capacity * 8)
        if self._n:
            cuda.memcpy_dtod(codes, self._codes, self._n * self._row_bytes)
            cuda.memcpy_dtod(ids, self._ids, self._n * 8)
        self._free_matrix()
        self._codes, self._ids, self._capacity = codes, ids, capacity

    def _free_matrix(self) -> None:
        for alloc in (self._codes, self._ids):
            if alloc is not None:
                alloc.free()
        self._codes = self._ids = None
        self._capacity = 0

    # -- selection -----------------------------------------------------------------------

    def top_k_batch(self, queries: np.ndarray, k: int) -> list[list[tuple[int, int]]]:
        """Best ``k`` (id, score) per query row; same contract as memory.selection.top_k_batch."""
        if k > plan.MAX_K:
            raise ValueError(f"k={k} exceeds the GPU limit {plan.MAX_K}")
        if k <= 0 or self._n == 0:
            return [[] for _ in range(len(queries))]
        if queries.shape[1] != self._dim:
            raise ValueError(f"query dimension {queries.shape[1]} != matrix dimension {self._dim}")
        results: list[list[tuple[int, int]]] = []
        for start in range(0, len(queries), plan.MAX_BATCH):
            results += self._select(queries[start : start + plan.MAX_BATCH], k)
        return results

    def _select(self, queries: np.ndarray, k: int) -> list[list[tuple[int, int]]]:
        cuda, n, q, row_bytes = self._cuda, self._n, len(queries), self._row_bytes
        m, groups = min(k, n), plan.groups_for(n)
        query_buf = self._buffer("query", q * row_bytes)
        cuda.memcpy_htod(query_buf, plan.pack_rows(queries, row_bytes))
        scores = self._buffer("scores", q * n * 4)
        group_max = self._buffer("groups", q * groups * 4)
        if q > 1 and self.tensor_cores:
            self._score_mma.prepared_call(
                (-(-n // plan.MMA_ROWS), -(-q // plan.MMA_QUERIES), 1),
                (plan.MMA_THREADS, 1, 1),
                int(self._codes),
                int(query_buf),
                int(scores),
                int(group_max),
                n,
                row_bytes,
                q,
            )
        else:
            self._score_rows.prepared_call(
                (-(-groups // (plan.ROWS_THREADS // 32)), q, 1),
                (plan.ROWS_THREADS, 1, 1),
                int(self._codes),
                int(query_buf),
                int(scores),
                int(group_max),
                n,
                row_bytes,
            )
        # One buffer comes back: ids [q, m], then scores [q, m], then the candidate counts [q].
        out = int(self._buffer("out", q * m * 12 + q * 4))
        counts = out + q * m * 12
        if plan.filtered(n, m):
            bar = self._buffer("bar", q * 4)
            self._threshold.prepared_call(
                (q, 1, 1),
                (plan.THRESHOLD_THREADS, 1, 1),
                int(group_max),
                int(bar),
                counts,
                groups,
                m,
            )
            cand_scores = self._buffer("cs", q * plan.CANDIDATES * 4)
            cand_ids = self._buffer("ci", q * plan.CANDIDATES * 8)
            warps = plan.GATHER_THREADS // 32
            self._gather.prepared_call(
                (-(-groups // (32 * warps)), q, 1),
                (plan.GATHER_THREADS, 1, 1),
                int(scores),
                int(self._ids),
                int(group_max),
                int(bar),
                int(cand_scores),
                int(cand_ids),
                counts,
                n,
                groups,
                plan.CANDIDATES,
            )
            lists = _Source(
                int(cand_scores), int(cand_ids), plan.CANDIDATES, plan.CANDIDATES, counts
            )
            self._reduce(lists, plan.topk_passes(plan.CANDIDATES, m), q, m, out)
            best_ids, best_scores, kept = self._fetch(out, q, m)
            if int(kept.max()) <= plan.CANDIDATES:
                return _hits(best_ids, best_scores)
        everything = _Source(int(scores), int(self._ids), n, 0, 0)
        self._reduce(everything, plan.topk_passes(n, m), q, m, out)
        best_ids, best_scores, _ = self._fetch(out, q, m)
        return _hits(best_ids, best_scores)

    def _reduce(
        self, source: _Source, passes: list[plan.TopkPass], q: int, m: int, out: int
    ) -> None:
        """Run the top-k passes from ``source``; the last writes ids, then scores, at ``out``."""
        width = passes[0].blocks * m  # the largest pass output, per query
        buffers = [
            (int(self._buffer(f"s{b}", q * width * 4)), int(self._buffer(f"i{b}", q * width * 8)))
            for b in (0, 1)
        ]
        for index, step in enumerate(passes):
            last = index == len(passes) - 1
            dst_scores, dst_ids = (out + q * m * 8, out) if last else buffers[index % 2]
            out_stride = step.blocks * m
            self._topk_pass.prepared_call(
                (step.blocks, q, 1),
                (plan.TOPK_THREADS, 1, 1),
                source.scores,
                source.ids,
                source.counts,
                dst_scores,
                dst_ids,
                source.score_stride,
                source.id_stride,
                out_stride,
                step.count,
                m,
            )
            source = _Source(dst_scores, dst_ids, out_stride, out_stride, 0)

    def _fetch(self, out: int, q: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The answer buffer: ids [q, m], scores [q, m], counts [q]. Waits for the kernels."""
        raw = np.empty(q * m * 12 + q * 4, dtype=np.uint8)
        # The copy waits for the kernels (default stream); a kernel fault surfaces here.
        self._cuda.memcpy_dtoh(raw, out)
        ids = raw[: q * m * 8].view(np.int64).reshape(q, m)
        scores = raw[q * m * 8 : q * m * 12].view(np.int32).reshape(q, m)
        return ids, scores, raw[q * m * 12 :].view(np.int32)

    def _buffer(self, key: str, nbytes: int) -> Any:
        return self._scratch[key].get(nbytes)

    def copy_bandwidth(self, nbytes: int = 1 << 30, repeats: int = 5) -> float:
        """Device-to-device copy bandwidth in bytes/s (read + write), for the benchmark."""
        cuda = self._cuda
        src, dst = cuda.mem_alloc(nbytes), cuda.mem_alloc(nbytes)
        try:
            start, end = cuda.Event(), cuda.Event()
            cuda.memcpy_dtod(dst, src, nbytes)  # warm-up
            start.record()
            for _ in range(repeats):
                cuda.memcpy_dtod(dst, src, nbytes)
            end.record()
            end.synchronize()
            seconds = end.time_since(start) / 1e3 / repeats
        finally:
            src.free()
            dst.free()
        return float(2 * nbytes / seconds)

    def close(self) -> None:
        """Free every buffer and unload the module, then pop and detach the context.

        Must run on the owner thread while the context is current: a context left on a thread's
        PyCUDA stack makes PyCUDA abort() the process when that stack is cleaned up.
        """
        self._free_matrix()
        for scratch in self._scratch.values():
            scratch.free()
        if self._staging is not None:
            self._staging.free()
            self._staging = None
        # Launch handles keep the module alive; drop them all so it unloads in this context.
        del self._score_rows, self._score_mma, self._threshold, self._gather
        del self._topk_pass, self._pack_rows, self._module
        self._ctx.pop()
        self._ctx.detach()


def _hits(ids: np.ndarray, scores: np.ndarray) -> list[list[tuple[int, int]]]:
    return [
        list(zip(i.tolist(), s.tolist(), strict=True)) for i, s in zip(ids, scores, strict=True)
    ]
