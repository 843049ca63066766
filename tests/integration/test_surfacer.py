"""The Surfacer end to end: real HA, the fake Ollama over HTTP, the real embedded Chroma store.

Names reach the store the honest way: a turn in mode 2 (a qualification row written before setup,
scripted call-1/call-2 answers) admits a participant mention ("Maria") and an assertion quoting
the sentence; explicit memories come from `alto.remember`. Three kinds of /api/chat request are
told apart by their shape: the conversational turn streams, the memory calls carry a `format`
schema, and a render is non-streamed without `format`.

Covers: a verified thought joining the turn's call (and staying in the conversation), a fabricated
render regenerated once then dropped, a render failure, a slow render that must not hold the
reply past `surfacer_wait` (its thought lands in the next turn), the Surfacer switched off, and
another user's private memory never reaching a different speaker, not even a late thought in a
shared conversation.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from homeassistant.core import Context, HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events

from custom_components.alto.const import CONF_SURFACER_ENABLED, CONF_SURFACER_WAIT
from custom_components.alto.memory_organ.organ import EVENT_ADMITTED
from custom_components.alto.surface.render import RENDER_OPTIONS
from custom_components.alto.surface.store_view import StoreMemoryView
from custom_components.alto.surface.surfacer import SYSTEM_INSTRUCTION, render_messages
from custom_components.alto.surface_organ.organ import EVENT_THOUGHT

from ..fake_ollama import CHAT_MODEL, ChatReply, FakeOllama, is_render
from .helpers import (
    MARIA,
    converse,
    converse_and_wait_for_background,
    is_call_1,
    is_call_2,
    memory,
    remember,
    spoken,
)

LAST_THOUGHT = "sensor.alto_last_thought"
REPLY = "Hello from the fake model."  # the fake's default conversational answer
ASKED = "Is Maria home today?"
THANKS = "Thank you."
MARIA_PHRASE = {"Maria": [MARIA]}  # the assertion mode 2 admits for MARIA
THOUGHT = "I remember Maria walks the dog every morning."
ZOE = "Zoe feeds the cat at noon."
PIN = "Maria's PIN is 4821."

# Sentences call 1 labels "statement", with the mentions call 2 adds; any other is a request.
STATEMENTS: dict[str, list[list[Any]]] = {
    MARIA: [[1, "Maria"], [2, "walks the dog"]],
    ZOE: [[1, "Zoe"], [2, "feeds the cat"]],
}


# -- telling requests apart -----------------------------------------------------------------------
def renders(fake: FakeOllama) -> list[dict[str, Any]]:
    """The Surfacer's render requests, in order."""
    return [body for body in fake.chat_requests if is_render(body)]


def conversational(fake: FakeOllama) -> list[dict[str, Any]]:
    """The streamed conversational requests, in order."""
    return [body for body in fake.chat_requests if body.get("stream") is True]


def dialogue(body: dict[str, Any]) -> list[dict[str, str]]:
    """A conversational request's messages without its system messages (prompt, memory)."""
    return [m for m in body["messages"] if m["role"] != "system"]


# -- scripted memory calls ------------------------------------------------------------------------
def _call_1(body: dict[str, Any]) -> ChatReply:
    """Intake call 1: STATEMENTS are statements, anything else a request."""
    spans = [pair["prefixItems"][0]["const"] for pair in body["format"]["prefixItems"]]
    labels = [[span, "statement" if span in STATEMENTS else "request"] for span in spans]
    return ChatReply.text(json.dumps(labels))


def _call_2(body: dict[str, Any]) -> ChatReply:
    """Intake call 2: each statement as an assertion, with its mentions from STATEMENTS."""
    defs = body["format"]["$defs"]
    statements = [defs[f"s{n}"]["anyOf"][0]["prefixItems"][1]["const"] for n in range(1, len(defs))]
    items: list[list[Any]] = [[3, s] for s in statements]
    for statement in statements:
        items += STATEMENTS[statement]
    return ChatReply.text(json.dumps(items))


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """A generous wait for a thought, so a busy machine never defers an expected one a turn."""
    return {CONF_SURFACER_WAIT: 10}


@pytest.fixture
def fake(fake_ollama: FakeOllama) -> FakeOllama:
    """The fake with both intake calls scripted (STATEMENTS); renders are scripted per test."""
    fake_ollama.when(is_call_1, _call_1)
    fake_ollama.when(is_call_2, _call_2)
    return fake_ollama


async def learn_maria(hass: HomeAssistant, fake: FakeOllama) -> int:
    """An anonymous mode-2 turn admits MARIA; returns the id of its assertion row."""
    admitted = async_capture_events(hass, EVENT_ADMITTED)
    await converse_and_wait_for_background(hass, MARIA)
    assert [(e.data["mode"], len(e.data["ids"])) for e in admitted] == [("automatic", 4)]
    assert renders(fake) == []  # the store was empty when the turn began: nothing to cue
    names = await StoreMemoryView(memory(hass).store).known_names(None)
    assert names == ["Maria", "walks the dog"]  # participant and task mentions
    return admitted[0].data["ids"][1]  # source, assertion, participant mention, task mention


def thought_sensor(hass: HomeAssistant) -> tuple[str, dict[str, Any]]:
    """State and attributes of the last-thought sensor."""
    found = hass.states.get(LAST_THOUGHT)
    assert found is not None
    return found.state, dict(found.attributes)


# -- 1. a verified thought ------------------------------------------------------------------------
@pytest.mark.usefixtures("qualified", "setup_alto")
async def test_named_entity_surfaces_a_verified_thought(
    hass: HomeAssistant, fake: FakeOllama
) -> None:
    """A named entity surfaces a verified thought into the turn's own call, kept after."""
    assertion = await learn_maria(hass, fake)
    fake.when(is_render, THOUGHT)
    thoughts = async_capture_events(hass, EVENT_THOUGHT)

    result = await converse_and_wait_for_background(hass, ASKED)
    assert spoken(result) == REPLY

    (render,) = renders(fake)
    assert render["model"] == CHAT_MODEL
    assert RENDER_OPTIONS == {"temperature": 0.1, "num_predict": 160}
    # The chat model's one context window, as every call to it has: no reload between calls.
    assert render["options"] == {**RENDER_OPTIONS, "num_ctx": 8192}
    assert render["messages"] == render_messages(ASKED, MARIA_PHRASE, [])
    assert render["messages"][0]["content"] == SYSTEM_INSTRUCTION
    assert f'Maria:\n- "{MARIA}"' in render["messages"][1]["content"]

    # Ready well within the default wait (1.5 s): it joined this turn's own call, before the
    # user's message, as an assistant message holding exactly the verified thought.
    current = conversational(fake)[-1]
    assert dialogue(current) == [
        {"role": "assistant", "content": THOUGHT},
        {"role": "user", "content": ASKED},
    ]
    assert [e.data for e in thoughts] == [
        {
            "verdict": "surfaced",
            "private": False,
            "source_ids": [str(assertion)],
            "failure_modes": [],
            "attempts": 1,
        }
    ]
    value, attributes = thought_sensor(hass)
    assert value == THOUGHT
    assert attributes["thought"] == THOUGHT
    assert attributes["source_ids"] == [str(assertion)]
    assert attributes["last_verdict"] == "surfaced"
    assert attributes["last_failure_modes"] == []

    # It stays in the conversation: the next request still carries it, once, where it arose.
    await converse_and_wait_for_background(hass, THANKS, result.conversation_id)
    assert len(renders(fake)) == 1  # "Thank you." names nobody: no render
    assert dialogue(conversational(fake)[-1]) == [
        {"role": "assistant", "content": THOUGHT},
        {"role": "user", "content": ASKED},
        {"role": "assistant", "content": REPLY},
        {"role": "user", "content": THANKS},
    ]
    assert len(thoughts) == 1


# -- 2. a fabricated render -----------------------------------------------------------------------
FABRICATED = "I remember Maria walks the cat every evening."
FABRICATED_AGAIN = "I remember Maria feeds the cat at noon."


def _fabricating(body: dict[str, Any]) -> ChatReply:
    """A render that words the thought untraceably, both times."""
    return ChatReply.text(FABRICATED if len(body["messages"]) == 2 else FABRICATED_AGAIN)


@pytest.mark.usefixtures("qualified", "setup_alto")
async def test_fabricated_render_is_regenerated_once_then_dropped(
    hass: HomeAssistant, fake: FakeOllama
) -> None:
    """An untraceable thought is regenerated once, then dropped, and never reaches the turn."""
    assertion = await learn_maria(hass, fake)
    fake.when(is_render, _fabricating)
    thoughts = async_capture_events(hass, EVENT_THOUGHT)

    result = await converse_and_wait_for_background(hass, ASKED)
    assert spoken(result) == REPLY

    first, second = renders(fake)
    assert first["messages"] == render_messages(ASKED, MARIA_PHRASE, [])
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2:] == [
        {"role": "assistant", "content": FABRICATED},
        {
            "role": "user",
            "content": "These words of your thought do not trace to the memory phrases of the "
            'person or thing they are about: "cat", "evening". Write the thought again, using '
            "only the words of the memory phrases and copying exact items exactly. If you "
            "cannot, reply with nothing.",
        },
    ]
    assert [e.data for e in thoughts] == [
        {
            "verdict": "dropped",
            "private": False,
            "source_ids": [str(assertion)],
            "failure_modes": ["untraceable"],
            "attempts": 2,
        }
    ]
    value, attributes = thought_sensor(hass)
    assert value == "unknown"
    assert attributes["thought"] is None
    assert attributes["last_verdict"] == "dropped"
    assert attributes["last_failure_modes"] == ["untraceable"]

    await converse_and_wait_for_background(hass, THANKS, result.conversation_id)
    assert len(renders(fake)) == 2
    assert dialogue(conversational(fake)[-2]) == [{"role": "user", "content": ASKED}]
    assert dialogue(conversational(fake)[-1]) == [
        {"role": "user", "content": ASKED},
        {"role": "assistant", "content": REPLY},
        {"role": "user", "content": THANKS},
    ]
    for body in conversational(fake):
        text = json.dumps(body["messages"])
        assert "cat" not in text
        assert "evening" not in text


# -- 3. the render call fails ---------------------------------------------------------------------
@pytest.mark.usefixtures("qualified", "setup_alto")
async def test_render_server_error_surfaces_nothing_and_the_turn_answers(
    hass: HomeAssistant, fake: FakeOllama
) -> None:
    """A failed render is not retried, surfaces nothing, and the turn answers."""
    await learn_maria(hass, fake)
    fake.when(is_render, ChatReply(status=500, error="model runner crashed"))
    fake.when(lambda body: body.get("stream") is True, ChatReply.text("¦She is out.¦"))
    thoughts = async_capture_events(hass, EVENT_THOUGHT)

    result = await converse_and_wait_for_background(hass, ASKED)
    assert spoken(result) == "She is out."

    assert len(renders(fake)) == 1  # an error is not regenerated
    assert dialogue(conversational(fake)[-1]) == [{"role": "user", "content": ASKED}]
    assert thoughts == []  # outcome "nothing" fires nothing
    value, attributes = thought_sensor(hass)
    assert (value, attributes["last_verdict"]) == ("unknown", None)


# -- 4. a slow render does not hold the reply ----------------------------------------------------
class TestSlowRender:
    """A render slower than `surfacer_wait` (0.2 s here) does not hold the reply."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """A short wait for the Surfacer."""
        return {CONF_SURFACER_WAIT: 0.2}

    @pytest.mark.usefixtures("qualified", "setup_alto")
    async def test_slow_render_does_not_delay_the_reply_and_lands_next_turn(
        self, hass: HomeAssistant, fake: FakeOllama
    ) -> None:
        """The reply does not wait for a slow render; its thought joins the next turn."""
        await learn_maria(hass, fake)
        fake.when(is_render, ChatReply.text(THOUGHT, delay_s=3))
        thoughts = async_capture_events(hass, EVENT_THOUGHT)

        started = time.monotonic()
        result = await converse(hass, ASKED)
        elapsed = time.monotonic() - started
        assert spoken(result) == REPLY
        assert elapsed < 2.0, elapsed  # the render takes 3 s; the reply waited at most ~0.2 s
        assert len(renders(fake)) == 1  # the render was under way when the reply came back
        assert thoughts == []
        assert dialogue(conversational(fake)[-1]) == [{"role": "user", "content": ASKED}]

        await hass.async_block_till_done(wait_background_tasks=True)  # the render finishes
        assert [e.data["verdict"] for e in thoughts] == ["surfaced"]
        assert thought_sensor(hass)[0] == THOUGHT

        await converse_and_wait_for_background(hass, THANKS, result.conversation_id)
        assert len(renders(fake)) == 1
        assert dialogue(conversational(fake)[-1]) == [
            {"role": "user", "content": ASKED},
            {"role": "assistant", "content": REPLY},
            {"role": "assistant", "content": THOUGHT},
            {"role": "user", "content": THANKS},
        ]


# -- 5. the Surfacer switched off -----------------------------------------------------------------
class TestSurfacerOff:
    """The Surfacer switched off in the options."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """The Surfacer disabled."""
        return {CONF_SURFACER_ENABLED: False}

    @pytest.mark.usefixtures("qualified", "setup_alto")
    async def test_disabled_surfacer_never_renders(
        self, hass: HomeAssistant, fake: FakeOllama
    ) -> None:
        """A disabled Surfacer never renders, whatever the store knows."""
        await learn_maria(hass, fake)  # the store knows Maria: an enabled Surfacer would render
        fake.when(is_render, THOUGHT)
        thoughts = async_capture_events(hass, EVENT_THOUGHT)

        result = await converse_and_wait_for_background(hass, ASKED)
        assert spoken(result) == REPLY
        await converse_and_wait_for_background(hass, "Maria again?", result.conversation_id)

        assert renders(fake) == []
        assert thoughts == []
        assert THOUGHT not in json.dumps(fake.chat_requests)
        assert thought_sensor(hass)[0] == "unknown"


# -- 6. another user's private memory -------------------------------------------------------------
LEAK = "I remember Maria's PIN is 4821."
BOTH = "Are Maria and Zoe home?"


@pytest.mark.usefixtures("qualified")
async def test_private_memory_never_surfaces_to_another_speaker(
    hass: HomeAssistant,
    fake: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
    hass_read_only_user: Any,
) -> None:
    """Another user's private memory never cues a speaker's render nor reaches their requests."""
    alice, bob = hass_admin_user.id, hass_read_only_user.id
    assertion = await learn_maria(hass, fake)  # household: anonymous speaker
    pin = await remember(hass, PIN, Context(user_id=alice))  # private to Alice
    # Mode 2: "Zoe" is Alice's private name.
    await converse_and_wait_for_background(hass, ZOE, context=Context(user_id=alice))
    view = StoreMemoryView(memory(hass).store)
    assert await view.known_names(alice) == ["Maria", "walks the dog", "Zoe", "feeds the cat"]
    assert await view.known_names(bob) == ["Maria", "walks the dog"]
    fake.when(is_render, LEAK)  # a model that would say the PIN if it could
    thoughts = async_capture_events(hass, EVENT_THOUGHT)

    requests_before = len(fake.chat_requests)
    bobs = await converse_and_wait_for_background(hass, BOTH, context=Context(user_id=bob))
    assert spoken(bobs) == REPLY
    bob_renders = [b for b in fake.chat_requests[requests_before:] if is_render(b)]
    # Bob's render saw only the household phrase; Zoe is no cue for him.
    assert bob_renders[0]["messages"] == render_messages(BOTH, MARIA_PHRASE, [])
    assert len(bob_renders) == 2  # the PIN traces to nothing Bob may see: regenerate, drop
    assert [e.data for e in thoughts] == [
        {
            "verdict": "dropped",
            "private": False,
            "source_ids": [str(assertion)],
            "failure_modes": ["precise"],
            "attempts": 2,
        }
    ]
    await converse_and_wait_for_background(
        hass, THANKS, bobs.conversation_id, context=Context(user_id=bob)
    )
    assert dialogue(conversational(fake)[-1]) == [
        {"role": "user", "content": BOTH},
        {"role": "assistant", "content": REPLY},
        {"role": "user", "content": THANKS},
    ]
    for body in conversational(fake)[-2:]:  # Bob's two requests, memory context included
        assert "4821" not in json.dumps(body["messages"])
        assert "feeds the cat" not in json.dumps(body["messages"])

    # Control: Alice, asking the same, may be reminded of her own memory.
    before = len(renders(fake))
    alices = await converse_and_wait_for_background(hass, BOTH, context=Context(user_id=alice))
    (alice_render,) = renders(fake)[before:]
    assert alice_render["messages"] == render_messages(
        BOTH, {"Maria": [PIN, MARIA], "Zoe": [ZOE]}, []
    )
    assert thoughts[-1].data["verdict"] == "surfaced"
    assert thoughts[-1].data["source_ids"] == [str(pin)]
    assert dialogue(conversational(fake)[-1]) == [
        {"role": "assistant", "content": LEAK},
        {"role": "user", "content": BOTH},
    ]
    assert alices.conversation_id != bobs.conversation_id


class TestLatePrivateThought:
    """A private thought that lands after the reply (`surfacer_wait` 0.2 s here)."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """A short wait for the Surfacer."""
        return {CONF_SURFACER_WAIT: 0.2}

    @pytest.mark.usefixtures("qualified", "setup_alto")
    async def test_late_private_thought_is_not_delivered_to_another_speaker(
        self, hass: HomeAssistant, fake: FakeOllama, hass_admin_user: Any, hass_read_only_user: Any
    ) -> None:
        """A late private thought reaches only its owner, even in a shared conversation."""
        alice, bob = hass_admin_user.id, hass_read_only_user.id
        await learn_maria(hass, fake)
        await remember(hass, PIN, Context(user_id=alice))
        fake.when(is_render, ChatReply.text(LEAK, delay_s=1))
        thoughts = async_capture_events(hass, EVENT_THOUGHT)

        alices = await converse(hass, ASKED, context=Context(user_id=alice))
        assert dialogue(conversational(fake)[-1]) == [{"role": "user", "content": ASKED}]
        await hass.async_block_till_done(wait_background_tasks=True)
        # Surfaced from Alice's private memory: the event (and the sensor) say so, not the words.
        assert [(e.data["verdict"], e.data["private"]) for e in thoughts] == [("surfaced", True)]
        assert "4821" not in json.dumps(hass.states.get("sensor.alto_last_thought").as_dict())

        # Bob speaks next in the same conversation (one shared session id).
        await converse_and_wait_for_background(
            hass, THANKS, alices.conversation_id, context=Context(user_id=bob)
        )
        assert "4821" not in json.dumps(conversational(fake)[-1]["messages"])
        # Alice, back in that conversation, does get her own thought.
        await converse_and_wait_for_background(
            hass, THANKS, alices.conversation_id, context=Context(user_id=alice)
        )
        assert LEAK in json.dumps(conversational(fake)[-1]["messages"], ensure_ascii=False)
