"""What the Home Assistant benches share: a quiet Home Assistant of their own, and Alto in it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.const import (
    CONF_EMBEDDING_MODEL,
    CONF_MODEL,
    CONF_URL,
    DOMAIN,
)
from custom_components.alto.memory.records import Mutation, Row, object_id

FIRST_SEQUENCE = 1 << 20  # bulk rows' journal sequences, far past intake's


async def quiet_home(hass: HomeAssistant, config_dir: Path) -> None:
    """Home Assistant as a real install runs it: no loop debug mode (the harness switches it on),
    no INFO line per HTTP request, a config dir of the bench's own, `conversation` set up."""
    hass.loop.set_debug(False)
    logging.getLogger().setLevel(logging.WARNING)
    hass.config.config_dir = str(config_dir)
    assert await async_setup_component(hass, "homeassistant", {})
    assert await async_setup_component(hass, "conversation", {})


async def add_alto(
    hass: HomeAssistant, url: str, chat: str, embedding: str, options: dict[str, Any]
) -> MockConfigEntry:
    """An Alto entry on the model server at `url`, set up."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Alto",
        data={CONF_URL: url, CONF_MODEL: chat, CONF_EMBEDDING_MODEL: embedding},
        options=options,
    )
    return await set_up(hass, entry)


async def set_up(hass: HomeAssistant, entry: MockConfigEntry) -> MockConfigEntry:
    """`entry` added to Home Assistant and set up."""
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id), entry.domain
    await hass.async_block_till_done()
    return entry


def agent_of(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """The entity id of the entry's one conversation agent.

    HA's built-in Ollama integration's agent belongs to a subentry it creates on setup.
    """
    agents = [
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == "conversation"
    ]
    assert len(agents) == 1, (entry.domain, agents)
    return agents[0]


def bulk_sources(
    count: int, document: Callable[[int], str], vector: Callable[[int], bytes]
) -> list[Mutation]:
    """`count` household sources said by no known user, 1,000 per mutation, oldest first.

    Row n says `document(n)` with embedding `vector(n)` (each called once, in order), a second
    after row n - 1. For `MemoryStore.apply`: a bench fills its store without intake.
    """
    mutations = []
    for first in range(0, count, 1000):
        sequence = FIRST_SEQUENCE + first // 1000
        rows = []
        for index in range(min(1000, count - first)):
            n = first + index
            rows.append(
                Row(
                    id=object_id(sequence, index),
                    document=document(n),
                    kind="source",
                    owner="household",
                    scope="household",
                    actor="unknown",
                    source_id=f"bulk/{n}",
                    source_version=1,
                    offset=0,
                    length=1,
                    said_at=1_790_000_000 + n,
                    vector=vector(n),
                )
            )
        mutations.append(Mutation(sequence, tuple(rows)))
    return mutations
