"""A conversation through HA's conversation API, end to end over HTTP to the fake Ollama."""

from __future__ import annotations

from typing import Any

import pytest
from homeassistant.components import conversation
from homeassistant.components.conversation import trace as conversation_trace
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from syrupy.assertion import SnapshotAssertion

from custom_components.alto.channel.json_channel import SCHEMA

from ..fake_ollama import FakeOllama
from .helpers import converse, error_text, situation_of, speech


@pytest.mark.usefixtures("setup_alto")
async def test_speech_is_spoken_thought_is_not(hass: HomeAssistant, fake_ollama: FakeOllama):
    """Only speech spans are spoken; the request streams, with a system prompt and no tools."""
    fake_ollama.reply("Let me think. ¦Hello there.¦ private ¦How can I help?¦")
    result = await converse(hass, "hi")
    assert speech(result) == "Hello there. How can I help?"
    body = fake_ollama.chat_requests[-1]
    assert body["stream"] is True
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][-1] == {"role": "user", "content": "hi"}
    assert not body.get("tools")


@pytest.mark.usefixtures("setup_alto")
async def test_history_carries_only_spoken_text(hass: HomeAssistant, fake_ollama: FakeOllama):
    """The next request's history holds what was said, not thought or action spans."""
    fake_ollama.reply("secret plan ¦First answer.¦ ¤turn on the lamp¤")
    first = await converse(hass, "one")
    fake_ollama.reply("¦Second answer.¦")
    await converse(hass, "two", first.conversation_id)
    messages = fake_ollama.chat_requests[-1]["messages"]
    # The stable prompt, the history, the turn's situation, the new words.
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "system", "user"]
    assert messages[2]["content"] == "First answer."
    assert "secret" not in str(messages)
    assert "lamp" not in str(messages[1:3])


@pytest.mark.usefixtures("setup_alto")
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bad\x00byte", "control characters"),
        ("carriage\rreturn", "control characters"),
        ("x" * 4097, "too long"),
    ],
)
async def test_refused_input_is_answered_and_nothing_is_sent_or_stored(
    hass: HomeAssistant, fake_ollama: FakeOllama, text: str, message: str
) -> None:
    """Refused input gets an error answer; nothing reaches the model or the history."""
    result = await converse(hass, text)
    assert message in error_text(result)
    assert fake_ollama.chat_requests == []
    fake_ollama.reply("¦ok¦")
    await converse(hass, "fine", result.conversation_id)
    sent = fake_ollama.chat_requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "system", "user"]  # no history


@pytest.mark.usefixtures("setup_alto")
async def test_system_prompt_and_call_options(hass: HomeAssistant, fake_ollama: FakeOllama):
    """Persona and JSON answer rules first, the time after the history; held to the schema."""
    hass.states.async_set("light.porch", "on", {"friendly_name": "Porch light"})
    await converse(hass, "hi")
    body = fake_ollama.chat_requests[-1]
    system = body["messages"][0]["content"]
    assert "Nobody has told you your name yet" in system
    assert '"speech"' in system
    assert "¦" not in system
    assert "Example 2" in system
    assert body["format"] == SCHEMA
    assert "The current time is" not in system  # it changes every minute: after the history
    assert "The current time is" in situation_of(body)
    assert body["keep_alive"] == "-1s"
    assert body["options"]["num_ctx"] == 8192


@pytest.mark.usefixtures("setup_alto")
async def test_unmarked_reply_is_spoken_plainly(hass: HomeAssistant, fake_ollama: FakeOllama):
    """A reply without markers is spoken as it is (the fallback is on by default)."""
    fake_ollama.reply("Just a plain answer.")
    result = await converse(hass, "hi")
    assert speech(result) == "Just a plain answer."


@pytest.mark.usefixtures("setup_alto")
async def test_action_spans_are_not_recorded_as_done(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """An action span that did nothing is not recorded in the history as done."""
    fake_ollama.reply("¤turn on the porch light¤¦I'll try the porch light.¦")
    first = await converse(hass, "porch light on")
    assert speech(first) == "I'll try the porch light."
    fake_ollama.reply("¦ok¦")
    await converse(hass, "and now?", first.conversation_id)
    history = fake_ollama.chat_requests[-1]["messages"][1:]
    assert "carried out" not in str(history)
    assert "turn on the porch light" not in str(history)


@pytest.mark.usefixtures("setup_alto")
async def test_max_history_trims_old_turns(hass: HomeAssistant, fake_ollama: FakeOllama):
    """`max_history` keeps only the last turns in the request."""
    entry = hass.config_entries.async_entries("alto")[0]
    hass.config_entries.async_update_entry(entry, options={"max_history": 2})
    await hass.async_block_till_done()
    conversation_id = None
    for n in range(4):
        fake_ollama.reply(f"¦answer {n}¦")
        result = await converse(hass, f"question {n}", conversation_id)
        conversation_id = result.conversation_id
    sent = [
        m["content"] for m in fake_ollama.chat_requests[-1]["messages"] if m["role"] != "system"
    ]
    # Two kept turns may grow by one (the trim step) before they are trimmed back to two.
    assert sent == [
        "question 0",
        "answer 0",
        "question 1",
        "answer 1",
        "question 2",
        "answer 2",
        "question 3",
    ]
    fake_ollama.reply("¦answer 4¦")
    await converse(hass, "question 4", conversation_id)
    sent = [
        m["content"] for m in fake_ollama.chat_requests[-1]["messages"] if m["role"] != "system"
    ]
    assert sent == ["question 2", "answer 2", "question 3", "answer 3", "question 4"]


class TestFallbackOff:
    """The plain-reply fallback off, and an assistant name."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """The marks channel without its plain-reply fallback; the assistant is called Pip."""
        return {"reply_channel": "markers", "plain_reply_fallback": False, "assistant_name": "Pip"}

    @pytest.mark.usefixtures("setup_alto")
    async def test_unmarked_reply_is_not_spoken(self, hass: HomeAssistant, fake_ollama):
        """Without the fallback a reply without markers is an error; the name reaches the prompt."""
        fake_ollama.reply("Just a plain answer.")
        result = await converse(hass, "hi")
        assert result.response.response_type.value == "error"
        assert (
            "The household calls you Pip."
            in fake_ollama.chat_requests[-1]["messages"][0]["content"]
        )


class TestPersonaTemplate:
    """A persona prompt that is a broken template."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """A persona with an unclosed template expression."""
        return {"prompt": "You serve {{ states('sensor.house_name') }}. {{ broken"}

    @pytest.mark.usefixtures("setup_alto")
    async def test_a_broken_template_is_used_as_text(self, hass: HomeAssistant, fake_ollama):
        """A persona that does not render is used as plain text."""
        await converse(hass, "hi")
        system = fake_ollama.chat_requests[-1]["messages"][0]["content"]
        assert system.startswith("You serve {{ states('sensor.house_name') }}. {{ broken")


class TestPersonaTemplateRenders:
    """A persona prompt that is a valid template."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """A persona reading a sensor's state."""
        return {"prompt": "You serve the {{ states('sensor.house_name') }} household."}

    @pytest.mark.usefixtures("setup_alto")
    async def test_the_persona_is_rendered(self, hass: HomeAssistant, fake_ollama):
        """The persona template is rendered with the current states."""
        hass.states.async_set("sensor.house_name", "Okafor")
        await converse(hass, "hi")
        system = fake_ollama.chat_requests[-1]["messages"][0]["content"]
        assert system.startswith("You serve the Okafor household.")


@pytest.mark.usefixtures("setup_alto")
async def test_conversation_trace(
    hass: HomeAssistant, fake_ollama: FakeOllama, snapshot: SnapshotAssertion
) -> None:
    """What a turn records in HA's conversation trace: the fallback flag and every span."""
    conversation_trace.async_clear_traces()
    fake_ollama.reply("¤turn on the porch light¤ ¦Trying the porch light.¦")
    await converse(hass, "porch light on please")
    (trace,) = conversation_trace.async_get_traces()
    details = [
        event["data"]
        for event in trace.as_dict()["events"]
        if event["event_type"] == conversation.ConversationTraceEventType.AGENT_DETAIL
    ]
    assert details == snapshot


class TestMarksChannel:
    """The marks channel, chosen in the options."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """Speech and actions between marks."""
        return {"reply_channel": "markers"}

    @pytest.mark.usefixtures("setup_alto")
    async def test_marks_protocol_and_no_format(self, hass: HomeAssistant, fake_ollama) -> None:
        """The prompt teaches the marks, the call has no schema, and only speech is spoken."""
        fake_ollama.reply("thinking ¦Hello there.¦ ¤turn on nothing¤")
        result = await converse(hass, "hi")
        body = fake_ollama.chat_requests[0]  # the conversational call; the executor's follows
        assert "¦" in body["messages"][0]["content"]
        assert "¤" in body["messages"][0]["content"]
        assert "format" not in body
        assert speech(result) == "Hello there."


@pytest.mark.usefixtures("setup_alto")
async def test_json_reply_speaks_only_the_speech(hass: HomeAssistant, fake_ollama) -> None:
    """The reply object's speech is spoken; its thought never is."""
    fake_ollama.reply(
        '{"speech": "It is 21 degrees.", "actions": [], "thought": "the sensor said 21"}'
    )
    result = await converse(hass, "how warm is it?")
    assert speech(result) == "It is 21 degrees."
    assert result.response.response_type.value == "query_answer"


class TestMarksIgnored:
    """A model that ignores the marks, on the marks channel."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """Speech and actions between marks (the fallback on, as by default)."""
        return {"reply_channel": "markers"}

    @pytest.mark.usefixtures("setup_alto")
    async def test_mostly_unmarked_replies_raise_a_repair_issue(
        self, hass: HomeAssistant, fake_ollama: FakeOllama
    ) -> None:
        """Ten plain replies out of ten: Alto says so, and suggests the JSON answer."""
        issues = ir.async_get(hass)
        for n in range(10):
            fake_ollama.reply(f"Plain answer {n}.")
            await converse(hass, f"question {n}")
            raised = issues.async_get_issue("alto", f"model_ignores_marks_{_entry_id(hass)}")
            assert (raised is not None) == (n == 9)


def _entry_id(hass: HomeAssistant) -> str:
    """The one Alto entry's id."""
    return hass.config_entries.async_entries("alto")[0].entry_id


@pytest.mark.usefixtures("setup_alto")
@pytest.mark.parametrize(
    ("language", "claim", "other"),
    [
        ("de", "Ich habe das Licht im Flur ausgeschaltet.", "Soll ich das Licht ausschalten?"),
        ("es", "Ventilador del salón encendido.", "¿Quieres que apague la luz?"),
        ("it", "Ho spento la luce della cucina.", "Vuoi che spenga la luce?"),
    ],
)
async def test_a_claim_in_the_turns_language_is_withheld(
    hass: HomeAssistant, fake_ollama: FakeOllama, language: str, claim: str, other: str
) -> None:
    """No effector acted: the claim of the turn's language is not spoken, an offer is."""
    fake_ollama.reply(f'{{"speech": "{claim} {other}", "actions": [], "thought": ""}}')
    said = speech(await converse(hass, "?", language=language))
    assert claim not in said
    assert other in said
