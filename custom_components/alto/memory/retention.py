"""How many memories an entry keeps, and which go first when there are more.

An entry keeps at most ``limit`` rows (the option ``max_memories``), every scope, kind and
status together: that is what the state holds in memory and what a start loads. Past it, the
oldest rows are forgotten through the ordinary forget path (a journaled ``forget`` entry whose
texts are erased), so the journal, the store and replay stay one history:

- oldest first: object ids are admission order;
- down to 1 % below the limit (TRIM_SHARE), not to the limit itself: a forget rewrites the
  whole embedded Chroma store to erase the text (`erasure.rebuild`), so trimming one row per new
  memory would rewrite it at every turn once the limit is reached; a limit under TRIM_SHARE
  rows trims to the limit;
- a whole source at a time: forgetting a retained source forgets what was interpreted from it
  (`pipeline.forget_ids`), so no inferred quote outlives its source;
- never an authored memory (``alto.remember``, a todo item) nor a source group that holds one:
  what a person asked Alto to keep is only forgotten when they ask. When authored memories alone
  reach the limit, a new one is refused instead (`explicit_full`).
"""

from __future__ import annotations

from .records import HOUSEHOLD, KIND_EXPLICIT, MemoryState

TRIM_SHARE = 100  # past the limit, forget down to limit - limit // TRIM_SHARE


def over_limit(state: MemoryState, limit: int) -> dict[str | None, list[int]]:
    """The rows to forget when more than `limit` are kept, by the viewer that may forget them.

    So many that at most limit - limit // TRIM_SHARE stay (as far as forgettable sources
    allow). The viewer None stands for household rows; empty when the state is within the limit.
    """
    if len(state) <= limit:
        return {}
    excess = len(state) - (limit - limit // TRIM_SHARE)
    rows = state.rows()  # object-id order: oldest first
    authored = {row.source_key for row in rows if row.kind == KIND_EXPLICIT}
    chosen: dict[str | None, list[int]] = {}
    taken: set[tuple[str, int]] = set()
    for row in rows:
        if excess <= 0:
            break
        key = row.source_key
        if key in authored or key in taken:
            continue
        taken.add(key)
        group = state.source_rows(key)
        viewer = None if row.scope == HOUSEHOLD else row.scope
        chosen.setdefault(viewer, []).extend(r.id for r in group)
        excess -= len(group)
    return chosen


def explicit_full(state: MemoryState, limit: int) -> bool:
    """Whether one more authored memory would put authored ones alone past `limit`."""
    authored = sum(1 for row in state.rows() if row.kind == KIND_EXPLICIT)
    return authored + 1 > limit
