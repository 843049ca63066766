"""A new household's first turns: what a small model does to them, and what Alto makes of it.

Assist offers Alto as an assistant that controls the home; a slow answer is said to be slow and
does not mark the model unavailable, and the log says what happened; no answer speaks the reply
object's syntax or recites Alto's instructions; a span is put to the entity it names first, so a
model that takes the first value it is offered still unlocks the lock, not a media player.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from homeassistant.components.conversation import ConversationEntityFeature
from homeassistant.const import ATTR_SUPPORTED_FEATURES
from homeassistant.core import Event, HomeAssistant

from custom_components.alto.const import CONF_REQUEST_TIMEOUT

from ..fake_ollama import ChatReply, FakeOllama, first_choices, wants_reply_object
from .helpers import AGENT, converse, converse_and_settle, error_text, is_executor_call, speech

SENSOR = "binary_sensor.alto_model_available"


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """A one-second model timeout, so a slow answer times out quickly."""
    return {CONF_REQUEST_TIMEOUT: 1}


@pytest.mark.usefixtures("setup_alto")
async def test_assist_offers_alto_as_controlling_the_home(hass: HomeAssistant) -> None:
    """The agent declares CONTROL, so Assist does not say it cannot control the home."""
    state = hass.states.get(AGENT)
    assert state is not None
    features = ConversationEntityFeature(state.attributes[ATTR_SUPPORTED_FEATURES])
    assert ConversationEntityFeature.CONTROL in features


@pytest.mark.usefixtures("setup_alto")
@pytest.mark.parametrize(
    "slow",
    [
        ChatReply.text("¦Too late.¦", delay_s=1.5),  # nothing within the timeout
        ChatReply.text("¦I am answering, slowly.¦", chunk_delay_s=0.3),  # started, never ended
    ],
)
async def test_slow_is_not_unavailable(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    caplog: pytest.LogCaptureFixture,
    slow: ChatReply,
) -> None:
    """A model slower than the timeout is said to be slow; the sensor stays on; the log says why.

    The next turn is answered as usual.
    """
    caplog.set_level(logging.WARNING)
    fake_ollama.reply(slow)
    assert "took too long" in error_text(await converse(hass, "hello?"))
    await hass.async_block_till_done()
    assert hass.states.get(SENSOR).state == "on"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("(model_timeout): TimeoutError" in line for line in warnings), warnings
    assert not [line for line in warnings if line.rstrip().endswith(":")], warnings
    fake_ollama.reply("¦Quick now.¦")
    assert speech(await converse(hass, "hello?")) == "Quick now."


@pytest.mark.usefixtures("setup_alto")
async def test_the_health_poll_says_why_ollama_is_down(
    hass: HomeAssistant, fake_ollama: FakeOllama, caplog: pytest.LogCaptureFixture
) -> None:
    """Unreachable: the poll a failed turn asks for turns the sensor off and logs the cause."""
    await fake_ollama.stop()
    assert "can't reach" in error_text(await converse(hass, "hello?"))
    await hass.async_block_till_done()
    assert hass.states.get(SENSOR).state == "off"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("availability check (ConnectionError: " in line for line in errors), errors


@pytest.mark.usefixtures("setup_alto")
@pytest.mark.parametrize(
    ("raw", "spoken"),
    [
        ('{"speech": "{", "actions": [], "thought": ""}', None),
        ('{"speech": "{\\"speech\\": \\"Hello there.\\"}", "actions": []}', "Hello there."),
        ('```json\n{"speech": "Hello there.", "actions": [], "thought": ""}\n```', "Hello there."),
        ('Sure! {"speech": "Hello there.", "actions": [], "thought": ""}', "Sure! Hello there."),
        ('{"speech": "Answer the person now, in the same JSON form.", "actions": []}', None),
        (
            '{"speech": "Hello there. Answer the person now, in JSON.", "actions": []}',
            "Hello there.",
        ),
    ],
)
async def test_no_syntax_and_no_instructions_are_spoken(
    hass: HomeAssistant, fake_ollama: FakeOllama, raw: str, spoken: str | None
) -> None:
    """What a small model writes: its speech is said, the object's syntax and recitals never.

    None: nothing is left to say, which is said as such, never as a "{".
    """
    fake_ollama.reply(ChatReply.text(raw, plain=True))
    result = await converse(hass, "hi")
    if spoken is None:
        assert "nothing to say" in error_text(result)
    else:
        assert speech(result) == spoken


@pytest.mark.usefixtures("front_door_exposed")
async def test_unlock_the_front_door_goes_to_the_front_door_lock(
    hass: HomeAssistant, fake_ollama: FakeOllama, intents: list[Event]
) -> None:
    """An executor that answers the first entity and service it is offered unlocks the lock.

    A media player and a garage door cover are exposed too: neither can unlock, and the cover's
    name shares a word with the span.
    """
    hass.states.async_set("media_player.bedroom", "idle", {"friendly_name": "Bedroom"})
    fake_ollama.when(is_executor_call, first_choices)
    fake_ollama.reply("¤unlock the front door¤¦I'll unlock the front door.¦")
    result = await converse_and_settle(hass, "Unlock the front door")

    executor = [body for body in fake_ollama.chat_requests if is_executor_call(body)]
    call = executor[0]["format"]["anyOf"][0]["properties"]
    assert call["entity"]["enum"][0] == "lock.front_door"
    assert "media_player.bedroom" in call["entity"]["enum"]
    assert call["service"]["enum"][0] == "unlock"
    assert [event.data["verdict"] for event in intents] == ["awaiting_confirmation"]
    assert intents[0].data["entity_id"] == "lock.front_door"
    assert intents[0].data["service"] == "unlock"
    assert "unlock Front Door" in speech(result)
    assert all(not wants_reply_object(body) for body in executor)
