"""Event entity: every captured action span, with its verdict as the event type."""

from __future__ import annotations

from typing import Any

from homeassistant.components.event import EventEntity, EventEntityDescription
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .act_organ.organ import IntentVerdict, signal_intent
from .coordinator import AltoConfigEntry
from .entity import AltoEntity

PARALLEL_UPDATES = 0
LEFT_OUT_OF_ATTRIBUTES = frozenset({"verdict", "conversation_id", "user_id"})


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add the intents event entity."""
    async_add_entities([IntentsEvent(entry, INTENTS)])


INTENTS = EventEntityDescription(key="intents", event_types=[v.value for v in IntentVerdict])


class IntentsEvent(AltoEntity, EventEntity):
    """`event.alto_intents`: automations trigger on a verdict and read the span's attributes."""

    async def async_added_to_hass(self) -> None:
        """Listen to the action organ."""
        await super().async_added_to_hass()
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass, signal_intent(self.entry.entry_id), self._async_on_intent
            )
        )

    @callback
    def _async_on_intent(self, data: dict[str, Any]) -> None:
        # The verdict is the event type. The conversation and user ids stay on the bus event:
        # entity attributes go to the recorder's history, which every user can read.
        attributes = {k: v for k, v in data.items() if k not in LEFT_OUT_OF_ATTRIBUTES}
        self._trigger_event(data["verdict"], attributes)
        self.async_write_ha_state()
