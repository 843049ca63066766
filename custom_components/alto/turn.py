"""One conversational turn, top to bottom.

admission → context (history, thoughts, memory, reflections) → speak (one streamed chat call) →
act (the action organ, on the spans the speech carried) → follow-up (one more chat call, only when
a validated read needs an answer) → record. The whole turn runs inside the reflect organ's
`turn()`: a conversational turn always wins over the background passes.

What a turn costs in model calls: one chat call for its speech; one executor call per action
span the speech carried that names an action (`act_organ.commands`); one follow-up chat call
when a validated read needs an answer; and, after the turn, one token to put the conversation
back in the server's prompt cache if another call replaced it (`model.prompt_cache`). Small
talk (a greeting, thanks, good night, a joke) is therefore exactly one call, and nothing else
follows it: the Surfacer renders a thought only for an utterance that names something memory
knows (semantic recall off, the default), mode-1 memory only embeds (it never calls the chat
model), and a reflect pass runs after a turn only when the turn gave it something to read
(`reflect.heuristics.gives_work`).

Two histories, on purpose. Home Assistant's ChatLog receives what Alto says: it streams to TTS
and the UI, and the result is read from it. The model's messages come from Alto's own turn
buffer, because the model must see what the ChatLog does not hold as Alto's speech — breadcrumbs
of what the effector did, surfaced thoughts, entries private to one speaker — and must not see
what it does hold: every agent's content for this conversation id, and nothing else of Alto's
private thought channel.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.person import ATTR_USER_ID
from homeassistant.components.person import DOMAIN as PERSON_DOMAIN
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import TemplateError
from homeassistant.helpers import intent, template
from homeassistant.util import dt as dt_util
from homeassistant.util.ulid import ulid_now

from . import reply_stats
from .act_organ.organ import SpanOutcome, TurnContext
from .channel.admission import admit
from .channel.json_channel import SCHEMA, JsonChannel
from .channel.markers import MarkerChannel, neutralized
from .channel.speech_gate import SpeechGate
from .const import LOGGER
from .coordinator import AltoConfigEntry, AltoRuntime
from .errors import async_error_result
from .history import BufferEntry, TurnBuffer
from .memory.kin import Kin, relations
from .model.calls import Message
from .model.prompt_cache import Prefix
from .model_client import REPLY_TOKENS, THINKING_TOKENS, ModelFailure, classify_failure, described
from .options import ReplyChannel
from .prompt import device_states, situation, speaker_line, system_prompt
from .reflect_organ.organ import TurnReflection, TurnReflector

type Messages = list[dict[str, str]]


async def async_run_turn(
    hass: HomeAssistant,
    entry: AltoConfigEntry,
    agent_id: str,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
) -> conversation.ConversationResult:
    """Answer one user utterance; never raises for a model, device or input failure.

    While it runs, the reflect organ's background passes wait; the one in flight is cancelled
    and runs again after the turn.
    """
    with entry.runtime_data.reflection.turn(user_input.context.user_id) as reflecting:
        return await _run_turn(hass, entry, agent_id, user_input, chat_log, reflecting=reflecting)


async def _run_turn(
    hass: HomeAssistant,
    entry: AltoConfigEntry,
    agent_id: str,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    *,
    reflecting: TurnReflector,
) -> conversation.ConversationResult:
    """The turn itself, steps 1 to 6 of the module docstring."""
    runtime = entry.runtime_data
    settings = runtime.settings
    conversation_id = chat_log.conversation_id

    # 1. Admission: a refused utterance is answered, and nothing of it is sent or stored.
    if (refusal := admit(user_input.text)) is not None:
        _trace({"admission": refusal.value})
        return await async_error_result(hass, user_input, conversation_id, refusal.value)
    turn = TurnContext(
        user_input.context, conversation_id, user_input.device_id, user_input.language
    )
    actor = user_input.context.user_id
    speaker = (actor, user_input.device_id)
    buffer = runtime.buffers.get(conversation_id, speaker)

    # 2. Context. A held confirm-first call is settled by this utterance first (only the user's
    # own next utterance can confirm it); its breadcrumb goes before this turn's user message,
    # where "Earlier this session" reads true. Thoughts, the memory selection and the speaker's
    # reflections run side by side; the reply waits for a thought at most `surfacer_wait`. An
    # urgent observation of the background passes joins as Alto's noticing, and the buffer
    # keeps it only once it was delivered (step 6).
    held = await runtime.organ.async_resolve_pending(user_input.text, turn)
    buffer.add(*_breadcrumbs([held] if held else []))
    thoughts, recalled, reflected, speaking = await asyncio.gather(
        runtime.thoughts.async_surface(
            user_input.text, actor, (conversation_id, speaker), buffer.episode()
        ),
        runtime.memory.async_turn_context(user_input.text, viewer=actor)
        if runtime.memory
        else _nothing(),
        reflecting.async_context(),
        _async_speaker(hass, runtime.settings.family, actor),
    )
    buffer.add(*thoughts)
    # What changes from turn to turn comes after the history: the prefix stays the same.
    messages = [
        {"role": "system", "content": _system_prompt(hass, runtime)},
        *buffer.messages(actor),
        *({"role": e.role, "content": e.content} for e in reflected.noticing),
        {"role": "system", "content": _situation(runtime, reflected, speaking)},
        *([{"role": "system", "content": neutralized(recalled)}] if recalled else []),
        {"role": "user", "content": user_input.text},
    ]

    # 3. Speak: one streamed chat call; speech streams into the ChatLog as it arrives, word by
    # word through the gate: nothing internal is spoken, and no action is spoken as done unless
    # an effector of this turn did it (only a confirmed held call, so far).
    start = len(chat_log.content)
    done = [held] if held else []
    gate = SpeechGate(lambda: any(o.breadcrumb for o in done), user_input.language)
    channel = _channel(runtime)
    usage = _Usage()
    if failure := await _speak(
        runtime, chat_log, agent_id, messages, channel=channel, gate=gate, usage=usage
    ):
        return await _failed(hass, runtime, user_input, chat_log, failure=failure, outcomes=[])

    # 4. Act: the spans go to the action organ, outside any model timeout (device calls are
    # not model calls). Alto's next words: a withheld "Done." once an effector did succeed,
    # then any confirm-first question.
    outcomes = (
        await runtime.organ.async_handle_spans(channel.actions, turn, prompt=messages)
        if channel.actions
        else []
    )
    done += outcomes
    if late := " ".join(filter(None, [gate.backed(), *(o.question for o in outcomes)])):
        await _say(chat_log, agent_id, _pieces(late))

    # 5. Follow-up: a validated read is answered by exactly one more call that sees the state.
    # Spans in this call are traced, never dispatched.
    if reads := [(o.entity_id or "", o.state) for o in outcomes if o.state is not None]:
        spoken_so_far = _spoken(chat_log, start)
        follow_up = [
            *messages,
            {"role": "assistant", "content": spoken_so_far},
            {"role": "system", "content": device_states(reads, json_channel=_json(runtime))},
        ]
        second = _channel(runtime)
        if failure := await _speak(
            runtime, chat_log, agent_id, follow_up, channel=second, gate=gate, usage=usage
        ):
            return await _failed(
                hass, runtime, user_input, chat_log, failure=failure, outcomes=outcomes
            )
        _trace({"follow_up_actions_ignored": second.actions})

    # 6. Record: what was said, and what the effector did; the reflect organ's turn log gets
    # the effector's outcomes, never the model's words about them.
    runtime.coordinator.async_turn_succeeded()
    text = _spoken(chat_log, start)
    _trace(
        {
            "channel": "json" if isinstance(channel, JsonChannel) else "markers",
            "plain_reply_fallback": channel.used_fallback,
            "withheld": gate.withheld,
            "actions": [
                {"span": o.span, "verdict": o.verdict.value, "reason": o.reason} for o in outcomes
            ],
            # Only when they happened: how much the model thought (never what), whether it
            # ignored the format, how many sentences recited its instructions.
            **({"thinking_chars": usage.thinking_chars} if usage.thinking_chars else {}),
            **({"ignored_format": True} if _ignored_format(channel) else {}),
            **({"recited": gate.recited} if gate.recited else {}),
        }
    )
    reply_stats.async_record(
        hass,
        entry.entry_id,
        runtime.reply_stats,
        settings=settings,
        channel=channel,
    )
    LOGGER.debug(
        "Turn: channel %s, fallback %s, %d action(s) %s, memory block %s, %d withheld",
        "json" if isinstance(channel, JsonChannel) else "markers",
        channel.used_fallback,
        len(outcomes),
        [o.verdict.value for o in outcomes],
        "yes" if recalled else "no",
        len(gate.withheld),
    )
    if not text and not outcomes:
        return await async_error_result(hass, user_input, conversation_id, "model_empty_reply")
    reflecting.finished(
        utterance=user_input.text,
        reply=text,
        outcomes=done,
        conversation_id=conversation_id,
        prompt_tokens=usage.prompt_tokens,
    )
    buffer.add(*reflected.noticing)
    buffer.add(BufferEntry("user", user_input.text, "user"))
    if text:
        buffer.add(BufferEntry("assistant", text, "reply"))
    buffer.add(*_breadcrumbs(outcomes))
    buffer.trim(settings.max_history)
    runtime.prompt_cache.hold(_next_prefix(hass, runtime, buffer, actor))
    if runtime.memory is not None:
        # Journaled (one fsync, no model call) before the reply returns, so a stop or a crash
        # cannot lose it; the memory organ interprets it in the background, from the journal.
        await runtime.memory.async_accept_turn(
            user_input.text, source_id=_source_id(conversation_id), actor=actor
        )
    return _result(user_input, chat_log, text, acted=any(o.breadcrumb for o in done))


def _source_id(conversation_id: str) -> str:
    """The source id of a turn's memory, valid for any conversation id.

    Whatever the conversation id's length or characters, its digest names the conversation, and
    a ULID the turn.
    """
    digest = hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"conversation/{digest[:32]}/{ulid_now()}"


def _next_prefix(
    hass: HomeAssistant, runtime: AltoRuntime, buffer: TurnBuffer, actor: str | None
) -> Prefix:
    """What this conversation's next prompt begins with, for the server to keep.

    Built when sent, from the live buffer; sent as the reply call is, for one token.
    """
    settings = runtime.settings

    def messages() -> list[Message]:
        return [
            {"role": "system", "content": _system_prompt(hass, runtime)},
            *buffer.messages(actor),
        ]

    async def send(prefix: list[Message]) -> object:
        return await runtime.client.chat(
            model=settings.model,
            messages=prefix,
            keep_alive=settings.keep_alive,
            think=settings.think,
            options={"num_ctx": settings.num_ctx, "num_predict": 1},
        )

    return Prefix(messages=messages, send=send)


def _system_prompt(hass: HomeAssistant, runtime: AltoRuntime) -> str:
    settings = runtime.settings
    return system_prompt(
        persona=_render_persona(hass, settings.prompt),
        assistant_name=settings.assistant_name,
        json_channel=_json(runtime),
    )


async def _async_speaker(
    hass: HomeAssistant, family: Mapping[str, Kin], user_id: str | None
) -> str:
    """Who is speaking (`prompt.speaker_line`); empty for no user (a voice satellite).

    The user the turn comes from (a name said in the text proves nothing), by their person's name
    (Settings → People) or else their user's, with their family at home as the options' Family
    step told it.
    """
    if user_id is None:
        return ""
    people = hass.states.async_all(PERSON_DOMAIN)
    person = next((p for p in people if p.attributes.get(ATTR_USER_ID) == user_id), None)
    if person is None:
        user = await hass.auth.async_get_user(user_id)
        return speaker_line(user.name if user else None)
    names = {p.entity_id: p.name for p in people}
    kin = [(names[o], what) for o, what in relations(family, person.entity_id) if o in names]
    return speaker_line(person.name, kin)


def _situation(runtime: AltoRuntime, reflected: TurnReflection, speaker: str) -> str:
    return situation(
        entities=runtime.organ.index.entity_lines(),
        now=dt_util.now(),
        frame_of_mind=reflected.frame_of_mind,
        impressions=reflected.impressions,
        speaker=speaker,
    )


def _json(runtime: AltoRuntime) -> bool:
    """Whether the conversational model answers in the JSON answer (`reply_stats` decides)."""
    return runtime.reply_stats.channel(runtime.settings)[0] is ReplyChannel.JSON


def _ignored_format(channel: MarkerChannel | JsonChannel) -> bool:
    """The model wrote text outside the JSON answer (a model that ignores `format`)."""
    return isinstance(channel, JsonChannel) and channel.plain


def _channel(runtime: AltoRuntime) -> MarkerChannel | JsonChannel:
    """A fresh channel for one model call, the one `reply_stats` says this model answers in.

    The user's choice of reply channel, else the JSON answer, unless this model has mostly
    ignored it: then marks.
    """
    if _json(runtime):
        return JsonChannel()
    return MarkerChannel(plain_reply_fallback=runtime.settings.plain_reply_fallback)


def _render_persona(hass: HomeAssistant, prompt: str) -> str:
    """The persona is a Home Assistant template, like the built-in agents' prompts."""
    try:
        return str(template.Template(prompt, hass).async_render(parse_result=False))
    except TemplateError as err:
        LOGGER.warning("The persona template does not render, using it as text: %s", err)
        return prompt


class _StreamCut(Exception):
    """The chat stream ended without its final `done` chunk."""


@dataclass(slots=True)
class _Usage:
    """What the turn's chat calls reported besides their content.

    The prompt's size in tokens (from the latest call's final chunk), from which the reflect
    organ reads the context pressure; how many characters of thinking the model streamed, all
    calls together (a thinking model's `message.thinking`: read, counted, never kept).
    """

    prompt_tokens: int | None = None
    thinking_chars: int = 0


async def _speak(
    runtime: AltoRuntime,
    chat_log: conversation.ChatLog,
    agent_id: str,
    messages: Messages,
    *,
    channel: MarkerChannel | JsonChannel,
    gate: SpeechGate,
    usage: _Usage,
) -> ModelFailure | None:
    """One streamed chat call under its own timeout; its speech goes into the ChatLog.

    Returns None on success, else the failure (logged, and the coordinator told).
    """
    try:
        async with asyncio.timeout(runtime.settings.request_timeout):
            speech = _stream_speech(runtime, messages, channel, gate, usage)
            await _say(chat_log, agent_id, speech)
    except Exception as err:  # noqa: BLE001 - classified below; the unexpected logged with trace
        failure = ModelFailure.STREAM_CUT if isinstance(err, _StreamCut) else classify_failure(err)
        if failure is None:
            LOGGER.exception("Unexpected error in a model call")
            failure = ModelFailure.SERVER_ERROR
        else:
            LOGGER.warning("Ollama call failed (%s): %s", failure.value, described(err))
        runtime.coordinator.async_turn_failed(err)
        return failure
    return None


async def _stream_speech(
    runtime: AltoRuntime,
    messages: Messages,
    channel: MarkerChannel | JsonChannel,
    gate: SpeechGate,
    usage: _Usage,
) -> AsyncIterator[str]:
    """The speech of one chat call, as the channel and then the gate release it.

    The final chunk's `prompt_eval_count` goes to `usage`, and so does the length of what a
    thinking model streams as `message.thinking` before its content: the thinking itself goes
    nowhere, neither spoken nor kept.

    The conversational call never passes `tools`: the model proposes, the registry disposes.
    `think` is always sent: off, a model that thinks unless told otherwise (qwen3) answers at
    once; on, a thinking model gets the tokens to think before it answers.
    """
    settings = runtime.settings
    stream = await runtime.client.chat(
        model=settings.model,
        messages=messages,
        stream=True,
        format=SCHEMA if isinstance(channel, JsonChannel) else None,
        keep_alive=settings.keep_alive,
        think=settings.think,
        options={
            "num_ctx": settings.num_ctx,
            "num_predict": REPLY_TOKENS + (THINKING_TOKENS if settings.think else 0),
        },
    )
    complete = False
    async for chunk in stream:
        usage.thinking_chars += len(chunk.message.thinking or "")
        if speech := gate.feed(channel.feed(chunk.message.content or "")):
            yield speech
        if chunk.done:
            complete = True
            usage.prompt_tokens = chunk.prompt_eval_count
    if not complete:
        raise _StreamCut
    if tail := gate.feed(channel.finalize()) + gate.finalize():
        yield tail


async def _pieces(*texts: str) -> AsyncIterator[str]:
    for text in texts:
        yield text


async def _say(chat_log: conversation.ChatLog, agent_id: str, pieces: AsyncIterable[str]) -> None:
    """Add one assistant message to the ChatLog, streamed piece by piece."""

    async def deltas() -> AsyncIterator[conversation.AssistantContentDeltaDict]:
        yield {"role": "assistant"}
        async for piece in pieces:
            yield {"content": piece}

    async for _content in chat_log.async_add_delta_content_stream(agent_id, deltas()):
        pass


def _spoken(chat_log: conversation.ChatLog, start: int) -> str:
    """What Alto said this turn: its ChatLog messages since `start`, joined by one space."""
    return " ".join(
        content.content.strip()
        for content in chat_log.content[start:]
        if isinstance(content, conversation.AssistantContent) and content.content
    )


def _result(
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    text: str,
    *,
    acted: bool,
) -> conversation.ConversationResult:
    """The turn's result.

    `text` (every message Alto said this turn, read from the chat log), and `action_done` only
    if an effector ran.

    Built here rather than by HA's `async_get_result_from_chat_log`, which speaks only the last
    message and fails when an empty reply (a turn that only acted) added none.
    """
    response = intent.IntentResponse(language=user_input.language)
    response.async_set_speech(text)
    if not acted:
        response.response_type = intent.IntentResponseType.QUERY_ANSWER
    return conversation.ConversationResult(
        response=response,
        conversation_id=chat_log.conversation_id,
        continue_conversation=chat_log.continue_conversation,
    )


def _breadcrumbs(outcomes: list[SpanOutcome]) -> list[BufferEntry]:
    """Assistant notes of what the effector carried out (its successes only)."""
    return [BufferEntry("assistant", o.breadcrumb, "breadcrumb") for o in outcomes if o.breadcrumb]


async def _failed(
    hass: HomeAssistant,
    runtime: AltoRuntime,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    *,
    failure: ModelFailure,
    outcomes: list[SpanOutcome],
) -> conversation.ConversationResult:
    """A model call failed: say so; what the effector already did is still recorded."""
    _trace({"failure": failure.value})
    speaker = (user_input.context.user_id, user_input.device_id)
    runtime.buffers.get(chat_log.conversation_id, speaker).add(*_breadcrumbs(outcomes))
    return await async_error_result(hass, user_input, chat_log.conversation_id, failure.value)


async def _nothing() -> None:
    return None


def _trace(data: dict[str, Any]) -> None:
    conversation.async_conversation_trace_append(
        conversation.ConversationTraceEventType.AGENT_DETAIL, {"alto": data}
    )
