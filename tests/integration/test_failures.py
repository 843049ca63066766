"""Every failure gives a clear, translated answer; Alto keeps working and recovers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.alto.const import CONF_REQUEST_TIMEOUT

from ..fake_ollama import ChatReply, FakeOllama
from .helpers import AGENT, converse, error_text, speech

SENSOR = "binary_sensor.alto_model_available"


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """A one-second model timeout, so a slow answer times out quickly."""
    return {CONF_REQUEST_TIMEOUT: 1}


async def test_unreachable_then_back(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """An unreachable server is answered clearly and marked unavailable; the probe sees it back."""
    await fake_ollama.stop()
    result = await converse(hass, "hello?")
    assert "can't reach my language model" in error_text(result)
    await hass.async_block_till_done()
    assert hass.states.get(SENSOR).state == "off"
    assert hass.states.get(AGENT).state != "unavailable"

    await fake_ollama.start()
    # The periodic probe notices on its own, without a turn.
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=61))
    await hass.async_block_till_done(wait_background_tasks=True)
    assert hass.states.get(SENSOR).state == "on"
    fake_ollama.reply("¦I'm back.¦")
    result = await converse(hass, "hello?")
    assert speech(result) == "I'm back."


async def test_turn_success_restores_availability(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A failed call has the health poll look at once; the poll failing turns the sensor off.

    The next successful turn turns it back on.
    """
    fake_ollama.fail_tags = 1
    fake_ollama.reply(ChatReply(status=500))
    assert "reported an error" in error_text(await converse(hass, "hi"))
    await hass.async_block_till_done()
    assert hass.states.get(SENSOR).state == "off"
    fake_ollama.reply("¦Fine again.¦")
    await converse(hass, "hi")
    await hass.async_block_till_done()
    assert hass.states.get(SENSOR).state == "on"


async def test_a_server_error_is_not_unavailability(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A server error is said; the sensor stays on while Ollama answers the health poll."""
    fake_ollama.reply(ChatReply(status=500))
    assert "reported an error" in error_text(await converse(hass, "hi"))
    await hass.async_block_till_done()
    assert hass.states.get(SENSOR).state == "on"
    assert [path for path, _body in fake_ollama.requests][-1] == "/api/tags"  # it looked


@pytest.mark.usefixtures("setup_alto")
async def test_http_500(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """An HTTP 500 is answered as the model reporting an error."""
    fake_ollama.reply(ChatReply(status=500, error="CUDA out of memory"))
    assert "reported an error" in error_text(await converse(hass, "hi"))


@pytest.mark.usefixtures("setup_alto")
async def test_stream_cut_mid_way(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """A stream cut mid-way is answered as stopped in the middle."""
    fake_ollama.reply(ChatReply.text("¦This answer will never finish.¦", cut_after=3))
    result = await converse(hass, "hi")
    assert "stopped in the middle" in error_text(result)


@pytest.mark.usefixtures("setup_alto")
async def test_error_line_mid_stream(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """An error line mid-stream is answered as stopped in the middle."""
    fake_ollama.reply(ChatReply.text("¦Half an answer¦", error_line_after=2))
    assert "stopped in the middle" in error_text(await converse(hass, "hi"))


@pytest.mark.usefixtures("setup_alto")
async def test_stream_without_done_is_a_cut(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """A stream that ends without its done chunk counts as cut."""
    # Ends cleanly at the HTTP level but never sends the final done chunk.
    fake_ollama.reply(ChatReply.text("¦Half an answer¦", omit_done=True))
    assert "stopped in the middle" in error_text(await converse(hass, "hi"))


@pytest.mark.usefixtures("setup_alto")
async def test_timeout(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """A reply slower than the timeout is answered as too slow; the next turn works."""
    fake_ollama.reply(ChatReply.text("¦slow¦", delay_s=1.5))  # the entry's timeout is 1 s
    result = await converse(hass, "hi")
    assert "took too long" in error_text(result)
    fake_ollama.reply("¦Quick now.¦")
    assert speech(await converse(hass, "hi")) == "Quick now."


@pytest.mark.usefixtures("setup_alto")
async def test_failed_turn_stores_nothing(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """A failed turn leaves nothing in the history."""
    fake_ollama.reply(ChatReply(status=500))
    first = await converse(hass, "remember this failed turn")
    fake_ollama.reply("¦ok¦")
    await converse(hass, "next", first.conversation_id)
    assert "failed turn" not in str(fake_ollama.chat_requests[-1]["messages"])


@pytest.mark.usefixtures("setup_alto")
async def test_only_thought_is_a_clear_error(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """A reply with nothing to say is a clear error."""
    fake_ollama.reply("I will not mark anything ¤¤")
    assert "nothing to say" in error_text(await converse(hass, "hi"))


@pytest.mark.usefixtures("setup_alto")
async def test_error_in_the_users_language(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """Errors are answered in the user's language, falling back to English, never a raw key."""
    fake_ollama.reply(ChatReply(status=500))
    result = await converse(hass, "hallo", language="de")
    assert "Fehler" in error_text(result)
    fake_ollama.reply(ChatReply(status=500))
    result = await converse(hass, "hei", language="fi")  # no Finnish ships: English, no raw key
    assert "reported an error" in error_text(result)
