"""The write-ahead journal: append-only JSON Lines, hash-chained, fsync'd before the store changes.

Every line is the canonical JSON (`records.canonical_json`) of one entry::

    {"sequence": n, "prev": <hash of entry n-1, or 64 zeros for n = 1>, "hash": <own hash>,
     "op": "intake" | "remember" | "forget" | "accept" | "refuse" | "reembed", ...,
     "pending_from": <oldest pending accept entry, only while one is pending>}

`hash` is the SHA-256 hex of the canonical JSON of the entry without its `hash` key. Sequence n
is the 1-based line number and the `sequence` of the entry's mutation. What each op records
(request, raw model outputs, digests, correction tables, selections, vectors, the canonical
mutation) is written by `intake` and checked by `replay`; `pending` says how ``accept`` and
``refuse`` entries hold and resolve a turn's source between its reply and its interpretation.

`Journal.append` writes one line with a single write, flushes and fsyncs it (and the directory
when it creates the file) before returning, so a store write that follows is always covered.
A crash mid-write leaves at most a final line without its LF: it was never acknowledged, no store
write followed it, and opening the journal cuts it off. Nothing else is ever rewritten.

Opening verifies the chain's tail: the last `VERIFY_TAIL` entries (every entry when the file is
under `VERIFY_ALL_BYTES`) and every entry back to the oldest pending source must parse, carry
their own hash, link to the entry before and number on by one. Opening reads only that tail, so
it costs the same at 100 entries and at 100,000. A journal that fails is *damaged*: `damage`
names the first bad entry, nothing is ever appended to it (`append` raises `JournalDamaged`:
extending a broken chain would hide the break), and the memory organ keeps serving recall from
its store and raises a repair issue. `replay` verifies the whole chain.

Forgetting erases (see ``redaction``): each line that holds a forgotten text is rewritten in
place as a *tombstone*: the same entry with every forgotten text blanked (``""``, a forgotten
row's vector too), padded with spaces to its old length. A tombstone keeps the original `hash`,
which no longer matches its content (so a reader tells it from an intact entry) while the next
entry's ``prev`` still links to it. It is sound only as a later, intact ``forget`` entry
authorizes it: that entry's ``redact`` lists ``[sequence, original hash, SHA-256 of the
tombstone's canonical JSON]`` for every line it rewrites, and it is fsync'd before any line is.
`authorizations` and `sound` are the one check every reader runs (open, `replay`,
`checkpoint`); a tombstone nobody authorized, or one that differs from what was authorized, is
damage (``entry_hash``). Apart from those authorized lines, nothing is ever rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .journal_tail import last_lines, lines_from
from .pending import Pending, PendingError
from .records import Mutation, canonical_json

GENESIS = "0" * 64
VERIFY_TAIL = 64  # entries verified at every open
VERIFY_ALL_BYTES = 4 << 20  # a journal this small is verified whole at open


def entry_hash(entry: dict[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of `entry` without its `hash` key."""
    body = {key: value for key, value in entry.items() if key != "hash"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


REDACT = "redact"  # a forget entry's list of the tombstones it authorizes
REEMBED = "reembed"  # the op that gives stored rows new vectors

type Authorizations = dict[int, set[tuple[str, str]]]


def tombstone_digest(entry: dict[str, Any]) -> str:
    """SHA-256 hex of a tombstone's canonical JSON (`hash` included): what a forget authorizes."""
    return hashlib.sha256(canonical_json(entry).encode("utf-8")).hexdigest()


def authorizations(entries: Iterable[dict[str, Any]]) -> Authorizations:
    """Sequence -> every (original hash, tombstone digest) authorized for that line.

    Only an intact forget among `entries` authorizes (a forget whose own hash fails authorizes
    nothing). A line that two forgets redacted has two authorized forms: the later one's, and
    the earlier one's that a crash before the later rewrite leaves (``redaction.finish`` then
    writes the later).
    """
    found: Authorizations = {}
    for entry in entries:
        listed = entry.get(REDACT)
        if not listed or entry.get("op") != "forget" or entry.get("hash") != entry_hash(entry):
            continue
        for item in listed:
            match item:
                case [int(sequence), str(original), str(digest)] if sequence < entry["sequence"]:
                    found.setdefault(sequence, set()).add((original, digest))
    return found


def sound(entry: dict[str, Any], authorized: Authorizations) -> bool:
    """Whether an entry is what the chain says it is: an intact entry carries its own hash.

    A tombstone is exactly one authorized for its sequence and original hash.
    """
    if entry.get("hash") == entry_hash(entry):
        return True
    forms = authorized.get(entry.get("sequence"))  # type: ignore[arg-type]
    return forms is not None and (entry.get("hash"), tombstone_digest(entry)) in forms


def is_tombstone(entry: dict[str, Any]) -> bool:
    """Whether a sound entry is a tombstone (its content no longer hashes to its `hash`)."""
    return entry.get("hash") != entry_hash(entry)


def mutation_of(entry: dict[str, Any]) -> Mutation:
    """The mutation an entry applies to a store.

    A tombstone's forgotten rows (their vector erased: ``""``) are not upserted; the forget that
    authorized it deletes them anyway.
    """
    data, vectors = entry["mutation"], entry["vectors"]
    keep = [index for index, vector in enumerate(vectors) if vector]
    if len(keep) < len(vectors):
        data = {**data, "upsert": [data["upsert"][index] for index in keep]}
        vectors = [vectors[index] for index in keep]
    return Mutation.from_json(data, vectors)


def read_lines(path: Path) -> list[bytes]:
    """The complete (LF-terminated) lines of a journal, without their LF; [] if absent."""
    if not path.exists():
        return []
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]


class JournalDamaged(ValueError):
    """The journal's chain is broken: nothing may be appended to it."""


@dataclass(frozen=True, slots=True)
class Damage:
    """The first damaged entry found (its sequence, 1-based) and the check it failed.

    ``malformed_entry``, ``entry_hash``, ``chain`` or ``sequence`` (replay's names).
    """

    sequence: int
    reason: str


class Journal:
    """One journal file, opened for appending by a single writer."""

    def __init__(self, path: Path | str) -> None:
        """Open the journal at `path`, cutting a torn last line."""
        self.path = Path(path)
        self._cut_torn_tail()
        self._count = 0
        self._last = GENESIS
        self.damage: Damage | None = None
        self.pending = Pending()  # accepted sources not yet interpreted (see `pending`)
        # Held by a writer around an append and the store write that follows it (see
        # `intake`): entries reach the store in sequence order whichever thread appends.
        self.lock = threading.Lock()
        self._open()

    def _cut_torn_tail(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("r+b") as file:
            size = file.seek(0, os.SEEK_END)
            complete = _end_of_last_line(file, size)
            if complete != size:
                file.truncate(complete)
                file.flush()
                os.fsync(file.fileno())

    def _open(self) -> None:
        """Verify the tail (see the module docstring) and rebuild the pending sources."""
        if not self.path.exists() or not self.path.stat().st_size:
            return
        whole = self.path.stat().st_size <= VERIFY_ALL_BYTES
        lines = last_lines(self.path, 1 << 62 if whole else VERIFY_TAIL)
        entries = self._verified(lines, first=1 if whole else None)
        if entries is None:
            return
        self._count, self._last = entries[-1]["sequence"], entries[-1]["hash"]
        oldest = entries[-1].get("pending_from", 0)
        if not oldest:
            return
        if oldest < entries[0]["sequence"]:  # pending sources older than the verified tail
            with self.path.open("rb") as file:
                older = lines_from(file, oldest)
            if (entries := self._verified(older or [], first=oldest)) is None:
                return
        pending = Pending()
        try:
            for entry in entries[oldest - entries[0]["sequence"] :]:
                pending = pending.after(entry, tail=True)
        except (PendingError, KeyError, TypeError, ValueError):
            pending = Pending()
        if pending.low_water != oldest:  # the set the entries build is not the one recorded
            self.damage = Damage(self._count, "pending")
            return
        self.pending = pending

    def _verified(self, lines: list[bytes], *, first: int | None) -> list[dict[str, Any]] | None:
        """The entries of consecutive `lines`, each checked; None at the first failure.

        Each entry's hash, link and sequence are checked (from `first`, or from whatever the
        first line says when None); a failure sets `damage`. An empty list of lines is damage
        too: the entries asked for are missing.
        """
        entries: list[dict[str, Any]] = []
        prev: str | None = None
        expected = first if first is not None else _first_sequence(lines)
        parsed = [parse_line(line) for line in lines]
        # A tombstone's authorization comes later in the chain: the lines after it hold it.
        authorized = authorizations(entry for entry in parsed if entry is not None)
        for entry in parsed:
            at = expected or 0  # 0: no line of the tail says which entry it is
            if entry is None or not {"sequence", "prev", "hash"} <= entry.keys():
                self.damage = Damage(at, "malformed_entry")
                return None
            sequence, link, own = entry["sequence"], entry["prev"], entry["hash"]
            if expected is not None and sequence != expected:
                self.damage = Damage(at, "sequence")
                return None
            if not sound(entry, authorized):
                self.damage = Damage(sequence, "entry_hash")
                return None
            if prev is not None and link != prev:
                self.damage = Damage(sequence, "chain")
                return None
            entries.append(entry)
            prev, expected = own, sequence + 1
        if not entries:
            self.damage = Damage(first or 1, "malformed_entry")
            return None
        return entries

    @property
    def count(self) -> int:
        """Entries written so far."""
        return self._count

    @property
    def next_sequence(self) -> int:
        """The sequence the next appended entry gets."""
        return self._count + 1

    def append(self, body: dict[str, Any]) -> dict[str, Any]:
        """Chain, hash, write and fsync one entry; returns it as written.

        Raises `JournalDamaged` on a damaged journal, and `pending.PendingError` (a ValueError)
        for an entry that resolves a source not pending, both before writing anything.
        """
        if self.damage is not None:
            raise JournalDamaged(
                f"journal {self.path} is damaged at entry {self.damage.sequence}"
                f" ({self.damage.reason}); nothing is appended to it"
            )
        entry = {"sequence": self.next_sequence, "prev": self._last, **body}
        pending = self.pending.after(entry)
        if pending.low_water:
            entry["pending_from"] = pending.low_water
        entry["hash"] = entry_hash(entry)
        line = (canonical_json(entry) + "\n").encode("utf-8")
        created = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as file:
            end = file.tell()
            try:
                file.write(line)
                file.flush()
                os.fsync(file.fileno())
            except BaseException:
                # Never leave part of a line that a later append would continue.
                file.truncate(end)
                raise
        if created:
            _fsync_dir(self.path.parent)
        self._count += 1
        self._last = entry["hash"]
        self.pending = pending
        return entry

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every written entry, parsed, in order."""
        for line in read_lines(self.path):
            yield json.loads(line)


def parse_line(line: bytes) -> dict[str, Any] | None:
    """One journal line's entry, or None when it is not a JSON object."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def _first_sequence(lines: list[bytes]) -> int | None:
    """The sequence of the first of consecutive lines, from the first one that parses."""
    for index, line in enumerate(lines):
        try:
            sequence = json.loads(line)["sequence"]
        except (ValueError, KeyError, TypeError):
            continue
        return sequence - index if isinstance(sequence, int) else None
    return None


def _end_of_last_line(file: BinaryIO, size: int) -> int:
    """The offset just past the last LF of a file of `size` bytes, read backwards."""
    file.seek(max(0, size - 1))
    if file.read(1) == b"\n":
        return size
    position = size
    while position:
        step = min(1 << 20, position)
        position -= step
        file.seek(position)
        found = file.read(step).rfind(b"\n")
        if found >= 0:
            return position + found + 1
    return 0


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
