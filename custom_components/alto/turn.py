"""One conversational turn: admission, prompt, one streamed chat call, the marker channel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
from homeassistant.util import dt as dt_util

from .channel.admission import admit
from .channel.markers import MarkerChannel
from .const import (
    CONF_ASSISTANT_NAME,
    CONF_KEEP_ALIVE,
    CONF_MAX_HISTORY,
    CONF_MODEL,
    CONF_NUM_CTX,
    CONF_PLAIN_REPLY_FALLBACK,
    CONF_PROMPT,
    CONF_REQUEST_TIMEOUT,
    DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_HISTORY,
    DEFAULT_NUM_CTX,
    DEFAULT_PLAIN_REPLY_FALLBACK,
    DEFAULT_PROMPT,
    DEFAULT_REQUEST_TIMEOUT,
    LOGGER,
)
from .errors import async_error_result
from .history import BufferEntry
from .home import exposed_entity_lines
from .model_client import ModelFailure, classify
from .prompt import system_prompt
from .runtime import AltoConfigEntry


class _StreamCut(Exception):
    """The chat stream ended without its final `done` chunk."""


def _trace(data: dict[str, Any]) -> None:
    conversation.async_conversation_trace_append(
        conversation.ConversationTraceEventType.AGENT_DETAIL, {"alto": data}
    )


async def async_run_turn(
    hass: HomeAssistant,
    entry: AltoConfigEntry,
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
    messages = [
        {
            "role": "system",
            "content": system_prompt(
                persona=settings.get(CONF_PROMPT, DEFAULT_PROMPT),
                assistant_name=settings.get(CONF_ASSISTANT_NAME),
                entities=exposed_entity_lines(hass),
                now=dt_util.now(),
            ),
        },
        *buffer.messages(max_history),
        {"role": "user", "content": user_input.text},
    ]
    channel = MarkerChannel(
        plain_reply_fallback=settings.get(CONF_PLAIN_REPLY_FALLBACK, DEFAULT_PLAIN_REPLY_FALLBACK)
    )

    async def deltas() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        # The conversational call never passes `tools`: the model proposes, the registry disposes.
        stream = await runtime.client.chat(
            model=settings[CONF_MODEL],
            messages=messages,
            stream=True,
            keep_alive=f"{int(settings.get(CONF_KEEP_ALIVE, DEFAULT_KEEP_ALIVE))}s",
            options={"num_ctx": int(settings.get(CONF_NUM_CTX, DEFAULT_NUM_CTX))},
        )
        yield {"role": "assistant"}
        done = False
        async for chunk in stream:
            if speech := channel.feed(chunk.message.content or ""):
                yield {"content": speech}
            done = done or bool(chunk.done)
        if not done:
            raise _StreamCut
        if tail := channel.finalize():
            yield {"content": tail}

    spoken: list[str] = []
    try:
        async with asyncio.timeout(
            float(settings.get(CONF_REQUEST_TIMEOUT, DEFAULT_REQUEST_TIMEOUT))
        ):
            async for content in chat_log.async_add_delta_content_stream(
                user_input.agent_id, deltas()
            ):
                if isinstance(content, conversation.AssistantContent) and content.content:
                    spoken.append(content.content)
    except Exception as err:
        failure = ModelFailure.STREAM_CUT if isinstance(err, _StreamCut) else classify(err)
        if failure is None:
            LOGGER.exception("Unexpected error in a conversation turn")
            failure = ModelFailure.SERVER_ERROR
        else:
            LOGGER.warning("Ollama call failed (%s): %s", failure.value, err)
        runtime.coordinator.async_turn_failed(err)
        _trace({"failure": failure.value})
        return await async_error_result(hass, user_input, conversation_id, failure.value)

    runtime.coordinator.async_turn_succeeded()
    reply = " ".join(spoken)
    _trace(
        {
            "actions": channel.actions,
            "plain_reply_fallback": channel.used_fallback,
            "actions_dispatched": False,
        }
    )
    if channel.actions:
        # The action organ is not wired yet: spans are traced, never recorded as done.
        LOGGER.debug("Captured action spans (not dispatched): %s", channel.actions)
    if not reply and not channel.actions:
        return await async_error_result(hass, user_input, conversation_id, "model_empty_reply")
    buffer.add(BufferEntry("user", user_input.text, "user"))
    if reply:
        buffer.add(BufferEntry("assistant", reply, "reply"))
    buffer.trim(max_history)

    response = intent.IntentResponse(language=user_input.language)
    response.async_set_speech(reply)
    return conversation.ConversationResult(
        response=response,
        conversation_id=conversation_id,
        continue_conversation=chat_log.continue_conversation,
    )
