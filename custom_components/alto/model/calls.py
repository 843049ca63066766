"""What a model call is, whatever client makes it: the chat message and the two call shapes.

Memory's intake and acceptance, the reflect passes and their adapters all take these callables;
`ollama_io` builds them over an `ollama.AsyncClient`, tests script them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .schemas import Schema

# One chat message: {"role": "system" | "user" | "assistant", "content": text}.
Message = dict[str, str]
# `call_model(messages, schema) -> raw response text`, the schema as Ollama's `format`.
CallModel = Callable[[list[Message], Schema], Awaitable[str]]
# `embed(texts) -> one vector per text`.
Embed = Callable[[list[str]], Awaitable[list[list[float]]]]
