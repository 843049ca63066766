"""The cost of choosing a turn's memory block as the store grows: the store's indexed path
against the scan of every row it replaced, side by side.

Run: .venv/bin/python scripts/benches/recall_scale.py [--quick]

Synthetic rows (random words from a 3,000-word vocabulary, 5 to 25 words each, a question now and
then, three speakers, four scopes, some superseded) with 768-dimension random embeddings, in a
store's resident state. Both paths choose the same rows in the same order (checked here):

- indexed: `MemoryStore.turn_block` (`memory.corpus` keeps each row's words, said time and
  speaker by position, BM25 reads the rows that hold the query's words, and each viewer's nearest
  older rows are kept from turn to turn), in the thread a turn runs it in;
- scan: the rule read over every visible row each turn (`tests/memory/recall_reference.py`, what
  the store ran before), cosine and likeness from the same resident codes.

The first indexed call after a start indexes every row (`MemoryStore.warm_recall` does it in the
background after a start); it is printed apart. Medians of the repeated calls.
"""

from __future__ import annotations

import random
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from custom_components.alto.memory.corpus import Corpus
from custom_components.alto.memory.records import MemoryState, Row
from custom_components.alto.memory.scoring import default_scorer, scores
from custom_components.alto.memory.selection import quantize
from custom_components.alto.memory.store import MemoryStore
from tests.memory import recall_reference

QUERY = "When does Sofia's swimming lesson start w1 w2 w300?"
DIM = 768
NAMES = {"u1": "Leo", "u2": "Sofia"}


def rows_of(n: int, rng: random.Random, vectors: np.random.Generator) -> list[Row]:
    """`n` rows of random words, said one second apart, with their embeddings."""
    words = [f"w{i}" for i in range(3000)] + ["sofia", "swimming", "lesson", "start"]
    embeddings = vectors.standard_normal((n, DIM)).astype("<f4")
    return [
        Row(
            id=i + 1,
            document=" ".join(rng.choices(words, k=rng.randint(5, 25)))
            + rng.choice([".", ".", ".", "?"]),
            kind="source" if i % 3 else 3,
            owner="household",
            scope=rng.choice(["household", "household", "u1", "u2"]),
            actor=rng.choice(["u1", "u2", "unknown"]),
            source_id=str(i),
            source_version=1,
            offset=0,
            length=1,
            status="current" if i % 17 else "superseded",
            said_at=1_790_000_000 + i,
            vector=embeddings[i].tobytes(),
        )
        for i in range(n)
    ]


def store_of(rows: Sequence[Row]) -> MemoryStore:
    """A store's resident side alone (no Chroma: reads never touch it)."""
    store = object.__new__(MemoryStore)
    store._lock = threading.Lock()
    store._corpus, store._corpus_lock, store._memos = Corpus(), threading.Lock(), {}
    store.scorer = default_scorer()
    store.state = MemoryState()
    store.state.load(rows, 1)
    return store


def scan(store: MemoryStore, query_codes: np.ndarray, viewer: str) -> list[Row]:
    """The block as the store chose it before: the rule over every visible row."""
    rows = store.state.visible(viewer)
    snapshot = store.state.snapshot()
    assert snapshot is not None
    all_scores = scores(snapshot, query_codes[np.newaxis], store.scorer)[0]
    position = {row_id: n for n, row_id in enumerate(snapshot.ids.tolist())}
    among = np.array([position[row.id] for row in rows], dtype=np.int64)

    def similar(candidates: Sequence[Row], pool: Sequence[Row]) -> np.ndarray:
        codes = snapshot.take(np.array([position[row.id] for row in candidates]))
        return scores(snapshot, codes, store.scorer)[:, among]

    cosine = all_scores[among].tolist()
    return recall_reference.turn_block(
        rows, cosine, QUERY, lambda row: row.document, similar=similar, names=NAMES
    )


def main() -> None:
    """Print the table."""
    quick = "--quick" in sys.argv
    repeats = 5 if quick else 15
    rng, vectors = random.Random(1), np.random.default_rng(2)
    print("| memories | indexed: first call (indexes every row) | indexed | scan | scan/indexed |")
    print("|---|---|---|---|---|")
    for n in (1_000, 10_000):
        store = store_of(rows_of(n, rng, vectors))
        query = quantize(vectors.standard_normal(DIM).astype("<f4"))
        started = time.perf_counter()
        store.turn_block(query, "u1", QUERY, lambda row: row.document, NAMES)
        first = time.perf_counter() - started
        indexed, scanned = [], []
        for _ in range(repeats):  # side by side, alternating
            started = time.perf_counter()
            found = store.turn_block(query, "u1", QUERY, lambda row: row.document, NAMES)
            indexed.append(time.perf_counter() - started)
            started = time.perf_counter()
            expected = scan(store, query, "u1")
            scanned.append(time.perf_counter() - started)
            assert found == expected, "the indexed block differs from the scan"
        fast, slow = statistics.median(indexed) * 1000, statistics.median(scanned) * 1000
        first *= 1000
        print(f"| {n:,} | {first:.0f} ms | {fast:.1f} ms | {slow:.1f} ms | {slow / fast:.1f}x |")


if __name__ == "__main__":
    main()
