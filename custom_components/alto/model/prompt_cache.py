"""Keeps the model server's prompt cache on the conversation.

An Ollama model slot (and llama.cpp's server, which it runs) keeps the tokens of the last prompt
it evaluated, and evaluates only what a new prompt adds after the longest prefix the two share.
A conversational turn's prompt begins with the system prompt and the history, so the next turn
pays only for what changed, unless another call came between: the executor's, a background
pass's, a thought's. Each begins with its own system prompt and replaces the slot's tokens, and
the next turn then evaluates its whole prompt again, the user waiting.

So every chat request on the entry's client passes by a `PromptCacheKeeper` (through its HTTP
transport, whichever organ makes it). A turn tells the keeper what its conversation's next
prompt begins with (`hold`); once the server has been idle `settle_s` after a request that began
with another system message, the keeper sends that prefix again for one token, in the
background, and the slot holds the conversation again. A turn whose last request was its own
conversational call costs nothing more.

The prefix is built when it is sent, from the live turn buffer: a forget that took words out of
the history keeps them out of the prefill too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import httpx

from .calls import Message

CHAT_PATH = "/api/chat"


@dataclass(frozen=True, slots=True)
class Prefix:
    """What a conversation's next prompt begins with, and how to send it to put it back.

    `messages` builds the prefix when called (the system prompt first); `send` sends messages
    as one chat request that generates a single token, with the conversation's own model,
    context size and keep-alive (a different context size would reload the model).
    """

    messages: Callable[[], list[Message]]
    send: Callable[[list[Message]], Awaitable[object]]


type Spawn = Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]


class PromptCacheKeeper:
    """Watches the entry's chat requests; puts the held prefix back after a foreign one."""

    def __init__(self, spawn: Spawn, settle_s: float = 1.0) -> None:
        """`spawn` starts a background task (Home Assistant's, so unload cancels it)."""
        self._spawn = spawn
        self._settle_s = settle_s
        self._held: Prefix | None = None
        self._in_flight = 0
        self._last_first: Message | None = None  # the first message of the last request
        self._pending: asyncio.Task[None] | None = None
        self._sending = False  # the pending task's prefill request is out
        self.prefills = 0  # requests sent to put a prefix back, since setup

    def hold(self, prefix: Prefix) -> None:
        """The conversation whose prompt the server should keep from now on."""
        self._held = prefix
        self._schedule()

    def started(self) -> None:
        """A chat request went out: a prefill still settling waits for it to end."""
        self._in_flight += 1
        if self._pending is not None and not self._sending:
            self._pending.cancel()
            self._pending = None

    def finished(self, first: Message | None) -> None:
        """A chat request ended; `first` is its first message (None when unreadable)."""
        self._in_flight = max(0, self._in_flight - 1)
        self._last_first = first
        self._schedule()

    def close(self) -> None:
        """Stop: nothing more is sent."""
        self._held = None
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _schedule(self) -> None:
        if self._held is None or self._in_flight or self._pending is not None:
            return
        self._pending = self._spawn(self._settle_then_send())

    async def _settle_then_send(self) -> None:
        """After `settle_s` without a request, send the held prefix if the server lost it."""
        try:
            await asyncio.sleep(self._settle_s)
            if (prefix := self._held) is None:
                return
            messages = prefix.messages()
            if not messages or messages[0] == self._last_first:
                return  # the server's cache still begins with this system prompt
            self._sending = True
            self.prefills += 1
            await prefix.send(messages)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a failed prefill only costs the next turn time
            return
        finally:
            self._sending = False
            if self._pending is asyncio.current_task():
                self._pending = None


class KeeperTransport(httpx.AsyncBaseTransport):
    """An HTTP transport that tells the keeper when each chat request starts and ends."""

    def __init__(self, inner: httpx.AsyncBaseTransport, keeper: PromptCacheKeeper) -> None:
        """Send through `inner`, observed by `keeper`."""
        self._inner = inner
        self._keeper = keeper

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request; a chat request's end is when its response is closed."""
        if request.url.path != CHAT_PATH:
            return await self._inner.handle_async_request(request)
        first = _first_message(request)
        self._keeper.started()
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException:
            self._keeper.finished(first)
            raise
        if response.is_closed:  # read whole already (a transport that buffers)
            self._keeper.finished(first)
        else:
            response.stream = _Observed(response.stream, lambda: self._keeper.finished(first))
        return response

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()


class _Observed(httpx.AsyncByteStream):
    """A response body that calls `on_close` once, when it is closed."""

    def __init__(self, inner: httpx.AsyncByteStream | Any, on_close: Callable[[], None]) -> None:
        self._inner = inner
        self._on_close: Callable[[], None] | None = on_close

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if self._on_close is not None:
                on_close, self._on_close = self._on_close, None
                on_close()


def _first_message(request: httpx.Request) -> Message | None:
    """The first message of a chat request's JSON body, or None."""
    try:
        messages = json.loads(request.content).get("messages") or []
    except (ValueError, AttributeError, httpx.RequestNotRead):
        return None
    first = messages[0] if messages else None
    if not isinstance(first, dict):
        return None
    return {"role": str(first.get("role", "")), "content": str(first.get("content", ""))}
