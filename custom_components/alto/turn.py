"""One conversational turn: admission, prompt, one streamed chat call, the marker channel.

Captured action spans go to the action organ after the speech has streamed; a validated read
gets exactly one follow-up call so the spoken answer can use the state.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import TemplateError
from homeassistant.helpers import template
from homeassistant.util import dt as dt_util
from homeassistant.util.ulid import ulid_now

from .act.organ import Outcome, TurnContext
from .channel.admission import admit
from .channel.markers import MarkerChannel
from .const import (
    CONF_ASSISTANT_NAME,
    CONF_MAX_HISTORY,
    CONF_MODEL,
    CONF_NUM_CTX,
    CONF_PLAIN_REPLY_FALLBACK,
    CONF_PROMPT,
    CONF_REQUEST_TIMEOUT,
    DEFAULT_MAX_HISTORY,
    DEFAULT_NUM_CTX,
    DEFAULT_PLAIN_REPLY_FALLBACK,
    DEFAULT_PROMPT,
    DEFAULT_REQUEST_TIMEOUT,
    LOGGER,
)
from .errors import async_error_result
from .history import BufferEntry, TurnBuffer
from .model_client import ModelFailure, classify, keep_alive
from .prompt import system_prompt
from .runtime import AltoConfigEntry

type Messages = list[dict[str, str]]


def _render_persona(hass: HomeAssistant, prompt: str) -> str:
    """The persona is a Home Assistant template, like the built-in agents' prompts."""
    try:
        return template.Template(prompt, hass).async_render(parse_result=False)
    except TemplateError as err:
        LOGGER.warning("The persona template does not render, using it as text: %s", err)
        return prompt


def _record_breadcrumbs(buffer: TurnBuffer, outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        if outcome.breadcrumb:  # effector success only
            buffer.add(BufferEntry("assistant", outcome.breadcrumb, "breadcrumb"))


async def _none() -> None:
    return None


class _StreamCut(Exception):
    """The chat stream ended without its final `done` chunk."""


def _trace(data: dict[str, Any]) -> None:
    conversation.async_conversation_trace_append(
        conversation.ConversationTraceEventType.AGENT_DETAIL, {"alto": data}
    )


def _states_message(outcomes: list[Outcome]) -> dict[str, str]:
    lines = [f"- {o.entity_id}: {o.state}" for o in outcomes if o.state is not None]
    return {
        "role": "system",
        "content": "The device states you asked for:\n"
        + "\n".join(lines)
        + "\nAnswer the person now, with your speech between ¦ marks.",
    }


class _Reply:
    """Streams one turn's model output into the chat log and collects what happened."""

    def __init__(self, entry: AltoConfigEntry, settings: dict[str, Any], turn: TurnContext) -> None:
        self._runtime = entry.runtime_data
        self._settings = settings
        self._turn = turn
        self.spoken: list[str] = []
        self.outcomes: list[Outcome] = []
        self.channel = self._channel()

    def _channel(self) -> MarkerChannel:
        return MarkerChannel(
            plain_reply_fallback=self._settings.get(
                CONF_PLAIN_REPLY_FALLBACK, DEFAULT_PLAIN_REPLY_FALLBACK
            )
        )

    async def _stream(self, messages: Messages, channel: MarkerChannel) -> AsyncGenerator[str]:
        # The conversational call never passes `tools`: the model proposes, the registry disposes.
        stream = await self._runtime.client.chat(
            model=self._settings[CONF_MODEL],
            messages=messages,
            stream=True,
            keep_alive=keep_alive(self._settings),
            options={"num_ctx": int(self._settings.get(CONF_NUM_CTX, DEFAULT_NUM_CTX))},
        )
        done = False
        async for chunk in stream:
            if speech := channel.feed(chunk.message.content or ""):
                yield speech
            done = done or bool(chunk.done)
        if not done:
            raise _StreamCut
        if tail := channel.finalize():
            yield tail

    def _say(self, text: str, *, new_part: bool = False) -> conversation.AssistantContentDeltaDict:
        # The marker channel joins spans within one stream; a new part (a confirmation question,
        # the follow-up's answer) is joined to earlier speech with one space.
        if new_part and self.spoken:
            text = " " + text.lstrip()
        self.spoken.append(text)
        return {"content": text}

    async def _speak(self, messages: Messages, channel: MarkerChannel) -> AsyncGenerator[Any]:
        new_part = True
        async for speech in self._stream(messages, channel):
            yield self._say(speech, new_part=new_part)
            new_part = False

    async def deltas(self, messages: Messages) -> AsyncGenerator[Any]:
        """The chat-log delta stream: speech as it arrives, then what the organ adds."""
        yield {"role": "assistant"}
        async for delta in self._speak(messages, self.channel):
            yield delta
        if not self.channel.actions:
            return
        self.outcomes = await self._runtime.organ.async_handle_spans(
            self.channel.actions, self._turn
        )
        for outcome in self.outcomes:
            if outcome.question:
                yield self._say(outcome.question, new_part=True)
        if any(o.state is not None for o in self.outcomes):
            follow_up = [
                *messages,
                {"role": "assistant", "content": "".join(self.spoken)},
                _states_message(self.outcomes),
            ]
            second = self._channel()  # spans of this round are traced, never dispatched
            async for delta in self._speak(follow_up, second):
                yield delta
            _trace({"follow_up_actions_ignored": second.actions})


async def async_run_turn(
    hass: HomeAssistant,
    entry: AltoConfigEntry,
    agent_id: str,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
) -> conversation.ConversationResult:
    """Answer one user utterance; never raises for a model or input failure."""
    conversation_id = chat_log.conversation_id
    if (refusal := admit(user_input.text)) is not None:
        _trace({"admission": refusal.value})
        return await async_error_result(hass, user_input, conversation_id, refusal.value)

    settings = {**entry.data, **entry.options}
    runtime = entry.runtime_data
    buffer = runtime.buffers.get(conversation_id)
    max_history = int(settings.get(CONF_MAX_HISTORY, DEFAULT_MAX_HISTORY))
    turn = TurnContext(
        user_input.context, conversation_id, user_input.device_id, user_input.language
    )
    # Only the user's own next utterance can confirm a held confirm-first call.
    held = await runtime.organ.async_resolve_pending(user_input.text, turn)
    if held and held.breadcrumb:
        # Placed before this turn's user message: a chat request must end with the user's
        # turn, and "Earlier this session" reads true from there.
        buffer.add(BufferEntry("assistant", held.breadcrumb, "breadcrumb"))

    memory = runtime.memory
    actor = user_input.context.user_id
    # The Surfacer and the memory selection run side by side; the reply waits for neither
    # longer than `surfacer_wait` (the selection is one embedding call).
    _surfaced, recalled = await asyncio.gather(
        runtime.thoughts.async_surface(user_input.text, actor, buffer),
        memory.async_turn_context(user_input.text, viewer=actor) if memory else _none(),
    )
    messages = [
        {
            "role": "system",
            "content": system_prompt(
                persona=_render_persona(hass, settings.get(CONF_PROMPT, DEFAULT_PROMPT)),
                assistant_name=settings.get(CONF_ASSISTANT_NAME),
                entities=runtime.organ.index.entity_lines(),
                now=dt_util.now(),
            ),
        },
        *buffer.messages(max_history, actor),
        *([{"role": "system", "content": recalled}] if recalled else []),
        {"role": "user", "content": user_input.text},
    ]
    reply = _Reply(entry, settings, turn)
    try:
        async with asyncio.timeout(
            float(settings.get(CONF_REQUEST_TIMEOUT, DEFAULT_REQUEST_TIMEOUT))
        ):
            async for _content in chat_log.async_add_delta_content_stream(
                agent_id, reply.deltas(messages)
            ):
                pass
    except Exception as err:
        failure = ModelFailure.STREAM_CUT if isinstance(err, _StreamCut) else classify(err)
        if failure is None:
            LOGGER.exception("Unexpected error in a conversation turn")
            failure = ModelFailure.SERVER_ERROR
        else:
            LOGGER.warning("Ollama call failed (%s): %s", failure.value, err)
        runtime.coordinator.async_turn_failed(err)
        _trace({"failure": failure.value})
        # A follow-up call can fail after the effector ran: what was done is still recorded.
        _record_breadcrumbs(buffer, reply.outcomes)
        return await async_error_result(hass, user_input, conversation_id, failure.value)

    runtime.coordinator.async_turn_succeeded()
    text = "".join(reply.spoken)
    _trace(
        {
            "plain_reply_fallback": reply.channel.used_fallback,
            "actions": [
                {"span": o.span, "verdict": o.verdict.value, "reason": o.reason}
                for o in reply.outcomes
            ],
        }
    )
    if not text and not reply.outcomes:
        return await async_error_result(hass, user_input, conversation_id, "model_empty_reply")
    buffer.add(BufferEntry("user", user_input.text, "user"))
    if text:
        buffer.add(BufferEntry("assistant", text, "reply"))
    _record_breadcrumbs(buffer, reply.outcomes)
    buffer.trim(max_history)
    if memory is not None:
        # Intake never delays the reply: it runs after it, in the background.
        entry.async_create_background_task(
            hass,
            memory.async_intake_turn(
                user_input.text,
                source_id=f"conversation/{conversation_id}/{ulid_now()}",
                actor=actor,
            ),
            "alto_memory_intake",
        )

    return conversation.async_get_result_from_chat_log(user_input, chat_log)
