"""The correction table: which earlier assertions call 2 may replace.

Eligible: a CURRENT inferred assertion (kind 3 or 4) with the SAME owner and scope as the input.
Explicit (authored) rows, sources, mentions, superseded rows and any other owner's or scope's
rows never enter the table, so call 2 cannot name them: a correction can only point at a table
index, and an index outside the table refuses the batch.

Candidates come from the sources of the pre-write reference selection (`references`), in the
order each source first appears there; each source gives one entry per round, in object-id
order within the source. Entries are numbered from 1. The table holds at most
`MAX_TABLE_ENTRIES` entries and at most `capacity` rendered bytes, where capacity is
min(4,096, 6,144 - every fixed call-2 prompt byte) (`prompts.table_capacity`); an entry that does
not fit is skipped, never cut, so the recorded table is exactly what the model saw.

A correction supersedes its target: the old row stays stored (status superseded, the
correction's `target` points at it) but leaves recall. At publication every target is checked
again against the current state (`stale_targets`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .prompts import MAX_TABLE_ENTRIES, render_table_entry
from .records import CURRENT, INFERRED_ASSERTIONS, MemoryState, Row, TableEntry
from .references import Reference


def eligible(row: Row | None, owner: str, scope: str) -> bool:
    """Whether `row` may be replaced by a correction from an input of this owner and scope."""
    return (
        row is not None
        and row.kind in INFERRED_ASSERTIONS
        and row.status == CURRENT
        and row.owner == owner
        and row.scope == scope
    )


def build_table(
    selection: Sequence[Reference], state: MemoryState, *, owner: str, scope: str, capacity: int
) -> tuple[TableEntry, ...]:
    """The source-diverse correction table for one input (see the module docstring)."""
    order: list[tuple[str, int]] = []
    for ref in selection:
        if ref.row.source_key not in order:
            order.append(ref.row.source_key)
    queues = [
        [row for row in state.source_rows(key) if eligible(row, owner, scope)] for key in order
    ]
    table: list[TableEntry] = []
    budget = capacity
    depth = 0
    while len(table) < MAX_TABLE_ENTRIES and any(depth < len(queue) for queue in queues):
        for queue in queues:
            if depth >= len(queue) or len(table) >= MAX_TABLE_ENTRIES:
                continue
            row = queue[depth]
            entry = TableEntry(
                len(table) + 1, row.id, row.source_id, row.source_version, row.actor, row.document
            )
            cost = len(render_table_entry(entry).encode("utf-8"))
            if cost <= budget:
                table.append(entry)
                budget -= cost
        depth += 1
    return tuple(table)


def stale_targets(targets: Sequence[int], state: MemoryState, owner: str, scope: str) -> list[int]:
    """Targets that are no longer eligible in `state` (a stale table refuses the batch)."""
    return [target for target in targets if not eligible(state.get(target), owner, scope)]
