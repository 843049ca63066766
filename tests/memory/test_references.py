"""Turn reference selection: required first, one per source per round, exact integer order."""

from __future__ import annotations

import numpy as np

from custom_components.alto.memory.reasons import Reason, Refusal
from custom_components.alto.memory.records import MemoryState, Mutation, Row, vector_bytes
from custom_components.alto.memory.references import (
    MAX_REFERENCE_BYTES,
    reference_bytes,
    select_references,
)
from custom_components.alto.memory.selection import quantize

QUERY = quantize(np.array([1.0, 0.0, 0.0]))


def row(row_id: int, source: str, direction: list[float], text: str = "x") -> Row:
    """A household row of `source` with `direction` as its vector."""
    return Row(
        id=row_id,
        document=text,
        kind=3,
        owner="household",
        scope="household",
        actor="unknown",
        source_id=source,
        source_version=1,
        offset=0,
        length=len(text),
        vector=vector_bytes(direction),
    )


def select(rows: list[Row], **options: object) -> tuple | Refusal:
    """The references selected from the rows for `QUERY`."""
    state = MemoryState()
    state.apply(Mutation(1, tuple(rows)))
    ordered = state.rows()
    return select_references(ordered, state.codes(ordered), QUERY, **options)  # type: ignore[arg-type]


def ids(selection: object) -> list[int]:
    """The ids of the selected rows, in order; asserts nothing was refused."""
    assert not isinstance(selection, Refusal)
    return [ref.row.id for ref in selection]


def test_one_row_per_source_per_round() -> None:
    """One row per source per round."""
    rows = [
        row(1, "a", [1.0, 0.0, 0.0]),  # a: best overall
        row(2, "a", [0.99, 0.1, 0.0]),  # a: second best overall, waits for round 2
        row(3, "b", [0.5, 0.5, 0.0]),
        row(4, "c", [0.0, 1.0, 0.0]),
        row(5, "b", [0.1, 0.9, 0.0]),
    ]
    assert ids(select(rows)) == [1, 3, 4, 2, 5]


def test_equal_scores_break_by_object_id() -> None:
    """Equal scores break by object id."""
    rows = [row(n, f"s{n}", [1.0, 0.0, 0.0]) for n in (9, 3, 7)]
    selection = select(rows)
    assert ids(selection) == [3, 7, 9]
    assert len({ref.score for ref in selection}) == 1


def test_required_first_in_their_order() -> None:
    """Required first in their order."""
    rows = [row(n, f"s{n}", [1.0, n / 10, 0.0]) for n in range(1, 6)]
    selection = select(rows, required=[5, 2])
    assert ids(selection)[:2] == [5, 2]
    assert [ref.required for ref in selection][:3] == [True, True, False]
    assert sorted(ids(selection)) == [1, 2, 3, 4, 5]


def test_limits_on_count_and_bytes() -> None:
    """Limits on count and bytes."""
    many = [row(n, f"s{n}", [1.0, 0.0, 0.0]) for n in range(1, 40)]
    assert len(ids(select(many))) == 16
    big = [row(n, f"s{n}", [1.0, 0.0, 0.0], "y" * 1500) for n in range(1, 6)]
    chosen = select(big)
    assert ids(chosen) == [1, 2]
    assert sum(reference_bytes(ref.row) for ref in chosen) <= MAX_REFERENCE_BYTES
    mixed = [*big[:2], row(50, "z", [0.0, 1.0, 0.0], "small")]
    assert ids(select(mixed)) == [1, 2, 50]  # a row that does not fit is skipped, not the rest


def test_required_references_that_do_not_fit_refuse() -> None:
    """Required references that do not fit refuse."""
    big = [row(n, f"s{n}", [1.0, 0.0, 0.0], "y" * 1500) for n in range(1, 5)]
    refused = select(big, required=[1, 2, 3])
    assert isinstance(refused, Refusal)
    assert refused.reason is Reason.REFERENCE_LIMIT
    missing = select(big, required=[99])
    assert isinstance(missing, Refusal)
    assert missing.reason is Reason.UNKNOWN_ID


def test_empty_memory_selects_nothing() -> None:
    """Empty memory selects nothing."""
    assert select_references([], np.zeros((0, 3), dtype=np.int8), QUERY) == ()
