"""Scripted model, settable clock and a `Reflector` in a temporary directory.

`ScriptedModel` answers each call with the next scripted item: a raw string, an exception to
raise, or a function of (messages, schema) returning the raw string. It records every call, so
a test can assert what a prompt held, or that no call was made. `Gate` is a model call that
waits until released, to cancel a pass while its call is in flight.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.reflect import Outcome, ReflectConfig, Reflector
from custom_components.alto.reflect.records import SYNTHESIS_FIELDS

USER_A = "a" * 32
USER_B = "b" * 32
T0 = 1_750_000_000

type Messages = list[dict[str, str]]
type Script = str | BaseException | Callable[[Messages, dict[str, Any]], str]


class ScriptedModel:
    """Answers calls from a script, in order; records every call."""

    def __init__(self, *script: Script) -> None:
        """Start with `script`; more can be appended to `script` later."""
        self.script: list[Script] = list(script)
        self.calls: list[tuple[Messages, dict[str, Any]]] = []

    async def __call__(self, messages: Messages, schema: dict[str, Any]) -> str:
        """The next scripted answer."""
        self.calls.append((messages, schema))
        await asyncio.sleep(0)
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        if callable(item):
            return item(messages, schema)
        return item


class Gate:
    """A model call that blocks until `release`, then answers `answer`."""

    def __init__(self, answer: str) -> None:
        """Closed, with the answer it will give."""
        self.answer = answer
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()
        self.calls = 0

    async def __call__(self, messages: Messages, schema: dict[str, Any]) -> str:
        """Wait for the gate, then answer."""
        self.calls += 1
        self.entered.set()
        await self.opened.wait()
        return self.answer


class Clock:
    """A settable POSIX clock."""

    def __init__(self, now: float = T0) -> None:
        """Start at `now`."""
        self.now = now

    def __call__(self) -> float:
        """The current time."""
        return self.now


def answer(**fields: Any) -> str:
    """A JSON answer with `fields` (lists default to empty for the keys given)."""
    return json.dumps(fields, ensure_ascii=False)


def n1_answer(observations: list[dict[str, Any]] | None = None, nominations: list[Any] = ()) -> str:
    """An N+1 answer."""
    return answer(observations=observations or [], nominations=list(nominations))


def item(content: str, turns: list[int], ledger: str = "home", resolves: int = 0) -> dict[str, Any]:
    """One item a reflection extracts."""
    return {
        "kind": "fact",
        "ledger": ledger,
        "content": content,
        "turns": turns,
        "resolves": resolves,
    }


def reflected(*items: dict[str, Any], nominations: tuple[dict[str, Any], ...] = ()) -> str:
    """A reflection answer."""
    return answer(items=list(items), nominations=list(nominations))


def synthesized(**elements: list[tuple[str, list[str]]]) -> str:
    """A synthesis answer: each field a list of (text, cites), the others empty."""
    return answer(
        **{
            name: [{"text": text, "cites": cites} for text, cites in elements.get(name, [])]
            for name in SYNTHESIS_FIELDS
        }
    )


LIGHT_OFF = Outcome("executed", "light.kitchen", "turn_off")
LOCK_FAILED = Outcome("failed", "lock.front_door", "lock")


@pytest.fixture
def clock() -> Clock:
    """A clock at T0."""
    return Clock()


@pytest.fixture
def model() -> ScriptedModel:
    """An empty script: any call fails the test with IndexError unless scripted."""
    return ScriptedModel()


@pytest.fixture
def make(tmp_path: Path, clock: Clock) -> Callable[..., Reflector]:
    """Build a `Reflector` over `tmp_path` with the test clock."""

    def build(model: Any, **config: Any) -> Reflector:
        return Reflector(tmp_path, call_model=model, clock=clock, config=ReflectConfig(**config))

    return build


@pytest.fixture
def organ(make: Callable[..., Reflector], model: ScriptedModel) -> Reflector:
    """A `Reflector` with default limits over the scripted model."""
    return make(model)


async def say(
    organ: Reflector,
    scope: str,
    utterance: str,
    reply: str = "Okay.",
    *,
    outcomes: tuple[Outcome, ...] = (),
    conversation: str = "conv-1",
) -> int:
    """Record one turn; its number."""
    receipt = await organ.record_turn(
        scope, utterance=utterance, reply=reply, outcomes=outcomes, conversation_id=conversation
    )
    return receipt.n


def entries(path: Path) -> list[dict[str, Any]]:
    """The parsed lines of a journal file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
