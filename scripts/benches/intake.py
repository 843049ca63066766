"""Memory intake throughput at N=1 and N=64: fake model, real embedded Chroma, real journal.

Run: .venv/bin/python scripts/benches/intake.py [--quick]
The fake model answers every call with the valid response its schema implies (every span a
statement, every statement an assertion), so the figures measure Alto's own work: spans, prompts,
strict parsing, reference and correction-table selection, the fsync'd journal append and the
Chroma upsert. Embeddings are deterministic 768-dimensional vectors (a common embedding size).
Each row opens a fresh PersistentClient in a temporary directory; mode 1 (source text only, no
model calls) is shown for comparison. A real model's latency comes on top of these figures.
"""

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from custom_components.alto.memory.intake import run_intake
from custom_components.alto.memory.journal import Journal
from custom_components.alto.memory.pipeline import IntakeInput
from custom_components.alto.memory.profile import processor_digest
from custom_components.alto.memory.qualification import QualificationTable
from custom_components.alto.memory.store import MemoryStore

DIM = 768
MODEL = hashlib.sha256(b"bench-model").hexdigest()
TABLE = QualificationTable(frozenset({(MODEL, processor_digest())}))
SENTENCES = (
    "The bins go out on Tuesday.",
    "My sister Anna is allergic to peanuts.",
    "I think the plumber is coming on Friday.",
    "Ben does not eat meat.",
    "The spare key is under the blue flower pot.",
    "We never use the front door in winter.",
)


async def canned_model(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
    """The valid answer the schema implies: all statements, then all assertions."""
    await asyncio.sleep(0)
    if "prefixItems" in schema:
        spans = [item["prefixItems"][0]["const"] for item in schema["prefixItems"]]
        return json.dumps([[span, "statement"] for span in spans], ensure_ascii=False)
    statements = [value for key, value in schema["$defs"].items() if key != "mention"]
    quotes = [choice["anyOf"][0]["prefixItems"][1]["const"] for choice in statements]
    return json.dumps([[3, quote] for quote in quotes], ensure_ascii=False)


async def embed(texts: list[str]) -> list[list[float]]:
    """Deterministic pseudo-random unit-scale vectors, one per text."""
    vectors = []
    for text in texts:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vectors.append(np.random.default_rng(seed).standard_normal(DIM).tolist())
    return vectors


def batch(size: int, serial: int) -> list[IntakeInput]:
    """`size` distinct two-sentence inputs."""
    return [
        IntakeInput(f"{SENTENCES[n % 6]} Entry {serial}-{n} was noted.", f"bench/{serial}/{n}")
        for n in range(size)
    ]


async def measure(size: int, batches: int, mode: int) -> dict[str, float]:
    """Seconds per batch over `batches` consecutive batches into one fresh store."""
    with tempfile.TemporaryDirectory() as folder:
        store = MemoryStore.open_persistent(Path(folder) / "chroma")
        journal = Journal(Path(folder) / "journal.jsonl")
        times = []
        try:
            for serial in range(batches):
                inputs = batch(size, serial)
                start = time.perf_counter()
                result = await run_intake(
                    inputs,
                    mode=mode,
                    store=store,
                    journal=journal,
                    embed=embed,
                    call_model=canned_model,
                    model_digest=MODEL,
                    table=TABLE,
                )
                times.append(time.perf_counter() - start)
                assert result.admitted, result.refusal
            rows = len(store.state)
            journal_size = journal.path.stat().st_size
        finally:
            store.close()
    per_batch = statistics.median(times)
    return {
        "ms": per_batch * 1000,
        "rate": size / per_batch,
        "rows": rows,
        "journal_kib_per_input": journal_size / 1024 / (size * batches),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer batches")
    quick = parser.parse_args().quick
    small, large = (10, 3) if quick else (60, 12)
    plan = ((1, 2, small), (64, 2, large), (1, 1, small), (64, 1, large))
    print(f"intake throughput (median of consecutive batches, {DIM}-d vectors, embedded Chroma)")
    header = ("N", "mode", "batches", "ms/batch", "inputs/s", "rows", "journal KiB/input")
    print("{:>3} {:>4} {:>7} {:>9} {:>9} {:>6} {:>18}".format(*header))
    for size, mode, batches in plan:
        figures = asyncio.run(measure(size, batches, mode))
        print(
            f"{size:>3} {mode:>4} {batches:>7} {figures['ms']:>9.1f} {figures['rate']:>9.1f} "
            f"{figures['rows']:>6} {figures['journal_kib_per_input']:>18.1f}"
        )


if __name__ == "__main__":
    main()
