"""Adapters from an `ollama.AsyncClient` to the callables intake and qualification take.

`call_model_for` makes one non-streaming `/api/chat` call per request with the schema as
`format`, greedy sampling (temperature 0, fixed seed) and at most 4,096 generated tokens (the
processor contract's 4,096-tick bound; the 4,096-byte response bound is the parser's), with the
context window every other call to the same model uses (Ollama reloads a model whenever
`num_ctx` changes). No tools are passed.
`embed_for` calls `/api/embed`. `model_digest` reads the exact model digest from `/api/tags`,
the model half of a qualified pair. Errors propagate: intake turns them into refusals.
"""

from __future__ import annotations

import ollama

from .calls import CallModel, Embed, Message
from .digest import normalize_digest
from .schemas import Schema

_OPTIONS = {"temperature": 0, "seed": 0, "num_predict": 4096}


def call_model_for(client: ollama.AsyncClient, model: str, *, num_ctx: int) -> CallModel:
    """`call_model(messages, schema) -> raw response text` for `model`."""
    options = {**_OPTIONS, "num_ctx": num_ctx}

    async def call_model(messages: list[Message], schema: Schema) -> str:
        response = await client.chat(
            model=model, messages=messages, format=schema, options=options, stream=False
        )
        return response.message.content or ""

    return call_model


def embed_for(client: ollama.AsyncClient, model: str) -> Embed:
    """`embed(texts) -> one vector per text` for the embedding `model`."""

    async def embed(texts: list[str]) -> list[list[float]]:
        response = await client.embed(model=model, input=texts)
        return [list(vector) for vector in response.embeddings]

    return embed


def _tagged(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


async def model_digest(client: ollama.AsyncClient, model: str) -> str | None:
    """The 64-hex digest `/api/tags` lists for `model` (":latest" implied), None if absent."""
    listing = await client.list()
    for entry in listing.models:
        if entry.model and _tagged(entry.model) == _tagged(model):
            return normalize_digest(entry.digest)
    return None
