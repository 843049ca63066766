"""Durable intake: accepted sources, their resolution, the journal's tail check, deduplication."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.memory import journal as journal_module
from custom_components.alto.memory import journal_tail
from custom_components.alto.memory.intake import accept, refuse, remember
from custom_components.alto.memory.journal import Damage, Journal, JournalDamaged
from custom_components.alto.memory.pipeline import IntakeInput
from custom_components.alto.memory.qualification import Mode
from custom_components.alto.memory.reasons import Reason, Refusal
from custom_components.alto.memory.replay import ReconcileError, reconcile, replay
from custom_components.alto.memory.store import MemoryStore

from .conftest import USER_A, FakeModel, fake_embed, journal_bytes
from .test_intake import intake, many
from .test_replay import edit_one_byte, lines, rechain, write

TURN = IntakeInput(
    "The boiler was serviced in March.", "turn/1", actor=USER_A, owner=USER_A, scope=USER_A
)


async def accepted(store: MemoryStore, journal: Journal, batch: list[IntakeInput]) -> None:
    """Accept `batch` in automatic mode; asserts it was admitted and journaled."""
    result = await accept(batch, mode=Mode.AUTOMATIC, store=store, journal=journal)
    assert result.admitted
    assert result.sequence == journal.count


# -- accepted sources -------------------------------------------------------------------------
async def test_an_accepted_source_is_pending_until_its_interpretation(
    store: MemoryStore, journal: Journal
) -> None:
    """An accepted source is pending until its interpretation."""
    await accepted(store, journal, [TURN, *many(2, "t")])
    assert len(journal.pending) == 3
    assert store.applied == 0
    assert store.state.rows() == []  # nothing stored, nothing embedded
    [entry] = journal.entries()
    assert (entry["op"], entry["pending_from"], entry["mutation"]["upsert"]) == ("accept", 1, [])

    # Reopened (a restart): the journal finds what is pending from its tail.
    journal = Journal(journal.path)
    assert [a.item for a in journal.pending.oldest(64)] == [TURN, *many(2, "t")]

    first = await intake([TURN], store, journal, FakeModel(), accepted=True)
    assert first.admitted
    assert len(journal.pending) == 2
    rest = await intake(many(2, "t"), store, journal, FakeModel(), accepted=True)
    assert rest.admitted
    assert len(journal.pending) == 0
    entries = list(journal.entries())
    assert [e.get("pending_from", 0) for e in entries] == [1, 1, 0]
    assert all(e["request"]["accepted"] for e in entries[1:])
    assert replay(journal.path)["ok"]


async def test_a_source_already_pending_or_stored_is_not_accepted_again(
    store: MemoryStore, journal: Journal
) -> None:
    """A source already pending or stored is not accepted again."""
    await accepted(store, journal, [TURN])
    again = await accept([TURN], mode=Mode.SOURCE, store=store, journal=journal)
    assert again.refusal is not None
    assert again.refusal.reason is Reason.DUPLICATE_SOURCE
    await intake([TURN], store, journal, FakeModel(), accepted=True)
    stored = await accept([TURN], mode=Mode.SOURCE, store=store, journal=journal)
    assert stored.refusal is not None
    assert stored.refusal.reason is Reason.DUPLICATE_SOURCE
    assert journal.count == 2
    # Mode 0 keeps nothing of a turn: it writes nothing either.
    kept = await accept(many(1, "zero"), mode=Mode.EXPLICIT, store=store, journal=journal)
    assert kept.admitted
    assert journal.count == 2


async def test_a_final_refusal_resolves_the_source_and_replays(
    store: MemoryStore, journal: Journal
) -> None:
    """A final refusal resolves the source and replays."""
    await accepted(store, journal, [TURN, *many(1, "t")])
    with pytest.raises(ValueError, match="retried"):
        await refuse([TURN], Refusal(Reason.EMBEDDING_FAILED), store=store, journal=journal)
    await refuse([TURN], Refusal(Reason.MALFORMED_JSON, 0), store=store, journal=journal)
    assert [a.item for a in journal.pending.oldest(64)] == many(1, "t")
    refused = list(journal.entries())[-1]
    assert (refused["op"], refused["reason"], refused["pending_from"]) == (
        "refuse",
        "malformed_json",
        1,
    )
    assert replay(journal.path)["ok"]
    with pytest.raises(ValueError, match="not pending"):  # resolved once only
        await refuse([TURN], Refusal(Reason.MALFORMED_JSON), store=store, journal=journal)


async def test_the_pending_sources_are_found_behind_a_long_tail(
    store: MemoryStore, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pending sources are found behind a long tail."""
    monkeypatch.setattr(journal_module, "VERIFY_ALL_BYTES", 0)
    monkeypatch.setattr(journal_module, "VERIFY_TAIL", 4)
    await accepted(store, journal, [TURN])
    for n in range(10):
        await accepted(store, journal, many(1, f"late{n}"))
        await intake(many(1, f"late{n}"), store, journal, FakeModel(), accepted=True)

    def whole_file(_path: Path) -> list[bytes]:
        raise AssertionError("the journal was read whole")

    monkeypatch.setattr(journal_module, "read_lines", whole_file)
    reopened = Journal(journal.path)
    assert reopened.damage is None
    assert [a.item for a in reopened.pending.oldest(64)] == [TURN]
    assert reopened.count == 21


async def test_a_source_accepted_before_the_oldest_pending_one_may_be_resolved_after_it(
    store: MemoryStore, journal: Journal
) -> None:
    """A source accepted before the oldest pending one may be resolved after it."""
    await accepted(store, journal, [TURN])
    await accepted(store, journal, many(1, "later"))
    await intake([TURN], store, journal, FakeModel(), accepted=True)
    assert journal.pending.low_water == 2  # the open reads from entry 2, which never held TURN
    reopened = Journal(journal.path)
    assert reopened.damage is None
    assert [a.item for a in reopened.pending.oldest(64)] == many(1, "later")


@pytest.mark.parametrize("forgery", ["unaccepted", "pending_from", "mode"])
async def test_replay_checks_what_is_pending(
    store: MemoryStore, journal: Journal, forgery: str
) -> None:
    """Replay checks what is pending."""
    await accepted(store, journal, [TURN])
    await intake([TURN], store, journal, FakeModel(), accepted=True)
    entries = lines(journal)
    if forgery == "unaccepted":  # the accept entry names another source
        index, old, new = 0, b'"turn/1"', b'"turn/2"'
    elif forgery == "pending_from":  # the intake claims a source is still pending
        index, old, new = 1, b'"op":"intake"', b'"pending_from":1,"op":"intake"'
    else:  # interpreted in another mode than the one it was accepted in
        index, old, new = 0, b'"mode":2', b'"mode":1'
    entries[index] = entries[index].replace(old, new, 1)
    write(journal, rechain(entries, index))
    report = replay(journal.path)
    assert (report["ok"], report["reason"]) == (False, "pending")
    assert report["first_mismatch"] == 1  # where the accepted source is resolved


# -- the journal's tail, checked at open --------------------------------------------------------
async def history(store: MemoryStore, journal: Journal) -> None:
    """Three entries: a remember, an accept and its interpretation."""
    await remember(
        [IntakeInput("The key is under the pot.", "r/1")],
        store=store,
        journal=journal,
        embed=fake_embed,
    )
    await accepted(store, journal, [TURN])
    await intake([TURN], store, journal, FakeModel(), accepted=True)


def flip_last_hash_digit(line: bytes) -> bytes:
    """The journal line with the last digit of its own hash changed."""
    own = json.loads(line)["hash"]
    return line.replace(own.encode(), (own[:-1] + ("0" if own[-1] != "0" else "1")).encode())


@pytest.mark.parametrize(
    ("edit", "damage"),
    [
        (lambda ls: [*ls[:-1], flip_last_hash_digit(ls[-1])], Damage(3, "entry_hash")),
        (lambda ls: [*ls[:-1], ls[-1][:-1]], Damage(3, "malformed_entry")),
        (lambda ls: rechain([ls[0], ls[2]], 1), Damage(2, "sequence")),
        (lambda ls: [*ls[:-1], rechain([ls[0], ls[-1]], 1)[-1]], Damage(3, "chain")),
    ],
    ids=["hash digit", "cut line", "lost entry", "relinked"],
)
async def test_a_damaged_tail_is_found_at_open_and_never_extended(
    store: MemoryStore, journal: Journal, edit: Any, damage: Damage
) -> None:
    """A damaged tail is found at open and never extended."""
    await history(store, journal)
    write(journal, edit(lines(journal)))
    damaged = journal_bytes(journal)
    reopened = Journal(journal.path)
    assert reopened.damage == damage
    with pytest.raises(JournalDamaged):
        reopened.append({"op": "forget"})
    assert journal_bytes(journal) == damaged


async def test_only_the_tail_of_a_large_journal_is_checked_at_open(
    store: MemoryStore, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the tail of a large journal is checked at open."""
    await history(store, journal)
    for n in range(4):
        await intake(many(1, f"more{n}"), store, journal, FakeModel())
    entries = lines(journal)
    entries[0] = edit_one_byte(entries[0], b'"op":"remember"', b'"op":"rememBer"')
    write(journal, entries)
    assert Journal(journal.path).damage == Damage(1, "entry_hash")  # small: checked whole
    monkeypatch.setattr(journal_module, "VERIFY_ALL_BYTES", 0)
    monkeypatch.setattr(journal_module, "VERIFY_TAIL", 3)
    assert Journal(journal.path).damage is None  # large: its tail only
    assert replay(journal.path)["first_mismatch"] == 0  # replay checks the whole chain


async def test_reconcile_reads_from_the_store_s_entry_and_passes_over_accepts(
    tmp_path: Path, store: MemoryStore, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reconcile reads from the store s entry and passes over accepts."""
    await history(store, journal)
    await accepted(store, journal, many(1, "waiting"))
    assert store.applied == 3
    assert journal.count == 4
    seen: list[int] = []
    original = journal_tail.entries_from

    def entries_from(path: Path, first: int) -> Any:
        seen.append(first)
        return original(path, first)

    def whole_file(_path: Path) -> list[bytes]:
        raise AssertionError("the journal was read whole")

    monkeypatch.setattr("custom_components.alto.memory.replay.entries_from", entries_from)
    monkeypatch.setattr("custom_components.alto.memory.replay.read_lines", whole_file)
    assert reconcile(journal, store) == 0  # the accept changes no row
    assert seen == [3]
    assert store.applied == 3
    other = MemoryStore.open_persistent(tmp_path / "other")
    try:
        assert reconcile(journal, other) == 2  # remember and intake, not the accepts
        assert other.state.rows() == store.state.rows()
    finally:
        other.close()
    write(journal, lines(journal)[:2])
    with pytest.raises(ReconcileError, match="store_ahead"):
        reconcile(journal, store)


# -- one memory per text, owner and scope ---------------------------------------------------------
async def test_the_same_text_is_one_memory_with_the_later_source(
    store: MemoryStore, journal: Journal
) -> None:
    """The same text is one memory with the later source."""
    first = await remember(
        [IntakeInput("Bins go out on Tuesday.", "svc/1")],
        store=store,
        journal=journal,
        embed=fake_embed,
    )
    later = await remember(
        [IntakeInput("Bins go out on Tuesday.", "svc/2", actor=USER_A)],
        store=store,
        journal=journal,
        embed=fake_embed,
    )
    assert first.ids == later.ids
    [row] = store.rows(None)
    assert (row.source_id, row.actor, row.sequence) == ("svc/2", USER_A, 2)
    # Another owner's equal text is another memory.
    private = await remember(
        [IntakeInput("Bins go out on Tuesday.", "svc/3", owner=USER_A, scope=USER_A)],
        store=store,
        journal=journal,
        embed=fake_embed,
    )
    assert private.ids != first.ids
    # Within one batch: the later input is the one recorded.
    batch = [IntakeInput("Milk is in the fridge.", f"b/{n}") for n in range(3)]
    together = await remember(batch, store=store, journal=journal, embed=fake_embed)
    assert len(set(together.ids)) == 1
    assert store.get(list(together.ids[0]))[0].source_id == "b/2"
    assert json.loads(lines(journal)[-1])["request"]["inputs"] == [batch[2].to_json()]
    assert len(store.rows(USER_A)) == 3
    assert replay(journal.path)["ok"]


async def test_a_retried_source_writes_nothing_and_another_text_under_it_is_refused(
    store: MemoryStore, journal: Journal
) -> None:
    """A retried source writes nothing and another text under it is refused."""
    item = IntakeInput("The plumber comes on Friday.", "service/key/abc")
    kept = await remember([item], store=store, journal=journal, embed=fake_embed)
    before = journal_bytes(journal)
    for batch in ([item], [item, item]):
        again = await remember(batch, store=store, journal=journal, embed=fake_embed)
        assert again.admitted
        assert set(again.ids) == set(kept.ids)
        assert again.sequence == 0
    assert journal_bytes(journal) == before
    other = IntakeInput("The plumber comes on Monday.", "service/key/abc")
    refused = await remember(
        [IntakeInput("Fine.", "x/1"), other], store=store, journal=journal, embed=fake_embed
    )
    assert refused.refusal == Refusal(Reason.DUPLICATE_SOURCE, 1)
    assert journal_bytes(journal) == before


async def test_a_batch_of_remembers_is_one_entry(store: MemoryStore, journal: Journal) -> None:
    """A batch of remembers is one entry."""
    batch = [IntakeInput(f"Fact number {n} is true.", f"svc/{n}") for n in range(64)]
    result = await remember(batch, store=store, journal=journal, embed=fake_embed)
    assert result.admitted
    assert journal.count == 1
    assert len(set(result.ids)) == 64
    too_many = await remember(
        [*batch, IntakeInput("x", "svc/64")], store=store, journal=journal, embed=fake_embed
    )
    assert too_many.refusal is not None
    assert too_many.refusal.reason is Reason.BATCH_SIZE
    assert replay(journal.path)["ok"]
