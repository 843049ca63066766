"""Whether Home Assistant's own sentences read a span as a command, in the turn's language.

Home Assistant's default conversation agent knows, for every language it supports, how people
ask for a device to be switched, opened, set, paused or read ("Mach das Licht aus", "Ferme les
volets", "pause the music"). Its recognizer is asked, never its handler: nothing runs here. A
recognition counts when

- every slot it could not fill is context the sentence left out, a place (an area or floor Alto
  may still resolve), or a name whose words are part of an exposed entity's name ("turn off the
  tv" for "Living Room TV"); or
- it is a command (not a query: Home Assistant names those `…Get…`) whose sentence opens with a
  word it requires, a verb ("abre {name}", "<unlock> {name}"), whatever name follows: "unlock the
  back door" names an action even where no such door is exposed (the executor then says so).

Otherwise a slot filled with free text is how the recognizer matches any sentence to some
template ("what is {the capital of France}", "[activate] {the Eiffel tower is tall}"), and it
does not count.
"""

from __future__ import annotations

from typing import Final

from hassil.expression import Alternative, Expression, RuleReference, Sentence, TextChunk
from hassil.expression import Sequence as Together
from hassil.models import UnmatchedTextEntity
from hassil.recognize import MISSING_ENTITY
from homeassistant.components import conversation
from homeassistant.components.conversation.default_agent import DefaultAgent
from homeassistant.core import Context, HomeAssistant

from ..act.mentions import Mentions

# Slots naming where, not what: an unknown place still leaves the command a command.
_PLACES: Final = frozenset({"area", "floor"})
# How deep expansion rules are followed to a sentence's first word (HA's nest two or three).
_DEPTH: Final = 8


async def async_reads_as_command(
    hass: HomeAssistant,
    span: str,
    *,
    language: str,
    context: Context,
    device_id: str | None,
    mentions: Mentions,
) -> bool | None:
    """Whether HA's recognizer reads `span` as a command (the module's rule).

    None when it cannot tell: no default agent, or no sentences for `language`.
    """
    agent = conversation.async_get_agent(hass)
    if not isinstance(agent, DefaultAgent):
        return None
    # Loaded once per language and kept; asked first so an unsupported language is not warned
    # about at every span.
    if (loaded := await agent.async_get_or_load_intents(language)) is None:
        return None
    result = await agent.async_recognize_intent(
        conversation.ConversationInput(
            text=span,
            context=context,
            conversation_id=None,
            device_id=device_id,
            satellite_id=None,
            language=language,
            agent_id=conversation.HOME_ASSISTANT_AGENT,
        )
    )
    if result is None:
        return False
    if "Get" not in result.intent.name and _opens_with_a_word(
        result.intent_sentence, loaded.intents.expansion_rules
    ):
        return True
    for slot, unmatched in result.unmatched_entities.items():
        if not isinstance(unmatched, UnmatchedTextEntity):
            return False
        if unmatched.text == MISSING_ENTITY or slot in _PLACES:
            continue
        if slot != "name" or not mentions.part_of_a_name(unmatched.text):
            return False
    return True


def _opens_with_a_word(sentence: Sentence | None, rules: dict[str, Sentence]) -> bool:
    """Whether every way `sentence` can be said begins with a word (never a slot, never nothing)."""

    def opens(expression: Expression, depth: int) -> bool:
        if depth > _DEPTH:
            return False
        if isinstance(expression, TextChunk):
            return bool(expression.text.strip())
        if isinstance(expression, RuleReference):
            rule = rules.get(expression.rule_name)
            return rule is not None and opens(rule.expression, depth + 1)
        if isinstance(expression, Alternative):
            return not expression.is_optional and all(
                opens(item, depth + 1) for item in expression.items
            )
        if isinstance(expression, Together):
            # Leading whitespace is no word, and says nothing of what comes next.
            items = [
                item
                for item in expression.items
                if not (isinstance(item, TextChunk) and not item.text.strip())
            ]
            return bool(items) and opens(items[0], depth + 1)
        return False  # a list (a slot), a permutation

    return sentence is not None and opens(sentence.expression, 0)
