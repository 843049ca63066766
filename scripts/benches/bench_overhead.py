"""Alto's own work before a turn's chat call, in a large household (goal: 10 ms or less).

Run: scripts/bench, or
    .venv/bin/python -m pytest scripts/benches/bench_overhead.py -q -s -p no:cacheprovider
(`ALTO_BENCH_QUICK=1` measures fewer turns.)

One Home Assistant with 2,000 exposed entities, and Alto's store holding 10,000 memories with
768-dimension embeddings: 2,000 names learnt through mode-2 intake (each with the statement that
names it, as `tests/integration/test_responsiveness.py` learns them) and sources of household
chatter up to 10,000 rows. The utterance names one of the 2,000 and shares words with the
chatter, so every step works: admission, the turn's memory block (selection over 10,000 rows),
the Surfacer (cue among 2,000 names, fragment, render, verify) and the prompt (the home snapshot
of 2,000 entities).

What is measured is Alto's own work, never a model's: each call says something new (a number
changes), whose embedding is asked for just before the call and then answered from the
embedder's recent texts, as within a real turn, and the Surfacer's render is answered at once
with a thought the verifier passes. Two figures:

- each step on its own, as the turn calls it (median of repeated calls, on the event loop, with
  whatever it hands to the executor), and their sum, against the 10 ms goal;
- a whole turn through HA's conversation API until the chat call leaves for the model (a fresh
  conversation each turn), against the same interval of HA's built-in `ollama` agent, whose
  only work before its chat call is HA's chat log and its prompt. Turns alternate.
"""

from __future__ import annotations

import itertools
import os
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto import turn
from custom_components.alto.channel.admission import admit
from custom_components.alto.const import CONF_MAX_HISTORY, CONF_MEMORY_MODE
from custom_components.alto.memory.records import Mutation
from custom_components.alto.reflect_organ.organ import TurnReflection
from custom_components.alto.surface.surfacer import Heard
from scripts.benches.harness import add_alto, agent_of, bulk_sources, quiet_home, set_up
from tests.fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama
from tests.integration.helpers import memory
from tests.integration.test_responsiveness import NAMES, chatter, learn_names, name

GOAL_MS = 10.0
MEMORIES = 10_000
ENTITIES = 2_000
DIM = 768
CUED = name(NAMES // 2 - 1)  # last in its sentence, the subject of "came round"
SAID = "Did {cued} come round on Sunday, and is the boiler still making noise on day {day}?"
THOUGHT = f"I remember {CUED} came round on Sunday."
HOUSEHOLD_WORDS = [
    "boiler",
    "noise",
    "sunday",
    "bins",
    "garden",
    "school",
    "bus",
    "dog",
    "walk",
    "kettle",
]


def _timed_median(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


_days = itertools.count()


def utterance() -> str:
    """Something not said before, naming CUED."""
    return SAID.format(cued=CUED, day=next(_days))


async def _median_ms(
    call: Callable[[str], Awaitable[Any]],
    embed: Callable[[list[str]], Awaitable[Any]],
    repeats: int,
) -> float:
    """Median wall time of `call` in ms on new utterances (embedded before), after a warm-up."""
    samples = []
    for _ in range(repeats + 1):
        said = utterance()
        await embed([said])
        start = time.perf_counter()
        await call(said)
        samples.append(time.perf_counter() - start)
    return _timed_median(samples[1:])


def _expose_entities(hass: HomeAssistant) -> None:
    """ENTITIES states across a few domains, every one exposed to Assist."""
    domains = ("light", "switch", "sensor", "binary_sensor", "cover")
    for n in range(ENTITIES):
        domain = domains[n % len(domains)]
        entity_id = f"{domain}.room_{n}"
        hass.states.async_set(entity_id, "on", {"friendly_name": f"Room {n} {domain}"})
        async_expose_entity(hass, "conversation", entity_id, True)


def _bulk_rows(count: int, rng: random.Random, vectors: np.random.Generator) -> list[Mutation]:
    """`count` household sources of chatter with household words."""

    def document(_n: int) -> str:
        words = chatter(rng, 120).split()[:12] + rng.sample(HOUSEHOLD_WORDS, 2)
        rng.shuffle(words)
        return " ".join(words).capitalize() + "."

    return bulk_sources(
        count, document, lambda _n: vectors.standard_normal(DIM).astype("<f4").tobytes()
    )


class _ChatClock:
    """Wraps a client's `chat`: the time its conversational call (the one whose last message is
    what was said in the turn) was made, per turn."""

    def __init__(self, client: Any) -> None:
        self.called: float | None = None
        self.said = ""
        chat = client.chat

        async def timed(*args: Any, **kwargs: Any) -> Any:
            messages = kwargs.get("messages") or []
            if messages and messages[-1].get("content") == self.said and self.called is None:
                self.called = time.perf_counter()
            return await chat(*args, **kwargs)

        client.chat = timed


async def _until_chat(hass: HomeAssistant, agent_id: str, clock: _ChatClock, said: str) -> float:
    """One turn in a fresh conversation; seconds from the call until the chat call left."""
    clock.called, clock.said = None, said
    context = Context()
    with chat_session.async_get_chat_session(hass) as session:
        user_input = conversation.ConversationInput(
            text=said,
            context=context,
            conversation_id=session.conversation_id,
            device_id=None,
            satellite_id=None,
            language="en",
            agent_id=agent_id,
        )
        with conversation.async_get_chat_log(hass, session, user_input):
            start = time.perf_counter()
            await conversation.async_converse(
                hass, said, session.conversation_id, context, "en", agent_id
            )
    assert clock.called is not None, f"{agent_id} made no chat call"
    return clock.called - start


async def _builtin(hass: HomeAssistant, url: str) -> tuple[str, Any]:
    """HA's built-in Ollama agent on the same server: its entity id and its client."""
    entry = MockConfigEntry(domain="ollama", data={"url": url, "model": CHAT_MODEL}, options={})
    await set_up(hass, entry)
    return agent_of(hass, entry), entry.runtime_data


async def test_pre_chat_overhead(
    hass: HomeAssistant, fake: FakeOllama, enable_custom_integrations: None, tmp_path: Path
) -> None:
    """Print each step's median and the whole interval, Alto against the built-in agent."""
    quick = bool(os.environ.get("ALTO_BENCH_QUICK"))
    repeats, turns = (10, 10) if quick else (30, 30)
    fake.embed_dim = DIM
    await quiet_home(hass, tmp_path)
    _expose_entities(hass)
    passes_off = {"n1_enabled": False, "reflection_enabled": False, "synthesis_enabled": False}
    options = {CONF_MEMORY_MODE: 0, CONF_MAX_HISTORY: 20, "reflect": passes_off}
    entry = await add_alto(hass, fake.url, CHAT_MODEL, EMBED_MODEL, options)
    runtime = entry.runtime_data
    organ = memory(hass)

    started = time.perf_counter()
    await learn_names(hass)
    rng, vectors = random.Random(5), np.random.default_rng(5)
    for mutation in _bulk_rows(MEMORIES - organ.store.count_all(), rng, vectors):
        await hass.async_add_executor_job(organ.store.apply, mutation)
    await hass.async_add_executor_job(organ.store.warm_recall)
    stored = organ.store.count_all()
    filled_s = time.perf_counter() - started

    surfacer: Any = runtime.thoughts.surfacer

    async def render(_messages: list[dict[str, str]]) -> str:
        return THOUGHT

    surfacer._render = render  # the model's part is not Alto's: answered at once

    async def surfaced(said: str) -> None:
        outcome = await surfacer.surface_from_heard(Heard(said, None, []))
        assert outcome.verdict == "surfaced", outcome

    async def block(said: str) -> None:
        assert await organ.async_turn_context(said, viewer=None)

    async def admission(said: str) -> None:
        assert admit(said) is None

    async def prompt(_said: str) -> None:
        turn._system_prompt(hass, runtime)
        turn._situation(runtime, TurnReflection())

    steps = {
        "admission": admission,
        "memory block (selection over every memory, lines)": block,
        "Surfacer (cue, fragment, verify; render answered at once)": surfaced,
        "prompt (persona, home snapshot of every entity)": prompt,
    }
    embed = organ.embed_queries
    medians = {label: await _median_ms(call, embed, repeats) for label, call in steps.items()}
    total = sum(medians.values())

    alto_id = agent_of(hass, entry)
    builtin_id, builtin_client = await _builtin(hass, fake.url)
    clocks = {"Alto": _ChatClock(runtime.client), "built-in": _ChatClock(builtin_client)}
    ids = {"Alto": alto_id, "built-in": builtin_id}
    intervals: dict[str, list[float]] = {label: [] for label in ids}
    order = list(ids)
    for warm_up in (True, *([False] * turns)):
        said = utterance()
        await embed([said])
        for label in order:
            interval = await _until_chat(hass, ids[label], clocks[label], said)
            if not warm_up:
                intervals[label].append(interval)
        order.reverse()
    alto, builtin = _timed_median(intervals["Alto"]), _timed_median(intervals["built-in"])

    lines = [
        f"Alto's own work before the chat call: {stored:,} memories ({DIM}-d), {ENTITIES:,} "
        f"exposed entities, {NAMES:,} known names (store filled in {filled_s:.0f} s); medians "
        f"of {repeats} calls per step, {turns} turns per agent",
        "",
        f"{'figure':<62}{'ms':>8}{'anchor':>20}{'ratio':>8}",
        *(f"{label:<62}{ms:>8.2f}" for label, ms in medians.items()),
        f"{'sum of the steps':<62}{total:>8.2f}{'goal 10 ms':>20}{total / GOAL_MS:>8.2f}",
        f"{'whole turn until the chat call, Alto':<62}{alto:>8.2f}"
        f"{f'built-in {builtin:.2f} ms':>20}{alto / builtin:>8.2f}",
        f"{'whole turn until the chat call, Alto less built-in':<62}{alto - builtin:>8.2f}"
        f"{'goal 10 ms':>20}{(alto - builtin) / GOAL_MS:>8.2f}",
        f"goal (<= {GOAL_MS:.0f} ms): sum of the steps {'met' if total <= GOAL_MS else 'NOT met'}, "
        f"whole turn less built-in {'met' if alto - builtin <= GOAL_MS else 'NOT met'}",
    ]
    print("\n" + "\n".join(lines) + "\n", file=sys.__stdout__, flush=True)
