"""Forgetting erases: tombstones in the journal, authorized by the forget entry; Chroma's files.

A forgotten text leaves no byte in the journal, the checkpoint or the embedded Chroma folder;
the journal still opens, verifies and replays to the store's state; a tombstone that no forget
authorized, or that differs from the authorized one, is damage; a crash between the forget entry
and the rewrite is finished at the next open.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chromadb
import pytest

from custom_components.alto.memory import erasure, redaction
from custom_components.alto.memory import intake as intake_module
from custom_components.alto.memory.intake import StoreBehind, accept, forget, remember
from custom_components.alto.memory.journal import REDACT, Journal, entry_hash
from custom_components.alto.memory.pipeline import IntakeInput
from custom_components.alto.memory.records import canonical_json
from custom_components.alto.memory.replay import reconcile, replay, replay_state
from custom_components.alto.memory.store import COLLECTION, ROWS_INDEX, MemoryStore

from ..on_disk import holding
from .conftest import USER_A, FakeModel, fake_embed, open_store
from .test_intake import intake, many

SECRET = "My bank PIN is 4821 and the safe code is 9917."
KEPT = "The spare key hangs by the garage door."


def _rows(state: object) -> list[tuple[object, ...]]:
    return sorted(
        (row.id, row.document, row.kind, row.status, row.source_id)
        for row in state.rows()  # type: ignore[attr-defined]
    )


async def _history(store: MemoryStore, journal: Journal) -> tuple[int, int]:
    """Write the secret (mode 2), a kept memory and a later turn whose table quotes the secret.

    Returns the secret's source row id and the kept memory's.
    """
    model = FakeModel()
    await intake(many(3), store, journal, model)
    said = await intake(
        [IntakeInput(SECRET, "t/secret", owner=USER_A, scope=USER_A, actor=USER_A)],
        store,
        journal,
        model,
    )
    kept = await remember(
        [IntakeInput(KEPT, "t/kept", owner=USER_A, scope=USER_A, actor=USER_A)],
        store=store,
        journal=journal,
        embed=fake_embed,
    )
    later = IntakeInput(
        "Actually my bank PIN is different now.", "t/later", owner=USER_A, scope=USER_A
    )
    await intake([later], store, journal, model)
    return said.ids[0][0], kept.ids[0][0]


async def test_forget_leaves_no_byte_and_the_journal_replays(
    tmp_path: Path, home: tuple[MemoryStore, Journal]
) -> None:
    """Forget leaves no byte of the text, and the journal verifies and replays to the store."""
    store, journal = home
    try:
        secret, kept = await _history(store, journal)
        assert holding(tmp_path, ("4821",))  # it is there before
        result = await forget([secret], viewer=USER_A, store=store, journal=journal)
        assert result.admitted
        state = _rows(store.state)
    finally:
        store.close()
    assert holding(tmp_path, (SECRET, "4821", "9917")) == {}
    assert holding(tmp_path, (KEPT,))  # a kept memory stays
    forget_entry = json.loads(journal.path.read_bytes().splitlines()[-1])
    assert forget_entry["op"] == "forget"
    assert forget_entry[REDACT]
    assert redaction.verify(journal.path)
    report, replayed = replay_state(journal.path)
    assert report["ok"], report
    assert report["redacted"] == len(forget_entry[REDACT])
    assert _rows(replayed) == state
    assert kept in {row[0] for row in state}
    assert secret not in {row[0] for row in state}
    reopened = Journal(journal.path)
    assert reopened.damage is None
    assert reopened.count == forget_entry["sequence"]
    # A store rebuilt from the journal alone (no Chroma, no checkpoint) is the same store.
    fresh = MemoryStore.open_persistent(tmp_path / "elsewhere")
    try:
        reconcile(reopened, fresh)
        assert _rows(fresh.state) == state
    finally:
        fresh.close()
    # And the store opens again, from its checkpoint, with the same memories.
    again = open_store(tmp_path)
    try:
        reconcile(reopened, again)
        assert _rows(again.state) == state
    finally:
        again.close()


async def test_a_tombstone_nobody_authorized_is_damage(
    store: MemoryStore, journal: Journal
) -> None:
    """A line blanked without a forget that lists it does not verify (it reads as tampering)."""
    await intake(many(2), store, journal, FakeModel())
    await intake(many(1, "next"), store, journal, FakeModel())
    lines = journal.path.read_bytes().splitlines()
    entry = json.loads(lines[0])
    entry["request"]["inputs"][0]["text"] = ""
    blanked = canonical_json(entry).encode()
    lines[0] = blanked + b" " * (len(lines[0]) - len(blanked))
    journal.path.write_bytes(b"".join(line + b"\n" for line in lines))
    damaged = Journal(journal.path)
    assert damaged.damage is not None
    assert (damaged.damage.sequence, damaged.damage.reason) == (1, "entry_hash")
    assert replay(journal.path)["first_mismatch"] == 0
    assert replay(journal.path)["reason"] == "entry_hash"
    assert not redaction.verify(journal.path)


async def test_a_tampered_tombstone_is_damage(store: MemoryStore, journal: Journal) -> None:
    """A tombstone that differs from the authorized one (a kept field edited) does not verify."""
    secret, _kept = await _history(store, journal)
    await forget([secret], viewer=USER_A, store=store, journal=journal)
    lines = journal.path.read_bytes().splitlines()
    listed = json.loads(lines[-1])[REDACT]
    sequence = listed[0][0]
    tomb = json.loads(lines[sequence - 1])
    assert entry_hash(tomb) != tomb["hash"]  # a tombstone
    tomb["request"]["inputs"][0]["text"] = "x"  # a kept text changed, or a blanked one put back
    edited = canonical_json(tomb).encode()
    assert edited != lines[sequence - 1].rstrip(b" ")
    lines[sequence - 1] = edited + b" " * (len(lines[sequence - 1]) - len(edited))
    journal.path.write_bytes(b"".join(line + b"\n" for line in lines))
    damaged = Journal(journal.path)
    assert damaged.damage is not None
    assert damaged.damage.sequence == sequence
    report = replay(journal.path)
    assert (report["first_mismatch"], report["reason"]) == (sequence - 1, "entry_hash")


async def test_a_crash_before_the_rewrite_is_finished_at_open(
    tmp_path: Path, store: MemoryStore, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash between the forget entry and the rewrite is finished at the next open.

    The forget entry is written and applied, the lines are not: they still verify, the text is
    still there; `finish` writes exactly the authorized tombstones.
    """
    secret, _kept = await _history(store, journal)
    monkeypatch.setattr(intake_module.redaction, "rewrite", lambda _path, _tombs: 0)
    await forget([secret], viewer=USER_A, store=store, journal=journal)
    monkeypatch.undo()
    assert b"4821" in journal.path.read_bytes()
    reopened = Journal(journal.path)
    assert reopened.damage is None
    assert replay(journal.path)["ok"]
    written = redaction.finish(reopened, store.state)
    assert written == len(json.loads(journal.path.read_bytes().splitlines()[-1])[REDACT])
    assert b"4821" not in journal.path.read_bytes()
    assert redaction.finish(Journal(journal.path), store.state) == 0  # idempotent
    report = replay(journal.path)
    assert report["ok"]
    assert report["redacted"] == written


async def test_a_crash_while_chroma_is_rebuilt_is_repaired_from_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed Chroma rebuild (the collection dropped): the next open writes every row again.

    The state record says 0 while the collection is rebuilt, and stays 0 after a rebuild failed
    (the writer's catch-up meanwhile keeps the state whole), so the reopened store loads what
    Chroma has and `reconcile` brings it up to the journal from its first entry.
    """
    journal = Journal(tmp_path / "journal.jsonl")
    store = MemoryStore.open_persistent(tmp_path / "chroma")
    secret, _kept = await _history(store, journal)
    expected = [row for row in _rows(store.state) if row[4] != "t/secret"]

    def crash(client: object, collection: object, mark: Callable[[], None]) -> object:
        mark()
        client.delete_collection(collection.name)  # type: ignore[attr-defined]
        raise OSError("power cut")

    monkeypatch.setattr(erasure, "rebuild", crash)
    with pytest.raises(StoreBehind):
        await forget([secret], viewer=USER_A, store=store, journal=journal)
    monkeypatch.undo()
    # The writer catches the store up before its next write (`MemoryWriter._reconcile`): the
    # rebuild runs again; Chroma's copy stays marked.
    reconcile(journal, store)
    store.erase()
    assert _rows(store.state) == expected
    store.close()
    reopened = Journal(journal.path)
    again = MemoryStore.open_persistent(tmp_path / "chroma")
    try:
        assert again.applied == 0  # the mark: Chroma is not to be trusted
        reconcile(reopened, again)  # as the organ opens it
        redaction.finish(reopened, again.state)
        again.erase()
        assert _rows(again.state) == expected
    finally:
        again.close()
    assert holding(tmp_path, ("4821",)) == {}
    assert replay(journal.path)["ok"]


async def test_a_tombstone_is_redacted_again_by_a_later_forget(
    tmp_path: Path, store: MemoryStore, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second forget redacts a line the first one already made a tombstone.

    The later authorization replaces the earlier one; a crash before its rewrite leaves the
    earlier tombstone, which still verifies, and `finish` writes the later one.
    """
    secret, _kept = await _history(store, journal)
    await forget([secret], viewer=USER_A, store=store, journal=journal)
    later = next(row for row in store.state.rows() if row.source_id == "t/later")
    monkeypatch.setattr(intake_module.redaction, "rewrite", lambda _path, _tombs: 0)
    await forget([later.id], viewer=USER_A, store=store, journal=journal)
    monkeypatch.undo()
    assert b"different now" in journal.path.read_bytes()
    reopened = Journal(journal.path)
    assert reopened.damage is None  # the first tombstone is still an authorized form
    assert replay(journal.path)["ok"]
    assert redaction.finish(reopened, store.state) >= 1
    assert b"different now" not in journal.path.read_bytes()
    assert Journal(journal.path).damage is None
    report, replayed = replay_state(journal.path)
    assert report["ok"], report
    assert _rows(replayed) == _rows(store.state)


async def test_a_turn_not_yet_interpreted_keeps_its_words(
    store: MemoryStore, journal: Journal
) -> None:
    """A pending source that repeats a forgotten text is not a memory yet: its words stay."""
    secret, _kept = await _history(store, journal)
    again = IntakeInput(SECRET, "t/again", owner=USER_A, scope=USER_A, actor=USER_A)
    accepted = await accept([again], mode=2, store=store, journal=journal)
    assert accepted.admitted
    await forget([secret], viewer=USER_A, store=store, journal=journal)
    reopened = Journal(journal.path)
    assert reopened.damage is None
    assert [item.item.text for item in reopened.pending.oldest(8)] == [SECRET]
    assert replay(journal.path)["ok"]


def _index(collection: Any) -> tuple[int, int]:
    """A collection's vector index settings: ef_construction, max_neighbors."""
    hnsw = collection.configuration["hnsw"]
    return hnsw["ef_construction"], hnsw["max_neighbors"]


async def test_the_rows_index_is_built_cheaply_and_a_rebuild_moves_an_old_store_to_it(
    tmp_path: Path,
) -> None:
    """Alto never queries Chroma's index: a new store builds it as cheaply as Chroma allows.

    A store made with Chroma's defaults (before) keeps them until a forget rebuilds it.
    """
    cheap = (ROWS_INDEX["hnsw"]["ef_construction"], ROWS_INDEX["hnsw"]["max_neighbors"])
    fresh = MemoryStore.open_persistent(tmp_path / "new")
    try:
        assert _index(fresh._rows) == cheap
    finally:
        fresh.close()

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    default = client.create_collection(COLLECTION, embedding_function=None)
    assert _index(default) != cheap
    client.close()
    store = open_store(tmp_path)
    journal = Journal(tmp_path / "journal.jsonl")
    try:
        assert _index(store._rows) != cheap  # an existing collection keeps its index
        secret, _kept = await _history(store, journal)
        assert (await forget([secret], viewer=USER_A, store=store, journal=journal)).admitted
        assert _index(store._rows) == cheap
    finally:
        store.close()
