#!/usr/bin/env python3
"""Selection at household scale: exact top-k against its anchors, side by side in one run.

Per matrix size (d=768, top-16), every figure is the median of interleaved repeats, so the ratios
hold even while other processes share the cores:

- exact: ``memory.scoring`` over a ``MemoryState``'s resident matrix (onnxruntime's
  ``MatMulInteger`` on split queries, then exact selection); its answers are checked identical,
  id for id and score for score, to ``memory.selection`` (the reference) before timing;
- anchor: the same library call in its usual quantized form (query as uint8 with zero point 128,
  codes as int8 weights) over the same blocks, then ``np.argpartition``: the library's own speed
  with no exact tie order (and, without VNNI, no exactness: see ``memory.scoring``);
- numpy: the reference itself (float32 BLAS on a cast copy of the codes);
- chroma: Chroma's HNSW query (approximate, float cosine) on the same vectors, and the scoped
  case, a ``where`` filter on scope, against exact selection over one viewer's rows (household
  rows and the viewer's own: 5 of 8 rows here), the mask computed from the state's tags;
- gpu (only where CUDA works): the CUDA backend on the same snapshot.

Chroma sizes whose build, projected from the last measured insert rate, exceeds --chroma-budget-s
are skipped (HNSW inserts slow down as the index grows, so the projection is optimistic). Run
from anywhere: the repository root is put on sys.path.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from custom_components.alto.gpu.backend import CudaBackend, select_backend  # noqa: E402
from custom_components.alto.memory import scoring, selection  # noqa: E402
from custom_components.alto.memory.matrix import CodeMatrix, Snapshot  # noqa: E402
from custom_components.alto.memory.records import HOUSEHOLD, MemoryState, Row  # noqa: E402

BATCH = 64
VIEWER = "user0"
_GEN_CHUNK = 65_536  # rows generated per step: no full-size temporary beyond the int8 matrix
_PROBE_ROWS = 10_000  # Chroma insert rate is measured on this many rows first


def scope_of(i: int) -> str:
    """Half the rows are the household's, the rest private to four users."""
    return HOUSEHOLD if i % 8 < 4 else f"user{i % 8 - 4}"


def build_state(n: int, d: int, rng: np.random.Generator) -> tuple[MemoryState, np.ndarray]:
    """A state of n rows with random codes (all the timing depends on), and the codes."""
    codes = np.empty((n, d), dtype=np.int8)
    for start in range(0, n, _GEN_CHUNK):
        stop = min(n, start + _GEN_CHUNK)
        codes[start:stop] = rng.integers(-127, 128, size=(stop - start, d), dtype=np.int8)
    matrix = CodeMatrix(d)
    matrix.append(codes, np.arange(n), np.zeros(n, np.int32))
    scopes = [scope_of(i) for i in range(n)]
    rows = [
        Row(i, f"m{i}", "source", s, s, "unknown", f"s{i}", 1, 0, 8) for i, s in enumerate(scopes)
    ]
    state = MemoryState()
    state.restore(rows, matrix.snapshot().exact_blocks(), 1)
    return state, codes


class Anchor:
    """onnxruntime's MatMulInteger in its usual quantized form, plus np.argpartition."""

    def __init__(self) -> None:
        options = scoring.session_options(ort)
        self._session = ort.InferenceSession(
            scoring.zero_point_model(), options, providers=["CPUExecutionProvider"]
        )
        self._zero = np.array(128, dtype=np.uint8)

    def top_k(self, snapshot: Snapshot, queries: np.ndarray, k: int) -> np.ndarray:
        shifted = queries.view(np.uint8) ^ 0x80  # q + 128, undone by the zero point
        out = np.empty((len(queries), len(snapshot)), dtype=np.int32)
        for block in snapshot.blocks:
            feed = {"A": shifted, "C": block.codes, "Z": self._zero}
            scored = self._session.run(None, feed)[0]
            out[:, block.first : block.first + block.width] = scored[:, : block.width]
        return np.argpartition(out, len(snapshot) - k, axis=1)[:, -k:]


class Chroma:
    """An ephemeral Chroma client; one collection per size, dropped after use."""

    def __init__(self) -> None:
        import chromadb

        self._client = chromadb.EphemeralClient()
        self._batch = self._client.get_max_batch_size()
        self.rate: float | None = None  # rows/s of the last build

    def build(self, codes: np.ndarray) -> tuple[Any, float]:
        collection = self._client.create_collection(
            f"bench-{len(codes)}",
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
        )
        start = time.perf_counter()
        for lo in range(0, len(codes), self._batch):
            hi = min(len(codes), lo + self._batch)
            collection.add(
                ids=[str(i) for i in range(lo, hi)],
                embeddings=codes[lo:hi].astype(np.float32),
                metadatas=[{"scope": scope_of(i)} for i in range(lo, hi)],
            )
        seconds = time.perf_counter() - start
        self.rate = len(codes) / seconds
        return collection, seconds

    def drop(self, collection: Any) -> None:
        self._client.delete_collection(collection.name)

    def collection(self, codes: np.ndarray, budget_s: float) -> tuple[Any, str]:
        """A built collection and its build column text; None when the build is skipped."""
        if self.rate is None and len(codes) > _PROBE_ROWS:
            self.drop(self.build(codes[:_PROBE_ROWS])[0])
        if self.rate is not None and (estimate := len(codes) / self.rate) > budget_s:
            return None, f"skipped (est. {estimate:.0f} s)"
        collection, seconds = self.build(codes)
        return collection, f"{seconds:.1f}"


def gpu_backend(cache_dir: Path) -> CudaBackend | None:
    backend = select_backend("auto", cache_dir)  # logs one line saying why, if it falls back
    if isinstance(backend, CudaBackend):
        return backend
    backend.close()
    return None


def medians(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median ms of each function, run round-robin so all share the same machine state."""
    for fn in fns.values():
        fn()  # warm-up: page in the matrix, start thread pools, launch kernels once
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(spent) * 1e3 for name, spent in times.items()}


def check_identical(state: MemoryState, codes: np.ndarray, queries: np.ndarray, k: int) -> None:
    """The exact path's answers are the reference's, unscoped and scoped (or the run stops)."""
    snapshot = state.snapshot()
    assert snapshot is not None
    ids = snapshot.ids
    mask = state.visibility(VIEWER)(snapshot)
    got = scoring.top_k_batch(snapshot, queries, k)
    assert got == selection.top_k_batch(codes, ids, queries, k), "exact != reference"
    scoped = scoring.top_k_batch(snapshot, queries, k, allowed=mask)
    assert scoped == selection.top_k_batch(codes[mask], ids[mask], queries, k), "scoped"


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None else f"{a / b:.2f}"


def measure(
    n: int, args: argparse.Namespace, anchor: Anchor, chroma: Chroma | None, gpu: Any
) -> dict[str, Any]:
    rng = np.random.default_rng(n)
    state, codes = build_state(n, args.dim, rng)
    snapshot = state.snapshot()
    assert snapshot is not None
    query = rng.integers(-127, 128, size=(1, args.dim), dtype=np.int8)
    batch = rng.integers(-127, 128, size=(BATCH, args.dim), dtype=np.int8)
    check_identical(state, codes, batch[:4], args.k)
    ids, k, allowed = snapshot.ids, args.k, state.visibility(VIEWER)
    single = {
        "exact": lambda: scoring.top_k_batch(snapshot, query, k),
        "anchor": lambda: anchor.top_k(snapshot, query, k),
        "numpy": lambda: selection.top_k_batch(codes, ids, query, k),
        "scoped": lambda: scoring.top_k_batch(snapshot, query, k, allowed=allowed(snapshot)),
    }
    many = {
        "exact": lambda: scoring.top_k_batch(snapshot, batch, k),
        "anchor": lambda: anchor.top_k(snapshot, batch, k),
        "numpy": lambda: selection.top_k_batch(codes, ids, batch, k),
    }
    if gpu is not None:
        gpu.load(snapshot)
        single["gpu"] = lambda: gpu.top_k(query[0], k)
        many["gpu"] = lambda: gpu.top_k_batch(batch, k)
    build = "off"
    if chroma is not None:
        collection, build = chroma.collection(codes, args.chroma_budget_s)
        if collection is not None:
            vector = query.astype(np.float32)
            where = {"scope": {"$in": [HOUSEHOLD, VIEWER]}}
            single["chroma"] = lambda: collection.query(query_embeddings=vector, n_results=k)
            single["chroma where"] = lambda: collection.query(
                query_embeddings=vector, n_results=k, where=where
            )
    result = {"one": medians(single, args.repeats), "batch": medians(many, args.repeats)}
    if chroma is not None and collection is not None:
        chroma.drop(collection)
    return {**result, "rows": n, "build": build}


def report(results: list[dict[str, Any]], args: argparse.Namespace, began: float) -> None:
    print(f"\nexact top-{args.k}, d={args.dim}, median of {args.repeats} interleaved runs (ms)")
    header = (
        f"{'rows':>9} | {'1 query':>8} {'anchor':>8} {'ratio':>6} {'numpy':>8} {'ratio':>6}"
        f" {'chroma':>7} {'ratio':>6} | {'64 queries':>10} {'anchor':>8} {'ratio':>6}"
        f" {'numpy':>8} {'ratio':>6} | {'scoped':>7} {'chroma where':>12} {'ratio':>6}"
        f" | {'chroma build s':>20}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        one, batch = r["one"], r["batch"]
        chroma, where = one.get("chroma"), one.get("chroma where")
        print(
            f"{r['rows']:>9,} | {one['exact']:>8.2f} {one['anchor']:>8.2f}"
            f" {ratio(one['exact'], one['anchor']):>6} {one['numpy']:>8.2f}"
            f" {ratio(one['numpy'], one['anchor']):>6} {fmt(chroma):>7}"
            f" {ratio(one['exact'], chroma):>6} | {batch['exact']:>10.2f}"
            f" {batch['anchor']:>8.2f} {ratio(batch['exact'], batch['anchor']):>6}"
            f" {batch['numpy']:>8.2f} {ratio(batch['numpy'], batch['anchor']):>6} |"
            f" {one['scoped']:>7.2f} {fmt(where):>12} {ratio(one['scoped'], where):>6}"
            f" | {r['build']:>20}"
        )
    gpu = [r for r in results if "gpu" in r["one"]]
    for r in gpu:
        print(
            f"gpu {r['rows']:,} rows: 1 query {r['one']['gpu']:.2f} ms, 64: {r['batch']['gpu']:.2f}"
        )
    print(
        f"exact: {scoring.default_scorer().name}, identical to memory.selection (checked);"
        " anchor: MatMulInteger (uint8 query, zero point 128) + argpartition;"
        "\nratios: the column over its anchor (numpy over the anchor too; exact over chroma);"
        f" scoped: rows of household + {VIEWER} (5/8), mask from the state's tags"
        f"\ntotal {time.perf_counter() - began:.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated rows")
    parser.add_argument("--quick", action="store_true", help="10k and 100k rows, fewer repeats")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--chroma-budget-s", type=float, default=180.0)
    parser.add_argument("--gpu-only", action="store_true", help="skip Chroma (scripts/gpu_check)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.repeats, args.chroma_budget_s = [10_000, 100_000], 7, 30.0
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    began = time.perf_counter()
    chroma = None if args.gpu_only else Chroma()
    with tempfile.TemporaryDirectory() as cache:
        gpu = gpu_backend(Path(cache))
        try:
            results = [measure(n, args, Anchor(), chroma, gpu) for n in sorted(sizes)]
        finally:
            if gpu is not None:
                gpu.close()
    report(results, args, began)


if __name__ == "__main__":
    main()
