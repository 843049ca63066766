"""Each chat model answers in the channel its replies show it keeps to.

With the reply channel on "auto", a model that ignores Ollama's `format` (it writes text outside
the JSON answer) on most of MIN_REPLIES replies answers in marks from the next turn on, across a
restart; a model that keeps to the JSON answer stays on it; a channel the user chose is kept
whatever the model does. Diagnostics say per model what it did and why it answers as it does.
"""

from __future__ import annotations

from typing import Any

import pytest
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.alto.reply_stats import MIN_REPLIES

from ..fake_ollama import CHAT_MODEL, ChatReply, FakeOllama
from .helpers import converse, speech

JSON_ANSWER = '{"speech": "Kept to it.", "actions": [], "thought": ""}'


def plain(text: str) -> ChatReply:
    """A reply written as it is, whatever the request's `format` (a model that ignores it)."""
    return ChatReply.text(text, plain=True)


async def turn(hass: HomeAssistant, fake: FakeOllama, reply: ChatReply | str) -> dict[str, Any]:
    """One turn answered by `reply`; the conversational request it sent."""
    before = len(fake.chat_requests)
    fake.reply(reply)
    await converse(hass, "how is it going?")
    return next(body for body in fake.chat_requests[before:] if body.get("stream") is not False)


def answers_in_marks(body: dict[str, Any]) -> bool:
    """The request asks for marks: no `format`, and the marks protocol in its system prompt."""
    return "format" not in body and "¦" in body["messages"][0]["content"]


async def reply_models(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, entry: MockConfigEntry
) -> dict[str, Any]:
    """The diagnostics' counts and channel of the chat model."""
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    return dict(diagnostics["reply_models"][CHAT_MODEL])


@pytest.mark.parametrize("ignored", [MIN_REPLIES // 2 + 1, MIN_REPLIES])
async def test_a_model_that_mostly_ignores_the_format_answers_in_marks(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    ignored: int,
) -> None:
    """JSON for MIN_REPLIES replies, most ignored; marks from the next turn and after a restart."""
    replies = [plain(f"Plain answer {n}.") for n in range(ignored)]
    replies += [JSON_ANSWER] * (MIN_REPLIES - ignored)
    for reply in replies:
        assert not answers_in_marks(await turn(hass, fake_ollama, reply))
    body = await turn(hass, fake_ollama, plain("Still plain."))
    assert answers_in_marks(body)
    assert await reply_models(hass, hass_client, setup_alto) == {
        "json": MIN_REPLIES,
        "ignored": ignored,
        "marks": 1,
        "fallback": 1,
        "channel": "markers",
        "why": "ignores_json",
    }

    assert await hass.config_entries.async_reload(setup_alto.entry_id)
    await hass.async_block_till_done()
    fake_ollama.reply(plain("¦Marked.¦"))
    before = len(fake_ollama.chat_requests)
    assert speech(await converse(hass, "and now?")) == "Marked."
    assert answers_in_marks(fake_ollama.chat_requests[before])


@pytest.mark.usefixtures("setup_alto")
async def test_a_model_that_ignores_the_format_on_half_stays_on_json(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """Ignored on half the replies is not on most: the JSON answer stays."""
    for n in range(MIN_REPLIES):
        await turn(hass, fake_ollama, plain("Plain.") if n % 2 else JSON_ANSWER)
    assert not answers_in_marks(await turn(hass, fake_ollama, JSON_ANSWER))


async def test_a_model_that_keeps_the_format_stays_on_json(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    """Every reply asks for the JSON answer, and diagnostics say it is the default."""
    for _ in range(MIN_REPLIES + 2):
        body = await turn(hass, fake_ollama, JSON_ANSWER)
        assert body["format"]["required"] == ["speech", "actions", "thought"]
    assert await reply_models(hass, hass_client, setup_alto) == {
        "json": MIN_REPLIES + 2,
        "ignored": 0,
        "marks": 0,
        "fallback": 0,
        "channel": "json",
        "why": "default",
    }


class TestChosenJson:
    """The user chose the JSON answer."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """The JSON answer, chosen."""
        return {"reply_channel": "json"}

    @pytest.mark.usefixtures("setup_alto")
    async def test_the_choice_holds_whatever_the_model_does(
        self, hass: HomeAssistant, fake_ollama: FakeOllama
    ) -> None:
        """A model that ignores the format every time is still asked for the JSON answer."""
        for n in range(MIN_REPLIES + 1):
            assert not answers_in_marks(await turn(hass, fake_ollama, plain(f"Plain {n}.")))


class TestChosenMarks:
    """The user chose marks."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """Marks, chosen."""
        return {"reply_channel": "markers"}

    async def test_marks_from_the_first_turn(
        self,
        hass: HomeAssistant,
        fake_ollama: FakeOllama,
        setup_alto: MockConfigEntry,
        hass_client: ClientSessionGenerator,
    ) -> None:
        """Every request asks for marks, and diagnostics say the user chose them."""
        for _ in range(3):
            assert answers_in_marks(await turn(hass, fake_ollama, "¦Marked.¦"))
        models = await reply_models(hass, hass_client, setup_alto)
        assert (models["marks"], models["channel"], models["why"]) == (3, "markers", "chosen")
