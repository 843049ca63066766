"""Cost of each reflect pass: scripted model, real fsync'd journal in a temporary directory.

Run: .venv/bin/python scripts/benches/reflect.py [--quick]
The scripted model answers at once with a valid answer its schema implies (one observation per
N+1 pass, four ledger items per reflection, six synthesis elements), so the figures are Alto's
own work per pass: prompt building, strict parsing, review or citation checks, the journal
append (fsync) and the fold. The model's own latency comes on top. Each row runs in a fresh
directory; "prompt" is the UTF-8 size of the messages the pass sent (what the model must read).
A turn's texts are about 120 and 90 characters, like a spoken exchange.
"""

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from custom_components.alto.reflect import Outcome, ReflectConfig, Reflector

SCOPE = "a" * 32
UTTERANCE = "Could you turn off the kitchen light? I'll call the plumber tomorrow about the boiler."
REPLY = "Done, the kitchen light is off. Maybe the plumber can come on Friday, I think."


class Model:
    """Answers every call validly from its schema; records prompt sizes per pass."""

    def __init__(self) -> None:
        self.prompt_bytes: list[int] = []

    async def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        self.prompt_bytes.append(sum(len(m["content"].encode()) for m in messages))
        await asyncio.sleep(0)
        props = schema["properties"]
        if "observations" in props:
            turns = props["observations"]["items"]["properties"]["turns"]["items"]["enum"]
            observation = {
                "mandate": "complete",
                "turns": [turns[-1]],
                "content": f"Follow up on the plumber call of turn {turns[-1]}",
                "urgency": "high",
            }
            return json.dumps({"observations": [observation], "nominations": []})
        if "items" in props:
            item = props["items"]["items"]["properties"]
            turns = item["turns"]["items"]["enum"]
            ledgers = ("home", "commitments", "preferences_patterns", "relationships")
            items = [
                {
                    "kind": "fact",
                    "ledger": ledger,
                    "content": f"Finding {turns[0]}-{i} about the boiler",
                    "turns": [turns[i % len(turns)]],
                    "resolves": 0,
                }
                for i, ledger in enumerate(ledgers)
            ]
            return json.dumps({"items": items, "nominations": []})
        refs = props["themes"]["items"]["properties"]["cites"]["items"]["enum"]
        element = [{"text": "evenings, the boiler and the plumber", "cites": refs[-2:]}]
        return json.dumps({name: element for name in props})


async def timed(action: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await action()
    return (time.perf_counter() - start) * 1000


async def record(organ: Reflector, count: int) -> list[float]:
    outcome = (Outcome("executed", "light.kitchen", "turn_off"),)
    return [
        await timed(
            lambda: organ.record_turn(
                SCOPE, utterance=UTTERANCE, reply=REPLY, outcomes=outcome, conversation_id="c"
            )
        )
        for _ in range(count)
    ]


def organ_in(folder: str, model: Any, **config: Any) -> Reflector:
    return Reflector(folder, call_model=model, config=ReflectConfig(**config))


async def rows(runs: int) -> list[tuple[str, list[float], list[int]]]:
    table: list[tuple[str, list[float], list[int]]] = []
    with tempfile.TemporaryDirectory() as folder:
        model = Model()
        organ = organ_in(folder, model, n1_batch=1)
        table.append(("record_turn", await record(organ, runs), []))
        passes, takes = [], []
        for _ in range(runs):  # each pass notes one intrusive item, the next turn takes it
            passes.append(await timed(lambda: organ.run_n1(SCOPE)))
            takes.append(await timed(lambda: organ.take_intrusive(SCOPE)))
        table.append(("N+1 (model answer)", passes, model.prompt_bytes))
        table.append(("take_intrusive (one item)", takes, []))

        async def prompt_parts() -> None:
            await organ.frame_of_mind(SCOPE)
            await organ.impressions(SCOPE)

        frames = [await timed(prompt_parts) for _ in range(runs)]
        table.append(("frame_of_mind + impressions", frames, []))

    with tempfile.TemporaryDirectory() as folder:

        async def failing(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
            raise ConnectionError

        organ = organ_in(folder, failing, n1_batch=1)
        await record(organ, runs)
        times = [await timed(lambda: organ.run_n1(SCOPE)) for _ in range(runs)]
        table.append(("N+1 (heuristic fallback)", times, []))

    reflections, syntheses, model = [], [], Model()
    with tempfile.TemporaryDirectory() as folder:
        organ = organ_in(folder, model)
        for _ in range(max(2, runs // 10)):
            await record(organ, 25)
            reflections.append(await timed(lambda: organ.reflect(SCOPE)))
    table.append(("N+25 reflection (25 turns)", reflections, model.prompt_bytes))

    model = Model()
    with tempfile.TemporaryDirectory() as folder:
        organ = organ_in(folder, model)
        for _ in range(max(2, runs // 10)):
            await record(organ, 100)
            syntheses.append(await timed(lambda: organ.synthesize(SCOPE, trigger="interval")))
    table.append(("N+100 synthesis (100 turns)", syntheses, model.prompt_bytes))

    with tempfile.TemporaryDirectory() as folder:
        organ = organ_in(folder, Model(), retention=500, compact_every=10**6)
        await record(organ, 500)
        await organ.run_n1(SCOPE)
        loads = []
        for _ in range(max(2, runs // 10)):
            fresh = organ_in(folder, Model())
            loads.append(await timed(lambda fresh=fresh: fresh.turns(SCOPE)))
        table.append(("load + verify (500 turns)", loads, []))
        forgets = []
        for n in range(1, max(2, runs // 10) + 1):
            forgets.append(await timed(lambda n=n: organ.forget_turns(SCOPE, [n])))
        table.append(("forget 1 turn + compaction (500)", forgets, []))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    runs = 20 if parser.parse_args().quick else 100
    table = asyncio.run(rows(runs))
    print(f"{'pass':34} {'runs':>5} {'median ms':>10} {'p95 ms':>8} {'prompt B':>9}")
    for name, times, prompts in table:
        p95 = statistics.quantiles(times, n=20)[-1] if len(times) >= 2 else times[0]
        prompt = f"{statistics.median(prompts):.0f}" if prompts else "-"
        print(f"{name:34} {len(times):5} {statistics.median(times):10.3f} {p95:8.3f} {prompt:>9}")


if __name__ == "__main__":
    main()
