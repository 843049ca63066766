#!/usr/bin/env python3
"""Selection latency, top-k of one query: exact numpy vs the CUDA kernels vs Chroma's query.

Numpy and the GPU return the exact integer top-k (memory.selection); Chroma answers from its
HNSW index (approximate, float cosine), and its collection has to be built first, so its insert
time is reported too. Codes are random int8 rows, which is all the timing depends on. Chroma
sizes whose build, projected linearly from the last measured insert rate, exceeds
--chroma-budget-s are skipped (HNSW inserts slow down as the index grows, so the projection is
optimistic). Run from anywhere: the repository root is put on sys.path.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from custom_components.alto.gpu.backend import CudaBackend, select_backend  # noqa: E402
from custom_components.alto.gpu.plan import MAX_BATCH, words_for  # noqa: E402
from custom_components.alto.memory import selection  # noqa: E402

_GEN_CHUNK = 65_536  # rows generated per step: no full-size temporary beyond the int8 matrix
_PROBE_ROWS = 10_000  # Chroma insert rate is measured on this many rows first


def random_codes(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    codes = np.empty((n, d), dtype=np.int8)
    for start in range(0, n, _GEN_CHUNK):
        stop = min(n, start + _GEN_CHUNK)
        codes[start:stop] = rng.integers(-127, 128, size=(stop - start, d), dtype=np.int8)
    return codes


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: page in the matrix, load BLAS, launch the kernels once
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


class Chroma:
    """An ephemeral Chroma client; one collection per size, dropped after use."""

    def __init__(self) -> None:
        import chromadb  # only when Chroma runs: a GPU host may check with --gpu-only without it

        self._client = chromadb.EphemeralClient()
        self._batch = self._client.get_max_batch_size()
        self.rate: float | None = None  # rows/s of the last build

    def build(self, codes: np.ndarray) -> tuple[object, float]:
        name = f"bench-{len(codes)}"
        collection = self._client.create_collection(
            name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )
        start = time.perf_counter()
        for lo in range(0, len(codes), self._batch):
            hi = min(len(codes), lo + self._batch)
            collection.add(
                ids=[str(i) for i in range(lo, hi)], embeddings=codes[lo:hi].astype(np.float32)
            )
        seconds = time.perf_counter() - start
        self.rate = len(codes) / seconds
        return collection, seconds

    def drop(self, collection: object) -> None:
        self._client.delete_collection(collection.name)

    def measure(
        self, codes: np.ndarray, query: np.ndarray, k: int, repeats: int, budget_s: float
    ) -> tuple[float | None, str]:
        """(median query ms, build column text); None when the build is skipped."""
        if self.rate is None and len(codes) > _PROBE_ROWS:
            self.drop(self.build(codes[:_PROBE_ROWS])[0])
        if self.rate is not None and (estimate := len(codes) / self.rate) > budget_s:
            return None, f"skipped (build est. {estimate:.0f} s)"
        collection, seconds = self.build(codes)
        q = query.astype(np.float32)[np.newaxis]
        ms = median_ms(partial(collection.query, query_embeddings=q, n_results=k), repeats)
        self.drop(collection)
        return ms, f"{seconds:.1f}"


def gpu_backend(cache_dir: Path) -> CudaBackend | None:
    backend = select_backend("auto", cache_dir)  # logs one line saying why, if it falls back
    if isinstance(backend, CudaBackend):
        return backend
    backend.close()
    return None


def fmt(value: float | None, spec: str = ".2f") -> str:
    return "n/a" if value is None else format(value, spec)


def ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None else f"{a / b:.3g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000", help="comma-separated rows")
    parser.add_argument("--quick", action="store_true", help="10k rows only")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chroma-budget-s", type=float, default=120.0)
    parser.add_argument("--gpu-only", action="store_true", help="skip Chroma: numpy vs GPU")
    args = parser.parse_args()
    sizes = [10_000] if args.quick else sorted(int(s) for s in args.sizes.split(","))
    logging.basicConfig(
        level=logging.WARNING, format="%(levelname)s %(message)s", stream=sys.stdout
    )

    began = time.perf_counter()
    rng = np.random.default_rng(0)
    query = rng.integers(-127, 128, size=args.dim, dtype=np.int8)
    batch = rng.integers(-127, 128, size=(MAX_BATCH, args.dim), dtype=np.int8)
    chroma = None if args.gpu_only else Chroma()
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        gpu = gpu_backend(Path(cache))
        bandwidth = gpu.copy_bandwidth() if gpu else None
        try:
            for n in sizes:
                codes = random_codes(n, args.dim, rng)
                ids = np.arange(n, dtype=np.int64)
                numpy_ms = median_ms(
                    partial(selection.top_k, codes, ids, query, args.k), args.repeats
                )
                gpu_ms = gpu_batch_ms = bound = None
                if gpu:
                    gpu.set_matrix(codes, ids)
                    gpu_ms = median_ms(partial(gpu.top_k, query, args.k), args.repeats)
                    gpu_batch_ms = median_ms(partial(gpu.top_k_batch, batch, args.k), args.repeats)
                    # Bound: reading every packed code byte once at the device's copy bandwidth.
                    bound = n * words_for(args.dim) * 4 / bandwidth * 1e3 / gpu_ms
                chroma_ms, build = (None, "off")
                if chroma:
                    chroma_ms, build = chroma.measure(
                        codes, query, args.k, args.repeats, args.chroma_budget_s
                    )
                rows.append((n, numpy_ms, gpu_ms, gpu_batch_ms, bound, chroma_ms, build))
                del codes
        finally:
            if gpu:
                gpu.close()

    header = (
        f"{'rows':>10} {'numpy ms':>9} {'gpu ms':>8} {'gpu x64 ms':>10} {'gpu/bw':>7}"
        f" {'chroma ms':>9} {'chroma build s':>26} {'numpy/chroma':>12} {'gpu/numpy':>9}"
    )
    print(f"\ntop-{args.k} of one query, d={args.dim}, median of {args.repeats}")
    print(header)
    print("-" * len(header))
    for n, numpy_ms, gpu_ms, gpu_batch_ms, bound, chroma_ms, build in rows:
        print(
            f"{n:>10,} {numpy_ms:>9.2f} {fmt(gpu_ms):>8} {fmt(gpu_batch_ms):>10}"
            f" {fmt(bound, '.0%'):>7} {fmt(chroma_ms):>9} {build:>26}"
            f" {ratio(numpy_ms, chroma_ms):>12} {ratio(gpu_ms, numpy_ms):>9}"
        )
    print(
        "numpy and gpu: exact integer top-k; chroma: HNSW (approximate) cosine query after add();"
        "\ngpu x64: one batch of 64 queries; gpu/bw: share of the copy-bandwidth bound"
        + (f" ({bandwidth / 1e9:.0f} GB/s)" if bandwidth else "")
        + f"\ntotal {time.perf_counter() - began:.0f} s"
    )


if __name__ == "__main__":
    main()
