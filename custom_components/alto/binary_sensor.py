"""Binary sensor: whether the Ollama model answers."""

from __future__ import annotations

from homeassistant.components.binary_sensor import (
    BinarySensorDeviceClass,
    BinarySensorEntity,
)
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddEntitiesCallback
from homeassistant.helpers.update_coordinator import CoordinatorEntity

from .const import CONF_MODEL
from .coordinator import ModelCoordinator
from .entity import AltoEntity
from .memory_organ import signal_memory_changed
from .runtime import AltoConfigEntry

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


class AutomaticMemorySensor(AltoEntity, BinarySensorEntity):
    """On while the chat model and this processor form a qualified pair (mode 2 is possible)."""

    _attr_translation_key = "automatic_memory"

    def __init__(self, entry: AltoConfigEntry) -> None:
        """Follow the memory organ."""
        super().__init__(entry, "automatic_memory")
        self._memory = entry.runtime_data.memory

    @property
    def available(self) -> bool:
        """Unavailable when the store could not be opened."""
        return self._memory is not None

    @property
    def is_on(self) -> bool:
        """Whether automatic interpretation is qualified for the configured model."""
        return bool(self._memory and self._memory.automatic_available)

    async def async_added_to_hass(self) -> None:
        """Update when the qualification or the model digest changes."""
        await super().async_added_to_hass()
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass, signal_memory_changed(self.entry.entry_id), self.async_write_ha_state
            )
        )
