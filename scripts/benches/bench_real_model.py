"""Alto with a real model: 25 household utterances, three ways, one real Home Assistant.

Run: scripts/bench, or
    .venv/bin/python -m pytest scripts/benches/bench_real_model.py -q -s -p no:cacheprovider

SmolLM2-135M (tests/local_model.py, on the CPU) answers the same 25 utterances (the real-model
test's household conversation) three times: Alto with the marks channel, Alto with the JSON
answer, and Home Assistant's built-in `ollama` agent on the same model. Printed per run:
- separated: replies whose raw model output kept speech apart (marks present; or a JSON answer
  with a speech field), out of 25;
- claims before / after: sentences reporting a device action as done when no effector succeeded
  in that turn, in the model's speech before Alto's gate, and in what was spoken after it;
- recall: of the three questions about earlier facts, the answers naming the fact;
- the median and 90th percentile whole-turn time.

`test_prompt_time_with_stepped_trims` measures what trimming the history in steps saves: the
prompt tokens the model recomputes and its prompt time per turn, once the history is full.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import Platform
from homeassistant.core import Context, Event, HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import async_capture_events

from custom_components.alto.channel.speech_gate import claims_done
from custom_components.alto.const import CONF_MODEL
from scripts.benches.harness import add_alto, quiet_home
from tests.integration.helpers import add_builtin_ollama
from tests.integration.test_real_model import HOUSEHOLD
from tests.local_model import CHAT_MODEL, EMBED_MODEL, LocalOllama

RECALL = {"When does Ana visit?": "sunday", "Where is the spare key?": "pot"}
RECALL |= {"What do you know about Ana?": "sunday"}
EFFECTED = {"executed", "confirmed"}
DEVICE_WORDS = ("turn", "switch", "open", "close", "lock", "dim", "set ", "door", "light")


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _raw_speech(raw: str, channel: str) -> tuple[bool, str]:
    """Whether the raw output kept speech apart, and the speech it carried."""
    if channel == "json":
        try:
            answer = json.loads(raw)
        except ValueError:
            return False, ""
        speech = answer.get("speech") if isinstance(answer, dict) else None
        return isinstance(speech, str), speech if isinstance(speech, str) else ""
    spans = re.findall("\u00a6(.*?)\u00a6", raw, re.S)
    return bool(spans), " ".join(spans) if spans else raw


async def _run(
    hass: HomeAssistant, server: LocalOllama, agent: str, channel: str, user: Context
) -> dict[str, Any]:
    intents: list[Event] = async_capture_events(hass, "alto_intent_captured")
    conversation_id = None
    times, separated, before, after, recalled = [], 0, 0, 0, 0
    for text in HOUSEHOLD:
        seen_intents, seen_results = len(intents), len(server.results)
        started = time.monotonic()
        result = await conversation.async_converse(
            hass, text, conversation_id, user, language="en", agent_id=agent
        )
        await hass.async_block_till_done()
        times.append(time.monotonic() - started)
        conversation_id = result.conversation_id
        spoken = result.response.speech.get("plain", {}).get("speech", "")
        acted = any(e.data["verdict"] in EFFECTED for e in intents[seen_intents:])
        turn_raw = [r.text for r in server.results[seen_results:]]
        if channel != "builtin" and turn_raw:
            ok, speech = _raw_speech(turn_raw[0], channel)
            separated += ok
            before += 0 if acted else sum(claims_done(s) for s in _sentences(speech))
        elif turn_raw:
            before += 0 if acted else sum(claims_done(s) for s in _sentences(turn_raw[0]))
        after += 0 if acted else sum(claims_done(s) for s in _sentences(spoken))
        if (word := RECALL.get(text)) and word in spoken.casefold():
            recalled += 1
    return {
        "separated": separated if channel != "builtin" else None,
        "before": before,
        "after": after,
        "recall": recalled,
        "p50": statistics.median(times),
        "p90": statistics.quantiles(times, n=10)[-1],
    }


async def test_real_model_three_ways(
    hass: HomeAssistant,
    local_ollama: LocalOllama,
    hass_admin_user: Any,
    enable_custom_integrations: None,
    tmp_path: Path,
) -> None:
    """Print the table; nothing is asserted (a bench, not a test)."""
    server = local_ollama
    await server.preload()
    await quiet_home(hass, tmp_path)
    platforms = [Platform.LIGHT, Platform.LOCK, Platform.COVER, Platform.CLIMATE, Platform.SWITCH]
    with patch(
        "homeassistant.components.demo.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM", platforms
    ):
        assert await async_setup_component(hass, "demo", {})
        await hass.async_block_till_done()
    user = Context(user_id=hass_admin_user.id)
    rows = {}
    for channel in ("markers", "json"):
        options = {"request_timeout": 600, "num_ctx": 2048, "reply_channel": channel}
        entry = await add_alto(hass, server.url, CHAT_MODEL, EMBED_MODEL, options)
        async_expose_entity(hass, "conversation", "lock.front_door", True)
        rows[f"Alto, {channel}"] = await _run(hass, server, "conversation.alto", channel, user)
        assert await hass.config_entries.async_remove(entry.entry_id)
        await hass.async_block_till_done()
    agent = await add_builtin_ollama(hass, server.url, {CONF_MODEL: CHAT_MODEL, "num_ctx": 2048})
    rows["HA built-in ollama"] = await _run(hass, server, agent, "builtin", user)

    print(f"\n25 household utterances, {CHAT_MODEL} on this CPU")
    print(
        f"{'agent':<22} {'separated':>9} {'claims before':>13} {'claims after':>12} "
        f"{'recall':>6} {'p50 s':>6} {'p90 s':>6}"
    )
    for name, row in rows.items():
        separated = "-" if row["separated"] is None else f"{row['separated']}/25"
        print(
            f"{name:<22} {separated:>9} {row['before']:>13} {row['after']:>12} "
            f"{row['recall']}/{len(RECALL):<4} {row['p50']:>6.2f} {row['p90']:>6.2f}"
        )


CHAT = [text for text in HOUSEHOLD if not any(w in text.casefold() for w in DEVICE_WORDS)]
STEPS_TURNS = 40


async def _prompt_times(
    hass: HomeAssistant, server: LocalOllama, user: Context
) -> list[tuple[int, int, bool]]:
    """Per turn of STEPS_TURNS: the prompt tokens its chat call evaluated, the prompt eval ns,
    and whether the model's previous generation was the previous turn's chat call (else an
    executor call in between replaced the server's cache, whatever the prompt)."""
    conversation_id = None
    measured = []
    calls_before = 1
    for turn in range(STEPS_TURNS):
        text = f"{CHAT[turn % len(CHAT)]} (turn {turn + 1})"
        seen = len(server.results)
        result = await conversation.async_converse(
            hass, text, conversation_id, user, language="en", agent_id="conversation.alto"
        )
        await hass.async_block_till_done()
        conversation_id = result.conversation_id
        first = server.results[seen]  # the turn's own chat call comes first
        measured.append((first.prompt_eval_count, first.prompt_eval_duration, calls_before == 1))
        calls_before = len(server.results) - seen
    return measured


async def test_prompt_time_with_stepped_trims(
    hass: HomeAssistant,
    local_ollama: LocalOllama,
    hass_admin_user: Any,
    enable_custom_integrations: None,
    tmp_path: Path,
) -> None:
    """40 turns with the history trimmed in steps (as Alto does) against trimmed every turn.

    One conversation each, history kept at the default 20 turns; memory, the Surfacer and the
    background passes off, so the turn's chat call is the only model call. Printed: the prompt
    tokens the model evaluated (not reused from its cache) and the prompt time, over the turns
    once the history is full (21-40), median and total: over all of them, and over the clean
    ones (no executor call since the previous turn's chat call: the local server keeps one
    cache, as Ollama keeps one per model slot, so an executor call in between replaces it).
    """
    server = local_ollama
    await server.preload()
    await quiet_home(hass, tmp_path)
    user = Context(user_id=hass_admin_user.id)
    options = {
        "request_timeout": 600,
        "num_ctx": 4096,
        "memory_mode": 0,
        "surfacer_enabled": False,
        "reflect": {"n1_enabled": False, "reflection_enabled": False, "synthesis_enabled": False},
    }
    rows = {}
    for label, step in (("trimmed in steps", None), ("trimmed every turn", 0)):
        entry = await add_alto(hass, server.url, CHAT_MODEL, EMBED_MODEL, options)
        if step is None:
            rows[label] = await _prompt_times(hass, server, user)
        else:
            with patch("custom_components.alto.history.trim_step", return_value=step):
                rows[label] = await _prompt_times(hass, server, user)
        assert await hass.config_entries.async_remove(entry.entry_id)
        await hass.async_block_till_done()

    print(f"\n{STEPS_TURNS} turns, history 20 turns, {CHAT_MODEL}; turns 21-{STEPS_TURNS}:")
    print(
        f"{'history':<20} {'turns':>5} {'tokens p50':>10} {'tokens sum':>10} "
        f"{'prompt s p50':>12} {'prompt s sum':>12}"
    )
    for label, measured in rows.items():
        for which, kept in (("all", measured[20:]), ("clean", [m for m in measured[20:] if m[2]])):
            if not kept:
                continue
            tokens = [t for t, _, _ in kept]
            seconds = [ns / 1e9 for _, ns, _ in kept]
            print(
                f"{label + ', ' + which:<28} {len(kept):>5} {statistics.median(tokens):>10.0f} "
                f"{sum(tokens):>10} {statistics.median(seconds):>12.2f} {sum(seconds):>12.1f}"
            )
    print("clean: the turn's previous model call was the previous turn's chat call")
