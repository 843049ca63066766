"""Sensors: memory count, memory mode and the last verified thought."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.typing import StateType

from .coordinator import (
    AltoConfigEntry,
    MemoryCoordinator,
    MemoryState,
    ThoughtCoordinator,
    ThoughtState,
)
from .entity import AltoCoordinatorEntity
from .memory.qualification import Mode

PARALLEL_UPDATES = 0
MODE_STATES = {Mode.EXPLICIT: "explicit", Mode.SOURCE: "source_text", Mode.AUTOMATIC: "automatic"}
THOUGHT_STATE_LENGTH = 255  # what a state may hold; the attribute holds the thought whole


@dataclass(frozen=True, kw_only=True)
class MemorySensorDescription(SensorEntityDescription):
    """A sensor over the memory organ's counts and modes."""

    value_fn: Callable[[MemoryState], StateType]
    attributes_fn: Callable[[MemoryState], dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class ThoughtSensorDescription(SensorEntityDescription):
    """A sensor over the Surfacer's outcomes."""

    value_fn: Callable[[ThoughtState], StateType]
    attributes_fn: Callable[[ThoughtState], dict[str, Any]]


MEMORY_SENSORS = (
    MemorySensorDescription(
        key="memory_count",
        state_class=SensorStateClass.MEASUREMENT,
        value_fn=lambda memory: memory.count,
        attributes_fn=lambda memory: {"selection_backend": memory.selection_backend},
    ),
    MemorySensorDescription(
        key="memory_mode",
        device_class=SensorDeviceClass.ENUM,
        entity_category=EntityCategory.DIAGNOSTIC,
        options=list(MODE_STATES.values()),
        value_fn=lambda memory: MODE_STATES[memory.effective_mode],
        attributes_fn=lambda memory: {
            "requested": MODE_STATES[memory.requested_mode],
            "model_digest": memory.model_digest,
        },
    ),
)

# A thought from someone's private memories never shows here (states are readable by every
# user); `last_verdict` still says that something happened.
LAST_THOUGHT = ThoughtSensorDescription(
    key="last_thought",
    value_fn=lambda thoughts: (
        thoughts.surfaced.thought[:THOUGHT_STATE_LENGTH]
        if thoughts.surfaced and thoughts.surfaced.thought
        else None
    ),
    attributes_fn=lambda thoughts: {
        "thought": thoughts.surfaced.thought if thoughts.surfaced else None,
        "source_ids": list(thoughts.surfaced.source_ids) if thoughts.surfaced else [],
        "last_verdict": thoughts.last.verdict if thoughts.last else None,
        "last_failure_modes": list(thoughts.last.failure_modes) if thoughts.last else [],
    },
)


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add the memory sensors and the thought sensor."""
    runtime = entry.runtime_data
    async_add_entities(
        [
            *(MemorySensor(entry, runtime.memory_coordinator, d) for d in MEMORY_SENSORS),
            ThoughtSensor(entry, runtime.thought_coordinator, LAST_THOUGHT),
        ]
    )


class MemorySensor(AltoCoordinatorEntity[MemoryCoordinator], SensorEntity):
    """A number or mode of the memory organ."""

    entity_description: MemorySensorDescription

    @property
    def native_value(self) -> StateType:
        """The described value (None without a store)."""
        data = self.coordinator.data
        return self.entity_description.value_fn(data) if data else None

    @property
    def extra_state_attributes(self) -> dict[str, Any] | None:
        """The described attributes (None without a store)."""
        data = self.coordinator.data
        return self.entity_description.attributes_fn(data) if data else None


class ThoughtSensor(AltoCoordinatorEntity[ThoughtCoordinator], SensorEntity):
    """The last verified thought (household memories only), its sources and the last outcome."""

    entity_description: ThoughtSensorDescription

    @property
    def native_value(self) -> StateType:
        """The described value."""
        return self.entity_description.value_fn(self._state())

    @property
    def extra_state_attributes(self) -> dict[str, Any]:
        """The described attributes."""
        return self.entity_description.attributes_fn(self._state())

    def _state(self) -> ThoughtState:
        return self.coordinator.data or ThoughtState(None, None)
