"""Verifier cost per render over the labelled and held-out renders, against the 1 ms goal.

One row for the English renders, one for the renders in the five other languages (read in their
own language, German and Dutch with the verb's moves tried where the order fails).

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

SETS = {
    "English": ("tests/surface/labelled_renders.json", "tests/surface/heldout_renders.json"),
    "de nl fr es it": tuple(f"tests/surface/language_renders_{n}.json" for n in (1, 2, 3, 4)),
}
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
    print(
        f"{'renders':<16}{'count':>6}{'median µs':>12}{'p90 µs':>10}{'goal µs':>10}"
        f"{'median/goal':>13}{'cold median µs':>16}"
    )
    for label, paths in SETS.items():
        cases = [c for s in paths for c in json.loads((ROOT / s).read_text(encoding="utf-8"))]
        cold = timed_pass(cases)
        timings = cold + [t for _ in range(repeats - 1) for t in timed_pass(cases)]
        median = statistics.median(timings)
        p90 = statistics.quantiles(timings, n=10)[8]
        print(
            f"{label:<16}{len(cases):>6}{median:>12.0f}{p90:>10.0f}{GOAL_US:>10.0f}"
            f"{median / GOAL_US:>13.2f}{statistics.median(cold):>16.0f}"
        )
    print(f"({repeats} passes; the first with empty caches, as the first turn after boot)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
