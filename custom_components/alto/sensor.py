"""Alto's sensors.

Memory count, memory mode, the last verified thought, and the reflect organ's inbox size, last
reflection, last synthesis and context pressure (numbers, times and codes only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.const import PERCENTAGE, EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.typing import StateType

from .const import MODE_STATES
from .coordinator import (
    AltoConfigEntry,
    MemoryCoordinator,
    MemoryState,
    ReflectionCoordinator,
    ThoughtCoordinator,
    ThoughtState,
)
from .entity import AltoCoordinatorEntity
from .reflect import Box
from .reflect_organ.organ import PassRecord, ReflectionState
from .surface_organ.organ import KEY_LAST_THOUGHT

PARALLEL_UPDATES = 0
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


@dataclass(frozen=True, kw_only=True)
class ReflectionSensorDescription(SensorEntityDescription):
    """A sensor over the reflect organ's state."""

    value_fn: Callable[[ReflectionState], StateType | datetime]
    attributes_fn: Callable[[ReflectionState], dict[str, Any]]


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

# Only a thought of a household turn drawn from household memories shows here (states are
# readable by every user): a private memory's words, or a household memory that someone's private
# turn brought up (it tells what they talked about), never do; `last_verdict` still says that
# something happened. The state stays the text (dashboards show it); a forget of household
# memories purges its recorded history (`memory_organ.recorded`).
LAST_THOUGHT = ThoughtSensorDescription(
    key=KEY_LAST_THOUGHT,
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


def _pass_attributes(record: PassRecord | None) -> dict[str, Any]:
    """Whether the pass was on a private scope, and its counts and codes."""
    return {} if record is None else {"private": record.private, **record.facts}


def _pressure_value(reflection: ReflectionState) -> float | None:
    """The household's latest prompt's share in %; None after a private turn (see below)."""
    pressure = reflection.pressure
    return None if pressure is None or pressure.private else pressure.percent


def _pressure_attributes(reflection: ReflectionState) -> dict[str, Any]:
    """The warning tier reached and the window; the prompt's size only for a household turn.

    A private turn's prompt size (its share in %, its tokens) is one person's detail: how much
    they have been saying. The tier (0, 80, 90, 95) is a verdict, and stays.
    """
    pressure = reflection.pressure
    if pressure is None:
        return {}
    size = {} if pressure.private else {"prompt_tokens": pressure.prompt_tokens}
    return {"tier": pressure.tier, **size, "num_ctx": pressure.num_ctx, "private": pressure.private}


# The inbox is the household's (states are readable by every user); the pass records and the
# pressure may come from any scope, as times, counts and codes that hold no text.
REFLECTION_SENSORS = (
    ReflectionSensorDescription(
        key="inbox_size",
        state_class=SensorStateClass.MEASUREMENT,
        value_fn=lambda reflection: len(reflection.inbox),
        attributes_fn=lambda reflection: {
            "intrusive": sum(1 for item in reflection.inbox if item.box is Box.INTRUSIVE),
            "pending": sum(1 for item in reflection.inbox if item.box is Box.PENDING),
        },
    ),
    ReflectionSensorDescription(
        key="last_reflection",
        device_class=SensorDeviceClass.TIMESTAMP,
        value_fn=lambda reflection: (
            reflection.last_reflection.at if reflection.last_reflection else None
        ),
        attributes_fn=lambda reflection: _pass_attributes(reflection.last_reflection),
    ),
    ReflectionSensorDescription(
        key="last_synthesis",
        device_class=SensorDeviceClass.TIMESTAMP,
        value_fn=lambda reflection: (
            reflection.last_synthesis.at if reflection.last_synthesis else None
        ),
        attributes_fn=lambda reflection: _pass_attributes(reflection.last_synthesis),
    ),
    ReflectionSensorDescription(
        key="context_pressure",
        native_unit_of_measurement=PERCENTAGE,
        state_class=SensorStateClass.MEASUREMENT,
        entity_category=EntityCategory.DIAGNOSTIC,
        suggested_display_precision=0,
        value_fn=_pressure_value,
        attributes_fn=_pressure_attributes,
    ),
)


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add the memory sensors, the thought sensor and the reflect organ's sensors."""
    runtime = entry.runtime_data
    async_add_entities(
        [
            *(MemorySensor(entry, runtime.memory_coordinator, d) for d in MEMORY_SENSORS),
            ThoughtSensor(entry, runtime.thought_coordinator, LAST_THOUGHT),
            *(
                ReflectionSensor(entry, runtime.reflection_coordinator, d)
                for d in REFLECTION_SENSORS
            ),
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

    # The whole thought stays out of the recorder's history; the state holds its first 255
    # characters.
    _unrecorded_attributes = frozenset({"thought"})
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


class ReflectionSensor(AltoCoordinatorEntity[ReflectionCoordinator], SensorEntity):
    """A number, time or code of the reflect organ."""

    entity_description: ReflectionSensorDescription

    @property
    def native_value(self) -> StateType | datetime:
        """The described value."""
        return self.entity_description.value_fn(self._state())

    @property
    def extra_state_attributes(self) -> dict[str, Any]:
        """The described attributes."""
        return self.entity_description.attributes_fn(self._state())

    def _state(self) -> ReflectionState:
        return self.coordinator.data or ReflectionState()
