"""The local model server against the real `ollama` client: a real model, Ollama's wire format.

Replies of a 135M model are not asserted word for word: the assertions are about shapes, the
schema, repeatability and the server's own behaviour. Two tests need a kind of reply and say so
(prose when no `format` is given, a story longer than a few tokens).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, cast

import numpy as np
import ollama
import pytest

from .local_model import CHAT_MODEL, EMBED_MODEL, LocalOllama, chat_file, chat_model, embed_file

pytestmark = pytest.mark.real_model

GREEDY = {"temperature": 0, "seed": 7, "num_predict": 32}
ASK = [{"role": "user", "content": "Name three rooms of a house."}]


@pytest.fixture
def client(local_ollama: LocalOllama) -> ollama.AsyncClient:
    """The real client, pointed at the server."""
    return ollama.AsyncClient(host=local_ollama.url)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


async def test_tags_lists_both_models_with_the_files_digests(client: ollama.AsyncClient) -> None:
    """/api/tags: both models, each digest the SHA-256 of its model file, the same every time."""
    first, second = await client.list(), await client.list()
    digests = {model.model: model.digest for model in first.models}
    assert digests == {model.model: model.digest for model in second.models}
    files = await asyncio.to_thread(lambda: (_sha256(chat_file().path), _sha256(embed_file().path)))
    assert digests == {CHAT_MODEL: files[0], EMBED_MODEL: files[1]}


async def test_show_gives_capabilities_and_lengths(client: ollama.AsyncClient) -> None:
    """/api/show: what each model can do, its context length and embedding length."""
    chat = await client.show(CHAT_MODEL)
    assert chat.capabilities == ["completion"]
    assert chat.modelinfo is not None
    assert chat.modelinfo["general.architecture"] == "llama"
    assert chat.modelinfo["llama.context_length"] == 8192
    assert chat.modelinfo["llama.embedding_length"] == 576
    assert "<|im_start|>" in (chat.template or "")
    embed = await client.show(EMBED_MODEL.removesuffix(":latest"))  # the tag is optional
    assert embed.capabilities == ["embedding"]
    assert embed.modelinfo == {
        "general.architecture": "bert",
        "bert.context_length": 512,
        "bert.embedding_length": 384,
    }
    with pytest.raises(ollama.ResponseError) as err:
        await client.show("llama3.2:latest")
    assert err.value.status_code == 404


async def test_chat_streamed_equals_whole_at_temperature_0(client: ollama.AsyncClient) -> None:
    """Greedy decoding: the streamed pieces join to the non-streamed reply, with statistics."""
    whole = await client.chat(model=CHAT_MODEL, messages=ASK, options=GREEDY, stream=False)
    parts = [
        part
        async for part in await client.chat(
            model=CHAT_MODEL, messages=ASK, options=GREEDY, stream=True
        )
    ]
    assert whole.message.content
    assert "".join(part.message.content or "" for part in parts) == whole.message.content
    assert len(parts) > 2
    assert not any(part.done for part in parts[:-1])
    final = parts[-1]
    assert final.done
    assert final.message.content == ""
    assert final.done_reason in ("stop", "length")
    assert whole.eval_count == final.eval_count
    assert whole.eval_count is not None
    assert 0 < whole.eval_count <= GREEDY["num_predict"]
    assert whole.prompt_eval_count
    assert whole.prompt_eval_count > 10
    assert final.prompt_eval_duration
    assert final.eval_duration
    assert final.total_duration
    # The same prompt again is served from llama.cpp's cache: at most one token evaluated.
    assert final.prompt_eval_count is not None
    assert final.prompt_eval_count <= 1


async def test_seed_makes_sampling_repeatable(client: ollama.AsyncClient) -> None:
    """At temperature 1 the same seed gives the same reply."""
    options = {"temperature": 1.0, "seed": 1234, "num_predict": 24}
    replies = [
        (await client.chat(model=CHAT_MODEL, messages=ASK, options=options)).message.content
        for _ in range(2)
    ]
    assert replies[0]
    assert replies[0] == replies[1]


async def test_num_predict_stops_with_length(client: ollama.AsyncClient) -> None:
    """`num_predict` caps the reply; the reason says so."""
    reply = await client.chat(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "Write a long story about a lamp."}],
        options={"temperature": 0, "num_predict": 5},
    )
    assert reply.eval_count == 5
    assert reply.done_reason == "length"


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "speech": {"type": "string", "maxLength": 40},
        "actions": {
            "type": "array",
            "items": {"type": "string", "enum": ["light.kitchen", "lock.front_door"]},
            "maxItems": 2,
        },
        "mood": {"type": "string", "enum": ["calm", "busy"]},
        "count": {"type": "integer"},
    },
    "required": ["speech", "actions", "mood", "count"],
    "additionalProperties": False,
}


async def test_format_schema_constrains_the_reply(client: ollama.AsyncClient) -> None:
    """A JSON schema in `format`: the reply parses and has the schema's shape, streamed or not."""
    messages = [{"role": "user", "content": "Turn on the kitchen light, please."}]
    options = {"temperature": 0.8, "seed": 3, "num_predict": 400}
    whole = await client.chat(model=CHAT_MODEL, messages=messages, format=SCHEMA, options=options)
    streamed = "".join(
        [
            part.message.content or ""
            async for part in await client.chat(
                model=CHAT_MODEL, messages=messages, format=SCHEMA, options=options, stream=True
            )
        ]
    )
    assert streamed == whole.message.content
    assert whole.done_reason == "stop"
    reply = json.loads(whole.message.content or "")
    assert list(reply) == ["speech", "actions", "mood", "count"]  # the schema's order
    assert isinstance(reply["speech"], str)
    assert len(reply["speech"]) <= 40
    assert len(reply["actions"]) <= 2
    assert set(reply["actions"]) <= {"light.kitchen", "lock.front_door"}
    assert reply["mood"] in ("calm", "busy")
    assert isinstance(reply["count"], int)


async def test_format_json_gives_json(client: ollama.AsyncClient) -> None:
    """`format: "json"`: a JSON value where the same request without it gets prose."""
    messages = [{"role": "user", "content": "Tell me about cats in detail."}]
    options = {"temperature": 0, "num_predict": 80}
    plain = await client.chat(model=CHAT_MODEL, messages=messages, options=options)
    # The test needs prose here (SmolLM2 writes it for this prompt); this says when it does not.
    with pytest.raises(json.JSONDecodeError):
        json.loads(plain.message.content or "")
    reply = await client.chat(model=CHAT_MODEL, messages=messages, format="json", options=options)
    assert reply.done_reason == "stop"
    json.loads(reply.message.content or "")


async def test_embed_gives_normalized_384_d_vectors(client: ollama.AsyncClient) -> None:
    """/api/embed: one unit vector per input, meaning across languages, deterministic."""
    texts = ["The front door is locked.", "Die Haustür ist abgeschlossen.", "I like pancakes."]
    response = await client.embed(model=EMBED_MODEL, input=texts)
    vectors = np.array(response.embeddings)
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2]
    assert similarity[0, 1] > similarity[1, 2]
    again = await client.embed(model=EMBED_MODEL, input=texts[0])
    np.testing.assert_allclose(again.embeddings[0], vectors[0], atol=1e-6)
    assert response.prompt_eval_count
    assert response.prompt_eval_count > 3 * 2


async def test_embed_dimensions_truncates_and_renormalizes(client: ollama.AsyncClient) -> None:
    """`dimensions` keeps the first components, scaled back to unit length."""
    full = (await client.embed(model=EMBED_MODEL, input="kitchen light")).embeddings[0]
    short = (await client.embed(model=EMBED_MODEL, input="kitchen light", dimensions=64)).embeddings
    assert len(short[0]) == 64
    expected = np.array(full[:64]) / np.linalg.norm(full[:64])
    np.testing.assert_allclose(short[0], expected, atol=1e-6)


@pytest.mark.parametrize(
    ("call", "status", "message"),
    [
        ({"model": EMBED_MODEL}, 400, "does not support chat"),
        ({"model": CHAT_MODEL, "tools": [{"type": "function"}]}, 400, "does not support tools"),
        ({"model": CHAT_MODEL, "think": True}, 400, "does not support thinking"),
        ({"model": "llama3.2:latest"}, 404, "not found"),
        ({"model": CHAT_MODEL, "format": {"type": "nonsense"}}, 400, "invalid format"),
    ],
)
async def test_chat_refusals(
    client: ollama.AsyncClient, call: dict[str, Any], status: int, message: str
) -> None:
    """What Ollama refuses is refused with its status, before any generation."""
    with pytest.raises(ollama.ResponseError) as err:
        await client.chat(messages=ASK, **call)
    assert err.value.status_code == status
    assert message in str(err.value)


async def test_embed_with_the_chat_model_is_refused(client: ollama.AsyncClient) -> None:
    """The chat model has no embedding capability."""
    with pytest.raises(ollama.ResponseError) as err:
        await client.embed(model=CHAT_MODEL, input="hello")
    assert err.value.status_code == 400


async def test_num_ctx_drops_the_oldest_messages(
    client: ollama.AsyncClient, local_ollama: LocalOllama
) -> None:
    """A history longer than `num_ctx` keeps the system message and the newest messages."""
    system = {"role": "system", "content": "You are a home assistant."}
    history = [
        {"role": role, "content": f"Message {index}: " + "the hallway light is on. " * 8}
        for index in range(40)
        for role in ("user", "assistant")
    ]
    reply = await client.chat(
        model=CHAT_MODEL,
        messages=[system, *history, *ASK],
        options={"temperature": 0, "num_predict": 8, "num_ctx": 512},
    )
    assert reply.message.content
    model, _ = chat_model()
    with model.lock:
        kept = model.fit([system, *history, *ASK], 512)
        text = model.llm.detokenize(kept, special=True).decode()
    assert len(kept) <= 512
    assert text.startswith("<|im_start|>system\nYou are a home assistant.")
    assert "Message 39" in text
    assert "Message 0:" not in text
    with pytest.raises(ollama.ResponseError) as err:
        await client.chat(
            model=CHAT_MODEL,
            messages=[{"role": "user", "content": "light " * 600}],
            options={"num_ctx": 256},
        )
    assert err.value.status_code == 400
    assert len(local_ollama.results) == 1  # the refused request generated nothing


async def test_num_ctx_changes_are_counted(
    client: ollama.AsyncClient, local_ollama: LocalOllama
) -> None:
    """Each change of `num_ctx` between calls (a reload on Ollama) is counted."""
    model, _ = chat_model()
    options = {"temperature": 0, "num_predict": 1}
    await client.chat(model=CHAT_MODEL, messages=ASK, options={**options, "num_ctx": 2048})
    before = model.num_ctx_changes
    await client.chat(model=CHAT_MODEL, messages=ASK, options={**options, "num_ctx": 2048})
    assert model.num_ctx_changes == before
    await client.chat(model=CHAT_MODEL, messages=ASK, options={**options, "num_ctx": 4096})
    await client.chat(model=CHAT_MODEL, messages=ASK, options=options)  # Ollama's default: 4096
    assert model.num_ctx_changes == before + 1
    sent = [body["options"].get("num_ctx") for body in local_ollama.chat_requests]
    assert sent == [2048, 2048, 4096, None]


async def test_disconnect_stops_generation_and_the_loop_stays_free(
    client: ollama.AsyncClient, local_ollama: LocalOllama
) -> None:
    """While a long reply generates the server answers; a client going away stops it."""
    stream = cast(
        AsyncGenerator[ollama.ChatResponse],
        await client.chat(
            model=CHAT_MODEL,
            # SmolLM2 writes hundreds of tokens for this; the test stops it after three pieces.
            messages=[{"role": "user", "content": "Tell a long story about a lighthouse."}],
            options={"temperature": 0.8, "seed": 1, "num_predict": 2000},
            stream=True,
        ),
    )
    received = 0
    async for _ in stream:
        received += 1
        if received == 3:
            break
    started = time.perf_counter()
    assert (await client.list()).models  # the event loop is not held by the model
    assert time.perf_counter() - started < 0.5
    await stream.aclose()  # closes the HTTP response: the client goes away
    for _ in range(100):
        if local_ollama.results:
            break
        await asyncio.sleep(0.05)
    (result,) = local_ollama.results
    assert result.done_reason == "cancelled"  # neither the end of the story nor num_predict
    # The model is free again: the next request is answered.
    reply = await client.chat(model=CHAT_MODEL, messages=ASK, options={"num_predict": 4})
    assert reply.eval_count == 4
