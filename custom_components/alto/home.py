"""What the conversational model may know of the home: exposed entities and their states."""

from __future__ import annotations

from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import HomeAssistant
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers import entity_registry as er

from .prompt import EntityLine

ASSISTANT = "conversation"


def exposed_entity_lines(hass: HomeAssistant) -> list[EntityLine]:
    """The exposed entities with name, area and current state."""
    entities = er.async_get(hass)
    areas = ar.async_get(hass)
    lines: list[EntityLine] = []
    for state in hass.states.async_all():
        if not async_should_expose(hass, ASSISTANT, state.entity_id):
            continue
        area_name = None
        if (entry := entities.async_get(state.entity_id)) and entry.area_id:
            area = areas.async_get_area(entry.area_id)
            area_name = area.name if area else None
        lines.append(EntityLine(state.entity_id, state.name, area_name, state.state))
    return lines
