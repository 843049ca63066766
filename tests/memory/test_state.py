"""The memory state keeps int8 codes and rows without vectors, and masks by scope and status."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from custom_components.alto.memory.records import (
    HOUSEHOLD,
    MemoryState,
    Mutation,
    Row,
    vector_array,
    vector_bytes,
)
from custom_components.alto.memory.selection import quantize

USERS = ("a" * 32, "b" * 32)
RNG = np.random.default_rng(0)


def make_row(row_id: int, scope: str = HOUSEHOLD, vector: list[float] | None = None) -> Row:
    """A row in `scope` with a random vector unless one is given."""
    values = vector if vector is not None else RNG.normal(size=12).tolist()
    return Row(
        id=row_id,
        document=f"memory {row_id}",
        kind="source",
        owner=scope,
        scope=scope,
        actor="unknown",
        source_id=f"s/{row_id}",
        source_version=1,
        offset=0,
        length=8,
        vector=vector_bytes(values),
    )


def populated() -> tuple[MemoryState, list[Row]]:
    """A state of 30 rows across scopes, three of them superseded."""
    rows = [make_row(i, (HOUSEHOLD, *USERS)[i % 3]) for i in range(1, 31)]
    state = MemoryState()
    state.apply(Mutation(1, tuple(rows[:20])))
    state.apply(Mutation(2, tuple(rows[20:]), supersede=(4, 5, 6)))
    return state, rows


def codes_of(rows: list[Row]) -> np.ndarray:
    """The quantized codes of the rows' vectors."""
    return quantize(np.stack([vector_array(row.vector) for row in rows]))


def test_rows_are_kept_without_vectors_and_codes_are_the_quantized_vectors() -> None:
    """Rows are kept without vectors and codes are the quantized vectors."""
    state, rows = populated()
    assert all(row.vector == b"" for row in state.rows())
    assert [row.id for row in state.rows()] == [row.id for row in rows]
    assert np.array_equal(state.codes(state.rows()), codes_of(rows))
    reloaded = MemoryState()
    reloaded.load([replace(row, status=state.rows()[i].status) for i, row in enumerate(rows)], 2)
    assert reloaded.rows() == state.rows()
    assert reloaded.applied == 2
    assert np.array_equal(reloaded.codes(reloaded.rows()), codes_of(rows))


def test_visibility_masks_the_rows_visible_returns() -> None:
    """Visibility masks the rows visible returns."""
    state, _ = populated()
    snapshot = state.snapshot()
    assert snapshot is not None
    for viewer in (None, *USERS, "someone else"):
        for current_only in (True, False):
            mask = state.visibility(viewer, current_only=current_only)(snapshot)
            expected = {row.id for row in state.visible(viewer, current_only=current_only)}
            assert set(snapshot.ids[mask].tolist()) == expected


def test_superseding_retags_without_changing_earlier_snapshots() -> None:
    """Superseding retags without changing earlier snapshots."""
    state, _ = populated()
    before = state.snapshot()
    assert before is not None
    state.apply(Mutation(3, supersede=(3,)))  # a household row
    after = state.snapshot()
    assert after is not None
    assert after.origin == before.origin
    assert 3 in before.ids[state.visibility(None)(before)].tolist()
    assert 3 not in after.ids[state.visibility(None)(after)].tolist()


def test_deleting_compacts_into_a_new_matrix_and_keeps_the_codes() -> None:
    """Deleting compacts into a new matrix and keeps the codes."""
    state, rows = populated()
    before = state.snapshot()
    assert before is not None
    state.apply(Mutation(3, delete=(2, 17, 30)))
    after = state.snapshot()
    assert after is not None
    assert after.origin != before.origin
    assert len(after) == 27
    kept = [row for row in rows if row.id not in (2, 17, 30)]
    assert np.array_equal(state.codes([state.get(row.id) for row in kept]), codes_of(kept))
    assert len(before) == 30  # the old snapshot still holds every row
    assert set(after.ids[state.visibility(USERS[0])(after)].tolist()) == {
        row.id for row in state.visible(USERS[0])
    }


def test_reupserting_other_codes_compacts_and_the_same_codes_do_not() -> None:
    """Reupserting other codes compacts and the same codes do not."""
    state, rows = populated()
    origin = state.snapshot().origin
    state.apply(Mutation(2, tuple(rows[20:]), supersede=(4, 5, 6)))  # applied again
    assert state.snapshot().origin == origin
    assert len(state) == 30
    moved = make_row(7, HOUSEHOLD, [1.0] + [0.0] * 11)
    state.apply(Mutation(3, (moved,)))
    assert state.snapshot().origin != origin
    assert len(state.snapshot()) == 30
    assert state.codes([state.get(7)]).tolist() == [[127] + [0] * 11]


def test_restore_takes_blocks_as_they_are() -> None:
    """Restore takes blocks as they are."""
    state, _ = populated()
    snapshot = state.snapshot()
    rows = [state.get(row_id) for row_id in snapshot.ids.tolist()]
    restored = MemoryState()
    blocks = snapshot.exact_blocks()
    restored.restore(rows, blocks, 2)
    assert restored.rows() == state.rows()
    assert restored.applied == 2
    for block, given in zip(restored.snapshot().blocks, blocks, strict=True):
        assert np.shares_memory(block.codes, given)
    for viewer in (None, USERS[1]):
        assert restored.visible(viewer) == state.visible(viewer)
        mask = restored.visibility(viewer)(restored.snapshot())
        assert set(snapshot.ids[mask].tolist()) == {row.id for row in state.visible(viewer)}


def test_deleting_every_row_leaves_an_empty_snapshot_and_no_dimension() -> None:
    """Deleting every row leaves an empty snapshot and no dimension."""
    state, rows = populated()
    state.apply(Mutation(3, delete=tuple(row.id for row in rows)))
    snapshot = state.snapshot()
    assert snapshot is not None
    assert len(snapshot) == 0
    assert state.dim is None
    state.apply(Mutation(4, (make_row(99, vector=[0.0, 1.0, 0.0]),)))  # another model's size
    assert state.dim == 3
    assert state.codes([state.get(99)]).tolist() == [[0, 127, 0]]


def test_a_turn_is_retired_while_a_statement_of_it_stays_replaced() -> None:
    """`retired` names the source row of a turn whose statement a correction superseded.

    Through the supersede, a compaction that moves positions, the turn written again with the
    statement current, and the source row deleted.
    """
    source = make_row(1)
    statement = replace(make_row(2), kind=3, source_id=source.source_id, document="memory 1")
    other = make_row(3)
    state = MemoryState()
    state.apply(Mutation(1, (other, source, statement)))
    assert state.retired() == []
    state.apply(Mutation(2, supersede=(2,)))
    assert state.retired() == [1]  # the source row's position
    state.apply(Mutation(3, delete=(3,)))  # compacts: the source row moves to position 0
    assert state.retired() == [0]
    state.apply(Mutation(4, (replace(statement, status="current"),)))
    assert state.retired() == []
    state.apply(Mutation(5, supersede=(2,), delete=(1,)))
    assert state.retired() == []
