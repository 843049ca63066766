"""The Surfacer's render call: one non-streamed `/api/chat` request to the small model.

No tools and no `format` (the thought is plain text, and the verifier, not a schema, decides what
may surface). Sampling is near-greedy (temperature 0.1) so the same fragment renders the same way
and the one regeneration stays close to the fragment; generation is capped at 160 tokens, enough
for one sentence with room to spare. `keep_alive` keeps the small model loaded between turns.
`timeout` bounds the whole call (`TimeoutError`); the client's own timeout still applies. Errors
propagate: the Surfacer turns them into outcome "nothing".
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import ollama

type Render = Callable[[list[dict[str, str]]], Awaitable[str]]

RENDER_OPTIONS = {"temperature": 0.1, "num_predict": 160}


def render_for(
    client: ollama.AsyncClient, model: str, *, keep_alive: str, timeout: float, num_ctx: int
) -> Render:
    """`render(messages) -> the reply's text` for the small chat `model`."""
    if timeout <= 0:
        raise ValueError("timeout must be positive")

    async def render(messages: list[dict[str, str]]) -> str:
        async with asyncio.timeout(timeout):
            response = await client.chat(
                model=model,
                messages=messages,
                stream=False,
                # The same context window as every call to this model: no reload between them.
                options={**RENDER_OPTIONS, "num_ctx": num_ctx},
                keep_alive=keep_alive,
            )
        return response.message.content or ""

    return render
