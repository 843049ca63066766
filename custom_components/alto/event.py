"""Event entity: every captured action span, with its verdict as the event type.

The entity is shared: its attributes go to the recorder's history, which every user can read. So
it carries what was done and how it ended, never anyone's words: no span (what the person said
Alto should do), no reason text past its code (an error's text can quote the call's data), no
conversation or user id. The bus event `alto_intent_captured` keeps them for automations.
"""

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
ATTRIBUTES = ("entity_id", "service", "tier")


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
        self._trigger_event(data["verdict"], shared_attributes(data))
        self.async_write_ha_state()


def shared_attributes(data: dict[str, Any]) -> dict[str, Any]:
    """What every user may read of an intent: entity, service, tier and the reason's code.

    A reason is a code, or a code and a text after a colon (`service_error: <the error>`).
    """
    reason = str(data.get("reason") or "")
    return {key: data.get(key) for key in ATTRIBUTES} | {"reason": reason.partition(":")[0]}
