"""Binary sensor: whether the Ollama model answers."""

from __future__ import annotations

from homeassistant.components.binary_sensor import (
    BinarySensorDeviceClass,
    BinarySensorEntity,
)
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddEntitiesCallback
from homeassistant.helpers.update_coordinator import CoordinatorEntity

from .const import CONF_MODEL
from .coordinator import AltoConfigEntry, ModelCoordinator
from .entity import AltoEntity, AltoMemoryEntity

PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddEntitiesCallback
) -> None:
    """Add the binary sensors."""
    async_add_entities([ModelAvailableSensor(entry), AutomaticMemorySensor(entry)])


class ModelAvailableSensor(AltoEntity, CoordinatorEntity[ModelCoordinator], BinarySensorEntity):
    """On while Ollama serves the configured chat model."""

    _attr_device_class = BinarySensorDeviceClass.CONNECTIVITY
    _attr_entity_category = EntityCategory.DIAGNOSTIC
    _attr_translation_key = "model_available"

    def __init__(self, entry: AltoConfigEntry) -> None:
        """Follow the model coordinator."""
        AltoEntity.__init__(self, entry, "model_available")
        CoordinatorEntity.__init__(self, entry.runtime_data.coordinator)

    @property
    def available(self) -> bool:
        """The sensor itself is always available; its state says whether the model is."""
        return True

    @property
    def is_on(self) -> bool:
        """Whether the last probe or turn reached Ollama, and it still serves the chat model."""
        served = self.coordinator.data or {}
        return self.coordinator.last_update_success and self.entry.data[CONF_MODEL] in served


class AutomaticMemorySensor(AltoMemoryEntity, BinarySensorEntity):
    """On while the chat model and this processor form a qualified pair (mode 2 is possible)."""

    _attr_translation_key = "automatic_memory"

    def __init__(self, entry: AltoConfigEntry) -> None:
        """Follow the memory organ (qualification and the model digest)."""
        super().__init__(entry, "automatic_memory")

    @property
    def is_on(self) -> bool:
        """Whether automatic interpretation is qualified for the configured model."""
        return bool(self._memory and self._memory.automatic_available)
