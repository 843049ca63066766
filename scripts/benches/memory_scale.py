#!/usr/bin/env python3
"""Memory at household scale: setup time and resident memory, each beside its anchor.

For each size (memories of 768-dimensional embeddings, one ``alto.remember`` each) a real store
is built once: an embedded Chroma store and its hash-chained journal. The journal lines are
written directly (a valid chain, canonical entries) instead of 100,000 fsync'd appends, and
Chroma gets the rows in large upserts; the files are what that many remembers leave.

Each figure then comes from a fresh process, so nothing is cached in memory between them:

- setup: what ``MemoryOrgan.async_build`` does off the event loop (open the store, open the
  journal, reconcile, give the selection backend the matrix) and one scoped recall, so the store
  is usable. Anchor: the 2 s goal. Beside it: the checkpoint ``CHECKPOINT_EVERY - 1`` entries
  behind (the most a restart finds when Home Assistant stopped without unloading the entry), and
  no checkpoint (every Chroma record read and quantized again, as before checkpoints) for sizes up
  to --chroma-load-max;
- the first turn: the store's corpus (`corpus.Corpus`) is warmed in a background thread as
  after a start in Home Assistant, and the first turn's memory block is asked for at once; the
  seconds from the start of setup until it returns (anchor: the 2 s goal), the warm's seconds
  and the RSS it adds per 10,000 memories (anchor: codes and ids);
- RSS growth: the process's resident memory after setup minus before it (imports and the
  onnxruntime session already loaded), per 10,000 memories. Anchor: the int8 codes and int64 ids
  themselves, ``d + 8`` bytes per memory.

Run from anywhere: the repository root is put on sys.path.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from custom_components.alto.gpu.backend import select_backend  # noqa: E402
from custom_components.alto.memory import replay, scoring  # noqa: E402
from custom_components.alto.memory.checkpoint import Checkpoint  # noqa: E402
from custom_components.alto.memory.journal import GENESIS, Journal, entry_hash  # noqa: E402
from custom_components.alto.memory.pipeline import (  # noqa: E402
    IntakeInput,
    Provenance,
    embedding_codes,
    source_row,
)
from custom_components.alto.memory.records import (  # noqa: E402
    HOUSEHOLD,
    KIND_EXPLICIT,
    Mutation,
    Row,
    canonical_json,
    vector_bytes,
)
from custom_components.alto.memory.store import CHECKPOINT_EVERY, MemoryStore  # noqa: E402

DIM = 768
GOAL_S = 2.0
_UPSERT_ROWS = 5000  # rows per Chroma upsert while building
_ROOMS = ("kitchen", "hall", "garage", "attic", "study", "porch", "cellar")
CURRENT, BEHIND = "memory.checkpoint", "behind.checkpoint"


def paths(base: Path, name: str = CURRENT) -> tuple[Path, Path, Checkpoint]:
    journal = base / "journal.jsonl"
    return base / "chroma", journal, Checkpoint(base / name, journal)


def memory(sequence: int, rng: np.random.Generator) -> tuple[dict[str, Any], Row]:
    """The journal body and the row of one remembered memory."""
    owner = HOUSEHOLD if sequence % 4 else f"user{sequence % 3}"
    room = _ROOMS[sequence % len(_ROOMS)]
    text = f"The spare key number {sequence} is in the {room}, behind the blue box."
    item = IntakeInput(text, f"bench/{sequence}", owner=owner, scope=owner, actor=None)
    vector = vector_bytes(rng.standard_normal(DIM).astype(np.float32).tolist())
    row = source_row(item, KIND_EXPLICIT, Provenance(sequence), 0, vector)
    mutation = Mutation(sequence, (row,))
    body = {
        "op": "remember",
        "request": {"inputs": [item.to_json()]},
        "mutation": mutation.to_json(),
        "vectors": mutation.vectors_json(),
    }
    return body, row


def build(base: Path, n: int) -> float:
    """A store of n remembered memories under base, with a checkpoint of it and one
    ``CHECKPOINT_EVERY - 1`` entries older; the seconds it took."""
    start = time.perf_counter()
    chroma, journal_path, checkpoint = paths(base)
    behind = n - CHECKPOINT_EVERY + 1
    store = MemoryStore.open_persistent(chroma, checkpoint=checkpoint)
    rng = np.random.default_rng(0)
    prev, pending = GENESIS, []
    with journal_path.open("wb") as journal:
        for sequence in range(1, n + 1):
            body, row = memory(sequence, rng)
            entry = {"sequence": sequence, "prev": prev, **body}
            entry["hash"] = prev = entry_hash(entry)
            journal.write((canonical_json(entry) + "\n").encode("utf-8"))
            pending.append(row)
            if len(pending) == _UPSERT_ROWS or sequence in (behind, n):
                journal.flush()  # a checkpoint reads the journal's end
                store.apply(Mutation(sequence, tuple(pending)))
                pending = []
            if sequence == behind:
                # with the corpus image, as the store saves it
                paths(base, BEHIND)[2].save(store.state, store._corpus_image())
    store.close()  # writes the checkpoint
    return time.perf_counter() - start


def rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(base: Path, name: str | None) -> dict[str, Any]:
    """One setup in this (fresh) process, from checkpoint file ``name`` (None: none): seconds
    per step, RSS before and after."""
    scoring.default_scorer()  # loaded at import time in HA too: not part of the growth
    query = embedding_codes(np.random.default_rng(1).standard_normal(DIM).tolist())
    chroma, journal_path, checkpoint = paths(base, name or CURRENT)
    before = rss_bytes()
    steps: dict[str, float] = {}
    start = time.perf_counter()
    store = MemoryStore.open_persistent(chroma, checkpoint=checkpoint if name else None)
    steps["store"] = time.perf_counter() - start
    journal = Journal(journal_path)
    steps["journal"] = time.perf_counter() - start - sum(steps.values())
    replay.reconcile(journal, store)
    steps["reconcile"] = time.perf_counter() - start - sum(steps.values())
    backend = select_backend("off", base / "cuda")
    snapshot = store.state.snapshot()
    assert snapshot is not None
    backend.load(snapshot)
    hits = backend.top_k(query, 16, allowed=store.state.visibility(None))
    steps["selection"] = time.perf_counter() - start - sum(steps.values())
    assert len(hits) == 16
    total = time.perf_counter() - start
    after = rss_bytes()
    # As after a start in Home Assistant: the corpus is warmed in the background, and the first
    # turn's memory block is asked for at once (it waits for the warm if it needs the lock).
    warmed: dict[str, float] = {}

    def warm() -> None:
        began = time.perf_counter()
        store.warm_recall()
        warmed["s"] = time.perf_counter() - began

    warming = threading.Thread(target=warm)
    began = time.perf_counter()
    warming.start()
    block = store.turn_block(query, None, "Where is the spare key number 77?", _render, {})
    first_turn = time.perf_counter() - began
    warming.join()
    assert block, "the first turn found no memory"
    corpus_rss = rss_bytes()
    # The first write makes embedded Chroma load its HNSW index (float32 vectors and graph) into
    # this process. The last entry applied again writes the same row: nothing changes.
    last = json.loads(journal_path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    store.apply(Mutation.from_json(last["mutation"], last["vectors"]))
    written = rss_bytes()
    store._client.close()  # not store.close(): this run must leave the checkpoint as it found it
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "total": total,
        "steps": steps,
        "rss": after - before,
        "rss_written": written - corpus_rss + after - before,  # the corpus aside
        "peak": peak,
        "first_turn": first_turn,
        "corpus_s": warmed["s"],
        "rss_corpus": corpus_rss - after,
    }


def _render(row: Row) -> str:
    return f"[said] {row.document}\n"


def run_child(base: Path, name: str | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", str(base), "--checkpoint", name or ""]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"setup child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


CODES_MB = (DIM + 8) * 10_000 / 2**20  # the anchor: int8 codes and an int64 id, per 10k


type Result = tuple[int, float, dict[str, Any], dict[str, Any], dict[str, Any] | None]


def row_text(
    n: int, fast: dict[str, Any], late: dict[str, Any], slow: dict[str, Any] | None
) -> str:
    per = n / 10_000 * 2**20
    rss, written = fast["rss"] / per, fast["rss_written"] / per
    slow_s = f"{slow['total']:>8.2f}" if slow else f"{'n/a':>8}"
    slow_rss = f"{slow['rss'] / per:>9.1f}" if slow else f"{'n/a':>9}"
    return (
        f"{n:>9,} | {fast['total']:>7.2f} {GOAL_S:>5.1f} {fast['total'] / GOAL_S:>6.2f}"
        f" {late['total']:>8.2f} {slow_s} | {rss:>9.1f} {CODES_MB:>9.1f} {rss / CODES_MB:>6.2f}"
        f" {written:>13.1f} {slow_rss} | {fast['peak'] / 2**20:>8.0f}"
    )


def report(results: list[Result]) -> None:
    print("\nsetup to a usable store, and resident memory, in fresh processes")
    header = (
        f"{'memories':>9} | {'setup s':>7} {'goal':>5} {'ratio':>6} {'behind':>8} {'no ckpt':>8}"
        f" | {'RSS MB/10k':>9} {'codes+ids':>9} {'ratio':>6} {'+Chroma index':>13}"
        f" {'no ckpt':>9} | {'peak MB':>8}"
    )
    print(header)
    print("-" * len(header))
    for n, _built, fast, late, slow in results:
        print(row_text(n, fast, late, slow))
    if len(results) > 1:  # the slope between the two largest sizes: fixed costs cancel
        (small, _, low, _, _), (large, _, high, _, _) = results[-2:]
        per = (large - small) / 10_000 * 2**20
        grown, written = (high[key] - low[key] for key in ("rss", "rss_written"))
        print(
            f"each 10k memories more ({small:,} to {large:,}): {grown / per:.1f} MB after setup"
            f" ({grown / per / CODES_MB:.2f} x codes+ids), {written / per:.1f} MB once Chroma"
            " has loaded its index"
        )
    print("\nthe first turn after a start (checkpoint current), the corpus warmed meanwhile")
    header = (
        f"{'memories':>9} | {'first turn s':>12} {'goal':>5} {'ratio':>6} {'corpus s':>8}"
        f" | {'+corpus MB/10k':>14} {'codes+ids':>9} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for n, _built, fast, _late, _slow in results:
        first = fast["total"] + fast["first_turn"]
        corpus = fast["rss_corpus"] / (n / 10_000 * 2**20)
        print(
            f"{n:>9,} | {first:>12.2f} {GOAL_S:>5.1f} {first / GOAL_S:>6.2f}"
            f" {fast['corpus_s']:>8.2f} | {corpus:>14.1f} {CODES_MB:>9.1f}"
            f" {corpus / CODES_MB:>6.2f}"
        )
    if len(results) > 1:
        (small, _, low, _, _), (large, _, high, _, _) = results[-2:]
        grown = (high["rss_corpus"] - low["rss_corpus"]) / ((large - small) / 10_000 * 2**20)
        print(f"each 10k memories more ({small:,} to {large:,}): {grown:.1f} MB for the corpus")
    print(
        "first turn s: from the start of setup until the first turn's memory block returns"
        " (`MemoryStore.turn_block`, which waits for the background `warm_recall`);"
        "\ncorpus s: that warm (`corpus.Corpus` built over every row);"
        " +corpus: RSS growth over the warm\n"
    )
    for n, built, fast, late, _slow in results:
        for label, run in (("current", fast), ("behind", late)):
            steps = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in run["steps"].items())
            print(f"{n:,} memories, checkpoint {label}: {steps}")
        print(f"{n:,} memories: store built in {built:.0f} s (0: reused)")
    print(
        "setup: open store + journal + reconcile + backend + one scoped recall;"
        f" behind: the checkpoint {CHECKPOINT_EVERY - 1} entries old;"
        " no ckpt: every Chroma record read;"
        "\nRSS MB/10k: growth over the setup per 10,000 memories;"
        f" codes+ids: {DIM} int8 codes and one int64 id per memory;"
        "\n+Chroma index: after the first write, which makes embedded Chroma load its HNSW index"
        " (the corpus aside)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated memories")
    parser.add_argument("--quick", action="store_true", help="10k memories only")
    parser.add_argument(
        "--chroma-load-max",
        type=int,
        default=20_000,
        help="largest size also set up without a checkpoint (it reads every record: slow, GBs)",
    )
    parser.add_argument("--store-dir", type=Path, help="keep built stores here and reuse them")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--checkpoint", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.checkpoint or None)))
        return
    sizes = [10_000] if args.quick else sorted(int(s) for s in args.sizes.split(","))
    if sizes[0] < CHECKPOINT_EVERY:
        parser.error(f"sizes start at {CHECKPOINT_EVERY} (a checkpoint that far behind is built)")
    with tempfile.TemporaryDirectory() as scratch:
        root = args.store_dir or Path(scratch)
        results = []
        for n in sizes:
            base = root / f"store-{n}"
            built = 0.0
            if not (base / CURRENT).exists() or not (base / BEHIND).exists():
                base.mkdir(parents=True, exist_ok=True)
                built = build(base, n)
            fast, late = run_child(base, CURRENT), run_child(base, BEHIND)
            slow = run_child(base, None) if n <= args.chroma_load_max else None
            results.append((n, built, fast, late, slow))
    report(results)


if __name__ == "__main__":
    main()
