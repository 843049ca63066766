"""The fake Ollama with scripted turns, for the browser test.

Run as `python -m tests.browser.scripted_ollama PORT` (`HomeAssistantProcess(ollama_module=...)`).
When someone asks for the kitchen light, the conversational reply carries an action span, and
the executor proposes switching on `light.kitchen`, which this home does not expose: the guard
refuses it, and the panel shows a captured intent with its verdict and reason.

The test qualifies this model, so turns are interpreted (mode 2): the first intake call labels
each sentence (a question or a sentence opening with "Please" is a request), the second records
each statement as an assertion and mentions SISTER by name. When a later turn names her, the
Surfacer renders THOUGHT, which the verifier traces to that statement: the panel shows it.

The background passes are told apart by their `format` schema, and each answer is built from
it: N+1 notes OBSERVED (pending, medium urgency) on the first turn it reads when that is the
kitchen-light request; a synthesis finds THEME and ANCHOR, citing the first turn it may cite.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import Any

from custom_components.alto.memory.profile import CLASSIFICATION_INSTRUCTION, STATEMENT_INSTRUCTION

from ..fake_ollama import ChatReply, FakeOllama, is_render, last_user_text, wants_reply_object

ASK = "kitchen light"
PROPOSAL = {"tool": "call_ha_service", "entity": "light.kitchen", "service": "turn_on", "data": {}}
SISTER = "Carla"
THOUGHT = "I remember Carla visits every Sunday."
OBSERVED = "Ana asked for the kitchen light and it stayed off: Alto may not switch it."
THEME = "Family visits on Sundays"
ANCHOR = "Carla, Ana's sister"
_NUMBERED = re.compile(r'^\d+: (".*")$', re.MULTILINE)


def numbered(body: dict[str, Any], opening: str, closing: str) -> list[str]:
    """The JSON-string lines between `opening` and `closing` of the request's user message."""
    text = last_user_text(body)
    inside = text[text.index(opening) + len(opening) : text.index(closing)]
    return [json.loads(line) for line in _NUMBERED.findall(inside)]


def labels(body: dict[str, Any]) -> ChatReply:
    """Intake call 1: each span a statement, unless it asks or opens with "Please"."""
    spans = numbered(body, "<source>", "</source>")
    asks = [span.rstrip().endswith("?") or span.startswith("Please") for span in spans]
    answer = [
        [span, "request" if ask else "statement"] for span, ask in zip(spans, asks, strict=True)
    ]
    return ChatReply.text(json.dumps(answer))


def classification(body: dict[str, Any]) -> ChatReply:
    """Intake call 2: each statement a new assertion; SISTER mentioned where she is named."""
    statements = numbered(body, "<statements>", "</statements>")
    answer: list[list[Any]] = [[3, statement] for statement in statements]
    answer += [[1, SISTER] for statement in statements if SISTER in statement][:1]
    return ChatReply.text(json.dumps(answer))


def instruction(body: dict[str, Any]) -> str:
    """The request's system message."""
    messages = body.get("messages") or [{}]
    return str(messages[0].get("content", ""))


def answer_fields(body: dict[str, Any]) -> dict[str, Any]:
    """The properties of the request's `format` schema (empty: no schema)."""
    schema = body.get("format")
    return dict(schema.get("properties") or {}) if isinstance(schema, dict) else {}


def is_n1(body: dict[str, Any]) -> bool:
    """An N+1 pass: its schema asks for observations."""
    return "observations" in answer_fields(body)


def is_synthesis(body: dict[str, Any]) -> bool:
    """A synthesis pass: its schema asks for themes."""
    return "themes" in answer_fields(body)


def n1(body: dict[str, Any]) -> ChatReply:
    """N+1: OBSERVED on the first turn shown if it is the kitchen-light request, else nothing.

    The first turn shown is the first value of the schema's turn enum.
    """
    observation = answer_fields(body)["observations"]["items"]
    first = observation["properties"]["turns"]["items"]["enum"][0]
    shown = last_user_text(body)
    person = shown[shown.index(f"T{first} ") :].split("\nalto: ", 1)[0]  # its header and person
    found = (
        [{"mandate": "complete", "turns": [first], "content": OBSERVED, "urgency": "medium"}]
        if ASK in person
        else []
    )
    return ChatReply.text(json.dumps({"observations": found, "nominations": []}))


def synthesis(body: dict[str, Any]) -> ChatReply:
    """A synthesis with THEME and ANCHOR, each citing the first turn the schema allows."""
    fields = answer_fields(body)
    refs = fields["themes"]["items"]["properties"]["cites"]["items"]["enum"]
    first = next(ref for ref in refs if ref.startswith("T"))
    answer: dict[str, list[Any]] = {name: [] for name in fields}
    answer["themes"] = [{"text": THEME, "cites": [first]}]
    answer["anchors"] = [{"text": ANCHOR, "cites": [first]}]
    return ChatReply.text(json.dumps(answer))


def is_executor_call(body: dict[str, Any]) -> bool:
    """The action organ's executor call: its `format` is the proposal schema (`anyOf`)."""
    schema = body.get("format")
    return isinstance(schema, dict) and "anyOf" in schema


async def serve(port: int) -> None:
    """Serve until killed."""
    server = FakeOllama()
    server.port = port
    server.when(is_n1, n1)
    server.when(is_synthesis, synthesis)
    server.when(
        lambda body: wants_reply_object(body) and ASK in last_user_text(body),
        ChatReply.text(
            "\u00a6Turning on the kitchen light.\u00a6\u00a4turn on the kitchen light\u00a4"
        ),
    )
    server.when(lambda body: instruction(body) == STATEMENT_INSTRUCTION, labels)
    server.when(lambda body: instruction(body) == CLASSIFICATION_INSTRUCTION, classification)
    server.when(is_executor_call, ChatReply.text(json.dumps(PROPOSAL)))
    server.when(is_render, ChatReply.text(THOUGHT))
    await server.start()
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
