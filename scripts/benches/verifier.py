"""Verifier cost per render over the labelled set: median and p90 in microseconds.

Run: .venv/bin/python scripts/benches/verifier.py [repeats]. Every render is verified `repeats`
times (default 20); the first pass runs with a cold stem cache, as the first turn after boot would.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from custom_components.alto.surface.verify import verify_render  # noqa: E402


def main(repeats: int) -> None:
    cases = json.loads((ROOT / "tests/surface/labelled_renders.json").read_text(encoding="utf-8"))
    timings: list[float] = []
    for _ in range(repeats):
        for case in cases:
            start = time.perf_counter_ns()
            verify_render(case["fragment"], case["render"], utterance=case["utterance"])
            timings.append((time.perf_counter_ns() - start) / 1000)
    deciles = statistics.quantiles(timings, n=10)
    print(f"{'renders':<10}{'median µs':>12}{'p90 µs':>10}")
    print(f"{len(cases):<10}{statistics.median(timings):>12.0f}{deciles[8]:>10.0f}")
    print(f"({repeats} passes, {len(timings)} calls)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
