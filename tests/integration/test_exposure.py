"""The prompt's entity lines follow every state change of an exposed entity."""

from __future__ import annotations

from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry


def _lines(entry: MockConfigEntry) -> list[tuple[str, str]]:
    index = entry.runtime_data.organ.index
    return [(line.entity_id, line.state) for line in index.entity_lines()]


async def test_entity_lines_follow_states_entities_and_exposure(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """A changed state, a new entity, one gone and one no longer exposed, each in the lines."""
    for entity_id in ("light.kitchen", "light.hall"):
        hass.states.async_set(entity_id, "off")
        async_expose_entity(hass, "conversation", entity_id, True)
    assert _lines(setup_alto) == [("light.hall", "off"), ("light.kitchen", "off")]
    hass.states.async_set("light.kitchen", "on")
    assert _lines(setup_alto) == [("light.hall", "off"), ("light.kitchen", "on")]
    hass.states.async_set("light.attic", "on")
    async_expose_entity(hass, "conversation", "light.attic", True)
    assert _lines(setup_alto) == [
        ("light.attic", "on"),
        ("light.hall", "off"),
        ("light.kitchen", "on"),
    ]
    hass.states.async_remove("light.hall")
    async_expose_entity(hass, "conversation", "light.attic", False)
    hass.states.async_set("light.kitchen", "off")
    assert _lines(setup_alto) == [("light.kitchen", "off")]
