"""Turn latency: Alto against Home Assistant's built-in `ollama` conversation agent.

Run: scripts/bench, or
    .venv/bin/python -m pytest scripts/benches/bench_turn.py -q -s -p no:cacheprovider
(`ALTO_BENCH_QUICK=1` for fewer turns; `ALTO_BENCH_TURNS=N` sets the count.)

Both agents run in one real Home Assistant against one fake Ollama that streams the SAME raw reply
bytes to each, 4 characters every 10 ms, so the model's cost is identical and what differs is the
agent. The reply is marked with ¦…¦ for Alto; the built-in agent speaks the markers too, which
changes nothing about timing. Two reply scripts are measured: speech first (the reply opens with
¦), and thought first (a short unmarked thought precedes the speech, which Alto keeps silent, so
its first spoken word waits for the marker).

Per turn, a fresh conversation (so history never grows) is opened the way HA's Assist pipeline
opens it: a chat session and a chat log with a `chat_log_delta_listener`, inside which
`conversation.async_converse` runs; the agent's `async_get_chat_log` then reuses that chat log.
"first spoken delta" is the first delta carrying content that reaches the listener (what the
pipeline forwards to streaming TTS); "whole turn" is until `async_converse` returns. Turns
alternate between the agents (and which goes first), after one warm-up turn each. The event loop's
debug mode, which the test harness switches on, is switched off so the numbers resemble a real
install. The table shows medians and the Alto/built-in ratio.
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import time
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.const import CONF_EMBEDDING_MODEL, CONF_MODEL, CONF_URL, DOMAIN
from tests.fake_ollama import CHAT_MODEL, EMBED_MODEL, ChatReply, FakeOllama, last_user_text

UTTERANCE = "Should I take the dog out now or wait until later?"
SPEECH = (
    "¦It should stay dry until about six, so an early walk is the safer bet. "
    "Take a light jacket; the wind picks up after sunset.¦"
)
SCRIPTS = {
    "speech first": SPEECH,
    "thought first": "They want a walk plan; keep it short and practical. " + SPEECH,
}
CHUNK_CHARS = 4
CHUNK_DELAY_S = 0.010
FULL_TURNS = 30
QUICK_TURNS = 10


def _turns() -> int:
    if os.environ.get("ALTO_BENCH_TURNS"):
        return max(1, int(os.environ["ALTO_BENCH_TURNS"]))
    return QUICK_TURNS if os.environ.get("ALTO_BENCH_QUICK") else FULL_TURNS


@pytest.fixture
async def fake(socket_enabled: None) -> AsyncGenerator[FakeOllama]:
    """The fake model server both agents talk to."""
    server = FakeOllama()
    await server.start()
    yield server
    await server.stop()


async def _agents(hass: HomeAssistant, fake: FakeOllama) -> dict[str, str]:
    """Set up Alto and the built-in Ollama agent; their conversation entity ids by label."""
    assert await async_setup_component(hass, "homeassistant", {})
    assert await async_setup_component(hass, "conversation", {})
    alto = MockConfigEntry(
        domain=DOMAIN,
        title="Alto",
        data={CONF_URL: fake.url, CONF_MODEL: CHAT_MODEL, CONF_EMBEDDING_MODEL: EMBED_MODEL},
        options={},
    )
    builtin = MockConfigEntry(
        domain="ollama",
        title="Ollama",
        data={"url": fake.url, "model": CHAT_MODEL},
        options={},
    )
    ids: dict[str, str] = {}
    registry = er.async_get(hass)
    for label, entry in (("Alto", alto), ("built-in", builtin)):
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id), label
        await hass.async_block_till_done()
        entity_id = registry.async_get_entity_id("conversation", entry.domain, entry.entry_id)
        assert entity_id is not None, label
        ids[label] = entity_id
    return ids


async def _one_turn(hass: HomeAssistant, agent_id: str) -> tuple[float, float, str]:
    """Run one turn in a fresh conversation: (first spoken delta s, whole turn s, speech)."""
    first: list[float] = []

    def listener(_chat_log: conversation.ChatLog, delta: dict[str, Any]) -> None:
        if not first and delta.get("content"):
            first.append(time.perf_counter())

    context = Context()
    start = time.perf_counter()
    with chat_session.async_get_chat_session(hass, None) as session:
        user_input = conversation.ConversationInput(
            text=UTTERANCE,
            context=context,
            conversation_id=session.conversation_id,
            device_id=None,
            language="en",
            agent_id=agent_id,
        )
        with conversation.async_get_chat_log(
            hass, session, user_input, chat_log_delta_listener=listener
        ):
            result = await conversation.async_converse(
                hass, UTTERANCE, session.conversation_id, context, "en", agent_id
            )
    end = time.perf_counter()
    speech = result.response.speech.get("plain", {}).get("speech", "")
    assert result.response.response_type.value != "error", (agent_id, speech)
    assert first, f"{agent_id} streamed no content"
    return first[0] - start, end - start, speech


def _table(results: dict[tuple[str, str], dict[str, list[float]]], turns: int) -> str:
    head = (
        f"Turn latency — Alto vs HA's built-in `ollama` agent, one fake Ollama streaming the same "
        f"bytes ({CHUNK_CHARS}-char chunks every {CHUNK_DELAY_S * 1000:.0f} ms), "
        f"{turns} turns each, interleaved; medians"
    )
    cols = (
        f"{'reply script':<15}{'metric':<21}{'Alto ms':>10}{'built-in ms':>13}{'Alto/built-in':>15}"
    )
    lines = [head, "", cols, "-" * len(cols)]
    for script, text in SCRIPTS.items():
        for key, metric in (("first", "first spoken delta"), ("whole", "whole turn")):
            alto = statistics.median(results[script, "Alto"][key]) * 1000
            builtin = statistics.median(results[script, "built-in"][key]) * 1000
            lines.append(
                f"{script:<15}{metric:<21}{alto:>10.1f}{builtin:>13.1f}{alto / builtin:>15.2f}"
            )
        chunks = -(-len(text) // CHUNK_CHARS)
        lines.append(
            f"{'':<15}{'(stream floor)':<21}{chunks * CHUNK_DELAY_S * 1000:>10.0f}"
            f"{chunks * CHUNK_DELAY_S * 1000:>13.0f}   {chunks} chunks"
        )
    return "\n".join(lines)


async def test_turn_latency(
    hass: HomeAssistant, fake: FakeOllama, enable_custom_integrations: None
) -> None:
    """Measure both agents on both reply scripts and print the table."""
    hass.loop.set_debug(False)
    # The harness logs INFO to stderr: a line per HTTP request would bury the table.
    logging.getLogger().setLevel(logging.WARNING)
    turns = _turns()
    ids = await _agents(hass, fake)
    script = {"text": ""}

    def conversational(body: dict[str, Any]) -> bool:
        # Only the turn's own chat call streams the script; any other call (a render, intake)
        # gets the fake's quick default answer.
        return (
            body.get("stream") is not False
            and not body.get("format")
            and last_user_text(body) == UTTERANCE
        )

    fake.when(
        conversational,
        lambda _body: ChatReply.text(
            script["text"], chunk_size=CHUNK_CHARS, chunk_delay_s=CHUNK_DELAY_S
        ),
    )
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    for name, text in SCRIPTS.items():
        script["text"] = text
        spoken = SPEECH.strip("¦")
        for label, agent_id in ids.items():  # warm-up, and a check of what each speaks
            _, _, speech = await _one_turn(hass, agent_id)
            expected = spoken if label == "Alto" else text
            assert speech == expected, (label, speech)
            results[name, label] = {"first": [], "whole": []}
        order = list(ids.items())
        for _ in range(turns):
            for label, agent_id in order:
                first, whole, _ = await _one_turn(hass, agent_id)
                results[name, label]["first"].append(first)
                results[name, label]["whole"].append(whole)
            order.reverse()
    print("\n" + _table(results, turns) + "\n", file=sys.__stdout__, flush=True)
