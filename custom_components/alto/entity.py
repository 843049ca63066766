"""The base entity: every Alto entity belongs to the config entry's service device."""

from __future__ import annotations

from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity import Entity

from .const import CONF_MODEL, DOMAIN
from .runtime import AltoConfigEntry


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
