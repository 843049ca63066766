"""The panel's memories: one entry per thing said, from one snapshot of the store per change.

People recognise what they said, not the store's rows. An `Entry` is one source as the store
groups it (`Row.source_key`, within one scope): a turn someone said, something someone asked to
remember, a to-do item. Its head is the source's own row (the retained text, or the authored
memory) and the rest is what Alto understood from it (assertions, mentions, corrections). An
entry is *listed* when its head competes for recall (`memory.corpus.competes`, which knows every
language's questions, commands and acknowledgements); the others are kept and shown only under
"everything said". An entry's id is its smallest row id (its head's, when it has one), which
stays the same while the source is kept; forgetting the head forgets the whole source.

A `Snapshot` holds every stored row and entry at one version of the store, with each scope's
entry ids ascending, listed ones and all. It is built in an executor job (`build_snapshot`),
once per change of the store, however many panels follow it. A viewer's entries are the
household's and their own scope's (`records.visible_to`), so each viewer's list, total and pages
come from the one snapshot without a walk of the rows.

A panel is sent its entries newest first: a first page (`first_page`) and the total, older pages
when it asks (`next_page`), and after each change only the entries that changed for it within what
it holds (`changes`). What a panel holds is a `Held`: every entry of its list in one snapshot down
to a floor id. A snapshot keeps, for each of the few snapshots before it, the entry ids that
changed since (`Snapshot.changed_since`); when too many changed, or display names did, a panel
starts over from a first page (``reset``).

Every entry a message carries is shown as `entry_view` shows it: display names, never user ids,
never a source's internal id. What replaced a row is the same for everyone who sees it
(`superseding`), so an entry is rendered once per snapshot whoever it is sent to.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from homeassistant.util.ulid import ulid_to_bytes_or_none

from ..memory.corpus import competes
from ..memory.records import (
    HOUSEHOLD,
    KIND_CORRECTION,
    KIND_EXPLICIT,
    KIND_SOURCE,
    UNKNOWN_ACTOR,
    Row,
)
from ..memory.store import MemoryStore

PAGE_SIZE = 200  # entries per page: the first one a panel is sent, and each it asks for
RESET_OVER = 1000  # more entries changed at once than this: every panel starts over from a page
HISTORY = 8  # the snapshots before it a snapshot keeps its changed entry ids since
# Row kinds as the panel names them (a translation key each: panel_kind_<name>).
KIND_KEYS: dict[int | str, str] = {
    KIND_SOURCE: "source",
    KIND_EXPLICIT: "explicit",
    1: "participant",
    2: "task",
    3: "assertion",
    4: "correction",
}
# Where a source came from, by its id's first part (a translation key each: panel_source_<name>):
# Alto's own turns, another assistant's memory tool, the remember service or the panel, the
# to-do list, the reflect organ's nominations. Anything else is "other".
SOURCE_TYPES = frozenset({"conversation", "agent", "service", "todo", "reflect"})
_HEADS = (KIND_SOURCE, KIND_EXPLICIT)
_SERIALS = itertools.count(1)


def source_of(source_id: str, said_at: int = 0) -> dict[str, Any]:
    """Where and when a source was said, as the panel words it; never the source's id.

    `type` is one of `SOURCE_TYPES` or ``"other"``; `when` is ms since the epoch: `said_at`
    (Unix seconds) when recorded, else the time of the id's closing ULID, else None.
    """
    parts = source_id.split("/")
    if said_at:
        when: int | None = said_at * 1000
    else:
        raw = ulid_to_bytes_or_none(parts[-1]) if len(parts) > 1 else None
        when = int.from_bytes(raw[:6], "big") if raw is not None else None  # a ULID's 48 bits
    return {"type": parts[0] if parts[0] in SOURCE_TYPES else "other", "when": when}


@dataclass(frozen=True, slots=True)
class Entry:
    """One source of one scope: its row ids ascending, its head among them, listed or not."""

    id: int
    scope: str
    rows: tuple[int, ...]
    head: int
    listed: bool

    def visible_to(self, viewer: str) -> bool:
        """Whether `viewer` sees it (household entries everyone, private ones their owner)."""
        return self.scope in (HOUSEHOLD, viewer)


def group(rows: Iterable[Row]) -> tuple[dict[int, Entry], dict[int, int]]:
    """The entries of `rows` (given in object-id order) by id, and each row's entry id.

    A source's rows share its scope; should one not, it is an entry of its own there, so no
    entry holds a row one of its viewers may not see.
    """
    members: dict[tuple[str, int, str], list[Row]] = {}
    for row in rows:
        members.setdefault((row.source_id, row.source_version, row.scope), []).append(row)
    entries: dict[int, Entry] = {}
    entry_of: dict[int, int] = {}
    for (_, _, scope), found in members.items():
        head = next((row for row in found if row.kind in _HEADS), found[0])
        entry = Entry(found[0].id, scope, tuple(r.id for r in found), head.id, competes(head))
        entries[entry.id] = entry
        entry_of.update((row.id, entry.id) for row in found)
    return entries, entry_of


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


def _quoted(row: Row | None) -> dict[str, Any] | None:
    return None if row is None else {"id": row.id, "quote": row.document}


def _understood(
    row: Row, rows: Mapping[int, Row], superseded_by: Mapping[int, int]
) -> dict[str, Any]:
    """One thing Alto understood from a source: its quote, kind, and a correction either way."""
    target = rows.get(row.target) if row.kind == KIND_CORRECTION and row.target else None
    if target is not None and target.scope not in (HOUSEHOLD, row.scope):
        target = None  # a viewer of the correction might not see what it corrected
    replacing = superseded_by.get(row.id)
    return {
        "id": row.id,
        "quote": row.document,
        "kind": KIND_KEYS.get(row.kind, str(row.kind)),
        "status": row.status,
        "superseded_by": _quoted(rows.get(replacing) if replacing is not None else None),
        "replaces": _quoted(target),
    }


def entry_view(
    entry: Entry,
    rows: Mapping[int, Row],
    names: Mapping[str, str],
    superseded_by: Mapping[int, int],
) -> dict[str, Any]:
    """One entry as the panel shows it: display names, never user ids nor a source's id.

    `understood` holds the entry's other rows (oldest first); `forget` the ids to forget it by
    (its head, which forgets the whole source; every row of an entry without one).
    """
    head = rows[entry.head]
    private = entry.scope != HOUSEHOLD
    understood = [_understood(rows[i], rows, superseded_by) for i in entry.rows if i != entry.head]
    headed = head.kind in _HEADS
    return {
        "id": entry.id,
        "quote": head.document,
        "kind": KIND_KEYS.get(head.kind, str(head.kind)),
        "listed": entry.listed,
        "scope": "private" if private else "household",
        "owner": names.get(head.owner) if private else None,
        "actor": None if head.actor == UNKNOWN_ACTOR else names.get(head.actor),
        "source": source_of(head.source_id, head.said_at),
        "understood": understood,
        "corrected": any(item["superseded_by"] is not None for item in understood),
        "forget": [entry.head] if headed else list(entry.rows),
    }


def entries_view(
    rows: Sequence[Row], names: Mapping[str, str], *, everything: bool = True
) -> list[dict[str, Any]]:
    """The entries of `rows` (one viewer's) as the panel shows them, newest first.

    Only the listed ones unless `everything`.
    """
    by_id = {row.id: row for row in sorted(rows, key=lambda row: row.id)}
    entries, _ = group(by_id.values())
    superseded_by = superseding(by_id)
    return [
        entry_view(entries[i], by_id, names, superseded_by)
        for i in sorted(entries, reverse=True)
        if everything or entries[i].listed
    ]


def recalled_view(
    rows: Sequence[Row], ids: Sequence[int], names: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The entries among `rows` (a viewer's) that hold these row ids, in the order of `ids`."""
    by_id = {row.id: row for row in sorted(rows, key=lambda row: row.id)}
    entries, entry_of = group(by_id.values())
    superseded_by = superseding(by_id)
    found = dict.fromkeys(entry_of[i] for i in ids if i in entry_of)
    return [entry_view(entries[i], by_id, names, superseded_by) for i in found]


@dataclass(slots=True, eq=False)
class Snapshot:
    """Every stored row and entry at one version of the store, indexed for each viewer's list.

    `lists` holds each scope's entry ids ascending, by (scope, everything): all of them, or the
    listed ones only. `private_counts` is each owner's private entries (every thing said, what
    a purge forgets); `since` maps an
    earlier snapshot's serial to the entry ids added, removed or shown otherwise since it (None:
    too many, or display names changed). `rendered` keeps the entries rendered for first pages
    and changes, shared by every panel (filled on the event loop).
    """

    serial: int
    version: int | None
    rows: Mapping[int, Row]
    entries: Mapping[int, Entry]
    entry_of: Mapping[int, int]
    lists: Mapping[tuple[str, bool], Sequence[int]]
    superseded_by: Mapping[int, int]
    corrections_of: Mapping[int, Sequence[int]]  # a row's id: the corrections that name it
    private_counts: Mapping[str, int]
    names: Mapping[str, str]
    since: Mapping[int, frozenset[int] | None]
    rendered: dict[int, dict[str, Any]] = field(default_factory=dict)

    def indexes(self, viewer: str, everything: bool) -> tuple[Sequence[int], ...]:
        """The entry id lists of `viewer`'s list: the household's and their own scope's."""
        scopes = (HOUSEHOLD,) if viewer == HOUSEHOLD else (HOUSEHOLD, viewer)
        return tuple(self.lists.get((scope, everything), ()) for scope in scopes)

    def shows(self, entry_id: int, viewer: str, everything: bool) -> bool:
        """Whether the entry is in `viewer`'s list (all entries, or the listed ones)."""
        entry = self.entries.get(entry_id)
        return entry is not None and entry.visible_to(viewer) and (everything or entry.listed)

    def total(self, viewer: str, everything: bool) -> int:
        """How many entries `viewer`'s list holds."""
        return sum(len(ids) for ids in self.indexes(viewer, everything))

    def newest(self, viewer: str, everything: bool, below: int | None, limit: int) -> list[int]:
        """The ids of the `limit` newest entries of the list (below `below`), newest first."""
        picked: list[int] = []
        for ids in self.indexes(viewer, everything):
            end = len(ids) if below is None else bisect_left(ids, below)
            picked.extend(ids[max(0, end - limit) : end])
        return sorted(picked, reverse=True)[:limit]

    def has_below(self, viewer: str, everything: bool, floor: int) -> bool:
        """Whether the list holds an entry older than id `floor`."""
        return any(bisect_left(ids, floor) > 0 for ids in self.indexes(viewer, everything))

    def render(self, entry_id: int, *, keep: bool = True) -> dict[str, Any]:
        """The entry as the panel shows it; kept for other panels unless `keep` is false."""
        if (shown := self.rendered.get(entry_id)) is None:
            entry = self.entries[entry_id]
            shown = entry_view(entry, self.rows, self.names, self.superseded_by)
            if keep:
                self.rendered[entry_id] = shown
        return shown

    def memories(self, viewer: str, everything: bool = False) -> list[dict[str, Any]]:
        """`viewer`'s whole list, newest first (every entry rendered: for an executor job)."""
        ids = sorted(itertools.chain(*self.indexes(viewer, everything)), reverse=True)
        return [self.render(i, keep=False) for i in ids]

    def changed_since(self, earlier: Snapshot) -> frozenset[int] | None:
        """The entry ids that changed since `earlier` (None: too many, or too long ago)."""
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
    regrouped = _regroup(rows, by_id, previous) if previous is not None else None
    entries, entry_of = regrouped if regrouped is not None else group(rows)
    lists: dict[tuple[str, bool], list[int]] = {}
    private_counts: dict[str, int] = {}
    for entry_id in sorted(entries):  # each list comes out ascending
        entry = entries[entry_id]
        lists.setdefault((entry.scope, True), []).append(entry.id)
        if entry.listed:
            lists.setdefault((entry.scope, False), []).append(entry.id)
        if entry.scope != HOUSEHOLD:
            private_counts[entry.scope] = private_counts.get(entry.scope, 0) + 1
    corrections_of: dict[int, list[int]] = {}
    for row in rows:
        if row.kind == KIND_CORRECTION and row.target:
            corrections_of.setdefault(row.target, []).append(row.id)
    superseded_by = superseding(by_id)
    snapshot = Snapshot(
        next(_SERIALS),
        version,
        by_id,
        entries,
        entry_of,
        lists,
        superseded_by,
        corrections_of,
        private_counts,
        dict(names),
        {},
    )
    if previous is not None:
        step = _changed(previous, snapshot) if same_names else None
        since: dict[int, frozenset[int] | None] = {previous.serial: step}
        for serial, earlier in list(previous.since.items())[: HISTORY - 1]:  # newest first
            both = None if earlier is None or step is None else earlier | step
            since[serial] = both if both is not None and len(both) <= RESET_OVER else None
        snapshot.since = since
    return snapshot


def _regroup(
    rows: Sequence[Row], by_id: Mapping[int, Row], previous: Snapshot
) -> tuple[dict[int, Entry], dict[int, int]] | None:
    """`group(rows)`, reusing `previous`'s entries for every source none of whose rows changed.

    Why: a change touches a few rows, and building every entry again allocates a few objects per
    memory; at 100,000 memories that sets off a full garbage collection, which stops the event
    loop's thread too, for 50 to 190 ms. None when too many rows changed to be worth it. A row
    the store did not touch is the same object in both (`_changed`).
    """
    old = previous.rows
    changed = [row for row in rows if old.get(row.id) is not row]
    changed += [old[i] for i in old.keys() - by_id.keys()]
    if len(changed) > RESET_OVER:
        return None
    changed += [held for row in changed if (held := old.get(row.id)) is not None]
    keys = {(row.source_id, row.source_version, row.scope) for row in changed}
    sources = {key[0] for key in keys}
    entries, entry_of = dict(previous.entries), dict(previous.entry_of)
    for row in changed:
        if (entry := entries.pop(previous.entry_of.get(row.id, -1), None)) is not None:
            for member in entry.rows:
                entry_of.pop(member, None)
    again = [
        row
        for row in rows
        if row.source_id in sources and (row.source_id, row.source_version, row.scope) in keys
    ]
    new_entries, new_entry_of = group(again)
    entries.update(new_entries)
    entry_of.update(new_entry_of)
    return entries, entry_of


def _changed(previous: Snapshot, now: Snapshot) -> frozenset[int] | None:
    """The entry ids added, removed or shown otherwise since `previous` (None: too many).

    An entry shows its rows, and the quotes of the corrections that replaced them or that they
    make: a changed row changes its entry, the entries of the rows it corrects or that correct
    it, in either snapshot, and whichever entries hold those entries' rows in the other. A row
    the store did not touch is the same object in both (the store replaces only the rows a
    mutation names), so most rows compare by identity.
    """
    old, rows = previous.rows, now.rows
    touched = {i for i, row in rows.items() if (held := old.get(i)) is not row and held != row}
    touched.update(old.keys() - rows.keys())
    replaced, replacing = previous.superseded_by, now.superseded_by
    touched.update(
        i for i in replaced.keys() | replacing.keys() if replaced.get(i) != replacing.get(i)
    )
    if len(touched) > RESET_OVER:
        return None
    changed: set[int] = set()
    for snapshot in (previous, now):
        for i in touched:
            related = [i, *snapshot.corrections_of.get(i, ())]
            if (row := snapshot.rows.get(i)) is not None and row.kind == KIND_CORRECTION:
                related.append(row.target)
            changed.update(e for r in related if (e := snapshot.entry_of.get(r)) is not None)
    # An entry's id is its oldest row's: a row of a changed entry may be in another one now.
    for snapshot, other in ((previous, now), (now, previous)):
        for e in list(changed):
            if (entry := snapshot.entries.get(e)) is not None:
                changed.update(o for r in entry.rows if (o := other.entry_of.get(r)) is not None)
    return frozenset(changed) if len(changed) <= RESET_OVER else None


# -- what a panel holds, and what it is sent -----------------------------------------------------
@dataclass(frozen=True, slots=True)
class Held:
    """What a panel was sent: every entry of its list in `snapshot` with an id of `floor` or more.

    `everything`: the list holds every entry, not only the listed ones. `floor` None: every entry
    of the list.
    """

    snapshot: Snapshot
    floor: int | None
    everything: bool = False


def _floor(snapshot: Snapshot, viewer: str, everything: bool, ids: Sequence[int]) -> int | None:
    """The floor after sending `ids` (newest first) down from the top: None if nothing is older."""
    return ids[-1] if ids and snapshot.has_below(viewer, everything, ids[-1]) else None


def _message(held: Held, viewer: str, upsert: Iterable[int], remove: list[int]) -> dict[str, Any]:
    snapshot = held.snapshot
    return {
        "reset": False,
        "upsert": [snapshot.render(i) for i in sorted(upsert, reverse=True)],
        "remove": sorted(remove, reverse=True),
        "total": snapshot.total(viewer, held.everything),
        "more": held.floor is not None,
    }


def first_page(
    snapshot: Snapshot, viewer: str, everything: bool = False
) -> tuple[dict[str, Any], Held]:
    """A panel starting over: its newest entries (``reset``), the total, whether there are more."""
    ids = snapshot.newest(viewer, everything, None, PAGE_SIZE)
    held = Held(snapshot, _floor(snapshot, viewer, everything, ids), everything)
    return {**_message(held, viewer, ids, []), "reset": True}, held


def changes(held: Held, snapshot: Snapshot, viewer: str) -> tuple[dict[str, Any] | None, Held]:
    """What changed for the panel between what it holds and `snapshot` (None: nothing).

    Entries of its list that were added or changed (``upsert``), entries it held that left the
    list (``remove``), each at or above its floor (an older page it has not asked for yet is read
    when it does). A first page instead when the snapshot cannot say what changed, or too much
    did.
    """
    everything = held.everything
    touched = snapshot.changed_since(held.snapshot)
    if touched is None:
        return first_page(snapshot, viewer, everything)
    floor = held.floor
    upsert: list[int] = []
    remove: list[int] = []
    for i in touched:
        if floor is not None and i < floor:
            continue
        if snapshot.shows(i, viewer, everything):
            upsert.append(i)
        elif held.snapshot.shows(i, viewer, everything):
            remove.append(i)
    if len(upsert) + len(remove) > PAGE_SIZE:
        return first_page(snapshot, viewer, everything)
    if floor is not None and not snapshot.has_below(viewer, everything, floor):
        floor = None  # nothing older is left: the panel holds its whole list
    now = Held(snapshot, floor, everything)
    unchanged = (held.floor is None) == (floor is None) and (
        held.snapshot.total(viewer, everything) == snapshot.total(viewer, everything)
    )
    if not upsert and not remove and unchanged:
        return None, now
    return _message(now, viewer, upsert, remove), now


def next_page(held: Held, viewer: str) -> tuple[dict[str, Any], Held]:
    """The next older page of the panel's list, the total, and whether more are older."""
    snapshot, everything = held.snapshot, held.everything
    ids = [] if held.floor is None else snapshot.newest(viewer, everything, held.floor, PAGE_SIZE)
    now = Held(snapshot, _floor(snapshot, viewer, everything, ids), everything)
    page = {
        "memories": [snapshot.render(i, keep=False) for i in ids],
        "total": snapshot.total(viewer, everything),
        "more": now.floor is not None,
    }
    return page, now
