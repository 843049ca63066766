"""Alto's words in the user's language: spoken errors and the few other things it says itself.

Errors live under `exceptions` in `strings.json`, as every translated Home Assistant error does;
what Alto says that is not an error (a confirm-first question, a notification) lives under
`common`.
"""

from __future__ import annotations

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, translation

from .const import DOMAIN


async def _async_string(
    hass: HomeAssistant, language: str, path: str, placeholders: dict[str, str] | None
) -> str:
    """`<category>.<key>[.message]` of this integration in `language` (else English)."""
    category = path.partition(".")[0]
    strings = await translation.async_get_translations(hass, language, category, [DOMAIN])
    text = strings.get(f"component.{DOMAIN}.{path}", path)
    for name, value in (placeholders or {}).items():
        text = text.replace("{" + name + "}", value)
    return text


async def async_phrase(
    hass: HomeAssistant, language: str, key: str, placeholders: dict[str, str] | None = None
) -> str:
    """A sentence Alto says that is not an error (`common.<key>`)."""
    return await _async_string(hass, language, f"common.{key}", placeholders)


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
        await _async_string(hass, user_input.language, f"exceptions.{key}.message", None),
    )
    return conversation.ConversationResult(response=response, conversation_id=conversation_id)
