"""Home Assistant's event loop stays responsive while Alto answers a large household.

Every other task in Home Assistant (automations, entity updates, the frontend) waits while the
loop is blocked. The contract is checked two ways, neither a speed target (those live in
`scripts/benches/bench_responsiveness.py`, which measures the longest stall against its 50 ms goal):

- what costs in proportion to the text or the store never runs on the loop's thread: Unicode
  segmentation (uniseg, about 20 µs a character: segmenting one long utterance on the loop blocked
  it for about a second), the render verifier and the turn's memory block with its lexical
  score. Each is wrapped and the thread it ran on recorded; the turn must have called each and
  none on the loop;
- a watchdog task on the loop ticks every few milliseconds through the whole turn and its
  background work, and the longest gap between two ticks stays under a gross bound: a regression
  that blocks the loop shows as hundreds of milliseconds, while threads that hold the GIL (Python
  threads take turns every 5 ms) and a busy machine add tens.

The workload: the store knows 2,000 names (mode-2 intake, each name with an assertion quoting it),
the conversation holds 40 turns of 4 KB each (the most one utterance may be), and the turn is a
4 KB utterance naming one of them, so the Surfacer cues a name among 2,000, renders, verifies and
checks the render against the episode. Conversation intake and the background passes are off, as
in the bench: their executor work is measured there, passes on against off.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import async_capture_events

from custom_components.alto.const import CONF_MAX_HISTORY, CONF_MEMORY_MODE
from custom_components.alto.memory.intake import run_intake
from custom_components.alto.memory.pipeline import MAX_BATCH, IntakeInput
from custom_components.alto.memory.profile import processor_digest
from custom_components.alto.memory.qualification import QualificationTable
from custom_components.alto.surface.store_view import StoreMemoryView
from custom_components.alto.surface_organ.organ import EVENT_THOUGHT

from ..fake_ollama import FakeOllama, is_render
from ..memory.conftest import MODEL_DIGEST, FakeModel
from .helpers import converse, converse_and_wait_for_background, memory, spoken

NAMES = 2000
NAMES_PER_SENTENCE = 8
TURNS = 40
TURN_CHARS = 4000  # an utterance may hold 4096 bytes (`channel.admission`)
TICK_S = 0.002
GROSS_STALL_S = 0.25
QUALIFIED = QualificationTable(frozenset({(MODEL_DIGEST, processor_digest())}))

# Names and chatter are drawn from different letters, so no chatter word is ever a name's word.
_NAME_SYLLABLES = ("zan", "zor", "zel", "zim", "zub", "zok", "zet", "zir")
_CHAT_SYLLABLES = tuple(c + v for c in "bdfgklmnprstv" for v in "aeiou")


def name(n: int) -> str:
    """The `n`th name, distinct for every `n` below 8**4: one capitalized pseudo-word.

    One word, because the fake's bag-of-words embedding of two can cancel out to zero.
    """
    return "".join(_NAME_SYLLABLES[(n >> (3 * k)) & 7] for k in range(4)).title()


def chatter(rng: random.Random, chars: int) -> str:
    """Sentences of pseudo-words, about `chars` characters, unlike any other turn's."""
    sentences: list[str] = []
    while sum(len(s) + 1 for s in sentences) < chars - 80:
        words = ["".join(rng.choices(_CHAT_SYLLABLES, k=rng.randint(2, 3))) for _ in range(10)]
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


def sentence(names: list[str]) -> str:
    """A statement naming every one of `names`."""
    return ", ".join(names[:-1]) + f" and {names[-1]} came round on Sunday."


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """Every turn kept in history; no conversation storage, no background passes (see above)."""
    passes_off = {"n1_enabled": False, "reflection_enabled": False, "synthesis_enabled": False}
    return {CONF_MAX_HISTORY: TURNS + 10, CONF_MEMORY_MODE: 0, "reflect": passes_off}


async def learn_names(hass: HomeAssistant) -> None:
    """Admit NAMES names through mode-2 intake into the entry's store and journal.

    The organ's own intake writes, in batches of 64 sentences, rather than 250 turns.
    """
    organ = memory(hass)
    names = [name(n) for n in range(NAMES)]
    groups = [names[i : i + NAMES_PER_SENTENCE] for i in range(0, NAMES, NAMES_PER_SENTENCE)]
    for start in range(0, len(groups), MAX_BATCH):
        batch = groups[start : start + MAX_BATCH]
        items = [
            IntakeInput(sentence(group), f"seed-{start + k}", owner="household", scope="household")
            for k, group in enumerate(batch)
        ]
        result = await run_intake(
            items,
            mode=2,
            store=organ.store,
            journal=organ.journal,
            embed=organ.embed,
            call_model=FakeModel(mentions=tuple(n for group in batch for n in group)),
            model_digest=MODEL_DIGEST,
            table=QUALIFIED,
            run_blocking=hass.async_add_executor_job,
        )
        assert result.admitted, result.refusal


class Watchdog:
    """Ticks on the event loop every TICK_S and keeps the longest stall between two ticks."""

    def __init__(self) -> None:
        """Not ticking until `start`."""
        self.longest_s = 0.0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start ticking on the running loop, from now (the first tick's clock is read)."""
        self._task = asyncio.get_running_loop().create_task(self._tick())
        await asyncio.sleep(0)

    async def stop(self) -> float:
        """Stop ticking; the longest stall seen, in seconds."""
        assert self._task is not None
        self._task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self._task
        return self.longest_s

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(TICK_S)
            now = loop.time()
            self.longest_s = max(self.longest_s, now - last - TICK_S)
            last = now


# What costs in proportion to the text or the store: (module, attribute) as Alto's code calls it.
HEAVY = (
    ("custom_components.alto.surface.segments", "words"),
    ("custom_components.alto.surface.surfacer", "verify_render"),
    ("custom_components.alto.memory.store", "MemoryStore.turn_block"),
    ("custom_components.alto.memory.corpus", "Corpus.extend"),
    ("custom_components.alto.memory.corpus", "View.lexical"),
)


@contextmanager
def threads_of(hass: HomeAssistant) -> Iterator[dict[str, list[bool]]]:
    """Record, per HEAVY name, whether each call ran on the event loop's thread."""
    calls: dict[str, list[bool]] = {f"{m}.{a}": [] for m, a in HEAVY}
    with pytest.MonkeyPatch.context() as patch:
        for module, attribute in HEAVY:
            owner_name, _, name = attribute.rpartition(".")
            owner: Any = importlib.import_module(module)
            if owner_name:
                owner = getattr(owner, owner_name)
            patch.setattr(
                owner, name, _recording(getattr(owner, name), calls[f"{module}.{attribute}"], hass)
            )
        yield calls


def _recording(
    function: Callable[..., Any], calls: list[bool], hass: HomeAssistant
) -> Callable[..., Any]:
    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(threading.get_ident() == hass.loop_thread_id)
        return function(*args, **kwargs)

    return recorded


@pytest.mark.usefixtures("setup_alto")
async def test_a_turn_never_blocks_the_event_loop(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """A turn over 2,000 names and 40 long turns does its heavy work off the loop."""
    rng = random.Random(11)
    conversation_id = None
    for _ in range(TURNS):  # the store knows no name yet: nothing is cued
        result = await converse(hass, chatter(rng, TURN_CHARS), conversation_id)
        conversation_id = result.conversation_id
    await hass.async_block_till_done(wait_background_tasks=True)
    await learn_names(hass)
    known = await StoreMemoryView(memory(hass).store).known_names(None)
    assert len(known) == NAMES
    cued = name(NAMES // 2 - 1)  # last in its sentence, where it is the subject of "came round"
    thought = f"I remember {cued} came round on Sunday."
    fake_ollama.when(is_render, thought)
    thoughts = async_capture_events(hass, EVENT_THOUGHT)
    said = chatter(rng, TURN_CHARS - 60) + f" Did {cued} come round?"

    gc.collect()  # what earlier turns left behind is not this turn's to collect
    # As Home Assistant runs: the test harness's asyncio debug mode records a stack for every
    # future and handle (a stat per frame), and each stat waits for the GIL behind the turn's
    # executor threads, which stretches any stall several times over.
    hass.loop.set_debug(False)
    with threads_of(hass) as calls:
        watchdog = Watchdog()
        await watchdog.start()
        result = await converse_and_wait_for_background(hass, said, conversation_id)
        longest = await watchdog.stop()

    assert spoken(result)
    # The Surfacer did the whole work: cued the name, rendered, verified and surfaced.
    assert [e.data["verdict"] for e in thoughts] == ["surfaced"]
    assert hass.states.get("sensor.alto_last_thought").state == thought
    assert {name: len(ran) for name, ran in calls.items() if not ran} == {}, "not exercised"
    on_loop = {name: ran.count(True) for name, ran in calls.items() if any(ran)}
    assert on_loop == {}, f"ran on the event loop's thread: {on_loop}"
    assert longest < GROSS_STALL_S, f"the event loop was blocked for {longest * 1000:.0f} ms"
