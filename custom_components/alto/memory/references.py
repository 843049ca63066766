"""Reference selection for one turn: required first, then source-diverse optional rows.

Required references (explicit requirements and focus) keep their exact order and always come
first; if they alone break a limit the selection refuses rather than dropping one. Optional rows
are grouped by exact source (id, version); within a group they are ordered by integer cosine
score (`selection.scores` over int8 codes) descending, then object id ascending. Selection runs
in rounds: each round every group with rows left offers its next row, the offers are taken in
(score descending, object id ascending) order, so every source gets a turn before any source
gets a second. A row whose rendered bytes do not fit the remaining budget is skipped and the
selection goes on. Limits: `MAX_REFERENCES` rows and `MAX_REFERENCE_BYTES` rendered bytes,
labels included (`render_reference`).

Integer scores make the choice exact and machine-independent, so replay re-selects identically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .reasons import Reason, Refusal
from .records import Kind, Row
from .selection import scores

MAX_REFERENCES = 16
MAX_REFERENCE_BYTES = 4096

KIND_NAMES: dict[int | str, str] = {
    "source": "source",
    "explicit": "remembered",
    Kind.PARTICIPANT: "participant mention",
    Kind.TASK: "task mention",
    Kind.ASSERTION: "assertion",
    Kind.CORRECTION: "correction",
}


def render_reference(row: Row) -> str:
    """The exact bytes a reference costs: a label naming kind and actor, then the quote."""
    return f"[{KIND_NAMES[row.kind]}; actor {row.actor}] {row.document}\n"


def reference_bytes(row: Row) -> int:
    """UTF-8 size of `render_reference(row)`."""
    return len(render_reference(row).encode("utf-8"))


@dataclass(frozen=True, slots=True)
class Reference:
    """A selected row, its integer score against the query, and whether it was required."""

    row: Row
    score: int
    required: bool

    def to_json(self) -> list[int]:
        """[object id, score], the journal's record of one selected reference."""
        return [self.row.id, self.score]


def select_references(
    rows: Sequence[Row],
    codes: np.ndarray,
    query_codes: np.ndarray,
    *,
    required: Sequence[int] = (),
    max_refs: int = MAX_REFERENCES,
    max_bytes: int = MAX_REFERENCE_BYTES,
) -> tuple[Reference, ...] | Refusal:
    """Select references among `rows` (with their int8 `codes`) for `query_codes`.

    `required` lists object ids that must come first, in order; each must be among `rows`.
    """
    row_scores = scores(codes, query_codes).tolist() if len(rows) else []
    return select_scored(
        rows, row_scores, required=required, max_refs=max_refs, max_bytes=max_bytes
    )


def select_scored(
    rows: Sequence[Row],
    row_scores: Sequence[int],
    *,
    required: Sequence[int] = (),
    max_refs: int = MAX_REFERENCES,
    max_bytes: int = MAX_REFERENCE_BYTES,
) -> tuple[Reference, ...] | Refusal:
    """`select_references` given each row's exact integer score (e.g. from `scoring`).

    The rows may come in any order: the selection depends on scores and ids only.
    """
    score_of = {row.id: int(score) for row, score in zip(rows, row_scores, strict=True)}
    by_id = {row.id: row for row in rows}
    chosen: list[Reference] = []
    budget = max_bytes
    for row_id in required:
        row = by_id.get(row_id)
        if row is None:
            return Refusal(Reason.UNKNOWN_ID, detail=f"required reference {row_id}")
        budget -= reference_bytes(row)
        if budget < 0 or len(chosen) >= max_refs:
            return Refusal(Reason.REFERENCE_LIMIT, detail="required references exceed limits")
        chosen.append(Reference(row, score_of[row_id], True))
    taken = {ref.row.id for ref in chosen}
    groups: dict[tuple[str, int], list[Row]] = {}
    for row in rows:
        if row.id not in taken:
            groups.setdefault(row.source_key, []).append(row)
    queues = [sorted(group, key=lambda r: (-score_of[r.id], r.id)) for group in groups.values()]
    depth = 0
    while len(chosen) < max_refs:
        offers = [queue[depth] for queue in queues if depth < len(queue)]
        if not offers:
            break
        for row in sorted(offers, key=lambda r: (-score_of[r.id], r.id)):
            cost = reference_bytes(row)
            if len(chosen) < max_refs and cost <= budget:
                chosen.append(Reference(row, score_of[row.id], False))
                budget -= cost
        depth += 1
    return tuple(chosen)
