"""Fixtures for tests that run Alto inside a real Home Assistant.

Every option change goes through one fixture, `entry_options`: a module or a class overrides it
to set up Alto with other options. Plain helpers (the agent id, turns, results, memory services)
are in `helpers.py`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import EVENT_CALL_SERVICE, Platform
from homeassistant.core import Event, HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_capture_events,
)

from custom_components.alto.const import (
    CONF_EMBEDDING_MODEL,
    CONF_MODEL,
    CONF_URL,
    DOMAIN,
)
from custom_components.alto.memory.qualification import record_qualification

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama, digest_of
from .helpers import EVENT, Script, table_path

DEMO = "homeassistant.components.demo"


@pytest.fixture(autouse=True)
async def _home_assistant(
    hass: HomeAssistant, enable_custom_integrations: None, tmp_path: Path
) -> None:
    """Custom integrations on, the core component set up, and a config dir of this test's own.

    The harness's default config dir is shared by every test (and outlives the run): Alto's
    store, journal and qualification table must not leak from one test into another.
    """
    hass.config.config_dir = str(tmp_path)
    assert await async_setup_component(hass, "homeassistant", {})


@pytest.fixture
def isolated_config(hass: HomeAssistant) -> Path:
    """This test's own config dir (`_home_assistant` gives every test one)."""
    return Path(hass.config.config_dir)


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """Options of the Alto entry; override in a test module or class to change them."""
    return {}


@pytest.fixture
def entry_data(fake_ollama: FakeOllama) -> dict[str, Any]:
    """Data of the Alto entry: the fake server's URL and its two models."""
    return {CONF_URL: fake_ollama.url, CONF_MODEL: CHAT_MODEL, CONF_EMBEDDING_MODEL: EMBED_MODEL}


@pytest.fixture
def alto_entry(entry_data: dict[str, Any], entry_options: dict[str, Any]) -> MockConfigEntry:
    """An Alto config entry pointing at the fake server (not yet added)."""
    return MockConfigEntry(domain=DOMAIN, title="Alto", data=entry_data, options=entry_options)


@pytest.fixture
async def setup_alto(hass: HomeAssistant, alto_entry: MockConfigEntry) -> MockConfigEntry:
    """Alto set up in HA with the `homeassistant` and `conversation` components."""
    assert await async_setup_component(hass, "conversation", {})
    alto_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(alto_entry.entry_id)
    await hass.async_block_till_done()
    return alto_entry


@pytest.fixture
async def demo_home(hass: HomeAssistant) -> AsyncGenerator[None]:
    """HA's demo lights, locks, covers, climates and switches (locks act without delay)."""
    platforms = [Platform.LIGHT, Platform.LOCK, Platform.COVER, Platform.CLIMATE, Platform.SWITCH]
    with (
        patch(f"{DEMO}.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM", platforms),
        patch(f"{DEMO}.lock.LOCK_UNLOCK_DELAY", 0),
    ):
        assert await async_setup_component(hass, "demo", {})
        await hass.async_block_till_done()
        assert hass.states.get("light.bed_light").state == "off"
        assert hass.states.get("lock.front_door").state == "locked"
        yield
        # Unload while the platform list is still patched (HA unloads the same list).
        for entry in hass.config_entries.async_entries("demo"):
            await hass.config_entries.async_unload(entry.entry_id)


@pytest.fixture
async def alto(demo_home: None, setup_alto: MockConfigEntry) -> MockConfigEntry:
    """Alto set up after the demo home."""
    return setup_alto


@pytest.fixture
def service_calls(hass: HomeAssistant) -> list[Event]:
    """Every service call on the bus (Alto's and anyone's)."""
    return async_capture_events(hass, EVENT_CALL_SERVICE)


@pytest.fixture
def qualified(hass: HomeAssistant, isolated_config: Path) -> Path:
    """A qualification row for the fake chat model and this processor, written before setup."""
    path = table_path(hass)
    record_qualification(path, digest_of(CHAT_MODEL), CHAT_MODEL, [])
    return path


@pytest.fixture
def script(fake_ollama: FakeOllama) -> Iterator[Script]:
    """The scripted model; afterwards, no request of the test carried tools."""
    scripted = Script(fake_ollama)
    yield scripted
    for body in fake_ollama.chat_requests:
        assert not body.get("tools"), f"a chat request carried tools: {body.get('tools')}"


@pytest.fixture
def intents(hass: HomeAssistant) -> list[Event]:
    """Every `alto_intent_captured` event."""
    return async_capture_events(hass, EVENT)


@pytest.fixture
def front_door_exposed(hass: HomeAssistant, alto: MockConfigEntry) -> None:
    """Locks are not exposed by default; expose the front door to Assist."""
    async_expose_entity(hass, "conversation", "lock.front_door", True)
