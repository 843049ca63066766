"""Fixtures for tests that run Alto inside a real Home Assistant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.const import CONF_EMBEDDING_MODEL, CONF_MODEL, CONF_URL, DOMAIN

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama


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
def entry_options() -> dict[str, Any]:
    """Options of the Alto entry; override in a test module to change them."""
    return {}


@pytest.fixture
def alto_entry(fake_ollama: FakeOllama, entry_options: dict[str, Any]) -> MockConfigEntry:
    """An Alto config entry pointing at the fake server (not yet added)."""
    return MockConfigEntry(
        domain=DOMAIN,
        title="Alto",
        data={CONF_URL: fake_ollama.url, CONF_MODEL: CHAT_MODEL, CONF_EMBEDDING_MODEL: EMBED_MODEL},
        options=entry_options,
    )


@pytest.fixture
async def setup_alto(hass: HomeAssistant, alto_entry: MockConfigEntry) -> MockConfigEntry:
    """Alto set up in HA with the `homeassistant` and `conversation` components."""
    assert await async_setup_component(hass, "conversation", {})
    alto_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(alto_entry.entry_id)
    await hass.async_block_till_done()
    return alto_entry
