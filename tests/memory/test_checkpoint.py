"""The checkpoint: setup without reading Chroma, verified by the journal, erased on forget."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.memory import checkpoint, journal_tail
from custom_components.alto.memory.checkpoint import MAGIC, MAGIC_V1, Checkpoint
from custom_components.alto.memory.intake import forget, remember
from custom_components.alto.memory.journal import Journal, entry_hash
from custom_components.alto.memory.pipeline import IntakeInput
from custom_components.alto.memory.records import (
    HOUSEHOLD,
    MemoryState,
    Mutation,
    Row,
    canonical_json,
    vector_bytes,
)
from custom_components.alto.memory.store import MemoryStore

from .conftest import USER_A, FakeModel, open_store
from .test_corrections import codes_for
from .test_intake import fake_embed, intake, many

SECRET = "The spare key is under the blue flowerpot."


@pytest.fixture
def chroma_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the stores that read every Chroma record (no usable checkpoint)."""
    calls: list[int] = []
    original = MemoryStore._load

    def counted(self: MemoryStore, applied: int) -> None:
        calls.append(applied)
        original(self, applied)

    monkeypatch.setattr(MemoryStore, "_load", counted)
    return calls


async def fill(store: MemoryStore, journal: Journal, prefix: str = "in") -> None:
    """Take in five sources and a correction."""
    await intake(many(5, prefix), store, journal, FakeModel(mentions=("Anna",)))
    await intake(
        [IntakeInput("Actually the bins go out on Monday.", f"{prefix}/x")],
        store,
        journal,
        FakeModel(),
    )
    item = IntakeInput(SECRET, f"{prefix}/key", owner=USER_A, scope=USER_A, actor=USER_A)
    await remember([item], store=store, journal=journal, embed=fake_embed)


def image(store: MemoryStore) -> tuple[Any, ...]:
    """What a store holds: its rows, their codes and the journal entries applied."""
    rows = store.state.rows()
    return rows, store.state.codes(rows).tolist(), store.applied


async def test_reopening_reads_the_checkpoint_not_chroma(
    tmp_path: Path, journal: Journal, chroma_loads: list[int]
) -> None:
    """Reopening reads the checkpoint not chroma."""
    store = open_store(tmp_path)
    await fill(store, journal)
    before = image(store)
    query = await codes_for("bins key peanuts")
    recalled = store.recall(query, USER_A, 8)
    store.close()
    assert chroma_loads == [0]  # the first open, of an empty store
    reopened = open_store(tmp_path)
    assert chroma_loads == [0]
    assert image(reopened) == before
    assert reopened.recall(query, USER_A, 8) == recalled
    reopened.close()
    from_chroma = open_store(tmp_path, with_checkpoint=False)
    assert image(from_chroma) == before
    from_chroma.close()


async def test_an_older_checkpoint_catches_up_from_the_journal(
    tmp_path: Path, journal: Journal, chroma_loads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older checkpoint catches up from the journal."""
    store = open_store(tmp_path)
    await fill(store, journal, "one")
    store.close()
    store = open_store(tmp_path)
    await fill(store, journal, "two")
    expected = image(store)
    store._client.close()  # a crash: the checkpoint stays three entries behind
    monkeypatch.setattr(journal_tail, "_READ_BACK", 97)  # read back in many small steps
    with (tmp_path / "journal.jsonl").open("ab") as file:
        file.write(b'{"sequence": 99, "torn')  # a torn final line is no entry
    reopened = open_store(tmp_path)
    assert chroma_loads == [0]
    assert image(reopened) == expected
    reopened.close()


def flip_body_byte(path: Path) -> None:
    """Flip one bit near the file's end."""
    data = bytearray(path.read_bytes())
    data[-5] ^= 1
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    """Cut the file's last three bytes."""
    path.write_bytes(path.read_bytes()[:-3])


def foreign_journal(path: Path) -> None:
    """The journal of another store: same length, a sound last entry, but another one."""
    journal = path.with_name("journal.jsonl")
    lines = journal.read_bytes().split(b"\n")
    entry = json.loads(lines[-2])
    entry["request"]["inputs"][0]["text"] += " (another)"
    entry["hash"] = entry_hash(entry)
    lines[-2] = canonical_json(entry).encode()
    journal.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("damage", [flip_body_byte, truncate, foreign_journal, Path.unlink])
async def test_an_unverified_checkpoint_is_never_used(
    tmp_path: Path, journal: Journal, chroma_loads: list[int], damage: Any
) -> None:
    """An unverified checkpoint is never used."""
    store = open_store(tmp_path)
    await fill(store, journal)
    expected = image(store)
    store.close()
    damage(tmp_path / "memory.checkpoint")
    reopened = open_store(tmp_path)
    assert chroma_loads == [0, expected[2]]
    assert image(reopened) == expected
    reopened.close()
    again = open_store(tmp_path)  # the Chroma load wrote a good checkpoint
    assert len(chroma_loads) == 2
    assert image(again) == expected
    again.close()


async def test_forgetting_rewrites_the_checkpoint_without_the_quote(
    tmp_path: Path, journal: Journal, chroma_loads: list[int]
) -> None:
    """Forgetting rewrites the checkpoint without the quote."""
    store = open_store(tmp_path)
    await fill(store, journal)
    store.close()
    path = tmp_path / "memory.checkpoint"
    assert SECRET.encode() in path.read_bytes()
    store = open_store(tmp_path)
    [key] = [row.id for row in store.rows(USER_A) if row.document == SECRET]
    result = await forget([key], viewer=USER_A, store=store, journal=journal)
    assert result.admitted
    assert SECRET.encode() not in path.read_bytes()
    assert not path.with_name(path.name + ".tmp").exists()
    expected = image(store)
    store._client.close()  # no close: the checkpoint was written by the forget itself
    reopened = open_store(tmp_path)
    assert chroma_loads == [0]
    assert image(reopened) == expected
    reopened.close()


async def test_a_checkpoint_that_cannot_be_written_costs_one_warning(
    tmp_path: Path,
    journal: Journal,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A checkpoint that cannot be written costs one warning."""
    store = open_store(tmp_path)
    await fill(store, journal)

    def refuse(self: Checkpoint, state: object, corpus: object = None) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(Checkpoint, "save", refuse)
    with caplog.at_level(logging.WARNING, "custom_components.alto.memory.store"):
        store.close()
    [warning] = [r for r in caplog.records if r.name == "custom_components.alto.memory.store"]
    assert "disk full" in warning.getMessage()
    assert not (tmp_path / "memory.checkpoint").exists()


async def test_forgetting_the_last_row_removes_the_checkpoint(
    tmp_path: Path, journal: Journal
) -> None:
    """Forgetting the last row removes the checkpoint."""
    store = open_store(tmp_path)
    item = IntakeInput(SECRET, "k/1", owner=USER_A, scope=USER_A, actor=USER_A)
    await remember([item], store=store, journal=journal, embed=fake_embed)
    store.close()
    path = tmp_path / "memory.checkpoint"
    assert path.exists()
    store = open_store(tmp_path)
    await forget([store.state.rows()[0].id], viewer=USER_A, store=store, journal=journal)
    assert len(store.state) == 0
    assert not path.exists()
    store.close()
    reopened = open_store(tmp_path)
    assert len(reopened.state) == 0
    assert reopened.state.snapshot() is None
    reopened.close()


def test_a_checkpoint_needs_its_journal_entry(tmp_path: Path) -> None:
    """Saving a state whose last entry the journal lacks is refused, not written unverified."""
    state = MemoryState()
    vector = vector_bytes([1.0, 0.0])
    row = Row(1, "x", "source", HOUSEHOLD, HOUSEHOLD, "unknown", "s", 1, 0, 1, vector=vector)
    state.apply(Mutation(3, (row,)))
    found = Checkpoint(tmp_path / "memory.checkpoint", tmp_path / "journal.jsonl")
    with pytest.raises(ValueError, match="the journal has no entry 3"):
        found.save(state)
    assert not found.path.exists()
    assert found.load(3) is None


def blocks(store: MemoryStore, query: Any) -> list[list[Row]]:
    """Every viewer's turn block for two utterances."""
    return [
        store.turn_block(query, viewer, text, lambda row: row.document, {USER_A: "Anna"})
        for viewer in (None, USER_A)
        for text in ("When do the bins go out?", "Where is the spare key, Anna?")
    ]


async def test_a_start_reads_the_corpus_from_the_checkpoint_not_the_quotes(
    tmp_path: Path, journal: Journal, chroma_loads: list[int], stemmed: list[str]
) -> None:
    """The checkpoint holds the corpus image: a start stems no row.

    A start whose checkpoint is behind stems only the rows written after it, and the blocks are
    those of a store that read every row from Chroma.
    """
    store = open_store(tmp_path)
    await fill(store, journal, "one")
    query = await codes_for("bins key Monday")
    expected = blocks(store, query)
    store.close()
    stemmed.clear()
    reopened = open_store(tmp_path)
    assert blocks(reopened, query) == expected
    assert stemmed == []
    await fill(reopened, journal, "two")
    reopened._client.close()  # a crash: the checkpoint stays behind
    stemmed.clear()
    behind = open_store(tmp_path)
    found = blocks(behind, query)
    assert stemmed
    assert all("one/" not in text for text in stemmed)
    assert chroma_loads == [0]
    behind._client.close()
    from_chroma = open_store(tmp_path, with_checkpoint=False)
    assert blocks(from_chroma, query) == found
    from_chroma.close()


async def test_a_first_version_checkpoint_still_loads(
    tmp_path: Path, journal: Journal, chroma_loads: list[int], stemmed: list[str]
) -> None:
    """A file of version 1 (no corpus image) is read; the rows are stemmed again."""
    store = open_store(tmp_path)
    await fill(store, journal)
    query = await codes_for("bins key Monday")
    expected = blocks(store, query)
    state = store.state
    store._client.close()
    path = tmp_path / "memory.checkpoint"
    Checkpoint(path, tmp_path / "journal.jsonl").save(state)  # no image: "corpus": null
    magic, header, body = path.read_bytes().split(b"\n", 2)
    assert magic + b"\n" == MAGIC
    fields = json.loads(header)
    del fields["corpus"]
    path.write_bytes(MAGIC_V1 + (canonical_json(fields) + "\n").encode() + body)
    stemmed.clear()
    reopened = open_store(tmp_path)
    assert chroma_loads == [0]
    assert blocks(reopened, query) == expected
    assert len(stemmed) == len(reopened.state.rows())
    reopened._client.close()


async def test_an_image_read_by_other_word_rules_is_not_used(
    tmp_path: Path,
    journal: Journal,
    chroma_loads: list[int],
    stemmed: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another version's stemmer or word lists: the state loads, the quotes are read again."""
    store = open_store(tmp_path)
    await fill(store, journal)
    query = await codes_for("bins key Monday")
    expected = blocks(store, query)
    store.close()
    monkeypatch.setattr(checkpoint, "LEXICON", "other rules")
    stemmed.clear()
    reopened = open_store(tmp_path)
    assert chroma_loads == [0]
    assert blocks(reopened, query) == expected
    assert len(stemmed) == len(reopened.state.rows())
    reopened._client.close()
