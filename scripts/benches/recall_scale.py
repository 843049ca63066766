"""The cost of choosing a turn's memory block as the store grows: the store's indexed path
against the scan of every row it replaced, side by side.

Run: .venv/bin/python scripts/benches/recall_scale.py [--quick]

Synthetic rows (random words from a 3,000-word vocabulary, 5 to 25 words each, a question now and
then, three speakers, four scopes, some superseded, some holding a value) with 768-dimension random
embeddings, in a store's resident state. Every 50th row changes a value of an earlier one ("now"
and a value), its embedding near that row's, and the query's embedding is near eight such earlier
rows: step 3 then weighs pairs, its changed-value clause included, as it does when a household's
question finds a fact and its correction. Both paths choose the same rows in the same order
(checked here):

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


UPDATE_EVERY = 50  # every 50th row changes a value of an earlier row, its vector near that row's
VALUES = ["tuesday", "7:30", "twenty"]


def rows_of(
    n: int, rng: random.Random, vectors: np.random.Generator
) -> tuple[list[Row], np.ndarray]:
    """`n` rows of random words, said one second apart, with their embeddings, and a query.

    The query's embedding is near eight rows that later rows update: step 3 has pairs to weigh.
    """
    words = [f"w{i}" for i in range(3000)] + ["sofia", "swimming", "lesson", "start"]
    embeddings = vectors.standard_normal((n, DIM)).astype("<f4")
    documents: list[list[str]] = []
    updated: list[int] = []
    for i in range(n):
        text = rng.choices(words, k=rng.randint(5, 25))
        if rng.random() < 0.3:
            text.append(rng.choice(VALUES))
        if i % UPDATE_EVERY == UPDATE_EVERY - 1 and (
            holding := [j for j in range(max(i - 200, 0), i) if documents[j][-1] in VALUES]
        ):
            older = rng.choice(holding)
            embeddings[i] = embeddings[older] + 0.5 * vectors.standard_normal(DIM)
            text += ["now", rng.choice(VALUES)]
            updated.append(older)
        documents.append(text)
    query = embeddings[[j for j in updated if j % 17][:8]].sum(axis=0)
    rows = [
        Row(
            id=i + 1,
            document=" ".join(documents[i]) + rng.choice([".", ".", ".", "?"]),
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
    return rows, quantize(query)


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
        return scores(snapshot, codes, store.scorer)[:, [position[row.id] for row in pool]]

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
        rows, query = rows_of(n, rng, vectors)
        store = store_of(rows)
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
