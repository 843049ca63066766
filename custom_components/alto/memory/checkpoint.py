"""A checkpoint of the memory state that the journal verifies: setup without reading every record.

Loading a large store from Chroma means reading every record and quantizing every vector again;
reconciling means reading the journal. A checkpoint is the state itself after journal entry
``applied``: the rows (every field but the vector, which the state does not keep) and their int8
codes as ``matrix`` column blocks, so loading it is a few large reads.

The journal verifies it. The header records the hash of entry ``applied``; loading finds that
entry by reading the journal backwards from its end (``journal_tail``) and checks the entry's own
hash and that it is the recorded one, so a checkpoint of another journal or of a damaged one is
never used. A SHA-256 of the body catches a damaged file. The entries after ``applied`` up to the
sequence the store reached (the checkpoint may be older: it is written every so often, not on
every write) are applied to the image, each checked for its hash, its sequence and its link to
the one before, as ``replay.reconcile`` does. Any failed check: ``load`` returns None, and the
store reads Chroma. ``replay.replay`` never uses a checkpoint: it re-derives the whole journal.

The file holds quotes, so forgetting must reach it: the store replaces it whenever rows are
deleted (see ``store``). A save writes a temporary file, fsyncs it, renames it over the old one
and fsyncs the directory.

Layout: ``MAGIC``, the header (canonical JSON, one line), then the body: ids (int64 LE), every
code block (int8, ``[dim, rows]`` C order), the rows (canonical JSON: one list of field values
per row, in ``ROW_FIELDS`` order), all in position order; then, when the header's ``corpus``
is not null, the store's corpus image (``corpus.Image``: what the turn's block read of each
row's quote, so a start does not stem every row): bounds (int64 LE, rows + 1), term indexes and
counts (int32 LE, ``corpus.terms`` each), whether each row competes (uint8), the vocabulary
(canonical JSON list, ``corpus.vocabulary_bytes``). An image read by other word rules
(``corpus.lexicon`` is not ``corpus.LEXICON``) is not used; the state still is. A file of the
first version (``MAGIC_V1``, no image) still loads.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from .corpus import LEXICON, Image
from .journal import Authorizations, authorizations, entry_hash, mutation_of, sound
from .journal_tail import entries_from
from .matrix import BLOCK_ROWS, Snapshot
from .records import MemoryState, Row, canonical_json

MAGIC = b"ALTO-MEMORY-CHECKPOINT 2\n"
MAGIC_V1 = b"ALTO-MEMORY-CHECKPOINT 1\n"
ROW_FIELDS = tuple(f.name for f in fields(Row) if f.name != "vector")


@dataclass(frozen=True, slots=True)
class Restored:
    """A state brought from a checkpoint to the store's sequence."""

    state: MemoryState
    saved: int  # the checkpoint's own sequence
    deleted: bool  # an entry applied after it deleted rows (the file still holds their text)
    # The corpus image of the checkpoint's own rows (`corpus.Corpus.seed`), if usable.
    corpus: tuple[Snapshot, list[Row], Image] | None = None
    rewritten: tuple[int, ...] = ()  # ids written again by the entries after it


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The checkpoint file of one store and the journal that verifies it."""

    path: Path
    journal: Path

    def load(self, target: int) -> Restored | None:
        """The state after journal entry ``target``, or None.

        None when no verified checkpoint at or before ``target`` exists (missing, damaged, or
        not this journal's).
        """
        try:
            with self.path.open("rb") as file:
                header, blocks, rows, image = _read(file)
            if not 1 <= header["applied"] <= target:
                return None
            entries = entries_from(self.journal, header["applied"])
            if entries is None:
                return None
            return _replayed(header, blocks, rows, entries, image=image, target=target)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, state: MemoryState, corpus: Image | None = None) -> None:
        """Write the state after its last applied entry, which the journal must hold.

        Also the corpus image of its rows, if given; with no rows, remove the file instead.
        """
        snapshot = state.snapshot()
        if not len(state) or snapshot is None:
            self.discard()
            return
        if corpus is not None and len(corpus.competes) != len(snapshot):
            raise ValueError("the corpus image is not of the saved rows")
        entries = entries_from(self.journal, state.applied)
        first = next(entries, None) if entries is not None else None
        if first is None or first.get("sequence") != state.applied:
            raise ValueError(f"the journal has no entry {state.applied} to verify a checkpoint")
        if first.get("hash") != entry_hash(first):
            raise ValueError(f"journal entry {state.applied} is damaged")
        rows = [state.get(row_id) for row_id in snapshot.ids.tolist()]
        table = [[getattr(row, name) for name in ROW_FIELDS] for row in rows]
        parts: list[bytes | memoryview] = [snapshot.ids.astype("<i8").tobytes()]
        parts += [memoryview(block) for block in snapshot.exact_blocks()]
        parts.append(canonical_json(table).encode("utf-8"))
        rows_bytes = len(parts[-1])
        described: dict[str, Any] | None = None
        if corpus is not None:
            corpus.check()
            vocabulary = canonical_json(corpus.vocabulary).encode("utf-8")
            parts += [
                corpus.bounds.astype("<i8").tobytes(),
                corpus.terms.astype("<i4").tobytes(),
                corpus.counts.astype("<i4").tobytes(),
                corpus.competes.astype(np.uint8).tobytes(),
                vocabulary,
            ]
            described = {
                "lexicon": LEXICON,
                "terms": len(corpus.terms),
                "vocabulary_bytes": len(vocabulary),
            }
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part)
        header = {
            "applied": state.applied,
            "entry": first["hash"],
            "dim": snapshot.dim,
            "rows": len(snapshot),
            "block_rows": snapshot.block_rows,
            "fields": list(ROW_FIELDS),
            "rows_bytes": rows_bytes,
            "corpus": described,
            "sha256": digest.hexdigest(),
        }
        _write_atomic(self.path, [MAGIC, (canonical_json(header) + "\n").encode(), *parts])

    def discard(self) -> None:
        """Remove the file (before a save that replaces it: a failed save leaves no old text)."""
        self.path.unlink(missing_ok=True)


def _replayed(
    header: dict[str, Any],
    blocks: list[np.ndarray],
    rows: list[Row],
    entries: Iterator[dict[str, Any]],
    *,
    image: Image | None,
    target: int,
) -> Restored | None:
    """The checkpoint's state brought to ``target`` by the journal entries after it.

    The journal is read to the end: a tombstone's authorization comes after it (see
    ``journal``).
    """
    listed = list(entries)
    authorized = authorizations(listed)
    entries = iter(listed)
    first = next(entries)
    if first["sequence"] != header["applied"] or not _sound(first, header["entry"], authorized):
        return None
    state = MemoryState()
    state.restore(rows, blocks, header["applied"])
    base = state.snapshot()
    corpus = (base, rows, image) if image is not None and base is not None else None
    rewritten: list[int] = []
    deleted, prev = False, first["hash"]
    while state.applied < target:
        entry = next(entries)
        if (entry["sequence"], entry["prev"]) != (state.applied + 1, prev):
            return None
        if not _sound(entry, entry["hash"], authorized):
            return None
        mutation = mutation_of(entry)
        deleted |= bool(mutation.delete)
        rewritten += [row.id for row in mutation.upsert if state.get(row.id) is not None]
        state.apply(mutation)
        prev = entry["hash"]
    return Restored(state, header["applied"], deleted, corpus, tuple(rewritten))


def _sound(entry: dict[str, Any], expected: object, authorized: Authorizations) -> bool:
    return entry.get("hash") == expected and sound(entry, authorized)


def _read(
    file: io.BufferedReader,
) -> tuple[dict[str, Any], list[np.ndarray], list[Row], Image | None]:
    """Header, code blocks, rows and corpus image of a checkpoint; ValueError when anything is off.

    The corpus image is None when there is none, or when it was read by other word rules.
    """
    magic = file.read(len(MAGIC))
    if magic not in (MAGIC, MAGIC_V1):
        raise ValueError("not a checkpoint")
    header = json.loads(file.readline())
    if header["fields"] != list(ROW_FIELDS) or header["block_rows"] != BLOCK_ROWS:
        raise ValueError("checkpoint of another row or block layout")
    n, dim = int(header["rows"]), int(header["dim"])
    digest = hashlib.sha256()
    ids = _read_array(file, digest, np.dtype("<i8"), (n,))
    blocks = [
        _read_array(file, digest, np.dtype(np.int8), (dim, min(BLOCK_ROWS, n - start)))
        for start in range(0, n, BLOCK_ROWS)
    ]
    table = file.read(int(header["rows_bytes"]))
    digest.update(table)
    described = header.get("corpus") if magic == MAGIC else None
    image = None
    if described is not None:
        count = int(described["terms"])
        bounds = _read_array(file, digest, np.dtype("<i8"), (n + 1,))
        terms = _read_array(file, digest, np.dtype("<i4"), (count,))
        counts = _read_array(file, digest, np.dtype("<i4"), (count,))
        competes = _read_array(file, digest, np.dtype(np.uint8), (n,))
        vocabulary = file.read(int(described["vocabulary_bytes"]))
        digest.update(vocabulary)
        image = Image(json.loads(vocabulary), bounds, terms, counts, competes.astype(bool))
    if digest.hexdigest() != header["sha256"] or file.read(1):
        raise ValueError("checkpoint body does not match its digest")
    # Positional: ROW_FIELDS is Row's field order without the trailing vector (checked above).
    rows = [Row(*values) for values in json.loads(table)]
    if [row.id for row in rows] != ids.tolist():
        raise ValueError("checkpoint rows do not match their ids")
    if image is not None and described is not None:
        image.check()
        if described["lexicon"] != LEXICON:
            image = None  # read by other word rules: the store reads the rows again
    return header, blocks, rows, image


def _read_array(
    file: io.BufferedReader, digest: Any, dtype: np.dtype, shape: tuple[int, ...]
) -> np.ndarray:
    array = np.empty(shape, dtype=dtype)
    view = memoryview(array).cast("B")
    if file.readinto(view) != len(view):
        raise ValueError("checkpoint is truncated")
    digest.update(view)
    return array


def _write_atomic(path: Path, parts: list[bytes | memoryview]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as file:
        for part in parts:
            file.write(part)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    descriptor = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
