#!/usr/bin/env python3
"""Moving a store to an embedding model of another size: one write of every memory, measured.

A real embedded Chroma store and its journal get N explicit memories of 384-dimensional vectors
(``intake.remember``, 64 at a time, as the writer batches them); then a fresh process re-embeds
all of them at 768 dimensions as one ``reembed`` entry (``intake.reembed``: the journal line,
Chroma's new collection, the state and its checkpoint) and removes the old index's files
(``MemoryStore.erase``). Embedding is not timed (the vectors are made beforehand): what is
measured is what Alto adds to the model's work, and what holds other memory writes.

Printed beside their anchors, from the same run:

- the resize's seconds against the seconds the remembers that stored the same memories took;
- the ``reembed`` line's size against the journal the remembers wrote;
- the resize's peak resident memory above the process's size before it, against the new vectors
  themselves (N × 768 float32).

Run: .venv/bin/python scripts/benches/resize.py [--quick] [--memories N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from custom_components.alto.memory.checkpoint import Checkpoint  # noqa: E402
from custom_components.alto.memory.intake import reembed, remember  # noqa: E402
from custom_components.alto.memory.journal import Journal  # noqa: E402
from custom_components.alto.memory.pipeline import MAX_BATCH, IntakeInput  # noqa: E402
from custom_components.alto.memory.store import MemoryStore  # noqa: E402

OLD, NEW = 384, 768
ACTOR = "0123456789abcdef0123456789abcdef"  # a Home Assistant user id's form


def _vectors(count: int, dim: int, seed: int) -> list[list[float]]:
    return np.random.default_rng(seed).standard_normal((count, dim)).astype("<f4").tolist()


def _open(folder: Path) -> tuple[MemoryStore, Journal]:
    checkpoint = Checkpoint(folder / "memory.checkpoint", folder / "journal.jsonl")
    return MemoryStore.open_persistent(folder / "chroma", checkpoint=checkpoint), Journal(
        folder / "journal.jsonl"
    )


async def fill(folder: Path, count: int) -> dict[str, float]:
    """`count` remembered memories; the seconds it took and the journal's size."""
    store, journal = _open(folder)
    vectors = iter(_vectors(count, OLD, 1))

    async def embed(texts: list[str]) -> list[list[float]]:
        return [next(vectors) for _ in texts]

    start = time.perf_counter()
    try:
        for first in range(0, count, MAX_BATCH):
            said = [
                IntakeInput(f"Memory {n}: key {n % 97} is under pot {n}.", f"b/{n}", actor=ACTOR)
                for n in range(first, min(count, first + MAX_BATCH))
            ]
            result = await remember(said, store=store, journal=journal, embed=embed)
            assert result.admitted, result
    finally:
        store.close()
    return {"fill_s": time.perf_counter() - start, "journal": journal.path.stat().st_size}


async def resize(folder: Path) -> dict[str, float]:
    """Every memory at the new size in one entry, then the old index's files removed."""
    store, journal = _open(folder)
    try:
        rows = store.get(store.ids())
        vectors = _vectors(len(rows), NEW, 2)
        before_kib = _resident_kib()
        start = time.perf_counter()
        result = await reembed(rows, vectors, model="bench", store=store, journal=journal)
        seconds = time.perf_counter() - start
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert result.admitted and store.dim == NEW, result
        start = time.perf_counter()
        store.erase()
        erase_s = time.perf_counter() - start
    finally:
        store.close()
    line = journal.path.read_bytes().rsplit(b"\n", 2)[-2]
    return {
        "resize_s": seconds,
        "erase_s": erase_s,
        "entry": len(line),
        "peak_mib": (peak_kib - before_kib) / 1024,
    }


def _resident_kib() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 memories")
    parser.add_argument("--memories", type=int, help="how many (default 10,000)")
    parser.add_argument("--resize-in", type=Path, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.resize_in is not None:
        print(json.dumps(asyncio.run(resize(args.resize_in))))
        return
    count = args.memories or (2_000 if args.quick else 10_000)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        filled = asyncio.run(fill(folder, count))
        child = [sys.executable, __file__, "--resize-in", str(folder)]
        done = json.loads(subprocess.run(child, check=True, capture_output=True).stdout)
    mib = 1 << 20
    vectors_mib = count * NEW * 4 / mib
    print(f"resize of {count:,} memories, {OLD} -> {NEW} dimensions (embedded Chroma)")
    print(f"{'':<34}{'resize':>10}{'anchor':>10}{'ratio':>8}")
    rows = (
        ("seconds (anchor: the remembers)", done["resize_s"], filled["fill_s"]),
        ("entry MiB (anchor: their journal)", done["entry"] / mib, filled["journal"] / mib),
        ("peak RSS MiB (anchor: new vectors)", done["peak_mib"], vectors_mib),
    )
    for label, value, anchor in rows:
        print(f"{label:<34}{value:>10.1f}{anchor:>10.1f}{value / anchor:>8.2f}")
    print(f"old index files removed afterwards: {done['erase_s']:.1f} s")


if __name__ == "__main__":
    main()
