"""Which rows the retention limit forgets (`memory.retention.over_limit`)."""

from __future__ import annotations

from custom_components.alto.memory.records import (
    KIND_EXPLICIT,
    KIND_SOURCE,
    MemoryState,
    Mutation,
    Row,
    object_id,
    vector_bytes,
)
from custom_components.alto.memory.retention import TRIM_SHARE, Shares, over_limit


def _household(limit: int) -> Shares:
    """The total `limit`: household rows are bounded by the total only."""
    return Shares.of(limit, 25)


def _state(sources: int, *, authored: int = 0) -> MemoryState:
    """`authored` authored memories, then `sources` sources, one row each, oldest first."""
    kinds = [KIND_EXPLICIT] * authored + [KIND_SOURCE] * sources
    rows = tuple(
        Row(
            id=object_id(1, n),
            document=f"Memory {n}.",
            kind=kind,
            owner="household",
            scope="household",
            actor="unknown",
            source_id=f"src-{n}",
            source_version=1,
            offset=0,
            length=10,
            sequence=1,
            vector=vector_bytes([1.0, float(n)]),
        )
        for n, kind in enumerate(kinds)
    )
    state = MemoryState()
    state.apply(Mutation(1, rows))
    return state


def test_within_the_limit_nothing_is_forgotten() -> None:
    """At the limit, nothing goes."""
    assert over_limit(_state(200), _household(200)) == {}


def test_past_a_large_limit_the_oldest_go_down_to_one_share_below_it() -> None:
    """One row past 200 forgets the oldest 3: 198 stay, so the next two writes forget nothing.

    A forget rewrites the embedded store; trimming a share at a time keeps that off most turns.
    """
    state = _state(201)
    plan = over_limit(state, _household(200))
    ids = [row.id for row in state.rows()]
    assert plan == {None: ids[:3]}
    assert len(state) - len(plan[None]) == 200 - 200 // TRIM_SHARE


def test_a_limit_under_the_share_trims_to_the_limit() -> None:
    """A small limit (tests, tiny installs) keeps exactly the limit."""
    state = _state(5)
    assert over_limit(state, _household(4)) == {None: [state.rows()[0].id]}


def test_authored_memories_are_passed_over() -> None:
    """The oldest forgettable sources go, never an authored memory, however old."""
    state = _state(300, authored=2)  # 302 rows: 5 go, for 297
    plan = over_limit(state, _household(300))
    rows = state.rows()
    assert plan == {None: [row.id for row in rows[2:7]]}
    assert all(row.kind == KIND_EXPLICIT for row in rows[:2])
