"""Verifier cost per render over the labelled and held-out renders, against the 1 ms goal.

Run: .venv/bin/python scripts/benches/verifier.py [repeats]. Every render is verified `repeats`
times (default 20). The first pass starts with empty caches, as the first turn after boot would;
later passes find the licensed phrases already analysed, as a memory's phrases are on every turn
after the first that cites them. The render and the utterance are segmented on every call.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from custom_components.alto.surface.verify import verify_render  # noqa: E402

SETS = ("tests/surface/labelled_renders.json", "tests/surface/heldout_renders.json")
GOAL_US = 1000.0  # median cost per render (issue: verifier <= 1 ms)


def timed_pass(cases: list[dict[str, Any]]) -> list[float]:
    """Microseconds per verify_render call, one call per case."""
    timings: list[float] = []
    for case in cases:
        start = time.perf_counter_ns()
        verify_render(case["fragment"], case["render"], utterance=case["utterance"])
        timings.append((time.perf_counter_ns() - start) / 1000)
    return timings


def main(repeats: int) -> None:
    cases = [c for s in SETS for c in json.loads((ROOT / s).read_text(encoding="utf-8"))]
    cold = timed_pass(cases)
    timings = cold + [t for _ in range(repeats - 1) for t in timed_pass(cases)]
    median = statistics.median(timings)
    p90 = statistics.quantiles(timings, n=10)[8]
    print(f"{'renders':<10}{'median µs':>12}{'p90 µs':>10}{'goal µs':>10}{'median/goal':>13}")
    print(f"{len(cases):<10}{median:>12.0f}{p90:>10.0f}{GOAL_US:>10.0f}{median / GOAL_US:>13.2f}")
    print(f"first pass, cold caches: median {statistics.median(cold):.0f} µs")
    verdict = "meets" if median <= GOAL_US else "misses"
    print(f"({repeats} passes, {len(timings)} calls; the median {verdict} the 1 ms goal)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
