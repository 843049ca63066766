"""A thinking model's first words: Alto against Home Assistant's own `ollama` agent.

One Home Assistant holds both agents on the same fake model; each is asked the same thing, and
the model thinks, then answers, in the same scripted stream for both: plain text to the built-in
agent (which sends no `format`), Alto's JSON reply object to Alto (the fake turns the one script
into either). Both send `think: false` (Alto by default, the built-in as its setup form stores its
default), so a model that obeys (qwen3) answers at once to both, and one that always thinks
(gpt-oss) thinks before both. Either way Alto's first spoken words come no later than the built-in
agent's, short of the chunks its JSON syntax takes, and nothing of the thinking is spoken.
"""

from __future__ import annotations

from typing import Any

import pytest
from homeassistant.components import conversation
from homeassistant.components.ollama.const import CONF_THINK
from homeassistant.core import HomeAssistant

from custom_components.alto.const import CONF_MODEL

from ..fake_ollama import CHAT_MODEL, ChatReply, FakeOllama, last_user_text, wants_reply_object
from .helpers import AGENT, add_builtin_ollama, speech
from .test_thinking import ANSWER, THINK_STEP_S, THINKING, assert_never_heard, timed_turn

ASKED = "How warm is the living room?"
CHUNK = 8  # characters per streamed chunk: small, so a chunk step is a measure of text
# The reply object's opening bytes, `{"speech": "`, are 12 characters: at CHUNK characters a chunk
# they take Alto's stream one chunk step past the built-in's, whose first chunk is words. A
# second step lets Alto hold back a word split across two chunks until its end arrives. Waiting
# for the thinking (len(THINKING) steps) or for the whole sentence (five) is more.
ALLOWANCE_S = 2 * THINK_STEP_S


def answer_after_thinking() -> ChatReply:
    """The answer in CHUNK-character chunks, after the thinking when the model thinks.

    No marker, so it is all speech: plain text to a request without `format`, the reply object
    `{"speech": ANSWER, ...}` to Alto's reply request (`fake_ollama.reply_object`).
    """
    return ChatReply.text(ANSWER, chunk_size=CHUNK, thinking=THINKING, chunk_delay_s=THINK_STEP_S)


def is_the_answer(body: dict[str, Any]) -> bool:
    """A streamed reply request for ASKED: the built-in's (no `format`) or Alto's (reply object).

    Alto's memory intake and background passes (other schemas) and its Surfacer render (not
    streamed) get the fake's default instead.
    """
    streamed = body.get("stream") is not False
    reply = wants_reply_object(body) or "format" not in body
    return streamed and reply and last_user_text(body) == ASKED


async def first_words(
    hass: HomeAssistant, agent_id: str
) -> tuple[conversation.ConversationResult, float]:
    """One turn to `agent_id`: how long after `async_converse` began its first content delta."""
    result, started, first = await timed_turn(hass, ASKED, agent_id)
    return result, first - started


@pytest.mark.usefixtures("setup_alto")
@pytest.mark.parametrize("always", [False, True], ids=["qwen3", "gpt-oss"])
async def test_first_words_no_later_than_the_builtin_agent(
    hass: HomeAssistant, fake_ollama: FakeOllama, always: bool
) -> None:
    """Alto's first spoken delta is within ALLOWANCE_S of the built-in agent's; no thinking heard.

    The built-in agent goes first: it leaves no background work behind to slow Alto's turn, while
    Alto's (its memory intake) could slow the built-in's.
    """
    fake_ollama.thinkers[CHAT_MODEL] = always
    fake_ollama.when(is_the_answer, answer_after_thinking())
    # `think` False, as the agent's setup form stores it by default: left out of the data, the
    # built-in sends no `think` at all and a qwen3 thinks, which is not the comparison meant here.
    builtin = await add_builtin_ollama(
        hass, fake_ollama.url, {CONF_MODEL: CHAT_MODEL, CONF_THINK: False}
    )

    theirs, builtin_s = await first_words(hass, builtin)
    ours, alto_s = await first_words(hass, AGENT)

    builtin_body, alto_body = [b for b in fake_ollama.chat_requests if is_the_answer(b)]
    assert "format" not in builtin_body
    assert wants_reply_object(alto_body)
    assert builtin_body["think"] is False
    assert alto_body["think"] is False
    assert speech(theirs) == speech(ours) == ANSWER
    assert_never_heard(ours)
    assert alto_s <= builtin_s + ALLOWANCE_S, f"Alto {alto_s:.3f} s, built-in {builtin_s:.3f} s"
