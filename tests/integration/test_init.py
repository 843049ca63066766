"""Set-up, unload, reload and not-ready of a config entry."""

from __future__ import annotations

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from ..fake_ollama import FakeOllama
from .helpers import AGENT


async def test_setup_unload_reload(hass: HomeAssistant, setup_alto: MockConfigEntry) -> None:
    """The entry sets up, reloads and unloads, and its agent goes unavailable on unload."""
    entry = setup_alto
    assert entry.state is ConfigEntryState.LOADED
    assert hass.states.get(AGENT) is not None
    assert hass.states.get("binary_sensor.alto_model_available").state == "on"

    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED

    assert await hass.config_entries.async_unload(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.NOT_LOADED
    assert hass.states.get(AGENT).state == "unavailable"


async def test_unreachable_at_setup_is_retried(
    hass: HomeAssistant, fake_ollama: FakeOllama, alto_entry: MockConfigEntry
) -> None:
    """An unreachable server at setup is retried, and the entry loads once it is back."""
    await fake_ollama.stop()
    alto_entry.add_to_hass(hass)
    await hass.config_entries.async_setup(alto_entry.entry_id)
    await hass.async_block_till_done()
    assert alto_entry.state is ConfigEntryState.SETUP_RETRY

    await fake_ollama.start()
    assert await hass.config_entries.async_reload(alto_entry.entry_id)
    await hass.async_block_till_done()
    assert alto_entry.state is ConfigEntryState.LOADED
