"""Prompt tokens recomputed per turn, the executor's prompt on its own or after the conversation's.

Run: ../shared/tools/py314 .venv/bin/python -m scripts.benches.executor_cache

On SmolLM2-135M (tests/local_model.py, which keeps one prompt cache, as an Ollama model slot
does), two turns of a conversation as Alto's turn sends them: the first turn's reply call, its
span's executor call, then the second turn's reply call, whose prompt is the first one's system
message and history plus the first turn. Measured twice, with the executor's messages on their own
(a fresh context) and after the conversational call's messages (`act.executor.propose`'s
`prefix`), each run after an unrelated call that empties the cache. Printed: `prompt_eval_count`
of each call (prompt tokens the server evaluated, not reused from its cache) and the sum per
turn. Nothing is asserted.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import ollama

from custom_components.alto.act.executor import propose
from custom_components.alto.act.model import ExposedEntity, Registry
from custom_components.alto.channel.json_channel import SCHEMA
from custom_components.alto.prompt import EntityLine, situation, system_prompt
from tests.local_model import CHAT_MODEL, LocalOllama

HOME = [
    ExposedEntity("light.bed_light", "Bed Light", area="Bedroom"),
    ExposedEntity("light.ceiling_lights", "Ceiling Lights", area="Living Room"),
    ExposedEntity("light.kitchen_lights", "Kitchen Lights", area="Kitchen"),
    ExposedEntity("light.office_rgbw_lights", "Office RGBW Lights", area="Office"),
    ExposedEntity("lock.front_door", "Front Door", area="Hall"),
    ExposedEntity("cover.kitchen_window", "Kitchen Window", area="Kitchen"),
    ExposedEntity("cover.garage_door", "Garage Door", area="Garage"),
    ExposedEntity("climate.hvac", "Hvac", area="Living Room"),
    ExposedEntity("climate.heatpump", "HeatPump", area="Hall"),
    ExposedEntity("switch.decorative_lights", "Decorative Lights", area="Living Room"),
    ExposedEntity("switch.ac", "AC", area="Bedroom"),
]
PERSONA = "You are Alto, a warm and brief voice assistant for this household."
OPTIONS = {"temperature": 0, "num_ctx": 8192, "num_predict": 48}


def _situation(minute: int) -> str:
    lines = [EntityLine(e.entity_id, e.name, e.area, "off") for e in HOME]
    return situation(entities=lines, now=datetime(2026, 12, 4, 20, minute))


async def _turns(server: LocalOllama, client: ollama.AsyncClient, *, shared: bool) -> list[int]:
    """Empty the cache, run the two turns; the prompt tokens of each of the three calls."""
    await client.chat(
        model=CHAT_MODEL, messages=[{"role": "user", "content": "Unrelated."}], options=OPTIONS
    )
    system = {
        "role": "system",
        "content": system_prompt(persona=PERSONA, assistant_name="Alto", json_channel=True),
    }
    first = [
        system,
        {"role": "user", "content": "Good evening."},
        {"role": "assistant", "content": "Good evening! How can I help?"},
        {"role": "system", "content": _situation(0)},
        {"role": "user", "content": "Turn on the bed light, please."},
    ]
    counts = []
    reply = await client.chat(model=CHAT_MODEL, messages=first, format=SCHEMA, options=OPTIONS)
    counts.append(server.results[-1].prompt_eval_count)
    await propose(
        client,
        model=CHAT_MODEL,
        span="turn on the bed light",
        area="Bedroom",
        registry=Registry(HOME),
        keep_alive="5m",
        num_ctx=OPTIONS["num_ctx"],
        prefix=first if shared else (),
    )
    counts.append(server.results[-1].prompt_eval_count)
    speech = json.loads(reply.message.content or "{}").get("speech", "")
    second = [
        system,
        *first[1:3],
        first[4],
        {"role": "assistant", "content": speech},
        {"role": "system", "content": _situation(1)},
        {"role": "user", "content": "And the kitchen lights?"},
    ]
    await client.chat(model=CHAT_MODEL, messages=second, format=SCHEMA, options=OPTIONS)
    counts.append(server.results[-1].prompt_eval_count)
    return counts


async def main() -> None:
    """Print the table."""
    server = LocalOllama()
    await server.start()
    try:
        client = ollama.AsyncClient(host=server.url)
        print("executor prompt   | turn 1 reply | executor | turn 2 reply | executor + turn 2")
        for shared in (False, True):
            reply1, executor, reply2 = await _turns(server, client, shared=shared)
            label = "after the talk's " if shared else "on its own       "
            print(f"{label} | {reply1:12} | {executor:8} | {reply2:12} | {executor + reply2:17}")
    finally:
        await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
