"""Journal chain, offline replay, tamper detection, torn tails and crash reconciliation."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.memory.intake import StoreBehind, forget, remember
from custom_components.alto.memory.journal import GENESIS, Journal, entry_hash
from custom_components.alto.memory.pipeline import IntakeInput
from custom_components.alto.memory.records import canonical_json
from custom_components.alto.memory.replay import reconcile, replay
from custom_components.alto.memory.store import MemoryStore

from .conftest import USER_A, FakeModel, fake_embed
from .test_intake import intake, many


async def build_history(store: MemoryStore, journal: Journal) -> None:
    """Five entries: a batch, a correction (with a table), remember, forget, mode-1 fallback."""
    model = FakeModel(mentions=("Anna",))
    first = [*many(4), IntakeInput("Anna likes the bins out early.", "h/0")]
    await intake(first, store, journal, model)
    await intake([IntakeInput("Actually the bins go out on Monday.", "h/1")], store, journal, model)
    secret = IntakeInput("Code 42.", "h/2", owner=USER_A, scope=USER_A)
    kept = await remember([secret], store=store, journal=journal, embed=fake_embed)
    await forget(list(kept.ids[0]), viewer=USER_A, store=store, journal=journal)
    await intake(many(2, "late"), store, journal, model, model_digest=None)


def lines(journal: Journal) -> list[bytes]:
    """The journal's lines, without their LF."""
    return journal.path.read_bytes().splitlines()


def write(journal: Journal, entries: list[bytes]) -> None:
    """Replace the journal with these lines."""
    journal.path.write_bytes(b"".join(line + b"\n" for line in entries))


def edit_one_byte(line: bytes, old: bytes, new: bytes) -> bytes:
    """The line with `old` replaced by `new`, which differs from it in one byte."""
    assert len(old) == len(new)
    assert sum(a != b for a, b in zip(old, new, strict=True)) == 1
    assert line.count(old) >= 1
    return line.replace(old, new, 1)


def rechain(entries: list[bytes], start: int) -> list[bytes]:
    """What a careful forger does: recompute hashes and links from `start` on."""
    out = entries[:start]
    prev = json.loads(out[-1])["hash"] if out else GENESIS
    for line in entries[start:]:
        entry: dict[str, Any] = json.loads(line)
        entry["prev"] = prev
        entry["hash"] = entry_hash(entry)
        prev = entry["hash"]
        out.append(canonical_json(entry).encode())
    return out


async def test_clean_journal_replays(store: MemoryStore, journal: Journal) -> None:
    """Clean journal replays."""
    await build_history(store, journal)
    assert replay(journal.path) == {
        "entries": 5,
        "ok": True,
        "first_mismatch": None,
        "reason": None,
        "redacted": 1,  # the remembered "Code 42." was forgotten: its entry is a tombstone
        "unverified": 0,
    }
    entries = list(journal.entries())
    assert entries[0]["prev"] == GENESIS
    assert all(b["prev"] == a["hash"] for a, b in pairwise(entries))
    assert [e["op"] for e in entries] == ["intake", "intake", "remember", "forget", "intake"]
    assert entries[1]["calls"][0]["table"]  # the correction saw a table


# (entry index, bytes to find in that line, one-byte replacement, reason once re-chained)
TAMPERS = [
    ("statement output", 1, b'"statement\\"]]', b'"statemenT\\"]]', "refused:bad_label"),
    ("classification kind", 1, b'[[4, \\"Actually', b'[[3, \\"Actually', "refused:bad_item"),
    ("classification target", 1, b'Monday.\\", 1]]', b'Monday.\\", 2]]', "mutation"),
    ("call model digest", 0, b'"model_digest":"5', b'"model_digest":"6', "model_digest"),
]


@pytest.mark.parametrize("rehash", [False, True])
@pytest.mark.parametrize("tamper", TAMPERS, ids=[t[0] for t in TAMPERS])
async def test_one_byte_edit_is_the_first_mismatch(
    tamper: tuple[str, int, bytes, bytes, str], rehash: bool, store: MemoryStore, journal: Journal
) -> None:
    """One byte edit is the first mismatch."""
    _, index, old, new, reason = tamper
    await build_history(store, journal)
    entries = lines(journal)
    entries[index] = edit_one_byte(entries[index], old, new)
    write(journal, rechain(entries, index) if rehash else entries)
    report = replay(journal.path)
    assert report["ok"] is False
    assert report["first_mismatch"] == index
    assert report["reason"] == (reason if rehash else "entry_hash")


@pytest.mark.parametrize("rehash", [False, True])
async def test_edited_table_or_processor_digest_is_named(
    rehash: bool, store: MemoryStore, journal: Journal
) -> None:
    """Edited table or processor digest is named."""
    await build_history(store, journal)
    original = lines(journal)
    entry = json.loads(original[1])
    quote = entry["calls"][0]["table"][0]["quote"]
    mutations = {
        "table": (f'"quote":"{quote}"'.encode(), f'"quote":"{quote[:-1]}!"'.encode()),
        "processor_digest": (
            f'"processor_digest":"{entry["processor_digest"]}","profile'.encode(),
            f'"processor_digest":"{entry["processor_digest"][:-1]}x","profile'.encode(),
        ),
    }
    for reason, (old, new) in mutations.items():
        entries = list(original)
        entries[1] = edit_one_byte(entries[1], old, new)
        write(journal, rechain(entries, 1) if rehash else entries)
        report = replay(journal.path)
        assert report["first_mismatch"] == 1
        assert report["reason"] == (reason if rehash else "entry_hash")


async def test_removed_or_reordered_entries_break_the_chain(
    store: MemoryStore, journal: Journal
) -> None:
    """Removed or reordered entries break the chain."""
    await build_history(store, journal)
    entries = lines(journal)
    write(journal, [entries[0], *entries[2:]])
    assert replay(journal.path)["first_mismatch"] == 1
    write(journal, rechain([entries[0], *entries[2:]], 1))
    assert replay(journal.path)["first_mismatch"] == 1  # sequence numbers no longer match


def test_torn_tail_is_cut_on_open(tmp_path: Path) -> None:
    """Torn tail is cut on open."""
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append({"op": "noop"})
    complete = path.read_bytes()
    path.write_bytes(complete + b'{"sequence":2,"prev":"')
    reopened = Journal(path)
    assert path.read_bytes() == complete
    assert reopened.count == 1
    assert reopened.append({"op": "noop"})["prev"] == json.loads(complete)["hash"]


async def test_crash_between_journal_and_store_is_reconciled(
    tmp_path: Path, store: MemoryStore, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crash between journal and store is reconciled."""
    model = FakeModel()
    await intake(many(2), store, journal, model)
    expected_store = MemoryStore.open_persistent(tmp_path / "expected")
    expected_journal = Journal(tmp_path / "expected.jsonl")
    await intake(many(2), expected_store, expected_journal, FakeModel())

    def crash(mutation: Any) -> None:
        raise OSError("power cut")

    batch = [IntakeInput("The bins go out on Tuesday.", "crash"), *many(63, "c")]
    monkeypatch.setattr(store, "apply", crash)
    with pytest.raises(StoreBehind, match="power cut"):
        await intake(batch, store, journal, model)
    monkeypatch.undo()
    assert journal.count == 2
    assert store.applied == 1  # journaled, never stored
    store.close()

    reopened = MemoryStore.open_persistent(tmp_path / "chroma")
    try:
        assert reconcile(journal, reopened) == 1
        assert reconcile(journal, reopened) == 0
        await intake(batch, expected_store, expected_journal, FakeModel())
        assert reopened.snapshot() == expected_store.snapshot()
        assert reopened.applied == 2
        assert replay(journal.path)["ok"]
    finally:
        reopened.close()
        expected_store.close()


async def test_reconcile_refuses_a_tampered_pending_entry(
    tmp_path: Path, store: MemoryStore, journal: Journal
) -> None:
    """Reconcile refuses a tampered pending entry."""
    await intake(many(1), store, journal, FakeModel())
    other = MemoryStore.open_persistent(tmp_path / "other")
    try:
        entries = lines(journal)
        write(journal, [edit_one_byte(entries[0], b'"op":"intake"', b'"op":"intakE"')])
        with pytest.raises(ValueError, match="entry_hash"):
            reconcile(journal, other)
        assert other.snapshot()["alto_memory"] == []
    finally:
        other.close()


async def test_when_a_source_was_said_is_journaled_kept_and_replayed(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """`said_at` rides on every row of its input; an input without one journals as before."""
    said = IntakeInput("The bins go out on Tuesday.", "w/1", said_at=1_790_000_000)
    plain = IntakeInput("The shed key is on the hook.", "w/2")
    result = await intake([said, plain], store, journal, model)
    assert result.admitted
    rows = store.rows(None)
    assert {row.said_at for row in rows if row.source_id == "w/1"} == {1_790_000_000}
    assert {row.said_at for row in rows if row.source_id == "w/2"} == {0}
    [line] = lines(journal)
    assert line.count(b'"said_at":1790000000') >= 2  # the input and its rows
    assert b'"said_at":0' not in line  # as journals written before the field, byte for byte
    assert replay(journal.path)["ok"] is True


@pytest.mark.parametrize("said_at", [-1, 1.5, "yesterday", True])
async def test_a_said_at_that_is_no_time_is_refused(
    store: MemoryStore, journal: Journal, model: FakeModel, said_at: Any
) -> None:
    """A said at that is no time is refused."""
    item = IntakeInput("The bins go out on Tuesday.", "w/1", said_at=said_at)
    result = await intake([item], store, journal, model)
    assert not result.admitted
    assert store.rows(None) == []
