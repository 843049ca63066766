"""The cost of choosing a turn's memory block (`memory.recall.turn_block`) as the store grows.

Run: .venv/bin/python scripts/benches/recall_scale.py [--quick]

Synthetic rows (random words from a 3,000-word vocabulary, 5 to 25 words each) with random cosine
scores and likeness: what is measured is the rule's own work (the informative filter, the exact
BM25 over the competing rows, the fused ranking, newer first and the byte budget), in the executor
thread a turn runs it in. The first call after a start also stems every memory once (cached
after); it is printed apart. Median of the repeated calls.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from custom_components.alto.memory.recall import turn_block
from custom_components.alto.memory.records import Row

QUERY = "When does Sofia's swimming lesson start w1 w2 w300?"


def rows_of(n: int, rng: random.Random) -> list[Row]:
    """`n` household rows of random words, said one second apart."""
    words = [f"w{i}" for i in range(3000)]
    return [
        Row(
            id=i + 1,
            document=" ".join(rng.choices(words, k=rng.randint(5, 25))) + ".",
            kind="source",
            owner="household",
            scope="household",
            actor="unknown",
            source_id=str(i),
            source_version=1,
            offset=0,
            length=1,
            said_at=1_790_000_000 + i,
        )
        for i in range(n)
    ]


def main() -> None:
    """Print the table."""
    quick = "--quick" in sys.argv
    repeats = 5 if quick else 20
    rng = random.Random(1)
    likeness = np.random.default_rng(2)
    print("| memories | first call (stems every memory) | median per turn |")
    print("|---|---|---|")
    for n in (1_000, 10_000):
        rows = rows_of(n, rng)
        cosine = [rng.randint(-20_000, 60_000) for _ in range(n)]

        def similar(candidates: object, pool: list[Row]) -> np.ndarray:
            return likeness.integers(0, 60_000, size=(16, len(pool)))

        times = []
        for _ in range(repeats + 1):
            started = time.perf_counter()
            turn_block(rows, cosine, QUERY, lambda row: row.document, similar=similar)
            times.append(time.perf_counter() - started)
        print(
            f"| {n:,} | {times[0] * 1000:.0f} ms | {statistics.median(times[1:]) * 1000:.1f} ms |"
        )


if __name__ == "__main__":
    main()
