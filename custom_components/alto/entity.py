"""The base entities: every Alto entity belongs to the config entry's service device."""

from __future__ import annotations

from typing import Any

from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity import Entity, EntityDescription
from homeassistant.helpers.update_coordinator import CoordinatorEntity, DataUpdateCoordinator

from .const import DOMAIN
from .coordinator import AltoConfigEntry


def device_info(entry: AltoConfigEntry) -> DeviceInfo:
    """The service device of a config entry."""
    return DeviceInfo(
        identifiers={(DOMAIN, entry.entry_id)},
        name=entry.title,
        manufacturer="Alto",
        model=entry.runtime_data.settings.model,
        entry_type=DeviceEntryType.SERVICE,
    )


class AltoEntity(Entity):
    """An entity of Alto's device: unique id and translation key derive from its description."""

    _attr_has_entity_name = True

    def __init__(self, entry: AltoConfigEntry, description: EntityDescription) -> None:
        """Bind to the entry's device."""
        self.entry = entry
        self.entity_description = description
        self._attr_unique_id = f"{entry.entry_id}_{description.key}"
        self._attr_translation_key = description.translation_key or description.key
        self._attr_device_info = device_info(entry)


class AltoCoordinatorEntity[CoordinatorT: DataUpdateCoordinator[Any]](
    AltoEntity, CoordinatorEntity[CoordinatorT]
):
    """An Alto entity that shows one coordinator's data."""

    def __init__(
        self, entry: AltoConfigEntry, coordinator: CoordinatorT, description: EntityDescription
    ) -> None:
        """Follow `coordinator`."""
        AltoEntity.__init__(self, entry, description)
        CoordinatorEntity.__init__(self, coordinator)

    @property
    def available(self) -> bool:
        """Unavailable while the coordinator has no data (a push view whose organ is absent)."""
        return super().available and self.coordinator.data is not None
