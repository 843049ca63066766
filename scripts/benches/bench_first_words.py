"""Time to the first spoken word: Alto against HA's built-in `ollama` agent, through a real Assist
pipeline, on a real small model.

Run: scripts/bench, or
    .venv/bin/python -m pytest scripts/benches/bench_first_words.py -q -s -p no:cacheprovider
(`ALTO_BENCH_QUICK=1`: the first QUICK_UTTERANCES utterances only; `ALTO_BENCH_SHARED_CACHE=1`:
see below.)

One Home Assistant holds both agents on SmolLM2-135M (tests/local_model.py, on the CPU), each
behind its own Assist pipeline (text in, the conversation stage only, as the pipeline websocket
runs `assist_pipeline/run` with start and end stage `intent`). The 25 household utterances of the
three-ways bench (bench_real_model.py) are said to both, interleaved turn by turn (Alto, built-in,
Alto, built-in…) so drift on the shared CPU hits both; each agent keeps one conversation for all
of them, after one warm-up turn each in a conversation of its own.

Per turn, from the moment the pipeline is validated and run:
- first word: the first `intent-progress` event whose `chat_log_delta` carries assistant content,
  what the pipeline feeds a streaming TTS engine; a turn that streamed nothing speaks its
  `intent-end` speech, so then this is `intent-end`;
- TTS start: when HA's pipeline would start streaming TTS by its own rule (more than
  STREAM_RESPONSE_CHARS assistant characters, or a tool call after some), else `intent-end`, when
  it synthesizes the whole reply;
- end: `run-end`;
- the model calls the server saw from the start to `run-end` (`/api/chat`, by kind, and
  `/api/embed`), the prompt tokens each chat call evaluated (`prompt_eval_count`: not reused from
  the server's cache), and the model's own time (prompt evaluation plus generation);
- later: the chat calls after `run-end`, until the server has been idle QUIET_S seconds (Alto's
  background passes start a breather after the turn); nobody speaks before that, so neither
  agent's turn waits behind the other's background work, and that wait is not timed.

The local server, like an Ollama model slot, keeps one prompt cache, which the other agent's
calls would replace between two turns of one agent. So before each turn the agent's own last call
(its background calls included) is sent again for one token, untimed: the turn's prompt finds the
cache as it would with this agent alone on the server (its last reply's tokens aside). Then the
built-in agent recomputes only what its history gained; Alto's reply call follows its own executor
and background calls, whose prompts differ, as it would at home. `ALTO_BENCH_SHARED_CACHE=1` skips
this: each turn then follows the other agent's calls and both recompute their whole prompt.

Printed: a row per utterance, then the median and 90th percentile per agent and their ratios.
Nothing is asserted (a bench, not a test).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import patch

from homeassistant.components.assist_pipeline import (
    Pipeline,
    PipelineEvent,
    PipelineEventType,
    PipelineInput,
    PipelineRun,
    PipelineStage,
)
from homeassistant.components.assist_pipeline.default_pipeline import STREAM_RESPONSE_CHARS
from homeassistant.components.assist_pipeline.pipeline import KEY_ASSIST_PIPELINE
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import Platform
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.setup import async_setup_component

from custom_components.alto.const import CONF_MODEL
from scripts.benches.harness import add_alto, agent_of, quiet_home
from tests.integration.helpers import add_builtin_ollama
from tests.integration.test_real_model import HOUSEHOLD
from tests.local_model import CHAT_MODEL, EMBED_MODEL, LocalOllama

QUIET_S = 3.0  # Alto's default breather (2 s) and a second: by then a background pass has begun
QUIET_CAP_S = 300.0  # the longest wait for quiet between two turns
QUICK_UTTERANCES = 8
WARM_UP = "Hello."
PLATFORMS = [Platform.LIGHT, Platform.LOCK, Platform.COVER, Platform.CLIMATE, Platform.SWITCH]


@dataclass(frozen=True)
class Call:
    """One chat call of a turn: its kind (`_kind`), the prompt tokens it evaluated (not reused
    from the server's cache), the tokens it generated, and the model's seconds on each."""

    kind: str
    tokens: int
    generated: int
    prompt_s: float
    generate_s: float


@dataclass
class Turn:
    """What one pipeline run took (seconds from its start) and what it asked of the model."""

    first_s: float
    tts_s: float
    end_s: float
    reply_call_s: float | None  # when the reply's chat call reached the server
    reply_chars: tuple[int, int]  # the reply call's system messages' characters, and the rest's
    streamed: bool  # some assistant content arrived before intent-end
    restarted: bool  # HA had ended the conversation (5 minutes idle): a fresh one began
    error: str | None  # what a failed turn said (an error event, or an error response)
    calls: list[Call]  # the turn's chat calls, in order
    embeds: int
    later: list[str] = field(default_factory=list)  # kinds of the chat calls after run-end
    last_call: dict[str, Any] | None = None  # the agent's last chat request, later ones included

    @property
    def model_s(self) -> float:
        """The model's own time within the turn."""
        return sum(c.prompt_s + c.generate_s for c in self.calls)


def _kind(body: dict[str, Any]) -> str:
    """Which of an agent's calls a chat request is, from its shape.

    speak: the streamed reply; act: Alto's executor (a schema, greedy, no seed); prefill: one
    token that puts the conversation back in the prompt cache; render: the Surfacer's thought
    (not streamed, no schema); pass: a schema with a fixed seed (memory intake and the
    background passes).
    """
    if body.get("stream") is not False:
        return "speak"
    if (body.get("options") or {}).get("num_predict") == 1:
        return "prefill"
    if not body.get("format"):
        return "render"
    return "pass" if "seed" in (body.get("options") or {}) else "act"


def _chars(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """Characters in the system messages, and in the others."""
    system = sum(len(m.get("content") or "") for m in messages if m.get("role") == "system")
    return system, sum(len(m.get("content") or "") for m in messages) - system


def _utterances() -> list[str]:
    return HOUSEHOLD[:QUICK_UTTERANCES] if os.environ.get("ALTO_BENCH_QUICK") else HOUSEHOLD


async def _pipeline(hass: HomeAssistant, agent_id: str) -> Pipeline:
    """A text-only Assist pipeline whose conversation engine is `agent_id`."""
    return await hass.data[KEY_ASSIST_PIPELINE].pipeline_store.async_create_item(
        {
            "name": agent_id,
            "language": "en",
            "conversation_engine": agent_id,
            "conversation_language": "en",
            "prefer_local_intents": False,
            "stt_engine": None,
            "stt_language": None,
            "tts_engine": None,
            "tts_language": None,
            "tts_voice": None,
            "wake_word_entity": None,
            "wake_word_id": None,
        }
    )


async def _turn(
    hass: HomeAssistant,
    server: LocalOllama,
    pipeline: Pipeline,
    text: str,
    *,
    conversation_id: str | None,
    context: Context,
) -> tuple[Turn, str]:
    """One utterance through `pipeline`: what it took, and the conversation id to continue."""
    marks: dict[str, float] = {}
    role: str | None = None
    chars = 0
    error: str | None = None
    seen = (len(server.requests), len(server.results))
    at_end = seen

    def on_event(event: PipelineEvent) -> None:
        nonlocal role, chars, error, at_end
        now = time.perf_counter()
        data = event.data or {}
        if event.type is PipelineEventType.INTENT_PROGRESS:
            delta = data.get("chat_log_delta") or {}
            role = delta.get("role") or role
            if role != "assistant":
                return
            content = delta.get("content") or ""
            if content:
                marks.setdefault("first", now)
            # The pipeline's own rule for starting a streaming TTS engine.
            start = chars > 0 and bool(delta.get("tool_calls"))
            chars += len(content)
            if start or chars > STREAM_RESPONSE_CHARS:
                marks.setdefault("tts", now)
        elif event.type is PipelineEventType.INTENT_END:
            marks["intent_end"] = now
            response = (data.get("intent_output") or {}).get("response") or {}
            if response.get("response_type") == "error":
                error = response.get("speech", {}).get("plain", {}).get("speech", "error")
        elif event.type is PipelineEventType.ERROR:
            error = f"{data.get('code')}: {data.get('message')}"
        elif event.type is PipelineEventType.RUN_END:
            marks["end"] = now
            at_end = (len(server.requests), len(server.results))

    run = PipelineRun(
        hass,
        context=context,
        pipeline=pipeline,
        start_stage=PipelineStage.INTENT,
        end_stage=PipelineStage.INTENT,
        event_callback=on_event,
    )
    started = time.perf_counter()
    with chat_session.async_get_chat_session(hass, conversation_id) as session:
        said = PipelineInput(run=run, session=session, intent_input=text)
        await said.validate()
        await said.execute()
        restarted = conversation_id not in (None, session.conversation_id)
        conversation_id = session.conversation_id
    spoken_whole = marks.get("intent_end", marks["end"])
    chat = [
        (_kind(body), server.arrived[n])
        for n, (path, body) in enumerate(server.requests[seen[0] : at_end[0]], seen[0])
        if path == "/api/chat"
    ]
    # One model worker: a turn's calls finish in the order they came (none is refused here).
    calls = [
        Call(
            kind,
            r.prompt_eval_count,
            r.eval_count,
            r.prompt_eval_duration / 1e9,
            r.eval_duration / 1e9,
        )
        for (kind, _), r in zip(chat, server.results[seen[1] : at_end[1]], strict=False)
    ]
    reply = next(
        (
            body
            for path, body in server.requests[seen[0] : at_end[0]]
            if path == "/api/chat" and _kind(body) == "speak"
        ),
        {},
    )
    turn = Turn(
        first_s=marks.get("first", spoken_whole) - started,
        tts_s=marks.get("tts", spoken_whole) - started,
        end_s=marks["end"] - started,
        reply_call_s=next((at - started for kind, at in chat if kind == "speak"), None),
        reply_chars=_chars(reply.get("messages") or []),
        streamed="first" in marks,
        restarted=restarted,
        error=error,
        calls=calls,
        embeds=sum(path == "/api/embed" for path, _ in server.requests[seen[0] : at_end[0]]),
    )
    await _quiet(hass, server)
    turn.later = [_kind(body) for path, body in server.requests[at_end[0] :] if path == "/api/chat"]
    turn.last_call = next(
        (body for path, body in reversed(server.requests[seen[0] :]) if path == "/api/chat"), None
    )
    return turn, conversation_id


async def _restore(hass: HomeAssistant, server: LocalOllama, body: dict[str, Any]) -> None:
    """Leave the server's prompt cache as the agent's own last call left it, untimed.

    The same request again, for one token: the next prompt then finds what it would find were
    this agent alone on the model server, short of the last reply's tokens.
    """
    again = {**body, "stream": False, "options": {**(body.get("options") or {}), "num_predict": 1}}
    async with async_get_clientsession(hass).post(f"{server.url}/api/chat", json=again) as answer:
        await answer.read()
    await _quiet(hass, server)


async def _quiet(hass: HomeAssistant, server: LocalOllama) -> None:
    """Wait until the model server has had no request and no generation for QUIET_S."""
    await hass.async_block_till_done()
    loop = asyncio.get_running_loop()
    started = idle_since = loop.time()
    seen = len(server.requests)
    while loop.time() - idle_since < QUIET_S and loop.time() - started < QUIET_CAP_S:
        await asyncio.sleep(0.1)
        if server.in_flight or len(server.requests) != seen:
            seen, idle_since = len(server.requests), loop.time()
    await hass.async_block_till_done()


async def _agents(hass: HomeAssistant, server: LocalOllama) -> dict[str, str]:
    """Alto and the built-in agent with their defaults (both a context of 8,192 tokens), set up;
    Alto's model timeout is long enough for the CPU."""
    alto = await add_alto(hass, server.url, CHAT_MODEL, EMBED_MODEL, {"request_timeout": 600})
    async_expose_entity(hass, "conversation", "lock.front_door", True)
    builtin = await add_builtin_ollama(hass, server.url, {CONF_MODEL: CHAT_MODEL})
    return {"Alto": agent_of(hass, alto), "built-in": builtin}


def _p50_p90(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), statistics.quantiles(values, n=10)[-1]


def _row(turn: Turn) -> str:
    flag = "!" if turn.error else ("" if turn.streamed else "*")
    flag += "~" if turn.restarted else ""
    reply = "-" if turn.reply_call_s is None else f"{turn.reply_call_s:.2f}"
    later = f" +{len(turn.later)}" if turn.later else ""
    calls = "+".join(c.kind for c in turn.calls) + later
    tokens = "+".join(str(c.tokens) for c in turn.calls) or "-"
    return (
        f"{turn.first_s:>6.2f}{flag:<2} {turn.end_s:>6.2f} {reply:>5} {turn.model_s:>6.2f} "
        f"{calls:<18.18} {tokens:<12.12}"
    )


def _print_turns(texts: list[str], turns: dict[str, list[Turn]]) -> None:
    half = f"{'first':>6}   {'end':>6} {'call':>5} {'model':>6} {'chat calls':<18} "
    half += f"{'prompt tok':<12}"
    print(f"{'':>2} {'utterance':<24} | Alto {half} | built-in {half}")
    for n, text in enumerate(texts):
        alto, builtin = turns["Alto"][n], turns["built-in"][n]
        print(f"{n + 1:>2} {text:<24.24} |      {_row(alto)} |          {_row(builtin)}")
    print(
        "first: * nothing streamed, spoken whole at intent-end; ! the turn failed; ~ a new "
        "conversation (HA ends one after 5 idle minutes). call: when the "
        "reply's chat call reached the model server. model: the model's prompt and generation "
        "time within the turn. +N: chat calls after run-end."
    )


def _print_summary(turns: dict[str, list[Turn]]) -> None:
    print(
        f"\n{'agent':<10} {'first word':>15} {'TTS start':>15} {'end':>15} {'reply call':>10} "
        f"{'chat calls/turn':>15} {'embeds/turn':>11} {'later calls':>11}"
    )
    print(
        f"{'':<10} {'p50     p90':>15} {'p50     p90':>15} {'p50     p90':>15} {'p50':>10} "
        f"{'mean   max':>15}"
    )
    summary: dict[str, tuple[float, ...]] = {}
    for label, kept in turns.items():
        first, tts, end = (
            _p50_p90([getattr(t, key) for t in kept]) for key in ("first_s", "tts_s", "end_s")
        )
        reply = [t.reply_call_s for t in kept if t.reply_call_s is not None]
        calls = [len(t.calls) for t in kept]
        summary[label] = (*first, *tts, *end)
        print(
            f"{label:<10} {first[0]:>7.2f} {first[1]:>7.2f} {tts[0]:>7.2f} {tts[1]:>7.2f} "
            f"{end[0]:>7.2f} {end[1]:>7.2f} {statistics.median(reply) if reply else 0:>10.2f} "
            f"{statistics.mean(calls):>9.2f} {max(calls):>5} "
            f"{statistics.mean(t.embeds for t in kept):>11.2f} "
            f"{sum(len(t.later) for t in kept):>11}"
        )
    ratios = [a / b for a, b in zip(summary["Alto"], summary["built-in"], strict=True)]
    print(f"{'Alto/b-in':<10} " + " ".join(f"{r:>7.2f}" for r in ratios))


def _print_calls(turns: dict[str, list[Turn]]) -> None:
    print(
        f"\n{'agent':<10} {'call':<7} {'calls':>5} {'prompt tok p50':>14} {'prompt s mean':>13} "
        f"{'generated p50':>13} {'max':>5} {'generate s mean':>15} {'model s total':>13}"
    )
    for label, kept in turns.items():
        by_kind: dict[str, list[Call]] = {}
        for call in (c for t in kept for c in t.calls):
            by_kind.setdefault(call.kind, []).append(call)
        for kind, calls in by_kind.items():
            print(
                f"{label:<10} {kind:<7} {len(calls):>5} "
                f"{statistics.median(c.tokens for c in calls):>14.0f} "
                f"{statistics.mean(c.prompt_s for c in calls):>13.2f} "
                f"{statistics.median(c.generated for c in calls):>13.0f} "
                f"{max(c.generated for c in calls):>5} "
                f"{statistics.mean(c.generate_s for c in calls):>15.2f} "
                f"{sum(c.prompt_s + c.generate_s for c in calls):>13.1f}"
            )
        later: dict[str, int] = {}
        for kind in (k for t in kept for k in t.later):
            later[kind] = later.get(kind, 0) + 1
        silent = sum(not t.streamed for t in kept)
        print(f"{label}: later calls by kind {later or '{}'}; {silent} turn(s) streamed nothing")
        chars = [t.reply_chars for t in kept]
        jump, at = max((b[0] - a[0], n + 2) for n, (a, b) in enumerate(itertools.pairwise(chars)))
        print(
            f"{label}: reply prompt characters, system messages / conversation: turn 1 "
            f"{chars[0][0]} / {chars[0][1]}, turn {len(chars)} {chars[-1][0]} / {chars[-1][1]}; "
            f"largest growth of the system messages: {jump:+} at turn {at}"
        )
        for n, turn in enumerate(kept):
            if turn.error:
                print(f"{label}: turn {n + 1} failed: {turn.error}")


async def test_first_spoken_word(
    hass: HomeAssistant,
    local_ollama: LocalOllama,
    hass_admin_user: Any,
    enable_custom_integrations: None,
    tmp_path: Path,
) -> None:
    """Print the tables; nothing is asserted (a bench, not a test)."""
    server = local_ollama
    await server.preload()
    await quiet_home(hass, tmp_path)
    with patch(
        "homeassistant.components.demo.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM", PLATFORMS
    ):
        assert await async_setup_component(hass, "demo", {})
        await hass.async_block_till_done()
    agents = await _agents(hass, server)
    assert await async_setup_component(hass, "assist_pipeline", {})
    pipelines = {label: await _pipeline(hass, agent) for label, agent in agents.items()}
    user = Context(user_id=hass_admin_user.id)
    own_cache = not os.environ.get("ALTO_BENCH_SHARED_CACHE")
    last_call: dict[str, dict[str, Any] | None] = {}
    for label, pipeline in pipelines.items():
        warm, _ = await _turn(hass, server, pipeline, WARM_UP, conversation_id=None, context=user)
        last_call[label] = warm.last_call

    texts = _utterances()
    conversations: dict[str, str | None] = dict.fromkeys(agents)
    turns: dict[str, list[Turn]] = {label: [] for label in agents}
    for text in texts:
        for label, pipeline in pipelines.items():  # Alto, built-in, Alto, built-in…
            if own_cache and (body := last_call[label]) is not None:
                await _restore(hass, server, body)
            turn, conversations[label] = await _turn(
                hass, server, pipeline, text, conversation_id=conversations[label], context=user
            )
            last_call[label] = turn.last_call or last_call[label]
            turns[label].append(turn)
    channel = hass.config_entries.async_entries("alto")[0].runtime_data.settings.reply_channel
    print(
        f"\n{len(texts)} household utterances through an Assist pipeline (text, intent stage), "
        f"{CHAT_MODEL} on this CPU, interleaved; Alto's reply channel: {channel.value}; prompt "
        f"cache: {'each agent its own' if own_cache else 'shared'}; seconds"
    )
    _print_turns(texts, turns)
    _print_summary(turns)
    _print_calls(turns)
