"""The panel's memories: one snapshot of the store per change, each viewer's list derived from it.

A `Snapshot` holds every stored row at one version of the store, indexed by scope (object ids
ascending), with what replaced what (`superseding`) and each owner's count of current private
memories. It is built in an executor job (`build_snapshot`), once per change of the store,
however many panels follow it. A viewer's memories are the household's rows and their own
scope's (`records.visible_to`): two of the snapshot's index lists, so each viewer's list, its
total and its pages come from the one snapshot without a walk of the rows.

A panel is sent its memories newest first: a first page (`first_page`) and the total, older pages
when it asks (`next_page`), and after each change only the rows that changed for it within what
it holds (`changes`). What a panel holds is a `Held`: every row it may see of one snapshot down
to a floor id. A snapshot keeps, for each of the few snapshots before it, the ids that changed
since (`Snapshot.changed_since`); when too many changed, or display names did, a panel starts
over from a first page (``reset``).

Every memory a message carries is shown as `memory_view` shows it: display names, never user ids.
What replaced a row is the same for everyone who sees it (`superseding`), so a row is rendered
once per snapshot whoever it is sent to.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from homeassistant.util.ulid import ulid_to_bytes_or_none

from ..memory.records import CURRENT, HOUSEHOLD, KIND_CORRECTION, UNKNOWN_ACTOR, Row, visible_to
from ..memory.store import MemoryStore

PAGE_SIZE = 200  # memories per page: the first one a panel is sent, and each it asks for
RESET_OVER = 1000  # more ids changed at once than this: every panel starts over from a page
HISTORY = 8  # the snapshots before it a snapshot keeps its changed ids since
# Row kinds as the panel names them (a translation key each: panel_kind_<name>).
KIND_KEYS: dict[int | str, str] = {
    "source": "source",
    "explicit": "explicit",
    1: "participant",
    2: "task",
    3: "assertion",
    4: "correction",
}
_SERIALS = itertools.count(1)


def source_of(source_id: str) -> dict[str, Any]:
    """Where a memory came from, as the panel shows it.

    `type` (conversation, service, todo, or the id's first part), `ref` (the conversation's
    digest or the service call's context id, to tell sources apart), `when` (ms since the epoch,
    from the id's ULID; None without one).
    """
    parts = source_id.split("/")
    ref = parts[1][:12] if len(parts) > 2 else None  # digests are long; 12 hex digits tell apart
    raw = ulid_to_bytes_or_none(parts[-1]) if len(parts) > 1 else None
    when = int.from_bytes(raw[:6], "big") if raw is not None else None  # a ULID's first 48 bits
    return {"type": parts[0], "ref": ref, "when": when}


def memory_view(
    row: Row, names: Mapping[str, str], superseded_by: Mapping[int, int]
) -> dict[str, Any]:
    """One memory as the panel shows it: display names, never user ids."""
    private = row.scope != HOUSEHOLD
    return {
        "id": row.id,
        "quote": row.document,
        "kind": KIND_KEYS.get(row.kind, str(row.kind)),
        "scope": "private" if private else "household",
        "owner": names.get(row.owner) if private else None,
        "actor": None if row.actor == UNKNOWN_ACTOR else names.get(row.actor),
        "source": source_of(row.source_id),
        "status": row.status,
        "superseded_by": superseded_by.get(row.id),
        "replaces": row.target if row.kind == KIND_CORRECTION and row.target else None,
    }


def superseding(rows: Mapping[int, Row]) -> dict[int, int]:
    """The id of the correction that replaced each row it names (the newest, if several).

    A correction counts for a row when it is the household's or in the row's own scope: then
    everyone who sees the row sees the correction too, and what replaced a row is the same for
    every viewer. (A correction shares its target's owner and scope: the rule only keeps a row
    from ever naming one its viewer may not see.)
    """
    replaced: dict[int, int] = {}
    for row in rows.values():
        if row.kind != KIND_CORRECTION or not row.target:
            continue
        target = rows.get(row.target)
        if target is not None and row.scope in (HOUSEHOLD, target.scope):
            replaced[row.target] = max(row.id, replaced.get(row.target, row.id))
    return replaced


def memories_view(rows: Sequence[Row], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """Memories as the panel shows them, newest admission first (object ids follow the journal)."""
    by_id = {row.id: row for row in rows}
    superseded_by = superseding(by_id)
    return [memory_view(by_id[i], names, superseded_by) for i in sorted(by_id, reverse=True)]


def recalled_view(
    rows: Sequence[Row], ids: Sequence[int], names: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The memories among `rows` (a viewer's) with these ids, in the order of `ids`."""
    by_id = {row.id: row for row in rows}
    superseded_by = superseding(by_id)
    return [memory_view(by_id[i], names, superseded_by) for i in ids if i in by_id]


@dataclass(slots=True, eq=False)
class Snapshot:
    """Every stored row at one version of the store, indexed for each viewer's list.

    `scopes` lists each scope's ids ascending; `private_counts` is each owner's current private
    memories; `since` maps an earlier snapshot's serial to the ids added, removed or shown
    otherwise since it (None: too many, or display names changed). `rendered` keeps the memories
    rendered for first pages and changes, shared by every panel (filled on the event loop).
    """

    serial: int
    version: int | None
    rows: Mapping[int, Row]
    scopes: Mapping[str, Sequence[int]]
    superseded_by: Mapping[int, int]
    private_counts: Mapping[str, int]
    names: Mapping[str, str]
    since: Mapping[int, frozenset[int] | None]
    rendered: dict[int, dict[str, Any]] = field(default_factory=dict)

    def lists(self, viewer: str) -> tuple[Sequence[int], ...]:
        """The index lists of what `viewer` sees: the household's and their own scope's."""
        scopes = (HOUSEHOLD,) if viewer == HOUSEHOLD else (HOUSEHOLD, viewer)
        return tuple(self.scopes.get(scope, ()) for scope in scopes)

    def total(self, viewer: str) -> int:
        """How many memories `viewer` sees, current or superseded."""
        return sum(len(ids) for ids in self.lists(viewer))

    def newest(self, viewer: str, below: int | None, limit: int) -> list[int]:
        """The ids of the `limit` newest memories `viewer` sees (below `below`), newest first."""
        picked: list[int] = []
        for ids in self.lists(viewer):
            end = len(ids) if below is None else bisect_left(ids, below)
            picked.extend(ids[max(0, end - limit) : end])
        return sorted(picked, reverse=True)[:limit]

    def has_below(self, viewer: str, floor: int) -> bool:
        """Whether `viewer` sees a memory older than id `floor`."""
        return any(bisect_left(ids, floor) > 0 for ids in self.lists(viewer))

    def render(self, row_id: int, *, keep: bool = True) -> dict[str, Any]:
        """The memory as the panel shows it; kept for other panels unless `keep` is false."""
        if (shown := self.rendered.get(row_id)) is None:
            shown = memory_view(self.rows[row_id], self.names, self.superseded_by)
            if keep:
                self.rendered[row_id] = shown
        return shown

    def memories(self, viewer: str) -> list[dict[str, Any]]:
        """Every memory `viewer` sees, newest first (a whole view: for an executor job)."""
        return memories_view(
            [self.rows[i] for i in itertools.chain(*self.lists(viewer))], self.names
        )

    def changed_since(self, earlier: Snapshot) -> frozenset[int] | None:
        """The ids that changed since `earlier` (None: too many, or too long ago, to say)."""
        return frozenset() if earlier is self else self.since.get(earlier.serial)


def read_rows(store: MemoryStore) -> tuple[int, list[Row]]:
    """Every stored row, current or superseded, in object-id order, and the store's version.

    Blocking. The store is read in two steps; a write between them is read again (the writer
    signals each change after it is applied, so a later snapshot would follow it anyway).
    """
    for _ in range(3):
        version = store.version
        rows = store.get(store.ids())
        if store.version == version:
            break
    return version, rows


def build_snapshot(
    store: MemoryStore | None, previous: Snapshot | None, names: Mapping[str, str]
) -> Snapshot:
    """The store as it is now (blocking: an executor job); `previous` if nothing changed.

    `store` None (no memory) is a snapshot without rows.
    """
    version, rows = read_rows(store) if store is not None else (None, [])
    same_names = previous is not None and previous.names == names
    if previous is not None and same_names and previous.version == version:
        return previous
    by_id = {row.id: row for row in rows}
    scopes: dict[str, list[int]] = {}
    private_counts: dict[str, int] = {}
    for row in rows:  # in object-id order: each scope's list comes out ascending
        scopes.setdefault(row.scope, []).append(row.id)
        if row.scope != HOUSEHOLD and row.status == CURRENT:
            private_counts[row.scope] = private_counts.get(row.scope, 0) + 1
    superseded_by = superseding(by_id)
    since: dict[int, frozenset[int] | None] = {}
    if previous is not None:
        step = _changed(previous, by_id, superseded_by) if same_names else None
        since[previous.serial] = step
        for serial, earlier in list(previous.since.items())[: HISTORY - 1]:  # newest first
            both = None if earlier is None or step is None else earlier | step
            since[serial] = both if both is not None and len(both) <= RESET_OVER else None
    return Snapshot(
        next(_SERIALS), version, by_id, scopes, superseded_by, private_counts, dict(names), since
    )


def _changed(
    previous: Snapshot, rows: Mapping[int, Row], superseded_by: Mapping[int, int]
) -> frozenset[int] | None:
    """The ids added, removed or shown otherwise since `previous` (None: more than RESET_OVER).

    A row the store did not touch is the same object in both (the store replaces only the rows
    a mutation names), so most rows compare by identity.
    """
    old = previous.rows
    changed = {i for i, row in rows.items() if (held := old.get(i)) is not row and held != row}
    changed.update(old.keys() - rows.keys())
    replaced = previous.superseded_by
    changed.update(
        i for i in replaced.keys() | superseded_by.keys() if replaced.get(i) != superseded_by.get(i)
    )
    return frozenset(changed) if len(changed) <= RESET_OVER else None


# -- what a panel holds, and what it is sent -----------------------------------------------------
@dataclass(frozen=True, slots=True)
class Held:
    """What a panel was sent: every memory it sees in `snapshot` with an id of `floor` or more.

    `floor` None: every memory it sees.
    """

    snapshot: Snapshot
    floor: int | None


def _floor(snapshot: Snapshot, viewer: str, ids: Sequence[int]) -> int | None:
    """The floor after sending `ids` (newest first) down from the top: None if nothing is older."""
    return ids[-1] if ids and snapshot.has_below(viewer, ids[-1]) else None


def _message(
    snapshot: Snapshot, viewer: str, floor: int | None, upsert: Iterable[int], remove: list[int]
) -> dict[str, Any]:
    return {
        "reset": False,
        "upsert": [snapshot.render(i) for i in sorted(upsert, reverse=True)],
        "remove": sorted(remove, reverse=True),
        "total": snapshot.total(viewer),
        "more": floor is not None,
    }


def first_page(snapshot: Snapshot, viewer: str) -> tuple[dict[str, Any], Held]:
    """A panel starting over: its newest memories (``reset``), the total, whether there are more."""
    ids = snapshot.newest(viewer, None, PAGE_SIZE)
    floor = _floor(snapshot, viewer, ids)
    return {**_message(snapshot, viewer, floor, ids, []), "reset": True}, Held(snapshot, floor)


def changes(held: Held, snapshot: Snapshot, viewer: str) -> tuple[dict[str, Any] | None, Held]:
    """What changed for the panel between what it holds and `snapshot` (None: nothing).

    Rows it sees that were added or changed (``upsert``), rows it saw that are gone (``remove``),
    each at or above its floor (an older page it has not asked for yet is read when it does).
    A first page instead when the snapshot cannot say what changed, or too much did.
    """
    touched = snapshot.changed_since(held.snapshot)
    if touched is None:
        return first_page(snapshot, viewer)
    floor = held.floor
    upsert: list[int] = []
    remove: list[int] = []
    for i in touched:
        if floor is not None and i < floor:
            continue
        if (row := snapshot.rows.get(i)) is not None and visible_to(row, viewer):
            upsert.append(i)
        elif (old := held.snapshot.rows.get(i)) is not None and visible_to(old, viewer):
            remove.append(i)
    if len(upsert) + len(remove) > PAGE_SIZE:
        return first_page(snapshot, viewer)
    if floor is not None and not snapshot.has_below(viewer, floor):
        floor = None  # nothing older is left: the panel holds every memory it sees
    now = Held(snapshot, floor)
    unchanged = (held.floor is None) == (floor is None) and (
        held.snapshot.total(viewer) == snapshot.total(viewer)
    )
    if not upsert and not remove and unchanged:
        return None, now
    return _message(snapshot, viewer, floor, upsert, remove), now


def next_page(held: Held, viewer: str) -> tuple[dict[str, Any], Held]:
    """The next older page of the panel's memories, the total, and whether more are older."""
    snapshot = held.snapshot
    ids = [] if held.floor is None else snapshot.newest(viewer, held.floor, PAGE_SIZE)
    floor = _floor(snapshot, viewer, ids)
    page = {
        "memories": [snapshot.render(i, keep=False) for i in ids],
        "total": snapshot.total(viewer),
        "more": floor is not None,
    }
    return page, Held(snapshot, floor)
