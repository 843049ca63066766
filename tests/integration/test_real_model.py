"""A 25-turn household conversation with a real model: invariants that hold for ANY output.

SmolLM2-135M on the CPU (tests/local_model.py) answers whatever it answers; nothing here checks
what it says, only what Alto lets through: no action spoken as done that no effector did, no
internal id or memory label spoken, no marker character spoken, no device changed without an
effector record, `action_done` exactly when an effector ran, and no error logged by Alto.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import Context, Event, HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events

from custom_components.alto.channel.speech_gate import MEMORY_KINDS, claims_done
from custom_components.alto.const import CONF_EMBEDDING_MODEL, CONF_MODEL, CONF_URL, DOMAIN

from ..local_model import CHAT_MODEL, EMBED_MODEL, LocalOllama
from .helpers import EVENT, converse_and_settle, speech

pytestmark = pytest.mark.real_model

HOUSEHOLD = [
    "Hi, who are you?",
    "Turn on the bed light please.",
    "Is the front door locked?",
    "Unlock the front door.",
    "yes",
    "My sister Ana visits every Sunday.",
    "When does Ana visit?",
    "Switch off the kitchen lights.",
    "Open the garage door.",
    "no",
    "The bins go out on Thursday evening.",
    "What's the temperature in the living room?",
    "Set the heating to 21 degrees.",
    "Thanks, that's all for now.",
    "Close the living room window.",
    "Lock the front door.",
    "Did you turn off the lights?",
    "Remember that the spare key is under the blue pot.",
    "Where is the spare key?",
    "Turn on the decorative switch.",
    "Is the garage door open?",
    "What do you know about Ana?",
    "Dim the bed light to 30 percent.",
    "Good night.",
    "Turn everything off.",
]
WATCHED_DOMAINS = ("light", "lock", "cover", "switch", "climate")
INTERNAL = re.compile(rf"\b[0-9a-f]{{32}}\b|\[(?:{'|'.join(MEMORY_KINDS)});", re.I)
EFFECTED = {"executed", "confirmed"}


def _watched(hass: HomeAssistant) -> dict[str, str]:
    return {
        state.entity_id: state.state
        for state in hass.states.async_all(WATCHED_DOMAINS)
        if not state.entity_id.startswith("climate.")  # demo climates drift on their own
    } | {
        state.entity_id: str(state.attributes.get("temperature"))
        for state in hass.states.async_all("climate")
    }


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


async def test_household_conversation_keeps_every_invariant(
    hass: HomeAssistant,
    demo_home: None,
    local_ollama: LocalOllama,
    hass_admin_user: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """25 household turns with the real model: Alto's guarantees hold whatever it answers."""
    await local_ollama.preload()  # loaded before the first turn, not during it
    assert await async_setup_component(hass, "conversation", {})
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Alto",
        data={
            CONF_URL: local_ollama.url,
            CONF_MODEL: CHAT_MODEL,
            CONF_EMBEDDING_MODEL: EMBED_MODEL,
        },
        options={"request_timeout": 240, "num_ctx": 2048},
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    async_expose_entity(hass, "conversation", "lock.front_door", True)
    intents: list[Event] = async_capture_events(hass, EVENT)
    context = Context(user_id=hass_admin_user.id)
    caplog.set_level(logging.WARNING)
    conversation_id = None
    report = []
    for text in HOUSEHOLD:
        before, seen = _watched(hass), len(intents)
        result = await converse_and_settle(hass, text, conversation_id, context=context)
        conversation_id = result.conversation_id
        turn_intents = [event.data for event in intents[seen:]]
        acted = {
            i["entity_id"]
            for i in turn_intents
            if i["verdict"] in EFFECTED and i["service"] != "get_device_state"
        }
        said = speech(result)
        report.append((text, said, [i["verdict"] for i in turn_intents]))

        assert "¦" not in said
        assert "¤" not in said
        assert not INTERNAL.search(said), said
        if not acted:
            assert not [s for s in _sentences(said) if claims_done(s)], said
        changed = {e for e, state in _watched(hass).items() if before.get(e) != state}
        assert changed <= acted, (text, changed, turn_intents)
        allowed = {"action_done", "error"} if acted else {"query_answer", "error"}
        assert result.response.response_type.value in allowed, (text, said)

    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and "alto" in r.name]
    assert errors == [], [r.getMessage() for r in errors]
    print("\n".join(f"{t!r} -> {s!r} {v}" for t, s, v in report))
