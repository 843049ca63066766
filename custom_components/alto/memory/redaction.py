"""Forgetting erases: a forgotten memory's text leaves the journal, in place, authorized.

The journal is hash-chained and append-only, so a forgotten text cannot simply be deleted from
it: the chain would break, and nothing would tell an erasure from tampering. Alto rewrites the
lines that hold the text as *tombstones* that a later entry authorizes (see ``journal``):

1. `plan` (before the ``forget`` entry F is appended, under `Journal.lock`): the *forgotten
   texts* are the documents of the rows F deletes, less any text that a row kept after F still
   contains (that text was not forgotten: it is still a memory). Every line that holds one of
   them (its JSON-escaped bytes, as written), or that wrote or upserts a deleted row (its id; a
   ``reembed`` entry upserts rows it did not write), or whose input is a deleted source,
   becomes a tombstone: the same entry with the text-bearing fields that hold a forgotten text
   blanked: an input's ``text`` (and, for a deleted source, its call records' raw
   ``response``), a raw ``response``, a correction table's ``quote``, a row's ``document`` (a
   deleted row's vector too). The inputs of sources still pending are left as they are: a turn
   not yet interpreted is not a memory yet, and its words are still needed.
2. F carries ``redact``: ``[sequence, original hash, tombstone digest]`` per line, and is
   appended and fsync'd, then applied to the store (which erases its own copies: see ``store``).
3. `rewrite`: each line is overwritten at its offset with the tombstone's canonical JSON, padded
   with spaces before its LF (a tombstone is never longer: it only blanks), and fsync'd. Offsets
   and line numbers stay, so ``journal_tail`` reads it as before.

A crash between 2 and 3 leaves intact lines that F lists: they still verify (their own hash),
and `finish` (at the next open, and when the writer catches the store up) plans again and
writes every listed tombstone whose digest is the one F recorded. Rewriting is idempotent. A
later forget may redact a tombstone again (two memories of one entry, forgotten one after the
other): it lists the line with its new digest, and until it is rewritten the earlier form,
which the earlier forget authorized, still verifies.

Replay cannot re-derive a tombstone (its request and raw outputs are gone): it checks the
authorization, applies the recorded mutation without the erased rows, and re-derives every
intact entry; an intact entry that was derived while an erased row existed may no longer
re-derive without it (a selection or table that saw it), and is then applied as recorded and
counted ``unverified`` (see ``replay``).

What this does not reach: the filesystem's and the disk's own copies of old blocks (a
copy-on-write filesystem, a snapshot, an SSD's wear levelling): Alto erases the files'
contents, not the disk. A text so short that it is also part of an identifier stays as those
bytes (a warning names the entry).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .journal import REDACT, VERIFY_TAIL, Journal, authorizations, sound, tombstone_digest
from .journal_tail import last_lines
from .pending import Pending
from .records import KIND_EXPLICIT, KIND_SOURCE, MemoryState, Row, canonical_json

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Tombstone:
    """One line to rewrite: where it is, what it was, what it becomes."""

    sequence: int
    offset: int
    length: int  # bytes of the line, without its LF
    original: str  # the entry's hash
    entry: dict[str, Any]
    planned_from: str  # `tombstone_digest` of the line as read (intact, or an older tombstone)

    @property
    def digest(self) -> str:
        """What the forget entry authorizes."""
        return tombstone_digest(self.entry)

    def authorization(self) -> list[Any]:
        """The forget entry's ``redact`` item for this line."""
        return [self.sequence, self.original, self.digest]


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What one forget erases: texts, row ids and sources (see the module docstring)."""

    texts: frozenset[str]
    rows: frozenset[int]
    sources: frozenset[tuple[str, int]]
    pending: Container[tuple[str, int]]  # sources accepted, not yet interpreted: left alone

    @classmethod
    def of(cls, deleted: Sequence[Row], kept: Iterable[Row], pending: Pending) -> Forgotten:
        """The forgotten texts of `deleted` rows given the rows `kept` after the forget."""
        # Admission refuses NUL: one joined string answers "does a kept row contain it".
        kept_text = "\0".join(row.document for row in kept)
        texts = frozenset(
            row.document for row in deleted if row.document and row.document not in kept_text
        )
        sources = frozenset(
            row.source_key for row in deleted if row.kind in (KIND_SOURCE, KIND_EXPLICIT)
        )
        return cls(texts, frozenset(row.id for row in deleted), sources, pending)

    def holds(self, value: object) -> bool:
        """Whether a recorded string contains a forgotten text."""
        return isinstance(value, str) and any(text in value for text in self.texts)

    def pattern(self) -> re.Pattern[bytes]:
        """Bytes that a line to look at contains.

        A text or a source id, JSON-escaped, or a deleted row's id as a canonical row object
        holds it (a line that upserts the row but did not write it: ``reembed``).
        """
        needles = {_escaped(text) for text in self.texts}
        needles |= {_escaped(source_id) for source_id, _version in self.sources}
        found = [re.escape(n) for n in sorted(needles)]
        if self.rows:
            ids = b"|".join(str(row_id).encode("ascii") for row_id in sorted(self.rows))
            found.append(b'"id":(?:' + ids + b")[,}]")
        return re.compile(b"|".join(found) or b"(?!)")


def _escaped(text: str) -> bytes:
    """A string's bytes inside a canonical JSON string (escaping is per character)."""
    return canonical_json(text)[1:-1].encode("utf-8")


def redacted(entry: dict[str, Any], forgotten: Forgotten) -> dict[str, Any]:
    """The entry with every forgotten text blanked (a copy; equal to `entry` without one)."""
    out: dict[str, Any] = json.loads(canonical_json(entry))
    request = out.get("request")
    calls = out.get("calls")
    calls = calls if isinstance(calls, list) else []
    inputs = request.get("inputs") if isinstance(request, dict) else None
    for index, item in enumerate(inputs if isinstance(inputs, list) else []):
        key = (item.get("source_id"), item.get("source_version", 1))
        if key in forgotten.pending:
            continue
        if key in forgotten.sources or forgotten.holds(item.get("text")):
            item["text"] = ""
            if index < len(calls):  # every raw output of a forgotten source goes with it
                for name in ("statement", "classification"):
                    calls[index][name]["response"] = ""
    for call in calls:
        for name in ("statement", "classification"):
            if forgotten.holds(call[name]["response"]):
                call[name]["response"] = ""
        for row in call.get("table") or []:
            if forgotten.holds(row.get("quote")):
                row["quote"] = ""
    mutation = out.get("mutation")
    vectors = out.get("vectors")
    upsert = mutation.get("upsert") if isinstance(mutation, dict) else None
    for index, row in enumerate(upsert if isinstance(upsert, list) else []):
        if row.get("id") in forgotten.rows or forgotten.holds(row.get("document")):
            row["document"] = ""
            if isinstance(vectors, list) and index < len(vectors):
                vectors[index] = ""
    return out


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(sequence, offset, line without LF) of every complete line."""
    with path.open("rb") as file:
        offset = 0
        for sequence, line in enumerate(file, start=1):
            if not line.endswith(b"\n"):
                return  # a torn tail is no entry
            yield sequence, offset, line[:-1]
            offset += len(line)


def plan(path: Path, forgotten: Forgotten, wrote: Iterable[int], before: int) -> list[Tombstone]:
    """The tombstones of the journal's entries before `before` (see the module docstring).

    `wrote`: the sequences of the entries that wrote the deleted rows.
    """
    if not path.exists() or not (forgotten.texts or forgotten.rows):
        return []
    wrote = frozenset(wrote)
    pattern = forgotten.pattern()
    found: list[Tombstone] = []
    for sequence, offset, line in _lines(path):
        if sequence >= before:
            break
        if sequence not in wrote and pattern.search(line) is None:
            continue
        entry = json.loads(line)
        tomb = redacted(entry, forgotten)
        if tomb == entry:
            continue
        rest = _escaped_left(tomb, forgotten)
        if rest:
            _LOGGER.warning(
                "Journal entry %s keeps %s forgotten text(s) outside the fields that record"
                " texts (an identifier holds them)",
                sequence,
                rest,
            )
        found.append(
            Tombstone(sequence, offset, len(line), entry["hash"], tomb, tombstone_digest(entry))
        )
    # The lines that wrote a deleted row go last: while any other line is still to be written,
    # they hold the texts that `finish` plans it from again after a crash.
    return sorted(found, key=lambda tomb: (tomb.sequence in wrote, tomb.sequence))


def _escaped_left(entry: dict[str, Any], forgotten: Forgotten) -> int:
    data = canonical_json(entry).encode("utf-8")
    return sum(1 for text in forgotten.texts if _escaped(text) in data)


def rewrite(path: Path, tombstones: Sequence[Tombstone]) -> int:
    """Overwrite each listed line with its tombstone, in place, and fsync.

    Returns how many lines changed. A line that is not the original is left alone (an
    authorization never covers what it did not plan).
    """
    if not tombstones:
        return 0
    written = 0
    with path.open("r+b") as file:
        for tomb in tombstones:
            file.seek(tomb.offset)
            line = file.read(tomb.length + 1)
            if len(line) != tomb.length + 1 or not line.endswith(b"\n"):
                continue
            try:
                current = json.loads(line)
            except ValueError:
                continue
            if current == tomb.entry or tombstone_digest(current) != tomb.planned_from:
                continue  # written already, or not the line that was planned
            data = canonical_json(tomb.entry).encode("utf-8")
            if len(data) > tomb.length:
                continue  # never: a tombstone only blanks
            file.seek(tomb.offset)
            file.write(data + b" " * (tomb.length - len(data)))
            written += 1
        file.flush()
        os.fsync(file.fileno())
    return written


def finish(journal: Journal, state: MemoryState) -> int:
    """Write the tombstones a forget authorized but a crash left unwritten.

    Looks at the forget entries near the journal's end (see the module docstring); `state` is
    the store's, brought up to the journal. Returns how many lines were rewritten.
    """
    if journal.damage is not None or not journal.count:
        return 0
    forgets = [
        entry
        for entry in map(json.loads, last_lines(journal.path, VERIFY_TAIL))
        if entry.get("op") == "forget" and entry.get(REDACT)
    ]
    # A line two forgets redacted is to hold the later one's form.
    last = {item[0]: forget["sequence"] for forget in forgets for item in forget[REDACT]}
    found = dict(_pick(journal.path, set(last)))  # one read of the journal for all of them
    return sum(
        _finish_one(
            journal,
            state,
            forget,
            {s: found[s] for s, by in last.items() if by == forget["sequence"] and s in found},
        )
        for forget in forgets
    )


def _finish_one(
    journal: Journal, state: MemoryState, forget: dict[str, Any], mine: dict[int, dict[str, Any]]
) -> int:
    """One forget's unwritten tombstones; `mine` holds the entries now at its listed lines."""
    listed = {item[0]: (item[1], item[2]) for item in forget[REDACT] if item[0] in mine}
    todo = {
        sequence: entry
        for sequence, entry in mine.items()
        if tombstone_digest(entry) != listed[sequence][1]  # not yet in the authorized form
    }
    if not todo:
        return 0
    erased = frozenset(forget["mutation"]["delete"])
    deleted = [
        Row.from_parts(row["id"], row["document"], row, b"")
        for entry in todo.values()
        for row in entry["mutation"]["upsert"]
        if row["id"] in erased
    ]
    again = Forgotten.of(deleted, state.rows(), journal.pending)
    forgotten = Forgotten(again.texts, erased, again.sources, again.pending)
    wrote = {row.sequence for row in deleted}
    planned = [
        tomb
        for tomb in plan(journal.path, forgotten, wrote, forget["sequence"])
        if tomb.sequence in todo and listed[tomb.sequence] == (tomb.original, tomb.digest)
    ]
    if missing := sorted(set(todo) - {tomb.sequence for tomb in planned}):
        _LOGGER.warning(
            "Journal entries %s keep their text: the redaction that forget entry %s authorized"
            " cannot be planned again",
            missing,
            forget["sequence"],
        )
    return rewrite(journal.path, planned)


def _pick(path: Path, sequences: set[int]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The entries at `sequences`, reading no further than the last of them."""
    if not sequences:
        return
    end = max(sequences)
    for sequence, _offset, line in _lines(path):
        if sequence > end:
            return
        if sequence in sequences:
            yield sequence, json.loads(line)


def verify(path: Path) -> bool:
    """Whether every line of a journal is sound (tests and diagnostics)."""
    entries = [json.loads(line) for _s, _o, line in _lines(path)]
    authorized = authorizations(entries)
    return all(sound(entry, authorized) for entry in entries)
