"""The Alto conversation agent: a thin entity; the turn lives in turn.py."""

from __future__ import annotations

from typing import Literal

from homeassistant.components import conversation
from homeassistant.const import MATCH_ALL
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity import EntityDescription
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .coordinator import AltoConfigEntry
from .entity import AltoEntity
from .turn import async_run_turn


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add the conversation entity."""
    async_add_entities([AltoConversationEntity(entry)])


class AltoConversationEntity(
    AltoEntity, conversation.ConversationEntity, conversation.AbstractConversationAgent
):
    """Assist's conversation agent backed by Alto."""

    _attr_name = None  # the device's name: the first entry's entity is conversation.alto
    _attr_supports_streaming = True

    def __init__(self, entry: AltoConfigEntry) -> None:
        """Use the entry id as unique id, like HA's own conversation integrations.

        Alto controls the home through its action organ, which every loaded entry has: Assist
        offers it as an assistant that can control devices (HA's ollama agent declares the same
        when it is given the Assist API).
        """
        super().__init__(entry, EntityDescription(key="conversation"))
        self._attr_unique_id = entry.entry_id
        self._attr_supported_features = conversation.ConversationEntityFeature.CONTROL

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        """Any language the model speaks."""
        return MATCH_ALL

    async def async_added_to_hass(self) -> None:
        """Register as an agent."""
        await super().async_added_to_hass()
        conversation.async_set_agent(self.hass, self.entry, self)

    async def async_will_remove_from_hass(self) -> None:
        """Unregister as an agent."""
        conversation.async_unset_agent(self.hass, self.entry)
        await super().async_will_remove_from_hass()

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """Run one turn."""
        return await async_run_turn(self.hass, self.entry, self.entity_id, user_input, chat_log)
