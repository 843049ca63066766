"""How many memories an entry keeps, whose room they take, and which go first past a limit.

Limits count rows, every kind and status (what the state holds in memory and a start loads), by
scope: the household's, and each user's private one. A row counts to its scope, never to who
wrote it: a household memory a user wrote is the household's, a memory an administrator wrote
into a user's scope is that user's.

- `Shares.total` (the option ``max_memories``): every scope together;
- `Shares.user` (``user_memory_share`` per cent of it, at least one row): what one user's own
  scope may hold. The household has no share of its own: it may hold whatever the users' private
  memories leave of the total.

No write makes room with another scope's memories: past a limit, only the scope over it gives up
rows, its own oldest (`over_limit`):

- a user's scope past its share trims itself; only writes into that scope grow it;
- a store past the total: the writers (the scopes written since the last pass, which the
  caller tells by journal sequence) pay for it. The newest of their rows past the total are
  the overflow (object ids are admission order), and each gives up as many rows as it has
  there. A write into a store with room left makes no one pay; a write into a full store makes
  only its own scope pay, and a scope that did not write never pays for the total.

An authored memory nothing of its own scope can make room for is refused before it is written
(`refusals`): `user_memory_full` when the user's authored memories fill their share (only that
user's new ones are refused), `memory_full` when everything but the scope's own forgettable rows
fills the total. Nothing is forgotten for a refused write.

Within a scope, what goes:

- oldest first;
- down to 1 % below the limit crossed (TRIM_SHARE), not to the limit itself: a forget rewrites
  the whole embedded Chroma store to erase the text (`erasure.rebuild`), so trimming one row
  per new memory would rewrite it at every turn once the limit is reached; a limit under
  TRIM_SHARE rows trims to the limit. Past the total, the share below it is taken from the
  scope of the oldest row of the overflow: the one whose write crossed it;
- a whole source at a time: forgetting a retained source forgets what was interpreted from it
  (`pipeline.forget_ids`), so no inferred quote outlives its source;
- never an authored memory (``alto.remember``, a todo item) nor a source group that holds one:
  what a person asked Alto to keep is only forgotten when they ask.

The plan is carried out through the ordinary forget path (a journaled ``forget`` entry whose
texts are erased), so the journal, the store and replay stay one history: replay re-derives
each forget entry, never the plan that chose it.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .pipeline import IntakeInput
from .reasons import Reason
from .records import HOUSEHOLD, KIND_EXPLICIT, MemoryState, Row
from .spans import admit_source

TRIM_SHARE = 100  # past a limit, forget down to limit - limit // TRIM_SHARE

type SourceKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Shares:
    """The limits in rows: `total` for every scope together, `user` for one user's own scope."""

    total: int
    user: int

    @classmethod
    def of(cls, total: int, user_percent: int) -> Shares:
        """`user_percent` per cent of `total` for each user, at least one row."""
        return cls(total, max(1, total * user_percent // 100))

    def limit(self, scope: str) -> int:
        """What `scope` may hold: the total for the household, a user's share for a user."""
        return self.total if scope == HOUSEHOLD else min(self.user, self.total)


def due(counts: Mapping[str, int], shares: Shares) -> bool:
    """Whether rows by scope (`MemoryState.scope_counts`) pass the total or a user's share."""
    return sum(counts.values()) > shares.total or any(
        number > shares.limit(scope) for scope, number in counts.items()
    )


def _kept(limit: int) -> int:
    """Where a trim past `limit` stops."""
    return limit - limit // TRIM_SHARE


def _forgettable(state: MemoryState, rows: Sequence[Row]) -> dict[str, dict[SourceKey, int]]:
    """Each scope's forgettable sources, oldest first, with their number of rows.

    A source is forgettable when none of its rows is authored and all are of one scope (a
    forget of it then deletes rows of that scope only).
    """
    authored = {row.source_key for row in rows if row.kind == KIND_EXPLICIT}
    groups: dict[str, dict[SourceKey, int]] = {}
    for row in rows:
        key = row.source_key
        if key in authored or key in groups.get(row.scope, {}):
            continue
        group = state.source_rows(key)
        if all(other.scope == row.scope for other in group):
            groups.setdefault(row.scope, {})[key] = len(group)
    return groups


def over_limit(state: MemoryState, shares: Shares, since: int = 0) -> dict[str | None, list[int]]:
    """The rows to forget, by the viewer that forgets them (None: the household's rows).

    First every user's scope past its share gives up its oldest forgettable sources, down to a
    share below it. Then, when the store is still past the total, the overflow is the newest
    rows past it of the scopes that wrote after journal sequence `since` (the writers: every
    write up to `since` was retained before); each writer gives up as many rows as it has
    there, and the one with the overflow's oldest row a share below the total too. As far as
    forgettable sources allow; empty within the limits.
    """
    counts = state.scope_counts()
    if not due(counts, shares):
        return {}
    rows = state.rows()  # object-id order: oldest first
    groups = _forgettable(state, rows)
    chosen: dict[str, list[int]] = {}

    def trim(scope: str, wanted: int) -> None:
        """Forget at least `wanted` rows of `scope`, whole sources, oldest first."""
        pending = groups.get(scope, {})
        while wanted > 0 and pending:
            key = next(iter(pending))
            wanted -= pending.pop(key)
            chosen.setdefault(scope, []).extend(row.id for row in state.source_rows(key))

    for scope, number in counts.items():
        limit = shares.limit(scope)
        if scope != HOUSEHOLD and number > limit:
            trim(scope, number - _kept(limit))
    gone = {row_id for ids in chosen.values() for row_id in ids}
    excess = len(rows) - len(gone) - shares.total
    if excess > 0:
        writers = {row.scope for row in rows if row.sequence > since}
        newest_first = (
            row for row in reversed(rows) if row.scope in writers and row.id not in gone
        )
        overflow = list(itertools.islice(newest_first, excess))
        debts = Counter(row.scope for row in overflow)
        if overflow:  # its oldest row's write crossed the total
            debts[overflow[-1].scope] += shares.total // TRIM_SHARE
        for scope, debt in debts.items():
            trim(scope, debt)
    return {None if scope == HOUSEHOLD else scope: ids for scope, ids in chosen.items()}


def refusals(
    state: MemoryState, shares: Shares, items: Sequence[IntakeInput]
) -> list[Reason | None]:
    """Per authored memory of `items`, in order, why no room can be made for it, or None.

    An item that writes no row (it repeats a current authored memory, or an earlier item) or
    that admission refuses anyway takes no room; every other one takes a row of its scope, for
    the items after it too. It is refused when the scope's authored memories, with it, pass
    the scope's limit (`user_memory_full` for a user's own scope), or when every row but its
    scope's forgettable ones, with it, passes the total (`memory_full`): `over_limit` would
    have nothing of the scope's own to forget for it. Rows a retention pass has yet to forget
    count as held: room another scope's pass would make is not counted on, so a refusal in a
    store within its limits is exact, and never rests on another scope's forgetting.
    """
    counts = state.scope_counts()
    wanted = Counter(item.scope for item in items)
    if sum(counts.values()) + len(items) <= shares.total and all(
        counts.get(scope, 0) + number <= shares.limit(scope) for scope, number in wanted.items()
    ):
        return [None] * len(items)  # room for all, even if each wrote a row: no walk of the rows
    rows = state.rows()
    authored: dict[str, int] = {}
    for row in rows:
        if row.kind == KIND_EXPLICIT:
            authored[row.scope] = authored.get(row.scope, 0) + 1
    forgettable = {
        scope: sum(groups.values()) for scope, groups in _forgettable(state, rows).items()
    }
    total = len(rows)
    seen: set[tuple[str, str, str]] = set()
    reasons: list[Reason | None] = []
    for item in items:
        key = (item.text, item.owner, item.scope)
        reason = None
        if key not in seen and admit_source(item.text) is None and state.explicit(*key) is None:
            scope = item.scope
            if authored.get(scope, 0) + 1 > shares.limit(scope):
                reason = Reason.MEMORY_FULL if scope == HOUSEHOLD else Reason.USER_MEMORY_FULL
            elif total - forgettable.get(scope, 0) + 1 > shares.total:
                reason = Reason.MEMORY_FULL
            else:
                seen.add(key)
                authored[scope] = authored.get(scope, 0) + 1
                total += 1
        reasons.append(reason)
    return reasons
