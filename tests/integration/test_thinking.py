"""The models households run: thinking models, and models that ignore `format`.

A thinking model streams `message.thinking` before its content. With the `think` option on, Alto
asks for it and keeps it as its private thought: the speech is the answer's, and nothing of the
thinking is spoken, sent back to the model or kept in memory. Off (the default), Alto sends
`think: false`, so a model that would think (qwen3) answers at once and its first words come as
early as a model that never thinks; one that thinks anyway (gpt-oss) is not heard thinking. A
model that cannot think is refused `think: true` by Ollama, and Alto says what to change. A model
that ignores `format` and writes text is spoken as text.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers.chat_session import async_get_chat_session
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.model_client import REPLY_TOKENS, THINKING_TOKENS

from ..fake_ollama import CHAT_MODEL, ChatReply, FakeOllama
from .helpers import (
    AGENT,
    converse,
    converse_and_wait_for_background,
    error_text,
    journal_bytes,
    speech,
)

SECRET = "zebrathought"
# What a model thinks: the word no reply ever says, an answer object and a claim of action.
THINKING = [
    f"The person asks about the heat ({SECRET}). ",
    'I could answer {"speech": "It is cold", "actions": []} ',
    "but first: I've turned on the heating. ",
    "Answer the person now, in the same JSON form.",
]
ANSWER = "It's 21 degrees in the living room."
THINK_STEP_S = 0.15  # between thinking lines: four of them take 0.6 s


def thinking_reply() -> ChatReply:
    """The answer, after four lines of thinking when the model thinks."""
    return ChatReply.text(
        f"¦{ANSWER}¦", chunk_size=40, thinking=THINKING, chunk_delay_s=THINK_STEP_S
    )


async def timed_turn(
    hass: HomeAssistant, text: str, agent_id: str = AGENT
) -> tuple[conversation.ConversationResult, float, float]:
    """One turn to `agent_id`: its result, when it began, when its first delta came."""
    spoken_at: list[float] = []

    def listener(_chat_log: conversation.ChatLog, delta: dict[str, Any]) -> None:
        if delta.get("content"):
            spoken_at.append(time.monotonic())

    with (
        async_get_chat_session(hass) as session,
        conversation.async_get_chat_log(hass, session, chat_log_delta_listener=listener),
    ):
        started = time.monotonic()
        result = await conversation.async_converse(
            hass, text, session.conversation_id, Context(), language="en", agent_id=agent_id
        )
    assert spoken_at, f"{agent_id} streamed nothing"
    return result, started, spoken_at[0]


async def first_words_after(
    hass: HomeAssistant, fake: FakeOllama, text: str
) -> tuple[conversation.ConversationResult, float]:
    """One turn; how long after the chat request reached Ollama its first spoken delta came."""
    result, _started, first = await timed_turn(hass, text)
    return result, first - fake.chat_times[0]


def assert_never_heard(result: conversation.ConversationResult) -> None:
    """Nothing of the thinking is in what was said."""
    said = speech(result)
    for thought in (SECRET, "It is cold", "turned on", "JSON"):
        assert thought not in said


class TestThinkingOn:
    """The option on, with a model that thinks."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """Think before answering."""
        return {"think": True}

    @pytest.fixture(autouse=True)
    def _qwen3(self, fake_ollama: FakeOllama) -> None:
        """The chat model thinks unless told not to, as qwen3 does."""
        fake_ollama.thinkers[CHAT_MODEL] = False

    async def test_the_answer_is_spoken_the_thinking_never(
        self, hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
    ) -> None:
        """Speech exactly the answer's; the thinking reaches no listener, model or memory."""
        fake_ollama.reply(thinking_reply())
        first = await converse_and_wait_for_background(hass, "How warm is the living room?")
        assert speech(first) == ANSWER
        assert_never_heard(first)
        body = fake_ollama.chat_requests[0]
        assert body["think"] is True
        assert body["options"]["num_predict"] == REPLY_TOKENS + THINKING_TOKENS

        fake_ollama.reply("¦Anything else?¦")
        await converse_and_wait_for_background(hass, "And now?", first.conversation_id)
        for request in fake_ollama.chat_requests[1:]:  # the next turn, intake, the passes
            assert SECRET not in str(request["messages"])
        assert not any(SECRET in text for text in fake_ollama.embedded_texts)
        assert SECRET.encode() not in (journal_bytes(hass, setup_alto) or b"")

    @pytest.mark.usefixtures("setup_alto")
    async def test_the_first_words_wait_for_the_thinking(
        self, hass: HomeAssistant, fake_ollama: FakeOllama
    ) -> None:
        """Asked to think, the model thinks first: the measure below sees the thinking's time."""
        fake_ollama.reply(thinking_reply())
        result, delay = await first_words_after(hass, fake_ollama, "How warm is it?")
        assert speech(result) == ANSWER
        assert delay >= len(THINKING) * THINK_STEP_S


class TestCannotThink:
    """The option on, with a model that cannot think."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """Think before answering."""
        return {"think": True}

    @pytest.mark.usefixtures("setup_alto")
    async def test_alto_says_what_to_change(
        self, hass: HomeAssistant, fake_ollama: FakeOllama
    ) -> None:
        """Ollama refuses `think: true`; Alto says to turn the option off, not a bare error."""
        result = await converse(hass, "hi")
        assert 'Turn off "Think before answering"' in error_text(result)


@pytest.mark.usefixtures("setup_alto")
@pytest.mark.parametrize("always", [False, True], ids=["qwen3", "gpt-oss"])
async def test_thinking_off_answers_at_once(
    hass: HomeAssistant, fake_ollama: FakeOllama, always: bool
) -> None:
    """Off: `think: false` is sent; a model that would think answers at once.

    One that always thinks (gpt-oss) is not heard thinking. As early: the first spoken delta
    comes within the time of the thinking a model that obeys does not do (the first-words
    measure does see that time: see `TestThinkingOn`).
    """
    fake_ollama.thinkers[CHAT_MODEL] = always
    fake_ollama.reply(thinking_reply())
    result, delay = await first_words_after(hass, fake_ollama, "How warm is it?")
    assert fake_ollama.chat_requests[0]["think"] is False
    assert fake_ollama.chat_requests[0]["options"]["num_predict"] == REPLY_TOKENS
    assert speech(result) == ANSWER
    assert_never_heard(result)
    if not always:
        assert delay < len(THINKING) * THINK_STEP_S / 2


@pytest.mark.usefixtures("setup_alto")
async def test_a_model_that_never_thinks_is_not_slowed(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """The default with a model that cannot think: `think: false` is accepted, no delay."""
    fake_ollama.reply(thinking_reply())
    result, delay = await first_words_after(hass, fake_ollama, "How warm is it?")
    assert speech(result) == ANSWER
    assert delay < len(THINKING) * THINK_STEP_S / 2


@pytest.mark.usefixtures("setup_alto")
@pytest.mark.parametrize(
    "text",
    [
        ANSWER,
        f"<think>{THINKING[0]}</think>\n{ANSWER}",  # thinking inline, in the content
    ],
)
async def test_a_model_that_ignores_format_is_spoken_as_text(
    hass: HomeAssistant, fake_ollama: FakeOllama, text: str
) -> None:
    """A schema was asked and plain text came: the text is spoken (an inline think block not)."""
    fake_ollama.reply(ChatReply.text(text, plain=True))
    result = await converse(hass, "How warm is it?")
    assert "format" in fake_ollama.chat_requests[0]
    assert speech(result) == ANSWER
