"""The registry of exposed entities, kept current from Home Assistant's registries.

Rebuilt lazily: registry, area, device and exposure changes (and entities appearing or going
away) only mark it stale, and the next read rebuilds it once, so no turn scans every state. The
prompt's entity lines are made with the registry and kept current by state changes, one line
per change, so a turn reads them without looking up every exposed entity's state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from homeassistant.components.homeassistant.exposed_entities import (
    async_listen_entity_updates,
    async_should_expose,
)
from homeassistant.const import EVENT_STATE_CHANGED
from homeassistant.core import Event, EventStateChangedData, HomeAssistant, State, callback
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import entity_registry as er

from ..act.model import ExposedEntity, Registry, SceneTarget
from ..prompt import EntityLine

ASSISTANT = "conversation"

# State attributes the guard's data schemas read (ranges and allowed modes).
GUARD_ATTRIBUTES = (
    "min_temp",
    "max_temp",
    "target_temp_step",
    "hvac_modes",
    "min_humidity",
    "max_humidity",
    "min_color_temp_kelvin",
    "max_color_temp_kelvin",
    "supported_color_modes",
    "source_list",
    "fan_modes",
    "preset_modes",
)


class ExposureIndex:
    """The exposed entities as a guard `Registry`, plus the prompt's home snapshot."""

    def __init__(self, hass: HomeAssistant) -> None:
        """Start stale; listeners are attached by `async_start`."""
        self._hass = hass
        # The registry and its entities by entity id; None when something changed.
        self._built: tuple[Registry, tuple[ExposedEntity, ...]] | None = None
        # The entity lines by entity id, and where each entity's line is; None when stale.
        self._lines: list[EntityLine] | None = None
        self._line_at: dict[str, int] = {}
        self._unsubs: list[Callable[[], None]] = []

    @callback
    def async_start(self) -> Callable[[], None]:
        """Listen for anything that changes what is exposed; returns the stop callback."""
        hass = self._hass
        self._unsubs = [
            async_listen_entity_updates(hass, ASSISTANT, self._stale),
            hass.bus.async_listen(er.EVENT_ENTITY_REGISTRY_UPDATED, self._stale_event),
            hass.bus.async_listen(dr.EVENT_DEVICE_REGISTRY_UPDATED, self._stale_event),
            hass.bus.async_listen(ar.EVENT_AREA_REGISTRY_UPDATED, self._stale_event),
            hass.bus.async_listen(
                EVENT_STATE_CHANGED, self._stale_event, event_filter=self._appeared_or_gone
            ),
            hass.bus.async_listen(
                EVENT_STATE_CHANGED, self._state_changed, event_filter=self._has_line
            ),
        ]
        return self.async_stop

    @callback
    def async_stop(self) -> None:
        """Stop listening."""
        for unsub in self._unsubs:
            unsub()
        self._unsubs = []

    @property
    def registry(self) -> Registry:
        """The current registry (rebuilt here when something changed)."""
        return self._current()[0]

    def entity_lines(self) -> list[EntityLine]:
        """The exposed entities with their current states, by entity id, for the prompt."""
        entities = self._current()[1]
        if self._lines is None or not self._unsubs:  # kept current only while listening
            get = self._hass.states.get
            self._lines = [
                EntityLine(entity.entity_id, entity.name, entity.area, state.state)
                for entity in entities
                if (state := get(entity.entity_id)) is not None
            ]
            self._line_at = {line.entity_id: n for n, line in enumerate(self._lines)}
        return list(self._lines)

    def _current(self) -> tuple[Registry, tuple[ExposedEntity, ...]]:
        """The registry and its entities by entity id, rebuilt once after a change."""
        if self._built is None:
            registry = self._build()
            self._built, self._lines, self._line_at = (registry, registry.entities()), None, {}
        return self._built

    def area_of_device(self, device_id: str | None) -> str | None:
        """The area name of a device (the speaking satellite), if it has one."""
        if not device_id or not (device := dr.async_get(self._hass).async_get(device_id)):
            return None
        if device.area_id and (area := ar.async_get(self._hass).async_get_area(device.area_id)):
            return area.name
        return None

    @callback
    def _stale(self) -> None:
        self._built, self._lines, self._line_at = None, None, {}

    @callback
    def _stale_event(self, event: Event[Any]) -> None:
        self._stale()

    @callback
    def _has_line(self, event_data: EventStateChangedData) -> bool:
        return event_data["entity_id"] in self._line_at

    @callback
    def _state_changed(self, event: Event[EventStateChangedData]) -> None:
        """An exposed entity's new state, in its line (appearing and going rebuild them all)."""
        new, at = event.data["new_state"], self._line_at.get(event.data["entity_id"])
        if self._lines is not None and new is not None and at is not None:
            line = self._lines[at]
            if line.state != new.state:
                self._lines[at] = EntityLine(line.entity_id, line.name, line.area, new.state)

    @staticmethod
    @callback
    def _appeared_or_gone(event_data: EventStateChangedData) -> bool:
        return event_data["old_state"] is None or event_data["new_state"] is None

    def _build(self) -> Registry:
        hass = self._hass
        entities = er.async_get(hass)
        devices = dr.async_get(hass)
        areas = ar.async_get(hass)
        exposed = []
        for state in hass.states.async_all():
            if not async_should_expose(hass, ASSISTANT, state.entity_id):
                continue
            aliases: tuple[str, ...] = ()
            area_id = None
            if entry := entities.async_get(state.entity_id):
                # HA 2026 keeps a placeholder for "the computed name" among aliases; HA resolves it.
                aliases = tuple(sorted({a for a in er.async_get_entity_aliases(hass, entry) if a}))
                area_id = entry.area_id
                if area_id is None and entry.device_id:
                    device = devices.async_get(entry.device_id)
                    area_id = device.area_id if device else None
            area = areas.async_get_area(area_id) if area_id else None
            exposed.append(
                ExposedEntity(
                    entity_id=state.entity_id,
                    name=state.name,
                    aliases=aliases,
                    area=area.name if area else None,
                    device_class=state.attributes.get("device_class"),
                    attributes={
                        k: state.attributes[k] for k in GUARD_ATTRIBUTES if k in state.attributes
                    },
                    targets=self._scene_targets(state) if state.domain == "scene" else (),
                )
            )
        return Registry(exposed)

    def _scene_targets(self, scene: State) -> tuple[SceneTarget, ...]:
        """What a scene sets (its `entity_id` attribute), exposed to Assist or not."""
        ids = scene.attributes.get("entity_id")
        if not isinstance(ids, list | tuple):
            return ()
        targets = []
        for entity_id in ids:
            if isinstance(entity_id, str) and (state := self._hass.states.get(entity_id)):
                device_class = state.attributes.get("device_class")
                targets.append(SceneTarget(entity_id, state.name, device_class))
        return tuple(targets)
