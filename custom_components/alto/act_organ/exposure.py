"""The registry of exposed entities, kept current from Home Assistant's registries.

Rebuilt lazily: registry, area, device and exposure changes (and entities appearing, going away,
or changing their name, device class or members) only mark it stale, and the next read rebuilds
it once, so no turn scans every state; whoever must follow every change that can change a
consent tier listens with `ExposureIndex.async_add_listener`. The prompt's entity lines are made
with the registry and kept current by state changes, one line per change, so a turn reads them
without looking up every exposed entity's state.

Each entry carries what its consent tier is judged from: every text Home Assistant keeps for it
(registry and original names, aliases, its device's name), the device classes of its device, and
whether it is a switch shown as another domain (``switch_as_x``); and, as targets, everything it
drives, transitively and exposed or not: the members a scene or group lists in its ``entity_id``
attribute, what a script references (entities, and those of its devices, areas, floors and
labels), the switch a ``switch_as_x`` entity wraps. A script's targets are what Home Assistant
can read from its configuration: a templated target or a script called as an action is not one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from homeassistant.components.homeassistant.exposed_entities import (
    async_listen_entity_updates,
    async_should_expose,
)
from homeassistant.components.script import (
    areas_in_script,
    devices_in_script,
    entities_in_script,
    floors_in_script,
    labels_in_script,
)
from homeassistant.const import ATTR_DEVICE_CLASS, ATTR_ENTITY_ID, EVENT_STATE_CHANGED
from homeassistant.core import Event, EventStateChangedData, HomeAssistant, callback
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.target import TargetSelection, async_extract_referenced_entity_ids

from ..act.model import ExposedEntity, Registry, Target
from ..act.tiers import reach
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
        self._listeners: list[Callable[[], None]] = []

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
                EVENT_STATE_CHANGED, self._stale_event, event_filter=self._changes_the_registry
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

    @callback
    def async_add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` whenever the index goes stale; returns the remove callback.

        Called from the event that made it stale: a listener that reads the registry rebuilds
        it, so one that may be called often must debounce.
        """
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

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
        for listener in list(self._listeners):
            listener()

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
    def _changes_the_registry(event_data: EventStateChangedData) -> bool:
        """An entity appeared or went, or changed what the registry or a tier reads of it."""
        old, new = event_data["old_state"], event_data["new_state"]
        if old is None or new is None:
            return True
        return old.name != new.name or any(
            old.attributes.get(key) != new.attributes.get(key)
            for key in (ATTR_ENTITY_ID, ATTR_DEVICE_CLASS)
        )

    def _build(self) -> Registry:
        hass = self._hass
        facts = _Facts(hass)
        exposed = []
        for state in hass.states.async_all():
            if not async_should_expose(hass, ASSISTANT, state.entity_id):
                continue
            own = facts.describe(state.entity_id)
            exposed.append(
                ExposedEntity(
                    entity_id=state.entity_id,
                    name=state.name,
                    aliases=own.aliases,
                    area=facts.area(state.entity_id),
                    device_class=own.device_class,
                    attributes={
                        k: state.attributes[k] for k in GUARD_ATTRIBUTES if k in state.attributes
                    },
                    targets=tuple(
                        facts.describe(driven) for driven in reach(state.entity_id, facts.drives)
                    ),
                    texts=own.texts,
                    device_classes=own.device_classes,
                    wraps_switch=own.wraps_switch,
                )
            )
        return Registry(exposed)


class _Facts:
    """What one rebuild reads of Home Assistant's registries, each entity and device once."""

    def __init__(self, hass: HomeAssistant) -> None:
        self._hass = hass
        self._entities = er.async_get(hass)
        self._devices = dr.async_get(hass)
        self._areas = ar.async_get(hass)
        self._described: dict[str, Target] = {}
        self._device_classes: dict[str, tuple[str, ...]] = {}

    def area(self, entity_id: str) -> str | None:
        """The name of the entity's area, or of its device's."""
        area_id = None
        if entry := self._entities.async_get(entity_id):
            area_id = entry.area_id
            if area_id is None and entry.device_id:
                device = self._devices.async_get(entry.device_id)
                area_id = device.area_id if device else None
        area = self._areas.async_get_area(area_id) if area_id else None
        return area.name if area else None

    def describe(self, entity_id: str) -> Target:
        """Everything a consent tier reads of one entity, exposed or not, present or not."""
        if (known := self._described.get(entity_id)) is not None:
            return known
        state = self._hass.states.get(entity_id)
        entry = self._entities.async_get(entity_id)
        name = state.name if state else (entry.name or entry.original_name if entry else None)
        device_class = state.attributes.get(ATTR_DEVICE_CLASS) if state else None
        aliases: tuple[str, ...] = ()
        texts: list[str | None] = []
        device_classes: tuple[str, ...] = ()
        if entry is not None:
            # HA 2026 keeps a placeholder for "the computed name" among aliases; HA resolves it.
            aliases = tuple(
                sorted({a for a in er.async_get_entity_aliases(self._hass, entry) if a})
            )
            device_class = device_class or entry.device_class or entry.original_device_class
            texts += [entry.name, entry.original_name]
            texts.append(er.async_get_full_entity_name(self._hass, entry))
            if entry.device_id and (device := self._devices.async_get(entry.device_id)):
                # A device's name is read as Home Assistant composes names: before the entity's.
                texts.append(
                    f"{device.name_by_user or device.name or ''} {entry.original_name or ''}"
                )
                device_classes = self._classes_of_device(entry.device_id)
        described = Target(
            entity_id,
            name or entity_id,
            device_class if isinstance(device_class, str) else None,
            aliases=aliases,
            texts=tuple(dict.fromkeys(t.strip() for t in texts if t and t.strip() != name)),
            device_classes=device_classes,
            wraps_switch=entry is not None and entry.platform == "switch_as_x",
        )
        self._described[entity_id] = described
        return described

    def drives(self, entity_id: str) -> Iterable[str]:
        """The entity ids one entity drives directly (see the module docstring)."""
        driven: set[str] = set()
        state = self._hass.states.get(entity_id)
        members = state.attributes.get(ATTR_ENTITY_ID) if state else None
        if isinstance(members, list | tuple):
            driven.update(m for m in members if isinstance(m, str))
        if entity_id.startswith("script."):
            driven.update(self._script_targets(entity_id))
        entry = self._entities.async_get(entity_id)
        if entry is not None and entry.platform == "switch_as_x" and entry.config_entry_id:
            config_entry = self._hass.config_entries.async_get_entry(entry.config_entry_id)
            source = config_entry.options.get(ATTR_ENTITY_ID) if config_entry else None
            # The option holds an entity id or, in newer entries, the registry entry's id.
            if isinstance(source, str):
                wrapped = self._entities.async_get(source)
                driven.add(wrapped.entity_id if wrapped else source)
        return sorted(driven)

    def _script_targets(self, entity_id: str) -> set[str]:
        hass = self._hass
        selection = TargetSelection(
            {
                "entity_id": entities_in_script(hass, entity_id),
                "device_id": devices_in_script(hass, entity_id),
                "area_id": areas_in_script(hass, entity_id),
                "floor_id": floors_in_script(hass, entity_id),
                "label_id": labels_in_script(hass, entity_id),
            }
        )
        selected = async_extract_referenced_entity_ids(hass, selection)
        return selected.referenced | selected.indirectly_referenced

    def _classes_of_device(self, device_id: str) -> tuple[str, ...]:
        """The device classes of a device's entities, sorted."""
        if (known := self._device_classes.get(device_id)) is None:
            known = tuple(
                sorted(
                    {
                        cls
                        for e in er.async_entries_for_device(self._entities, device_id)
                        if (cls := e.device_class or e.original_device_class)
                    }
                )
            )
            self._device_classes[device_id] = known
        return known
