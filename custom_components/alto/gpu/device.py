"""CUDA state for exact selection: context, compiled kernels, resident code matrix, scratch.

Every method, the constructor and ``close()`` included, runs on the one thread that owns the
context (see ``worker.OwnerThread``); nothing here is thread-safe by itself. PyCUDA is imported
here only, so the rest of Alto imports without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

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


class CudaDevice:
    """One device context with the code matrix resident and grown in place."""

    def __init__(self, cache_dir: Path, ordinal: int = 0) -> None:
        """Create a context on device ``ordinal``; compiled kernels are cached in ``cache_dir``."""
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
            self._score_one = module.get_function("score_one").prepare("PPPii")
            self._score_batch = module.get_function("score_batch").prepare("PPPiii")
            self._topk_pass = module.get_function("topk_pass").prepare("PPPPqqqii")
            self._module = module
        except BaseException:
            self._ctx.pop()
            self._ctx.detach()
            raise
        self.name = f"cuda:{device.name()}"
        self._dim = 0
        self._words = 0
        self._n = 0
        self._capacity = 0
        self._codes: Any = None
        self._ids: Any = None
        self._scratch = {key: _Scratch(cuda) for key in ("query", "scores", "s0", "i0", "s1", "i1")}

    # -- matrix --------------------------------------------------------------------------

    def set_matrix(self, codes: np.ndarray, ids: np.ndarray) -> None:
        """Replace the matrix (fixing its dimension); buffers stay when the dimension does."""
        dim = codes.shape[1]
        if plan.words_for(dim) > plan.MAX_WORDS:
            raise ValueError(f"dimension {dim} overflows int32 scores")
        if dim != self._dim:
            self._free_matrix()
            self._dim, self._words = dim, plan.words_for(dim)
        self._n = 0
        self.append(codes, ids)

    def append(self, codes: np.ndarray, ids: np.ndarray) -> None:
        """Append rows (validated int8 codes, int64 ids) after the resident ones."""
        if not self._dim:
            self.set_matrix(codes, ids)
            return
        if codes.shape[1] != self._dim:
            raise ValueError(f"code dimension {codes.shape[1]} != matrix dimension {self._dim}")
        end = self._n + len(codes)
        if end > self._capacity:
            self._grow(max(end, 2 * self._capacity, _MIN_CAPACITY))
        if len(codes):
            offset = self._n * self._words * 4
            packed = plan.pack_words(codes, self._words)
            self._cuda.memcpy_htod(int(self._codes) + offset, packed)
            self._cuda.memcpy_htod(int(self._ids) + self._n * 8, np.ascontiguousarray(ids))
        self._n = end

    def _grow(self, capacity: int) -> None:
        """New buffers of ``capacity`` rows; resident rows are copied device to device."""
        cuda = self._cuda
        codes = cuda.mem_alloc(capacity * self._words * 4)
        ids = cuda.mem_alloc(capacity * 8)
        if self._n:
            cuda.memcpy_dtod(codes, self._codes, self._n * self._words * 4)
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
        cuda, n, words, q = self._cuda, self._n, self._words, len(queries)
        m = min(k, n)
        query_buf = self._scratch["query"].get(q * words * 4)
        cuda.memcpy_htod(query_buf, plan.pack_words(queries, words))
        scores = self._scratch["scores"].get(q * n * 4)
        if q == 1:
            warps = plan.SCORE_ONE_THREADS // 32
            self._score_one.prepared_call(
                (-(-n // warps), 1, 1),
                (plan.SCORE_ONE_THREADS, 1, 1),
                int(self._codes),
                int(query_buf),
                int(scores),
                n,
                words,
                shared_size=words * 4,
            )
        else:
            self._score_batch.prepared_call(
                (-(-n // plan.BATCH_ROWS), -(-q // plan.BATCH_QUERIES), 1),
                (plan.BATCH_THREADS, 1, 1),
                int(self._codes),
                int(query_buf),
                int(scores),
                n,
                words,
                q,
            )

        passes = plan.topk_passes(n, m)
        width = passes[0].blocks * m  # the largest pass output, per query
        buffers = [
            (self._scratch[f"s{b}"].get(q * width * 4), self._scratch[f"i{b}"].get(q * width * 8))
            for b in (0, 1)
        ]
        src_scores, src_ids, score_stride, id_stride = scores, self._ids, n, 0
        for index, step in enumerate(passes):
            dst_scores, dst_ids = buffers[index % 2]
            out_stride = step.blocks * m
            self._topk_pass.prepared_call(
                (step.blocks, q, 1),
                (plan.TOPK_THREADS, 1, 1),
                int(src_scores),
                int(src_ids),
                int(dst_scores),
                int(dst_ids),
                score_stride,
                id_stride,
                out_stride,
                step.count,
                m,
            )
            src_scores, src_ids = dst_scores, dst_ids
            score_stride = id_stride = out_stride

        # The last pass has one block per query: q rows of m, contiguous. The copies wait for
        # the kernels (default stream), and a kernel fault surfaces here as a driver error.
        best_scores = np.empty((q, m), dtype=np.int32)
        best_ids = np.empty((q, m), dtype=np.int64)
        cuda.memcpy_dtoh(best_scores, src_scores)
        cuda.memcpy_dtoh(best_ids, src_ids)
        return [
            list(zip(i.tolist(), s.tolist(), strict=True))
            for i, s in zip(best_ids, best_scores, strict=True)
        ]

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
        # Launch handles keep the module alive; drop them all so it unloads in this context.
        del self._score_one, self._score_batch, self._topk_pass, self._module
        self._ctx.pop()
        self._ctx.detach()
