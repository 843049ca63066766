"""Fair shares of one store: no scope's write makes room with another's (`memory.retention`).

A family of stores, each written by two users and the household in a seeded random order:
turns (a source and what was interpreted from it, forgettable) and authored memories (never
forgotten for room). After every write, or after a few when retention lags behind them, the
retention plan is carried out through `pipeline.forget_ids` as the forget path does, and:

- every row it removed is of a scope that wrote since the last pass;
- afterwards every user's scope is within its share and the store within the total;
- an authored memory is refused only when writing it and then forgetting all its own scope
  allows would still leave a limit passed (checked by doing just that on a copy), and the
  reason is `user_memory_full` when that limit is the user's own share;
- a refusal changes nothing and leaves nothing to forget.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Iterator, Sequence

import pytest

from custom_components.alto.memory.pipeline import IntakeInput, forget_ids
from custom_components.alto.memory.reasons import Reason
from custom_components.alto.memory.records import (
    HOUSEHOLD,
    KIND_EXPLICIT,
    KIND_SOURCE,
    Kind,
    MemoryState,
    Mutation,
    Row,
    object_id,
    vector_bytes,
)
from custom_components.alto.memory.retention import TRIM_SHARE, Shares, over_limit, refusals

ALICE, BOB = "a" * 32, "b" * 32
SCOPES = (ALICE, BOB, HOUSEHOLD)
LIMITS = [Shares(12, 3), Shares(20, 5), Shares(30, 30), Shares(40, 12), Shares(110, 40)]
SEEDS = range(5)
WRITES = 150


class Store:
    """A `MemoryState`, its last journal sequence, and up to where every write was retained."""

    def __init__(self) -> None:
        """An empty store."""
        self.state = MemoryState()
        self.sequence = 0
        self.retained_to = 0

    def _next(self) -> int:
        self.sequence += 1
        return self.sequence

    def turn(self, scope: str, statements: int) -> None:
        """A turn kept in `scope`: its source row and one row per statement."""
        sequence = self._next()
        kinds = [KIND_SOURCE] + [Kind.ASSERTION] * statements
        self.state.apply(Mutation(sequence, tuple(_row(scope, sequence, kinds))))

    def remember(self, item: IntakeInput) -> None:
        """An authored memory, as `intake.remember` writes a new one."""
        sequence = self._next()
        rows = _row(item.scope, sequence, [KIND_EXPLICIT], item.text, item.source_id)
        self.state.apply(Mutation(sequence, tuple(rows)))

    def retain(self, shares: Shares) -> list[Row]:
        """Carry out one retention pass, as the organ does after writes: the rows removed."""
        removed: list[Row] = []
        plan = over_limit(self.state, shares, self.retained_to)
        self.retained_to = self.sequence
        for viewer, ids in plan.items():
            chosen = forget_ids(ids, viewer, self.state)
            assert isinstance(chosen, tuple), chosen  # the viewer may forget every one
            removed += self.state.rows_of(chosen)
            self.state.apply(Mutation(self._next(), delete=chosen))
        return removed


def _row(
    scope: str, sequence: int, kinds: Sequence[int | str], text: str = "", source: str = ""
) -> Iterator[Row]:
    for index, kind in enumerate(kinds):
        document = text or f"Said {sequence}.{index}."
        yield Row(
            id=object_id(sequence, index),
            document=document,
            kind=kind,
            owner=scope,
            scope=scope,
            actor=scope if scope != HOUSEHOLD else "unknown",
            source_id=source or f"turn/{sequence}",
            source_version=1,
            offset=0,
            length=len(document.encode()),
            sequence=sequence,
            vector=vector_bytes([1.0, float(sequence), float(index)]),
        )


def _over(state: MemoryState, shares: Shares) -> set[str]:
    """The limits `state` passes: a user's scope, or "total"."""
    counts = state.scope_counts()
    over = {s for s, n in counts.items() if s != HOUSEHOLD and n > shares.limit(s)}
    return over | ({"total"} if sum(counts.values()) > shares.total else set())


def _writes(seed: int) -> Iterator[tuple[str, str]]:
    """(scope, "turn" or "remember"), the mix leaning one way or another by seed."""
    rng = random.Random(seed)
    weights = [rng.randint(1, 6) for _ in SCOPES]
    for _ in range(WRITES):
        yield rng.choices(SCOPES, weights)[0], rng.choice(("turn", "turn", "remember"))


def _check_refusal(
    store: Store, shares: Shares, item: IntakeInput, reason: Reason, *, settled: bool
) -> None:
    """The refusal was needed and says which limit; `settled`: no write waits for retention."""
    forced = copy.deepcopy(store)
    forced.remember(item)
    forced.retain(shares)
    left_over = _over(forced.state, shares)
    if item.scope in left_over:
        assert reason is Reason.USER_MEMORY_FULL
    else:
        assert reason is Reason.MEMORY_FULL
    if settled:  # exact: the write could not have been kept, and nothing is to be forgotten
        assert left_over, "refused although forgetting its own scope's memories made room"
        assert over_limit(store.state, shares, store.retained_to) == {}


@pytest.mark.parametrize("shares", LIMITS, ids=str)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("lag", [1, 4])
def test_no_write_makes_room_with_another_scope(shares: Shares, seed: int, lag: int) -> None:
    """Removed rows are the writers' own; refusals only where a limit leaves no room.

    `lag`: at most this many writes between two retention passes (the background pass of the
    organ may run after several writes).
    """
    rng = random.Random(seed)
    store = Store()
    writers: set[str] = set()
    refused: Counter[Reason] = Counter()
    peak = 0
    for number, (scope, kind) in enumerate(_writes(seed)):
        if kind == "turn":
            store.turn(scope, rng.randint(0, 3))
            writers.add(scope)
        else:
            item = IntakeInput(f"Remember {number}.", f"service/{number}", scope, scope, None)
            [reason] = refusals(store.state, shares, [item])
            if reason is None:
                store.remember(item)
                writers.add(scope)
            else:
                refused[reason] += 1
                _check_refusal(store, shares, item, reason, settled=not writers)
        peak = max(peak, len(store.state))
        if rng.randint(1, lag) == 1:
            removed = store.retain(shares)
            assert {row.scope for row in removed} <= writers
            assert all(row.kind != KIND_EXPLICIT for row in removed)
            assert _over(store.state, shares) == set()
            writers = set()
    assert peak > shares.total or refused  # every family reaches a limit


def test_a_full_user_is_refused_and_everyone_else_writes() -> None:
    """Alice's authored memories fill her share: only hers are refused, nothing is forgotten."""
    shares = Shares(20, 5)
    store = Store()
    store.turn(BOB, 2)
    store.turn(HOUSEHOLD, 1)
    for n in range(5):
        store.remember(IntakeInput(f"Alice {n}.", f"a/{n}", ALICE, ALICE))
    before = store.state.rows()

    def one(scope: str, text: str) -> Reason | None:
        return refusals(store.state, shares, [IntakeInput(text, text, scope, scope)])[0]

    assert one(ALICE, "Alice again.") is Reason.USER_MEMORY_FULL
    assert one(BOB, "Bob's.") is None
    assert one(HOUSEHOLD, "The home's.") is None
    assert over_limit(store.state, shares) == {}
    assert store.state.rows() == before


def test_a_batch_takes_room_for_the_items_after_it() -> None:
    """Remembers written together: the one that would pass Alice's share is refused alone."""
    shares = Shares(20, 2)
    state = MemoryState()
    items = [IntakeInput(f"Alice {n}.", f"a/{n}", ALICE, ALICE) for n in range(3)]
    repeat = IntakeInput("Alice 0.", "a/again", ALICE, ALICE)  # writes no row of its own
    bob = IntakeInput("Bob's.", "b/0", BOB, BOB)
    assert refusals(state, shares, [*items, repeat, bob]) == [
        None,
        None,
        Reason.USER_MEMORY_FULL,
        None,
        None,
    ]


def test_a_full_store_makes_the_writer_pay_and_the_crossing_writer_the_share_below() -> None:
    """Past the total, the newest rows' scopes give up their own oldest, the last one 1 % more."""
    shares = Shares(200, 200)
    store = Store()
    for _ in range(100):
        store.turn(BOB, 0)
    for _ in range(99):
        store.turn(HOUSEHOLD, 0)
    assert over_limit(store.state, shares) == {}
    store.turn(ALICE, 0)  # the store is full: no one pays
    assert over_limit(store.state, shares) == {}
    store.turn(ALICE, 1)  # two rows past it: Alice's
    removed = store.retain(shares)
    assert {row.scope for row in removed} == {ALICE}
    assert len(removed) == 3  # everything Alice had, short of 2 + 200 // TRIM_SHARE
    assert len(store.state) == 199


def test_a_user_past_their_share_trims_down_a_share_below_it() -> None:
    """Alice's turns past her 200 rows forget her oldest, down to 198; no one else's."""
    shares = Shares(1000, 200)
    store = Store()
    store.turn(BOB, 3)
    for _ in range(201):
        store.turn(ALICE, 0)
    removed = store.retain(shares)
    assert {row.scope for row in removed} == {ALICE}
    assert store.state.scope_counts()[ALICE] == 200 - 200 // TRIM_SHARE
    assert [row.document for row in removed] == [f"Said {n}.0." for n in (2, 3, 4)]


def test_a_store_left_past_the_total_is_paid_for_by_later_writers_only() -> None:
    """Authored memories past a lowered total stay; after that pass, only writers pay.

    The first pass (a start after the option was lowered) charges the newest rows; the
    household's authored ones cannot go, so the store stays past the total. Alice's turn
    then pays for itself alone: Bob, who wrote nothing since, keeps his.
    """
    shares = Shares(2, 100)
    store = Store()
    store.turn(BOB, 0)
    store.turn(BOB, 0)
    for n in range(2):
        store.remember(IntakeInput(f"Home {n}.", f"h/{n}", HOUSEHOLD, HOUSEHOLD))
    store.turn(BOB, 0)
    first = store.retain(shares)
    assert {row.scope for row in first} == {BOB}
    assert _over(store.state, shares) == {"total"}
    kept = store.state.rows()
    store.turn(ALICE, 0)
    removed = store.retain(shares)
    assert {row.scope for row in removed} == {ALICE}
    assert store.state.rows() == kept
