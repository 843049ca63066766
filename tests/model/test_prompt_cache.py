"""The prompt cache keeper puts a conversation's prefix back after a foreign request, only then.

Requests go through a real `ollama.AsyncClient` whose HTTP transport is the keeper's, over an
`httpx.MockTransport` standing in for the server; the sequences cover every order in which a
turn's own call, the executor's, a background pass's and the turn's `hold` can come.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import httpx
import ollama
import pytest

from custom_components.alto.model.calls import Message
from custom_components.alto.model.prompt_cache import KeeperTransport, Prefix, PromptCacheKeeper

SETTLE_S = 0.02
CONVERSATION = {"role": "system", "content": "You are Alto."}
EXECUTOR = {"role": "system", "content": "Turn the intent into one call."}
PASS = {"role": "system", "content": "Reflect on the day."}


class Server:
    """Records each chat request's messages and options; answers at once.

    `buffered`: the answer comes read whole (as httpx's mock transport gives bytes), else as a
    stream the client reads (as a real server's).
    """

    def __init__(self, *, buffered: bool = False) -> None:
        """A server that has seen nothing yet."""
        self.buffered = buffered
        self.requests: list[dict[str, Any]] = []
        self.release: asyncio.Event | None = None  # when set, answers wait for it

    async def handle(self, request: httpx.Request) -> httpx.Response:
        """Record the request and answer it."""
        body = json.loads(request.content)
        self.requests.append(body)
        if self.release is not None:
            await self.release.wait()
        answer = {"model": "m", "message": {"role": "assistant", "content": "ok"}, "done": True}
        line = (json.dumps(answer) + ("\n" if body.get("stream") else "")).encode()
        if self.buffered:
            return httpx.Response(200, content=line)

        async def chunks() -> AsyncIterator[bytes]:
            yield line

        return httpx.Response(200, content=chunks())


def _client(server: Server, keeper: PromptCacheKeeper) -> ollama.AsyncClient:
    transport = KeeperTransport(httpx.MockTransport(server.handle), keeper)
    return ollama.AsyncClient(host="http://127.0.0.1:1", timeout=5, transport=transport)


def _keeper(tasks: list[asyncio.Task[None]]) -> PromptCacheKeeper:
    def spawn(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        tasks.append(task := asyncio.get_running_loop().create_task(coro))
        return task

    return PromptCacheKeeper(spawn, settle_s=SETTLE_S)


async def _settle(tasks: list[asyncio.Task[None]]) -> None:
    await asyncio.sleep(SETTLE_S * 3)
    await asyncio.gather(*tasks, return_exceptions=True)


def _prefix(client: ollama.AsyncClient, history: list[Message]) -> Prefix:
    async def send(messages: list[Message]) -> object:
        return await client.chat(model="m", messages=messages, options={"num_predict": 1})

    return Prefix(messages=lambda: [CONVERSATION, *history], send=send)


async def _call(client: ollama.AsyncClient, first: Message, *, stream: bool) -> None:
    messages = [first, {"role": "user", "content": "hi"}]
    if stream:
        async for _chunk in await client.chat(model="m", messages=messages, stream=True):
            pass
    else:
        await client.chat(model="m", messages=messages)


# What may come after the turn's own call, before or after its hold: nothing, the executor's
# call, a background pass, or both; every call streamed or not.
FOREIGN = [[], [EXECUTOR], [PASS], [EXECUTOR, PASS]]


@pytest.mark.parametrize(
    ("foreign", "stream", "hold_first", "buffered"),
    list(itertools.product(FOREIGN, [False, True], [False, True], [False, True])),
)
async def test_a_prefix_is_sent_again_exactly_when_a_foreign_request_came_last(
    foreign: list[Message], stream: bool, hold_first: bool, buffered: bool
) -> None:
    """Whatever the order of the calls and the hold, streamed or not: one prefill, if due."""
    server, tasks = Server(buffered=buffered), []
    keeper = _keeper(tasks)
    client = _client(server, keeper)
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    await _call(client, CONVERSATION, stream=stream)
    if hold_first:
        keeper.hold(_prefix(client, history))
    for first in foreign:
        await _call(client, first, stream=stream)
    if not hold_first:
        keeper.hold(_prefix(client, history))
    await _settle(tasks)

    sent = [r["messages"] for r in server.requests[1 + len(foreign) :]]
    assert sent == ([[CONVERSATION, *history]] if foreign else [])
    assert keeper.prefills == len(sent)


async def test_a_request_during_the_settling_delays_the_prefill_until_it_ends() -> None:
    """The prefill never goes while another request is out."""
    server, tasks = Server(), []
    keeper = _keeper(tasks)
    client = _client(server, keeper)
    await _call(client, EXECUTOR, stream=False)
    keeper.hold(_prefix(client, []))
    server.release = asyncio.Event()
    slow = asyncio.create_task(_call(client, PASS, stream=True))
    await asyncio.sleep(SETTLE_S * 3)
    assert [r["messages"][0] for r in server.requests] == [EXECUTOR, PASS]
    server.release.set()
    await slow
    await _settle(tasks)
    assert [r["messages"][0] for r in server.requests] == [EXECUTOR, PASS, CONVERSATION]


async def test_the_prefix_is_read_when_sent_so_a_forget_reaches_it() -> None:
    """Words the buffer dropped after the hold are not sent."""
    server, tasks = Server(), []
    keeper = _keeper(tasks)
    client = _client(server, keeper)
    history = [{"role": "user", "content": "my PIN is 4711"}]
    keeper.hold(_prefix(client, history))
    await _call(client, PASS, stream=False)
    history.clear()  # the turn buffer dropped the turn
    await _settle(tasks)
    assert server.requests[-1]["messages"] == [CONVERSATION]
    assert "4711" not in json.dumps(server.requests[-1])


async def test_a_failed_prefill_is_dropped_and_a_closed_keeper_sends_nothing() -> None:
    """A refused prefill raises nowhere; after close nothing more is sent."""
    tasks: list[asyncio.Task[None]] = []
    keeper = _keeper(tasks)

    async def refused(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"error": "busy"})

    transport = KeeperTransport(httpx.MockTransport(refused), keeper)
    client = ollama.AsyncClient(host="http://127.0.0.1:1", timeout=5, transport=transport)
    keeper.hold(_prefix(client, []))
    with pytest.raises(ollama.ResponseError):
        await _call(client, PASS, stream=False)
    await _settle(tasks)
    assert keeper.prefills == 1  # tried once, failed quietly

    server = Server()
    client = _client(server, keeper)
    keeper.close()
    await _call(client, PASS, stream=False)
    await _settle(tasks)
    assert len(server.requests) == 1


async def test_other_paths_pass_by_unobserved() -> None:
    """An embedding request neither counts as the last chat request nor triggers a prefill."""
    server, tasks = Server(), []
    keeper = _keeper(tasks)
    client = _client(server, keeper)
    await _call(client, CONVERSATION, stream=True)
    keeper.hold(_prefix(client, []))

    async def embed(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"model": "m", "embeddings": [[0.0]]})

    transport = KeeperTransport(httpx.MockTransport(embed), keeper)
    embedder = ollama.AsyncClient(host="http://127.0.0.1:1", timeout=5, transport=transport)
    await embedder.embed(model="e", input="hello")
    await _settle(tasks)
    assert keeper.prefills == 0
    assert len(server.requests) == 1
