"""The memory retention limit (`max_memories`) end to end, in a real Home Assistant.

Past the limit the oldest sources are forgotten through the forget path (journaled, their text
erased), authored memories are never forgotten for room, and when they alone fill the limit a
new one is refused with a translated error.
"""

from __future__ import annotations

from typing import Any

import pytest
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events

from custom_components.alto.const import CONF_MAX_MEMORIES
from custom_components.alto.memory_organ.reports import EVENT_ADMITTED

from ..fake_ollama import FakeOllama
from .helpers import alto_service, converse_and_wait_for_background, journal_file, memory, remember

LIMIT = 3


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """A tiny limit, so a few turns pass it."""
    return {CONF_MAX_MEMORIES: LIMIT}


async def test_the_oldest_sources_go_first_and_authored_memories_stay(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """Turns kept as sources (mode 1) past the limit forget the oldest, never the authored one.

    Each forget is a journal entry, as `alto.forget`'s.
    """
    admitted = async_capture_events(hass, EVENT_ADMITTED)
    kept = await remember(hass, "The spare key is under the blue pot.")
    turns = [f"Turn number {n} was about the garden." for n in range(1, 5)]
    for text in turns:
        fake_ollama.reply("¦Noted.¦")
        await converse_and_wait_for_background(hass, text)
    await hass.async_block_till_done(wait_background_tasks=True)

    store = memory(hass).store
    documents = [row.document for row in store.rows(None)]
    assert len(documents) == LIMIT
    assert documents == ["The spare key is under the blue pot.", turns[2], turns[3]]
    assert store.get([kept])  # authored: never forgotten for room
    forgotten = [e.data["ids"] for e in admitted if e.data["source_id"] is None]  # forgets
    assert sum(len(ids) for ids in forgotten) == 2
    journal = journal_file(hass, setup_alto).read_bytes()
    assert journal.count(b'"op":"forget"') == 2  # the forget path (erasure: test_safety)


async def test_authored_memories_alone_at_the_limit_refuse_a_new_one(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """When authored memories fill the limit, a new one is refused (translated).

    Nothing is forgotten for it, and forgetting one makes room again.
    """
    ids = [await remember(hass, f"Authored memory {n}.") for n in range(LIMIT)]
    with pytest.raises(HomeAssistantError) as refused:
        await remember(hass, "One too many.")
    assert refused.value.translation_key == "memory_full"
    assert "Forget some" in str(refused.value)
    assert len(memory(hass).store.rows(None)) == LIMIT
    await alto_service(hass, "forget", {"id": ids[0]})
    await remember(hass, "Now there is room.")
