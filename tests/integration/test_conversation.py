"""A conversation through HA's conversation API, end to end over HTTP to the fake Ollama."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant

from ..fake_ollama import ChatReply, FakeOllama

AGENT = "conversation.alto"


async def converse(hass: HomeAssistant, text: str, conversation_id: str | None = None) -> Any:
    return await conversation.async_converse(
        hass, text, conversation_id, Context(), agent_id=AGENT, language="en"
    )


@pytest.mark.usefixtures("setup_alto")
async def test_speech_is_spoken_thought_is_not(hass: HomeAssistant, fake_ollama: FakeOllama):
    fake_ollama.reply("Let me think. ¦Hello there.¦ private ¦How can I help?¦")
    result = await converse(hass, "hi")
    assert result.response.speech["plain"]["speech"] == "Hello there. How can I help?"
    body = fake_ollama.chat_requests[-1]
    assert body["stream"] is True
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][-1] == {"role": "user", "content": "hi"}
    assert not body.get("tools")


@pytest.mark.usefixtures("setup_alto")
async def test_history_carries_only_spoken_text(hass: HomeAssistant, fake_ollama: FakeOllama):
    fake_ollama.reply("secret plan ¦First answer.¦ ¤turn on the lamp¤")
    first = await converse(hass, "one")
    fake_ollama.reply("¦Second answer.¦")
    await converse(hass, "two", first.conversation_id)
    messages = fake_ollama.chat_requests[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "First answer."
    assert "secret" not in str(messages) and "lamp" not in str(messages[1:])
