"""Binary sensors: whether the Ollama model answers, and whether automatic memory is qualified."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from homeassistant.components.binary_sensor import (
    BinarySensorDeviceClass,
    BinarySensorEntity,
    BinarySensorEntityDescription,
)
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .coordinator import AltoConfigEntry, MemoryCoordinator, MemoryState, ModelCoordinator
from .entity import AltoCoordinatorEntity

PARALLEL_UPDATES = 0


@dataclass(frozen=True, kw_only=True)
class MemoryBinarySensorDescription(BinarySensorEntityDescription):
    """A yes/no fact of the memory organ."""

    value_fn: Callable[[MemoryState], bool]


MODEL_AVAILABLE = BinarySensorEntityDescription(
    key="model_available",
    device_class=BinarySensorDeviceClass.CONNECTIVITY,
    entity_category=EntityCategory.DIAGNOSTIC,
)
AUTOMATIC_MEMORY = MemoryBinarySensorDescription(
    key="automatic_memory",
    entity_category=EntityCategory.DIAGNOSTIC,
    value_fn=lambda memory: memory.automatic_available,
)


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add the binary sensors."""
    runtime = entry.runtime_data
    async_add_entities(
        [
            ModelAvailableSensor(entry, runtime.coordinator, MODEL_AVAILABLE),
            MemoryBinarySensor(entry, runtime.memory_coordinator, AUTOMATIC_MEMORY),
        ]
    )


class ModelAvailableSensor(AltoCoordinatorEntity[ModelCoordinator], BinarySensorEntity):
    """On while Ollama answers and serves the configured chat model."""

    @property
    def available(self) -> bool:
        """The sensor itself is always available; its state says whether the model is."""
        return True

    @property
    def is_on(self) -> bool:
        """Whether the last probe or turn reached Ollama, and it still serves the chat model."""
        served = self.coordinator.data or {}
        model = self.entry.runtime_data.settings.model
        return self.coordinator.last_update_success and model in served


class MemoryBinarySensor(AltoCoordinatorEntity[MemoryCoordinator], BinarySensorEntity):
    """A yes/no fact of the memory organ (unavailable without a store)."""

    entity_description: MemoryBinarySensorDescription

    @property
    def is_on(self) -> bool | None:
        """The described fact."""
        data = self.coordinator.data
        return self.entity_description.value_fn(data) if data else None
