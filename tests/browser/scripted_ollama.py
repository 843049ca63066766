"""The fake Ollama with one scripted turn, for the browser test.

Run as `python -m tests.browser.scripted_ollama PORT` (`HomeAssistantProcess(ollama_module=...)`).
When someone asks for the kitchen light, the conversational reply carries an action span, and
the executor proposes switching on `light.kitchen`, which this home does not expose: the guard
refuses it, and the panel shows a captured intent with its verdict and reason.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from ..fake_ollama import ChatReply, FakeOllama, last_user_text, wants_reply_object

ASK = "kitchen light"
PROPOSAL = {"tool": "call_ha_service", "entity": "light.kitchen", "service": "turn_on", "data": {}}


def is_executor_call(body: dict[str, Any]) -> bool:
    """The action organ's executor call: its `format` is the proposal schema (`anyOf`)."""
    schema = body.get("format")
    return isinstance(schema, dict) and "anyOf" in schema


async def serve(port: int) -> None:
    """Serve until killed."""
    server = FakeOllama()
    server.port = port
    server.when(
        lambda body: wants_reply_object(body) and ASK in last_user_text(body),
        ChatReply.text(
            "\u00a6Turning on the kitchen light.\u00a6\u00a4turn on the kitchen light\u00a4"
        ),
    )
    server.when(is_executor_call, ChatReply.text(json.dumps(PROPOSAL)))
    await server.start()
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
