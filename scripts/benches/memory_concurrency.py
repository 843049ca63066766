#!/usr/bin/env python3
"""Memory writes under concurrent conversations: a turn and an ``alto.remember`` at 1 and 20.

A real Home Assistant process with Alto and the fake Ollama (``tests/live/ha_process.py``),
driven over REST as the UI and an automation would drive it. At each concurrency c, three load
shapes run for --rounds rounds each: c conversations taking turns (``/api/conversation/process``,
a stated fact each, each in its own conversation); c callers of ``alto.remember``; and c
conversations that each take a turn and then remember something, in turn. Every request is
timed at the client: a turn includes journaling its source (one fsync) before the reply
returns; a remember includes the embedding, the journal entry and the store write. The fake
model answers at once, so the figures are Home Assistant's and Alto's own cost, on however many
cores this machine lends them: once Home Assistant's one event loop is busy, c requests at once
take about c times as long (Little's law), so the anchor is the figure at 1 times c at worst.

Printed side by side per concurrency: turn p50/p95, remember p50/p95, the mixed shape's, and
how many writes each journal entry carried (accepts of turns and remembers that arrive together
are written as one entry).

Run from anywhere: the repository root is put on sys.path.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.live.ha_process import HomeAssistantProcess  # noqa: E402

CONCURRENCY = (1, 20)


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of `values`, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def conversation(
    ha: HomeAssistantProcess, worker: int, rounds: int, tag: str, *, turns: bool, remembers: bool
) -> dict[str, list[float]]:
    """One conversation: `rounds` times a turn and/or a remember; their latencies in seconds."""
    timed: dict[str, list[float]] = {"turns": [], "remembers": []}
    conversation_id = None
    for n in range(rounds):
        if turns:
            fact = f"Bench {tag}: conversation {worker} says item {n} is on shelf {n % 7}."
            extra = {"conversation_id": conversation_id} if conversation_id else {}
            start = time.perf_counter()
            answer = ha.converse(fact, **extra)
            timed["turns"].append(time.perf_counter() - start)
            if answer["response"]["response_type"] == "error":
                raise RuntimeError(f"a turn failed: {answer['response']}")
            conversation_id = answer.get("conversation_id")
        if remembers:
            body = {"text": f"Remembered {tag}: {worker} put box {n} in room {n % 5}."}
            start = time.perf_counter()
            ha.call("POST", "/api/services/alto/remember?return_response", body)
            timed["remembers"].append(time.perf_counter() - start)
    return timed


def journal_ops(config: Path) -> Counter[str]:
    """Writes per op in the entry's journal: entries and the inputs they carry."""
    counts: Counter[str] = Counter()
    for path in (config / ".storage" / "alto").glob("*/journal.jsonl"):
        for line in path.read_bytes().splitlines():
            entry = json.loads(line)
            counts[entry["op"]] += 1
            counts[entry["op"] + " inputs"] += len(entry.get("request", {}).get("inputs", []))
    return counts


def run(
    ha: HomeAssistantProcess, config: Path, concurrency: int, rounds: int, shape: str
) -> dict[str, Any]:
    """Every conversation's latencies at one concurrency and load shape (``turns``,
    ``remembers`` or ``mixed``: a turn then a remember), and the journal entries it added."""
    before = journal_ops(config)
    tag = f"{shape}-{concurrency}"
    turns, remembers = shape in ("turns", "mixed"), shape in ("remembers", "mixed")

    def one(worker: int) -> dict[str, list[float]]:
        return conversation(ha, worker, rounds, tag, turns=turns, remembers=remembers)

    with ThreadPoolExecutor(concurrency) as pool:
        done = list(pool.map(one, range(concurrency)))
    return {
        "turns": [t for d in done for t in d["turns"]],
        "remembers": [r for d in done for r in d["remembers"]],
        "journal": journal_ops(config) - before,
    }


def ms(values: list[float], q: float) -> str:
    """The q-quantile of `values` in milliseconds, right-aligned."""
    return f"{percentile(values, q) * 1e3:>7.1f}"


def report(results: dict[tuple[str, int], dict[str, Any]]) -> None:
    print("\nturn and alto.remember latency, real Home Assistant over REST, fake Ollama")
    header = (
        f"{'conversations':>13} | {'turn p50':>8} {'p95':>7} | {'remember p50':>12} {'p95':>7}"
        f" | {'mixed: turn p50':>15} {'p95':>7} {'remember p50':>12} | {'turns/accept':>12}"
        f" {'remembers/entry':>15}"
    )
    print(header)
    print("-" * len(header))
    for concurrency in CONCURRENCY:
        turns = results["turns", concurrency]
        remembers = results["remembers", concurrency]
        mixed = results["mixed", concurrency]
        journal = turns["journal"] + remembers["journal"] + mixed["journal"]
        per_accept = journal["accept inputs"] / max(1, journal["accept"])
        per_remember = journal["remember inputs"] / max(1, journal["remember"])
        print(
            f"{concurrency:>13} | {ms(turns['turns'], 0.5):>8} {ms(turns['turns'], 0.95)}"
            f" | {ms(remembers['remembers'], 0.5):>12} {ms(remembers['remembers'], 0.95)}"
            f" | {ms(mixed['turns'], 0.5):>15} {ms(mixed['turns'], 0.95)}"
            f" {ms(mixed['remembers'], 0.5):>12} | {per_accept:>12.1f} {per_remember:>15.1f}"
        )
    print(
        "milliseconds, each request timed at the client; turn: c conversations taking turns;"
        " remember: c callers of alto.remember;\nmixed: c conversations, each a turn then a"
        " remember, in turn; turns/accept, remembers/entry: writes carried per journal entry"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="turns (and remembers) each")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "config"
        ha = HomeAssistantProcess(config)
        try:
            ha.start()
            ha.onboard()
            ha.add_alto()
            ha.wait_until_running()
            # Warm: the first requests load HA's conversation and service paths.
            conversation(ha, 0, 10, "warm-up", turns=True, remembers=True)
            results = {
                (shape, c): run(ha, config, c, rounds, shape)
                for c in CONCURRENCY
                for shape in ("turns", "remembers", "mixed")
            }
        finally:
            ha.close()
    report(results)


if __name__ == "__main__":
    main()
