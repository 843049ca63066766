"""Turning a failure into a clear, translated answer in the user's conversation."""

from __future__ import annotations

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, translation

from .const import DOMAIN


async def async_translated(
    hass: HomeAssistant, language: str, key: str, placeholders: dict[str, str] | None = None
) -> str:
    """The `exceptions.<key>.message` string of this integration in `language` (else English)."""
    strings = await translation.async_get_translations(hass, language, "exceptions", [DOMAIN])
    message = strings.get(f"component.{DOMAIN}.exceptions.{key}.message", key)
    for name, value in (placeholders or {}).items():
        message = message.replace("{" + name + "}", value)
    return message


async def async_error_result(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    conversation_id: str | None,
    key: str,
) -> conversation.ConversationResult:
    """A conversation result that tells the user, in their language, what went wrong."""
    response = intent.IntentResponse(language=user_input.language)
    response.async_set_error(
        intent.IntentResponseErrorCode.UNKNOWN,
        await async_translated(hass, user_input.language, key),
    )
    return conversation.ConversationResult(response=response, conversation_id=conversation_id)
