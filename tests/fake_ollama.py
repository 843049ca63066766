"""A fake Ollama server on 127.0.0.1 that speaks the real wire format.

The real `ollama` client talks to it over HTTP. It serves `/api/version`, `/api/tags` (with
digests), `/api/show`, `/api/chat` (streamed NDJSON or one JSON object) and `/api/embed`
(deterministic bag-of-words vectors), records every request body, answers chat requests (with text
or a tool call) from a queue, then from scripted rules, then with a default reply, and can inject
failures: an HTTP error status, a slow answer, a stream cut mid-way or an error line mid-stream.
Models households run are reproduced too: a thinking model streams `message.thinking` before its
content (`thinkers`: qwen3 thinks unless sent `think: false`, gpt-oss always), a model that cannot
think answers `think: true` with Ollama's 400, and a reply can ignore `format` (`plain`).
`stop()` and `start()` keep the port, so "Ollama went away and came back" is a real refused
connection.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

CHAT_MODEL = "llama3.2:latest"
EMBED_MODEL = "nomic-embed-text:latest"


def digest_of(name: str) -> str:
    """A stable fake digest (64 hex chars) for a model name."""
    return hashlib.sha256(name.encode()).hexdigest()


@dataclass
class ChatReply:
    """How the fake answers one chat request.

    `chunks` are streamed one NDJSON line each (joined for a non-streamed answer).
    """

    chunks: list[str] = field(default_factory=list)
    status: int = 200
    error: str = "internal error"
    delay_s: float = 0.0  # before the response starts
    chunk_delay_s: float = 0.0  # between streamed chunks
    cut_after: int | None = None  # close the connection after this many chunks
    error_line_after: int | None = None  # send an {"error": ...} line after this many chunks
    done_reason: str = "stop"
    omit_done: bool = False  # end the HTTP response cleanly without the final done line
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # sent with the first chunk
    # What a thinking model thinks first: one `message.thinking` line each, when it thinks.
    thinking: list[str] = field(default_factory=list)
    plain: bool = False  # a model that ignores `format`: the chunks go out as written

    @classmethod
    def text(cls, text: str, chunk_size: int = 4, **kwargs: Any) -> ChatReply:
        """A reply streamed in chunks of `chunk_size` characters."""
        chunks = [text[i : i + chunk_size] for i in range(0, len(text), chunk_size)] or [""]
        return cls(chunks=chunks, **kwargs)

    @classmethod
    def calling(cls, name: str, arguments: dict[str, Any], **kwargs: Any) -> ChatReply:
        """A reply that calls one tool, as Ollama sends it: one line with no content."""
        call = {"function": {"name": name, "arguments": arguments}}
        return cls(chunks=[""], tool_calls=[call], **kwargs)

    def as_reply_object(self) -> ChatReply:
        """The same reply (failures, delays included) as Alto's JSON reply object."""
        size = max((len(c) for c in self.chunks), default=4) or 4
        text = reply_object("".join(self.chunks))
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        return dataclasses.replace(self, chunks=chunks)


def first_choices(body: dict[str, Any]) -> ChatReply:
    """How a tiny model answers the executor's schema: the first value of each enum.

    The first branch of the schema's `anyOf` (a service call when there is one), its first
    entity and first service, no data.
    """
    branch = body["format"]["anyOf"][0]
    answer: dict[str, Any] = {}
    for name, spec in branch["properties"].items():
        answer[name] = spec["enum"][0] if "enum" in spec else {}
    return ChatReply(chunks=[json.dumps(answer)])


def wants_reply_object(body: dict[str, Any]) -> bool:
    """A chat request constrained to Alto's reply object (the JSON channel's `format`)."""
    schema = body.get("format")
    return isinstance(schema, dict) and "speech" in schema.get("properties", {})


def reply_object(text: str) -> str:
    """A marker-scripted reply as the JSON object a constrained model would produce instead.

    `¦…¦` spans become the speech (joined by one space), `¤…¤` spans the actions, the rest the
    thought; a reply with no marker at all is all speech. Tests script one reply and it serves
    either channel, as a model would answer either way.
    """
    speech = [s.strip() for s in re.findall("\u00a6(.*?)\u00a6", text, re.S)]
    actions = [a.strip() for a in re.findall("\u00a4(.*?)(?:\u00a4|$)", text, re.S)]
    thought = re.sub("\u00a6.*?\u00a6|\u00a4.*?(?:\u00a4|$)", " ", text, flags=re.S)
    if not speech and not actions:
        speech, thought = [text.strip()], ""
    answer = {"speech": " ".join(s for s in speech if s), "actions": actions}
    return json.dumps(answer | {"thought": " ".join(thought.split())}, ensure_ascii=False)


type Predicate = Callable[[dict[str, Any]], bool]
type Responder = ChatReply | Callable[[dict[str, Any]], ChatReply]


def last_user_text(body: dict[str, Any]) -> str:
    """The content of the last user message of a chat request."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def is_prefill(body: dict[str, Any]) -> bool:
    """A one-token request that puts a conversation back in the prompt cache (`prompt_cache`)."""
    return (body.get("options") or {}).get("num_predict") == 1


def is_render(body: dict[str, Any]) -> bool:
    """A Surfacer render: non-streamed, no `format`, not a prefill (`surface.render.render_for`)."""
    return body.get("stream") is False and "format" not in body and not is_prefill(body)


def embed_text(text: str, dim: int) -> list[float]:
    """Deterministic bag-of-words vector: texts sharing words get similar vectors.

    nomic-embed-text's role prefix (which Alto adds, `memory.instructions`) is not a word of the
    text: tests reason about the words said, the requests show the prefixes.
    """
    text = re.sub(r"^search_(?:query|document): ", "", text)
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.casefold()):
        h = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(h[:4], "little") % dim] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class FakeOllama:
    """The server; `url` is what a config entry points at."""

    def __init__(
        self, models: tuple[str, ...] = (CHAT_MODEL, EMBED_MODEL), embed_dim: int = 64
    ) -> None:
        """Serve `models`; embeddings have `embed_dim` dimensions."""
        self.models = list(models)
        self.embed_dim = embed_dim
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.queue: deque[ChatReply] = deque()
        self.rules: list[tuple[Predicate, Responder]] = []
        self.default: Responder = ChatReply.text("\u00a6Hello from the fake model.\u00a6")
        self.fail_tags = 0  # answer this many /api/tags requests with HTTP 500
        self.fail_embed = 0  # answer this many /api/embed requests with HTTP 500
        self.api_key: str | None = None  # when set, requests need `Authorization: Bearer <key>`
        # Thinking models: name -> whether it thinks even when sent `think: false` (gpt-oss
        # does; qwen3 thinks only unless told not to).
        self.thinkers: dict[str, bool] = {}
        self.chat_times: list[float] = []  # when each /api/chat request arrived (monotonic)
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        """Base URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of every /api/chat request, in order."""
        return [body for path, body in self.requests if path == "/api/chat"]

    @property
    def embedded_texts(self) -> list[str]:
        """Every text sent to /api/embed, in order."""
        return [
            text
            for path, body in self.requests
            if path == "/api/embed"
            for text in ([body["input"]] if isinstance(body["input"], str) else body["input"])
        ]

    def reply(self, reply: ChatReply | str) -> None:
        """Queue the answer to the next chat request that no earlier queue entry answers."""
        self.queue.append(ChatReply.text(reply) if isinstance(reply, str) else reply)

    def when(self, predicate: Predicate, reply: Responder | str) -> None:
        """Answer chat requests matching `predicate` with `reply` (first rule wins)."""
        self.rules.append((predicate, ChatReply.text(reply) if isinstance(reply, str) else reply))

    async def start(self) -> None:
        """Listen on 127.0.0.1 (the same port again after a stop)."""
        app = web.Application(client_max_size=16 * 1024 * 1024, middlewares=[self._auth])
        app.router.add_get("/api/version", self._version)
        app.router.add_get("/api/tags", self._tags)
        app.router.add_post("/api/show", self._show)
        app.router.add_post("/api/chat", self._chat)
        app.router.add_post("/api/embed", self._embed)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening: connections are refused until `start()`."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        # What an Ollama server behind an authenticating proxy answers without the right token.
        if self.api_key is not None and request.headers.get("Authorization") != (
            f"Bearer {self.api_key}"
        ):
            self.requests.append((request.path, {"unauthorized": True}))
            return web.json_response({"error": "unauthorized"}, status=401)
        return await handler(request)

    async def _record(self, request: web.Request) -> dict[str, Any]:
        body = await request.json() if request.can_read_body else {}
        self.requests.append((request.path, body))
        return body

    async def _version(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.json_response({"version": "0.12.6"})

    async def _tags(self, request: web.Request) -> web.Response:
        await self._record(request)
        if self.fail_tags > 0:
            self.fail_tags -= 1
            return web.json_response({"error": "internal error"}, status=500)
        return web.json_response(
            {
                "models": [
                    {
                        "name": name,
                        "model": name,
                        "modified_at": "2026-11-01T10:00:00.000000+00:00",
                        "size": 2019393189,
                        "digest": digest_of(name),
                        "details": {
                            "parent_model": "",
                            "format": "gguf",
                            "family": "llama",
                            "families": ["llama"],
                            "parameter_size": "3.2B",
                            "quantization_level": "Q4_K_M",
                        },
                    }
                    for name in self.models
                ]
            }
        )

    async def _show(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        name = body.get("model") or body.get("name")
        if name not in self.models:
            return web.json_response({"error": f"model '{name}' not found"}, status=404)
        return web.json_response(
            {
                "modelfile": f"FROM {name}",
                "parameters": "stop <|eot_id|>",
                "template": "{{ .Prompt }}",
                "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B"},
                "model_info": {"general.architecture": "llama"},
                # As Ollama says it: an embedding model embeds, the others chat; some think.
                "capabilities": ["embedding"]
                if "embed" in name
                else ["completion", "tools", *(["thinking"] if name in self.thinkers else [])],
                "modified_at": "2026-11-01T10:00:00.000000+00:00",
            }
        )

    async def _embed(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        if self.fail_embed > 0:
            self.fail_embed -= 1
            return web.json_response({"error": "internal error"}, status=500)
        if body.get("model") not in self.models:
            return web.json_response({"error": "model not found"}, status=404)
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        return web.json_response(
            {
                "model": body["model"],
                "embeddings": [embed_text(t, self.embed_dim) for t in texts],
                "total_duration": 1000,
                "load_duration": 100,
                "prompt_eval_count": sum(len(t.split()) for t in texts),
            }
        )

    def _pick(self, body: dict[str, Any]) -> ChatReply:
        reply = self._scripted(body)
        if reply.plain:
            return reply
        if wants_reply_object(body) and reply.chunks and not "".join(reply.chunks).startswith("{"):
            return reply.as_reply_object()
        return reply

    def _thinks(self, body: dict[str, Any]) -> bool:
        """Whether the requested model thinks before this answer."""
        model = body.get("model")
        if model not in self.thinkers:
            return False
        return self.thinkers[model] or body.get("think") is not False

    def _scripted(self, body: dict[str, Any]) -> ChatReply:
        if self.queue:
            return self.queue.popleft()
        for predicate, responder in self.rules:
            if predicate(body):
                return responder(body) if callable(responder) else responder
        return self.default(body) if callable(self.default) else self.default

    def _line(
        self,
        body: dict[str, Any],
        content: str,
        done: bool,
        reason: str,
        tool_calls: list[dict[str, Any]] | None = None,
        *,
        thinking: str = "",
    ) -> dict:
        line: dict[str, Any] = {
            "model": body.get("model"),
            "created_at": "2026-11-30T12:00:00.000000Z",
            "message": {"role": "assistant", "content": content},
            "done": done,
        }
        if thinking:
            line["message"]["thinking"] = thinking
        if tool_calls:
            line["message"]["tool_calls"] = tool_calls
        if done:
            line |= {
                "done_reason": reason,
                "total_duration": 1_000_000,
                "load_duration": 10_000,
                "prompt_eval_count": 42,
                "prompt_eval_duration": 100_000,
                "eval_count": 7,
                "eval_duration": 500_000,
            }
        return line

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        self.chat_times.append(time.monotonic())
        model = body.get("model")
        if model not in self.models:
            return web.json_response({"error": f"model '{model}' not found"}, 404)
        if body.get("think") is True and model not in self.thinkers:
            error = f'"{model}" does not support thinking'
            return web.json_response({"error": error}, status=400)
        reply = self._pick(body)
        thinking = reply.thinking if self._thinks(body) else []
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return web.json_response({"error": reply.error}, status=reply.status)
        if body.get("stream") is False:
            text, thought = "".join(reply.chunks), "".join(thinking)
            reason, calls = reply.done_reason, reply.tool_calls
            return web.json_response(self._line(body, text, True, reason, calls, thinking=thought))
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        for thought in thinking:  # a thinking model's thinking comes before any content
            line = self._line(body, "", False, "", thinking=thought)
            await response.write(json.dumps(line).encode() + b"\n")
            if reply.chunk_delay_s:
                await asyncio.sleep(reply.chunk_delay_s)
        for index, chunk in enumerate(reply.chunks):
            if reply.cut_after is not None and index >= reply.cut_after:
                request.transport.close()  # a connection lost mid-way, no final chunk
                return response
            if reply.error_line_after is not None and index >= reply.error_line_after:
                await response.write(json.dumps({"error": reply.error}).encode() + b"\n")
                await response.write_eof()
                return response
            calls = reply.tool_calls if index == 0 else None
            line = self._line(body, chunk, False, "", calls)
            await response.write(json.dumps(line).encode() + b"\n")
            if reply.chunk_delay_s:
                await asyncio.sleep(reply.chunk_delay_s)
        if not reply.omit_done:
            final = self._line(body, "", True, reply.done_reason)
            await response.write(json.dumps(final).encode() + b"\n")
        await response.write_eof()
        return response


async def _serve(port: int) -> None:
    server = FakeOllama()
    server.port = port
    await server.start()
    print(f"Fake Ollama on {server.url} (models: {', '.join(server.models)})", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    # `python -m tests.fake_ollama [PORT]`: a stand-in model server for trying Alto without a GPU.
    import sys

    asyncio.run(_serve(int(sys.argv[1]) if len(sys.argv) > 1 else 11434))
