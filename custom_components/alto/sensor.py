"""Sensors: memory count, memory mode and the last verified thought."""

from __future__ import annotations

from homeassistant.components.sensor import SensorDeviceClass, SensorEntity, SensorStateClass
from homeassistant.core import HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddEntitiesCallback

from .coordinator import AltoConfigEntry
from .entity import AltoEntity, AltoMemoryEntity
from .memory.qualification import Mode
from .thoughts import signal_thought

PARALLEL_UPDATES = 0
MODE_STATES = {Mode.EXPLICIT: "explicit", Mode.SOURCE: "source_text", Mode.AUTOMATIC: "automatic"}


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddEntitiesCallback
) -> None:
    """Add the memory sensors."""
    async_add_entities(
        [MemoryCountSensor(entry), MemoryModeSensor(entry), LastThoughtSensor(entry)]
    )


class MemorySensor(AltoMemoryEntity, SensorEntity):
    """A sensor that follows the memory organ."""

    def __init__(self, entry: AltoConfigEntry, key: str) -> None:
        """The key is also the translation key."""
        super().__init__(entry, key)
        self._attr_translation_key = key


class MemoryCountSensor(MemorySensor):
    """How many current memories Alto holds (every scope; a number, no content)."""

    _attr_state_class = SensorStateClass.MEASUREMENT

    def __init__(self, entry: AltoConfigEntry) -> None:
        """The count sensor."""
        super().__init__(entry, "memory_count")

    @property
    def native_value(self) -> int | None:
        """Current memories."""
        return self._memory.count() if self._memory else None

    @property
    def extra_state_attributes(self) -> dict[str, str] | None:
        """Which backend serves exact selection: numpy, or cuda:<device>."""
        return {"selection_backend": self._memory.selection.name} if self._memory else None


class MemoryModeSensor(MemorySensor):
    """The effective memory mode for conversation input."""

    _attr_device_class = SensorDeviceClass.ENUM

    def __init__(self, entry: AltoConfigEntry) -> None:
        """The mode sensor."""
        super().__init__(entry, "memory_mode")
        self._attr_options = list(MODE_STATES.values())

    @property
    def native_value(self) -> str | None:
        """explicit, source_text or automatic."""
        return MODE_STATES[self._memory.effective_mode] if self._memory else None

    @property
    def extra_state_attributes(self) -> dict[str, str | None] | None:
        """What the options ask for, and the pair qualification looks at."""
        if not self._memory:
            return None
        return {
            "requested": MODE_STATES[self._memory.requested_mode],
            "model_digest": self._memory.model_digest,
        }


class LastThoughtSensor(AltoEntity, SensorEntity):
    """The last verified thought drawn only on household memories, its sources, and the last
    outcome. A thought from someone's private memories never shows here (states are readable
    by every user); the last outcome still says it happened."""

    _attr_translation_key = "last_thought"

    def __init__(self, entry: AltoConfigEntry) -> None:
        """Follow the entry's Surfacer."""
        super().__init__(entry, "last_thought")
        self._thoughts = entry.runtime_data.thoughts

    async def async_added_to_hass(self) -> None:
        """Update on every surfacing outcome."""
        await super().async_added_to_hass()
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass, signal_thought(self.entry.entry_id), self.async_write_ha_state
            )
        )

    @property
    def native_value(self) -> str | None:
        """The thought (states hold at most 255 characters; the attribute holds it whole)."""
        surfaced = self._thoughts.last_surfaced
        return surfaced.thought[:255] if surfaced and surfaced.thought else None

    @property
    def extra_state_attributes(self) -> dict[str, object]:
        """Source ids of the thought; verdict and failure modes of the latest outcome."""
        surfaced, last = self._thoughts.last_surfaced, self._thoughts.last
        return {
            "thought": surfaced.thought if surfaced else None,
            "source_ids": list(surfaced.source_ids) if surfaced else [],
            "last_verdict": last.verdict if last else None,
            "last_failure_modes": list(last.failure_modes) if last else [],
        }
