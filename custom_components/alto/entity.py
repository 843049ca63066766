"""The base entity: every Alto entity belongs to the config entry's service device."""

from __future__ import annotations

from homeassistant.core import callback
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity import Entity

from .const import CONF_MODEL, DOMAIN
from .coordinator import AltoConfigEntry
from .memory_organ import MemoryOrgan, signal_memory_changed


def device_info(entry: AltoConfigEntry) -> DeviceInfo:
    """The service device of a config entry."""
    return DeviceInfo(
        identifiers={(DOMAIN, entry.entry_id)},
        name=entry.title,
        manufacturer="Alto",
        model=entry.data[CONF_MODEL],
        entry_type=DeviceEntryType.SERVICE,
    )


class AltoEntity(Entity):
    """An entity of Alto's device, named after its translation key."""

    _attr_has_entity_name = True

    def __init__(self, entry: AltoConfigEntry, key: str) -> None:
        """Bind to the entry's device; `key` is both unique-id suffix and translation key."""
        self.entry = entry
        self._attr_unique_id = f"{entry.entry_id}_{key}"
        self._attr_device_info = device_info(entry)


class AltoMemoryEntity(AltoEntity):
    """An entity that shows the memory organ: unavailable without a store, updated on change."""

    def __init__(self, entry: AltoConfigEntry, key: str) -> None:
        """Bind to the entry's memory organ."""
        super().__init__(entry, key)
        self._memory: MemoryOrgan | None = entry.runtime_data.memory

    @property
    def available(self) -> bool:
        """Unavailable when the store could not be opened."""
        return self._memory is not None

    async def async_added_to_hass(self) -> None:
        """Follow memory changes."""
        await super().async_added_to_hass()
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass, signal_memory_changed(self.entry.entry_id), self._async_memory_changed
            )
        )

    @callback
    def _async_memory_changed(self) -> None:
        self.async_write_ha_state()
