"""Deterministic fakes and fixtures for the memory tests.

`FakeModel` answers both intake calls the way a well-behaved model would (a simple rule per
span), or with scripted raw responses; it records every call so tests can assert that none was
made. `fake_embed` is a bag-of-words embedding: texts sharing words score higher.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.memory import corpus
from custom_components.alto.memory.checkpoint import Checkpoint
from custom_components.alto.memory.journal import Journal
from custom_components.alto.memory.profile import STATEMENT_INSTRUCTION
from custom_components.alto.memory.store import MemoryStore

DIM = 16
USER_A = "a" * 32
USER_B = "b" * 32
MODEL_DIGEST = hashlib.sha256(b"fake-model").hexdigest()

_REQUEST_WORDS = {"turn", "please", "dim", "tell", "say", "don't", "if", "when", "remind", "open"}
_LINE = re.compile(r"^\d+: (\".*\")$")
_TABLE = re.compile(r"^\d+\. .* quote=(\".*\")$")


def _section(content: str, tag: str) -> list[str]:
    body = content.split(f"<{tag}>\n", 1)[1].split(f"</{tag}>", 1)[0]
    return [line for line in body.split("\n") if line]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


class FakeModel:
    """A deterministic stand-in for the language model (see the module docstring)."""

    def __init__(self, mentions: tuple[str, ...] = ()) -> None:
        """No call yet; `mentions`: the names it reports in any statement naming them."""
        self.calls: list[tuple[list[dict[str, str]], dict[str, Any]]] = []
        # Return a raw response to replace the rule-based one, or None to keep it.
        self.override: Callable[[list[dict[str, str]], str], str | None] | None = None
        self.mentions = mentions

    async def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        """Answer one model call (the override's answer, when it gives one)."""
        self.calls.append((messages, schema))
        user = messages[1]["content"]
        answer = self.label(user) if self.is_first(messages) else self.classify(user)
        if self.override is not None:
            replaced = self.override(messages, answer)
            if replaced is not None:
                return replaced
        return answer

    @staticmethod
    def is_first(messages: list[dict[str, str]]) -> bool:
        """Whether a call is call 1 (statement labels)."""
        return messages[0]["content"] == STATEMENT_INSTRUCTION

    @staticmethod
    def label(user: str) -> str:
        """The first call's answer: a label for every source span."""
        spans = [json.loads(_LINE.match(line)[1]) for line in _section(user, "source")]
        items = []
        for span in spans:
            first = span.split()[0].casefold().strip(",") if span.split() else ""
            request = span.endswith("?") or first in _REQUEST_WORDS
            items.append([span, "request" if request else "statement"])
        return json.dumps(items, ensure_ascii=False)

    def classify(self, user: str) -> str:
        """The second call's answer: a classification of every statement."""
        table = [json.loads(_TABLE.match(line)[1]) for line in _section(user, "corrections")]
        statements = [json.loads(_LINE.match(line)[1]) for line in _section(user, "statements")]
        items: list[list[Any]] = []
        for statement in statements:
            overlap = [len(_words(statement) & _words(quote)) for quote in table]
            if statement.startswith("Actually") and overlap and max(overlap) > 1:
                items.append([4, statement, overlap.index(max(overlap)) + 1])
            else:
                items.append([3, statement])
        for name in self.mentions:
            if any(name in statement for statement in statements):
                items.append([1, name])
        return json.dumps(items, ensure_ascii=False)


async def fake_embed(texts: list[str]) -> list[list[float]]:
    """Signed bag-of-words counts plus a constant component (never a zero vector)."""
    vectors = []
    for text in texts:
        vector = [0.0] * DIM
        vector[0] = 0.25
        for word in _words(text):
            digest = hashlib.sha256(word.encode()).digest()
            vector[1 + digest[0] % (DIM - 1)] += 1.0 if digest[1] & 1 else -1.0
        vectors.append(vector)
    return vectors


@pytest.fixture
def model() -> FakeModel:
    """A rule-following fake model."""
    return FakeModel()


def journal_bytes(journal: Journal) -> bytes | None:
    """The journal file's exact bytes (None while it does not exist)."""
    return journal.path.read_bytes() if journal.path.exists() else None


def open_store(tmp_path: Path, *, with_checkpoint: bool = True) -> MemoryStore:
    """The persistent store under `tmp_path`, with its checkpoint unless told not to.

    Its journal is `tmp_path / "journal.jsonl"`, as the `journal` fixture's.
    """
    found = Checkpoint(tmp_path / "memory.checkpoint", tmp_path / "journal.jsonl")
    return MemoryStore.open_persistent(
        tmp_path / "chroma", checkpoint=found if with_checkpoint else None
    )


@pytest.fixture
def home(tmp_path: Path) -> tuple[MemoryStore, Journal]:
    """A store with a checkpoint, and its journal."""
    return open_store(tmp_path), Journal(tmp_path / "journal.jsonl")


@pytest.fixture
def stemmed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The quotes the store's corpus stems (read anew, not from a checkpoint's image)."""
    read: list[str] = []
    count = corpus.count_terms
    monkeypatch.setattr(corpus, "count_terms", lambda text: read.append(text) or count(text))
    return read
