"""Re-embedding: stored memories get new vectors, journaled, replayable, and still forgettable.

A store written with one embedding (here `old_embed`, as a store written before the speakers'
names were embedded) is embedded again 64 rows at a time (`intake.reembed`): every row keeps
everything but its vector, its codes become those of the new embedding in the state, in Chroma
and in a replay; a forget after it leaves no byte of the text or vector in the ``reembed`` line.
Vectors of another size (`wide_embed`) move every row at once, in one entry, or nothing.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.memory import erasure, redaction
from custom_components.alto.memory.intake import StoreBehind, forget, reembed, remember
from custom_components.alto.memory.journal import Journal, entry_hash
from custom_components.alto.memory.pipeline import (
    MAX_BATCH,
    IntakeInput,
    embedding_codes,
    said_by,
)
from custom_components.alto.memory.reasons import Reason
from custom_components.alto.memory.records import Row, canonical_json
from custom_components.alto.memory.replay import reconcile, replay, replay_state
from custom_components.alto.memory.store import MemoryStore

from ..on_disk import holding
from .conftest import DIM, USER_A, FakeModel, fake_embed, journal_bytes, open_store
from .test_intake import intake, many

NAMES = {USER_A: "Alice"}
SECRET = "My bank PIN is 4821 and the safe code is 9917."


async def old_embed(texts: list[str]) -> list[list[float]]:
    """Another embedding of the same size: the fake one, reversed."""
    return [vector[::-1] for vector in await fake_embed(texts)]


def _fields(store: MemoryStore) -> list[Row]:
    """Every row as stored, without its vector (the state keeps codes, not vectors)."""
    return store.state.rows()


def _codes(store: MemoryStore) -> np.ndarray:
    return store.state.codes(store.state.rows())


def _not_rebuilt(*_args: object) -> None:
    raise AssertionError("rebuilt")


def _index_folders(tmp_path: Path) -> set[str]:
    """The embedded Chroma's segment folders (an index's files each)."""
    return {folder.name for folder in (tmp_path / "chroma").iterdir() if folder.is_dir()}


def _reopened(tmp_path: Path, *, with_checkpoint: bool) -> tuple[list[Row], np.ndarray]:
    """Every row and its codes as the store under `tmp_path` opens them again."""
    store = open_store(tmp_path, with_checkpoint=with_checkpoint)
    try:
        return _fields(store), _codes(store)
    finally:
        store.close()


async def _expected(store: MemoryStore) -> np.ndarray:
    """The codes of every row embedded as intake embeds it now, after its speaker's name."""
    rows = store.state.rows()
    vectors = await fake_embed([said_by(row.document, row.actor, NAMES) for row in rows])
    return np.stack([embedding_codes(vector) for vector in vectors])


async def _reembed_all(store: MemoryStore, journal: Journal) -> int:
    """Embed every row again, 64 at a time, as the writer does; return how many."""
    ids = store.ids()
    done = 0
    for start in range(0, len(ids), MAX_BATCH):
        rows = store.get(ids[start : start + MAX_BATCH])
        vectors = await fake_embed([said_by(row.document, row.actor, NAMES) for row in rows])
        result = await reembed(rows, vectors, model="fake", store=store, journal=journal)
        assert result.admitted, result
        done += len(result.ids[0])
    return done


async def _history(store: MemoryStore, journal: Journal) -> int:
    """Mode-2 turns and explicit memories embedded the old way; returns the secret's id."""
    model = FakeModel()
    await intake(many(40), store, journal, model, embed=old_embed)
    said = await intake(
        [IntakeInput(SECRET, "t/secret", owner=USER_A, scope=USER_A, actor=USER_A)],
        store,
        journal,
        model,
        embed=old_embed,
    )
    await remember(
        [IntakeInput("The spare key hangs by the garage door.", "t/kept", actor=USER_A)],
        store=store,
        journal=journal,
        embed=old_embed,
    )
    return said.ids[0][0]


async def test_every_row_gets_its_new_vector_and_keeps_everything_else(
    tmp_path: Path, home: tuple[MemoryStore, Journal]
) -> None:
    """New codes in the state, in Chroma and in a replay; every other field as it was."""
    store, journal = home
    try:
        await _history(store, journal)
        before = _fields(store)
        assert len(before) > MAX_BATCH  # more than one entry
        expected = await _expected(store)
        assert not np.array_equal(_codes(store), expected)
        assert await _reembed_all(store, journal) == len(before)
        assert _fields(store) == before
        assert np.array_equal(_codes(store), expected)
    finally:
        store.close()
    lines = journal.path.read_bytes().splitlines()
    ops = [json.loads(line)["op"] for line in lines]
    assert ops[-2:] == ["reembed", "reembed"]
    report, replayed = replay_state(journal.path)
    assert report["ok"], report
    assert np.array_equal(replayed.codes(replayed.rows()), expected)
    # Chroma holds the new vectors: a store opened without its checkpoint reads them back.
    fields, codes = _reopened(tmp_path, with_checkpoint=False)
    assert fields == before
    assert np.array_equal(codes, expected)


async def test_another_size_or_a_bad_vector_is_refused_and_nothing_is_written(
    home: tuple[MemoryStore, Journal],
) -> None:
    """A vector of another size, or a zero one, refuses the batch before the journal."""
    store, journal = home
    try:
        await _history(store, journal)
        before = journal_bytes(journal)
        rows = store.get(store.ids()[:3])
        for vectors in ([[1.0] * 17] * 3, [[0.0] * 16] * 3, [[1.0] * 16] * 2):
            result = await reembed(rows, vectors, model="fake", store=store, journal=journal)
            assert not result.admitted
            assert result.refusal is not None
            assert result.refusal.reason in (Reason.EMBEDDING_FAILED, Reason.BATCH_SIZE)
        assert journal_bytes(journal) == before
    finally:
        store.close()


async def test_a_memory_forgotten_or_rewritten_meanwhile_is_passed_over(
    home: tuple[MemoryStore, Journal],
) -> None:
    """Rows forgotten or written again since they were read are left out; none left: nothing."""
    store, journal = home
    try:
        secret = await _history(store, journal)
        [kept] = [row for row in store.state.rows() if row.source_id == "t/kept"]
        [other, forgotten] = store.get([store.ids()[0], secret])
        vectors = await fake_embed(["a", "b", "c"])
        assert (await forget([secret], viewer=USER_A, store=store, journal=journal)).admitted
        # The same text remembered again is the same memory, written again by this request.
        again = IntakeInput(kept.document, "t/again", actor=USER_A)
        await remember([again], store=store, journal=journal, embed=fake_embed)
        assert store.get([kept.id])[0].sequence != kept.sequence
        rows = [other, forgotten, kept]
        result = await reembed(rows, vectors, model="fake", store=store, journal=journal)
        assert result.admitted
        assert result.ids == ((other.id,),)
        before = journal_bytes(journal)
        rows = [forgotten, kept]
        result = await reembed(rows, vectors[:2], model="fake", store=store, journal=journal)
        assert result.refusal is not None
        assert result.refusal.reason is Reason.UNKNOWN_ID
        assert journal_bytes(journal) == before
    finally:
        store.close()
    assert replay(journal.path)["ok"]


@pytest.mark.parametrize("size", ["same", "another"])
async def test_forgetting_after_it_erases_the_reembedded_text_and_vector(
    tmp_path: Path, home: tuple[MemoryStore, Journal], size: str
) -> None:
    """The ``reembed`` lines lose a forgotten row's text and vector; the journal replays.

    The one line that moved every row to another size too.
    """
    store, journal = home
    try:
        secret = await _history(store, journal)
        await (_reembed_all if size == "same" else _resize_all)(store, journal)
        assert (await forget([secret], viewer=USER_A, store=store, journal=journal)).admitted
    finally:
        store.close()
    assert holding(tmp_path, (SECRET, "4821", "9917")) == {}
    assert redaction.verify(journal.path)
    report = replay(journal.path)
    assert report["ok"], report
    assert report["redacted"] >= 2  # the line that wrote it and the line that re-embedded it


async def test_an_interpreted_row_forgotten_alone_loses_its_reembedded_vector(
    home: tuple[MemoryStore, Journal],
) -> None:
    """Found by its id: its source keeps the words, so no text or source search finds it."""
    store, journal = home
    try:
        secret = await _history(store, journal)
        [assertion] = [
            row.id for row in store.state.rows() if row.kind == 3 and SECRET in row.document
        ]
        assert assertion != secret
        await _reembed_all(store, journal)
        done = await forget([assertion], viewer=USER_A, store=store, journal=journal)
        assert done.ids == ((assertion,),)
    finally:
        store.close()
    lines = [json.loads(line) for line in journal.path.read_bytes().splitlines()]
    again = [
        (row["document"], vector)
        for entry in lines
        if entry["op"] == "reembed"
        for row, vector in _upserted(entry)
        if row["id"] == assertion
    ]
    assert again == [("", "")]
    report = replay(journal.path)
    assert report["ok"], report


def _upserted(entry: dict[str, object]) -> list[tuple[dict[str, object], str]]:
    mutation = entry["mutation"]
    assert isinstance(mutation, dict)
    vectors = entry["vectors"]
    assert isinstance(vectors, list)
    return list(zip(mutation["upsert"], vectors, strict=True))


@pytest.mark.parametrize("tamper", ["status", "unknown_id", "size"])
async def test_replay_refuses_a_reembed_that_is_not_one(
    home: tuple[MemoryStore, Journal], tamper: str
) -> None:
    """A row changed beyond its vector, an id not stored or a vector of another size."""
    store, journal = home
    try:
        await _history(store, journal)
        ids = store.ids()[:2]
        rows = store.get(ids)
        vectors = await fake_embed([row.document for row in rows])
        assert (await reembed(rows, vectors, model="fake", store=store, journal=journal)).admitted
    finally:
        store.close()
    lines = journal.path.read_bytes().splitlines()
    entry = json.loads(lines[-1])
    row = entry["mutation"]["upsert"][0]
    if tamper == "status":
        row["status"] = "superseded"
        reason = "mutation"
    elif tamper == "unknown_id":
        row["id"] = entry["request"]["ids"][0] = 99
        reason = "reembed"
    else:
        vector = base64.b64decode(entry["vectors"][0]) + b"\0\0\0\0"
        entry["vectors"][0] = base64.b64encode(vector).decode("ascii")
        reason = "vectors"
    entry["hash"] = entry_hash(entry)
    lines[-1] = canonical_json(entry).encode("utf-8")
    journal.path.write_bytes(b"\n".join(lines) + b"\n")
    report = replay(journal.path)
    assert report["first_mismatch"] == len(lines) - 1
    assert report["reason"] == reason


async def test_a_store_behind_catches_up_with_the_new_vectors(
    tmp_path: Path, home: tuple[MemoryStore, Journal], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Journaled but not stored (a store failure): reconcile applies it."""
    store, journal = home
    try:
        await _history(store, journal)
        expected = await _expected(store)

        def broken(_mutation: object) -> None:
            raise OSError("disk full")

        with monkeypatch.context() as patch:
            patch.setattr(store, "apply", broken)
            with pytest.raises(StoreBehind):
                await _reembed_all(store, journal)
        reconcile(journal, store)
        # The first batch reached the journal only; the rest are embedded again now.
        await _reembed_all(store, journal)
        assert np.array_equal(_codes(store), expected)
    finally:
        store.close()
    assert replay(journal.path)["ok"]


async def wide_embed(texts: list[str]) -> list[list[float]]:
    """An embedding of another size: the fake one with its components repeated (twice as long)."""
    return [vector + vector[::-1] for vector in await fake_embed(texts)]


async def _resize_all(store: MemoryStore, journal: Journal) -> int:
    """Every stored row embedded with `wide_embed`, in one call, as the writer does; how many."""
    rows = store.get(store.ids())
    vectors = await wide_embed([said_by(row.document, row.actor, NAMES) for row in rows])
    result = await reembed(rows, vectors, model="wide", store=store, journal=journal)
    assert result.admitted, result
    return len(result.ids[0])


async def _wide_expected(store: MemoryStore) -> np.ndarray:
    rows = store.state.rows()
    vectors = await wide_embed([said_by(row.document, row.actor, NAMES) for row in rows])
    return np.stack([embedding_codes(vector) for vector in vectors])


async def test_another_size_moves_every_memory_in_one_entry(
    tmp_path: Path, home: tuple[MemoryStore, Journal]
) -> None:
    """The state, Chroma, the checkpoint and a replay all hold the new size; new rows use it."""
    store, journal = home
    try:
        await _history(store, journal)
        before = _fields(store)
        expected = await _wide_expected(store)
        assert len(before) > MAX_BATCH
        assert store.dim == DIM
        folders = _index_folders(tmp_path)
        assert await _resize_all(store, journal) == len(before)
        assert store.dim == 2 * DIM
        with pytest.MonkeyPatch.context() as patch:  # the dropped collection's folder goes ...
            patch.setattr(erasure, "rebuild", _not_rebuilt)  # ... and nothing is rebuilt
            store.erase()
        assert len(_index_folders(tmp_path)) == len(folders)
        assert _index_folders(tmp_path) != folders
        assert _fields(store) == before
        assert np.array_equal(_codes(store), expected)
        said = IntakeInput("The bins go out on Thursday.", "t/bins", actor=USER_A)
        assert (await remember([said], store=store, journal=journal, embed=wide_embed)).admitted
        [query] = await wide_embed(["bins Thursday"])
        [(found, _score)] = store.recall(embedding_codes(query), USER_A, 1)
        assert found.document == said.text
        later = _fields(store)
    finally:
        store.close()
    ops = [json.loads(line)["op"] for line in journal.path.read_bytes().splitlines()]
    assert ops[-2:] == ["reembed", "remember"]
    report, replayed = replay_state(journal.path)
    assert report["ok"], report
    assert replayed.dim == 2 * DIM
    assert replayed.rows() == later
    for with_checkpoint in (True, False):  # the checkpoint's codes, then Chroma's vectors
        fields, codes = _reopened(tmp_path, with_checkpoint=with_checkpoint)
        assert fields == later
        assert np.array_equal(codes[: len(before)], expected)


async def test_a_dropped_index_a_stop_kept_from_its_vacuum_goes_at_the_next_start(
    tmp_path: Path, home: tuple[MemoryStore, Journal]
) -> None:
    """A resize, then a stop before the store's `erase`: the next open's `erase` removes it."""
    store, journal = home
    try:
        await _history(store, journal)
        folders = _index_folders(tmp_path)
        await _resize_all(store, journal)
    finally:
        store.close()
    assert len(_index_folders(tmp_path)) > len(folders)  # the dropped collection's is left
    reopened = open_store(tmp_path)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(erasure, "rebuild", _not_rebuilt)  # a vacuum, no rebuild
            reopened.erase()
        assert len(_index_folders(tmp_path)) == len(folders)
    finally:
        reopened.close()
    reopened = open_store(tmp_path)
    try:
        assert not erasure.orphaned(tmp_path / "chroma")
    finally:
        reopened.close()


async def test_another_size_for_less_than_every_memory_as_stored_is_refused(
    home: tuple[MemoryStore, Journal],
) -> None:
    """One row left out, or one rewritten since it was read: nothing is written."""
    store, journal = home
    try:
        await _history(store, journal)
        before = journal_bytes(journal), store.snapshot()
        rows = store.get(store.ids())
        vectors = await wide_embed([row.document for row in rows])
        partial = await reembed(rows[1:], vectors[1:], model="w", store=store, journal=journal)
        [kept] = [row for row in rows if row.source_id == "t/kept"]
        await remember(
            [IntakeInput(kept.document, "t/again", actor=USER_A)],
            store=store,
            journal=journal,
            embed=fake_embed,
        )
        between = journal_bytes(journal), store.snapshot()
        stale = await reembed(rows, vectors, model="w", store=store, journal=journal)
        for result in (partial, stale):
            assert result.refusal is not None
            assert result.refusal.reason is Reason.BATCH_SIZE
        assert between[0] != before[0]
        assert (journal_bytes(journal), store.snapshot()) == between
        assert store.dim == DIM
    finally:
        store.close()
    assert replay(journal.path)["ok"]


@pytest.mark.parametrize("with_checkpoint", [True, False])
async def test_a_resize_the_store_failed_in_the_middle_of_is_applied_again(
    tmp_path: Path,
    home: tuple[MemoryStore, Journal],
    monkeypatch: pytest.MonkeyPatch,
    with_checkpoint: bool,
) -> None:
    """The old collection dropped, the new one not yet renamed: the next start mends it."""
    store, journal = home
    await _history(store, journal)
    before = _fields(store)
    expected = await _wide_expected(store)
    collection = type(store._rows)

    def crash(_self: object, **_changes: object) -> None:
        raise OSError("power cut")

    with monkeypatch.context() as patch:
        patch.setattr(collection, "modify", crash)
        with pytest.raises(StoreBehind):
            await _resize_all(store, journal)
    store._client.close()  # the process died: no checkpoint is written at close
    reopened = open_store(tmp_path, with_checkpoint=with_checkpoint)
    try:
        assert reconcile(journal, reopened) == 1
        assert reopened.dim == 2 * DIM
        assert _fields(reopened) == before
        assert np.array_equal(_codes(reopened), expected)
    finally:
        reopened.close()
    fields, codes = _reopened(tmp_path, with_checkpoint=False)  # Chroma itself holds every row
    assert fields == before
    assert np.array_equal(codes, expected)
