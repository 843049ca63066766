"""Every platform's entities and states, compared to snapshots (one platform at a time)."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry, snapshot_platform
from syrupy.assertion import SnapshotAssertion

from custom_components.alto.const import CONF_EMBEDDING_MODEL, CONF_MODEL, CONF_URL, DOMAIN

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama

ENTRY_ID = "01JALTOSNAPSHOTENTRY000000"


@pytest.mark.freeze_time("2026-11-30 12:00:00+00:00")
@pytest.mark.parametrize(
    "platform",
    [Platform.BINARY_SENSOR, Platform.CONVERSATION, Platform.EVENT, Platform.SENSOR, Platform.TODO],
)
async def test_platform_entities(
    hass: HomeAssistant,
    entity_registry: er.EntityRegistry,
    snapshot: SnapshotAssertion,
    fake_ollama: FakeOllama,
    platform: Platform,
) -> None:
    """Names, unique ids, categories, icons by translation key, device classes and states."""
    assert await async_setup_component(hass, "conversation", {})
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Alto",
        entry_id=ENTRY_ID,
        data={CONF_URL: fake_ollama.url, CONF_MODEL: CHAT_MODEL, CONF_EMBEDDING_MODEL: EMBED_MODEL},
    )
    entry.add_to_hass(hass)
    with patch("custom_components.alto.PLATFORMS", [platform]):
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
    await snapshot_platform(hass, entity_registry, snapshot, entry.entry_id)
