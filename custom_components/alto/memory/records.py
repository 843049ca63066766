"""Rows, mutations and the in-memory state shared by the store, intake and replay.

A `Row` is one memory: an exact quote (`document`) with its provenance. Kinds:

- ``"source"``: a retained source text (modes 1 and 2), the whole admitted input;
- ``"explicit"``: an authored memory (`alto.remember`), protected from corrections;
- `Kind` 1 participant mention, 2 task mention, 3 assertion, 4 correction: inferred (mode 2)
  quotes. `Kind` is an `IntEnum`: journal JSON, Chroma metadata and checkpoints hold the bare
  integers, and rows read back from them hold plain ints (equal to the members).

`owner` is the memory's owner (an HA user id, or ``"household"``), `scope` its visibility
(``"household"`` or the owner's user id), `actor` who supplied the source (user id or
``"unknown"``). A viewer sees household rows and rows scoped to itself, never another user's.
`offset`/`length` are UTF-8 byte positions of the quote in its source (`source_id`,
`source_version`). Object ids are int64 (`object_id`); Chroma stores them as decimal strings.
`status` is ``"current"`` or ``"superseded"``; a superseded assertion stays stored as the
correction's dependency but leaves recall. `sequence` is the journal sequence of the mutation
that wrote the row; `target` the id a correction superseded (0 for none). Inferred rows keep the
model and processor digests that produced them. `vector` is the float32 little-endian embedding:
float32 is what Chroma stores, so quantizing it gives identical int8 codes before and after a
restart and in replay. Rows in a mutation carry it; rows held by a `MemoryState` do not (b"").
`said_at` is when the source was said or written (Unix seconds, from the intake input; 0: not
known, as for rows written before it was recorded), what tells a turn which memory is newer.

A `Mutation` is the canonical change of one journal entry: rows to upsert, ids to supersede,
ids to delete. Applying it twice gives the same state. `MemoryState` is the exact in-memory image
(rows plus int8 codes) that the store mirrors from Chroma (or a checkpoint) and replay rebuilds
from the journal, so both select with the same codes.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from enum import IntEnum
from typing import Any

import numpy as np

from .matrix import CodeMatrix, Snapshot
from .selection import quantize

KIND_SOURCE = "source"
KIND_EXPLICIT = "explicit"


class Kind(IntEnum):
    """The kind of an inferred row (what call 2 of the processor answers with)."""

    PARTICIPANT = 1  # a person named in a statement
    TASK = 2  # a task or chore named in a statement
    ASSERTION = 3  # a statement kept as said
    CORRECTION = 4  # a statement that supersedes an earlier assertion (`Row.target`)


# The members under their older names (the panel imports `KIND_CORRECTION`).
KIND_PARTICIPANT = Kind.PARTICIPANT
KIND_TASK = Kind.TASK
KIND_ASSERTION = Kind.ASSERTION
KIND_CORRECTION = Kind.CORRECTION
MENTIONS = (Kind.PARTICIPANT, Kind.TASK)
INFERRED_ASSERTIONS = (Kind.ASSERTION, Kind.CORRECTION)

# A cache keyed by a row's text holds every text of a full store (`max_memories`, 100,000 by
# default): the Surfacer reads all of them again at each change of the store.
TEXTS_CACHED = 1 << 17
QUANTIZED_ROWS = 1024  # rows quantized at once (`_quantized`)
HOUSEHOLD = "household"
UNKNOWN_ACTOR = "unknown"
CURRENT = "current"
SUPERSEDED = "superseded"


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, raw UTF-8: the one serialization hashed and compared."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# A mutation writes at most 64 inputs x (1 source + 512 items) rows, below 2**16.
_ROWS_PER_SEQUENCE = 1 << 16


def object_id(sequence: int, index: int) -> int:
    """Stable int64 object id: admission order (journal sequence, then row index within it).

    Distinct events with equal text stay distinct, replay re-derives the same ids, and the
    selection tie-break (object id ascending) prefers the older memory.
    """
    if not 0 <= index < _ROWS_PER_SEQUENCE:
        raise ValueError("row index out of range")
    return sequence * _ROWS_PER_SEQUENCE + index


def vector_bytes(values: Sequence[float]) -> bytes:
    """Float32 little-endian bytes of an embedding."""
    return np.asarray(values, dtype="<f4").tobytes()


def vector_array(data: bytes) -> np.ndarray:
    """The float32 embedding of `vector_bytes` output."""
    return np.frombuffer(data, dtype="<f4")


@dataclass(frozen=True, slots=True)
class Row:
    """One stored memory; see the module docstring for every field."""

    id: int
    document: str
    kind: int | str
    owner: str
    scope: str
    actor: str
    source_id: str
    source_version: int
    offset: int
    length: int
    status: str = CURRENT
    sequence: int = 0
    target: int = 0
    model_digest: str = ""
    processor_digest: str = ""
    said_at: int = 0
    vector: bytes = b""

    @property
    def source_key(self) -> tuple[str, int]:
        """The source group of the row."""
        return (self.source_id, self.source_version)

    def metadata(self) -> dict[str, str | int]:
        """Chroma metadata: every field but id, document and vector (never None)."""
        skip = {"id", "document", "vector"}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}

    def to_json(self) -> dict[str, Any]:
        """Canonical journal form, without the vector (journaled beside the mutation)."""
        data = asdict(self)
        del data["vector"]
        if not self.said_at:  # as journals written before the field recorded it, byte for byte
            del data["said_at"]
        return data

    @classmethod
    def from_parts(cls, row_id: int, document: str, metadata: dict[str, Any], vector: bytes) -> Row:
        """A row from stored parts (Chroma record or journal JSON)."""
        names = {f.name for f in fields(cls)} - {"id", "document", "vector"}
        values = {name: metadata[name] for name in names if name in metadata}
        return cls(id=row_id, document=document, vector=vector, **values)


def visible_to(row: Row, viewer: str | None) -> bool:
    """Household rows are visible to everyone, private rows only to their own scope's user."""
    return row.scope == HOUSEHOLD or (viewer is not None and row.scope == viewer)


@dataclass(frozen=True, slots=True)
class Mutation:
    """The canonical change one journal entry makes."""

    sequence: int
    upsert: tuple[Row, ...] = ()
    supersede: tuple[int, ...] = ()
    delete: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Canonical JSON without vectors (see `vectors_json`)."""
        return {
            "sequence": self.sequence,
            "upsert": [row.to_json() for row in self.upsert],
            "supersede": list(self.supersede),
            "delete": list(self.delete),
        }

    def vectors_json(self) -> list[str]:
        """Base64 float32 vectors aligned with `upsert`."""
        return [base64.b64encode(row.vector).decode("ascii") for row in self.upsert]

    @classmethod
    def from_json(cls, data: dict[str, Any], vectors: Sequence[str]) -> Mutation:
        """Inverse of `to_json` plus `vectors_json`."""
        if len(vectors) != len(data["upsert"]):
            raise ValueError("mutation vectors do not align with its rows")
        rows = tuple(
            Row.from_parts(item["id"], item["document"], item, base64.b64decode(vector))
            for item, vector in zip(data["upsert"], vectors, strict=True)
        )
        return cls(data["sequence"], rows, tuple(data["supersede"]), tuple(data["delete"]))


@dataclass(frozen=True, slots=True)
class TableEntry:
    """One correction-table entry: its 1-based index and the exact assertion it names."""

    index: int
    row_id: int
    source_id: str
    source_version: int
    actor: str
    quote: str

    def to_json(self) -> dict[str, Any]:
        """Canonical journal form."""
        return asdict(self)


# Every change of any state takes the next number: a reader keeps what it derived from the rows
# by `MemoryState.version`, and no two states, or two versions of one, share a number.
_VERSIONS = itertools.count(1)


class MemoryState:
    """Rows by id plus their int8 codes: the exact image that selection runs against.

    Rows are kept without their float32 vectors: a vector is quantized once when its row
    arrives, and only its codes stay, in a `matrix.CodeMatrix` (a row's position is kept by id).
    Each position's tag encodes the row's scope and status, so a scoped selection is a mask over
    a snapshot (`visibility`). Superseding changes the status and the tag. Deleting, or
    re-upserting an id with other codes, compacts the codes into a new matrix: both are rare
    (forget, repair), and the surviving rows keep their codes without being quantized again.
    """

    def __init__(self) -> None:
        """An empty state."""
        self._rows: dict[int, Row] = {}
        self._matrix: CodeMatrix | None = None
        self._position: dict[int, int] = {}
        # Scope -> tag index. Indices are never reused, so a mask built now reads old snapshots.
        self._scopes: dict[str, int] = {}
        # Object-id order, source groups and explicit memories by text, rebuilt lazily after a
        # change.
        self._ordered: list[Row] | None = None
        self._groups: dict[tuple[str, int], list[Row]] | None = None
        self._explicit: dict[tuple[str, str, str], Row] | None = None
        # Rows by (scope, status), counted once after a change: counts are read often.
        self._tally: dict[tuple[str, str], int] | None = None
        # By source: its source row, and its inferred rows that a correction replaced (`retired`).
        self._source_row: dict[tuple[str, int], int] = {}
        self._corrected: dict[tuple[str, int], set[int]] = {}
        self.applied = 0
        self.version = next(_VERSIONS)  # changes with every change of the rows

    def _reset(self, applied: int) -> None:
        self._rows, self._matrix, self._position = {}, None, {}
        self._source_row, self._corrected = {}, {}
        self._ordered = self._groups = self._explicit = self._tally = None
        self.applied = applied
        self.version = next(_VERSIONS)

    def load(self, rows: Iterable[Row], applied: int) -> None:
        """Replace the state with stored rows and their vectors (store open)."""
        rows = list(rows)
        self._reset(applied)
        if rows:
            self._add([replace(row, vector=b"") for row in rows], _quantized(rows))

    def restore(self, rows: Sequence[Row], blocks: Sequence[np.ndarray], applied: int) -> None:
        """Replace the state with rows without vectors and their codes (a checkpoint).

        The codes come as `matrix` column blocks, rows in position order.
        """
        self._reset(applied)
        if rows:
            ids = np.array([row.id for row in rows], dtype=np.int64)
            self._matrix = CodeMatrix.from_blocks(blocks, ids, self._tags(rows))
            self._index(rows, 0)

    def _tags(self, rows: Sequence[Row]) -> np.ndarray:
        tags = []
        for row in rows:
            scope = self._scopes.setdefault(row.scope, len(self._scopes))
            tags.append(2 * scope + (row.status == CURRENT))
        return np.array(tags, dtype=np.int32)

    def _index(self, rows: Sequence[Row], first: int) -> None:
        for offset, row in enumerate(rows):
            self._rows[row.id] = row
            self._position[row.id] = first + offset
            self._note(row)

    def _note(self, row: Row) -> None:
        """Keep `retired`'s books for a row added or changed."""
        if row.kind == KIND_SOURCE:
            self._source_row[row.source_key] = row.id
        elif row.status == SUPERSEDED and row.kind in INFERRED_ASSERTIONS:
            self._corrected.setdefault(row.source_key, set()).add(row.id)
        elif (replaced := self._corrected.get(row.source_key)) is not None:
            replaced.discard(row.id)

    def _unnote(self, row: Row) -> None:
        """Keep `retired`'s books for a row deleted."""
        if self._source_row.get(row.source_key) == row.id:
            del self._source_row[row.source_key]
        self._corrected.get(row.source_key, set()).discard(row.id)

    def retired(self) -> list[int]:
        """Positions of the source rows of turns a correction replaced a statement of.

        Mode 2 stores a turn's text as its source row beside a row per statement; a correction
        supersedes the statement's row, but the source row still says what it replaced. Step 1
        of the turn's block (`recall`) leaves these out; the turn's other statements still
        compete through their own rows. Mode 1 stores no statement rows: nothing is retired.
        """
        return [
            self._position[source]
            for key, replaced in self._corrected.items()
            if replaced and (source := self._source_row.get(key)) in self._position
        ]

    def _add(self, rows: Sequence[Row], codes: np.ndarray) -> None:
        if self._matrix is None or not len(self._matrix):  # the first rows set the dimension
            self._matrix = CodeMatrix(codes.shape[1])
        first = len(self._matrix)
        ids = np.array([row.id for row in rows], dtype=np.int64)
        self._matrix.append(codes, ids, self._tags(rows))
        self._index(rows, first)

    def apply(self, mutation: Mutation) -> None:
        """Apply a mutation; idempotent."""
        upsert = mutation.upsert
        codes = _quantized(upsert) if upsert else np.zeros((0, self.dim or 0), dtype=np.int8)
        if self.dim is not None and codes.shape[1] != self.dim:
            self._resize(upsert, codes)
        else:
            self._change(mutation, codes)
        self._ordered = self._groups = self._explicit = self._tally = None
        self.applied = max(self.applied, mutation.sequence)
        self.version = next(_VERSIONS)

    def _change(self, mutation: Mutation, codes: np.ndarray) -> None:
        """Upsert, supersede and delete rows whose codes are of the held size."""
        upsert = mutation.upsert
        known = [i for i, row in enumerate(upsert) if row.id in self._rows]
        fresh = [i for i, row in enumerate(upsert) if row.id not in self._rows]
        changed = self._changed(upsert, known, codes)
        for row in upsert:
            self._rows[row.id] = replace(row, vector=b"")
            self._note(row)
        for row_id in mutation.supersede:
            if row_id in self._rows:
                self._rows[row_id] = replace(self._rows[row_id], status=SUPERSEDED)
                self._note(self._rows[row_id])
        deleted = [row_id for row_id in dict.fromkeys(mutation.delete) if row_id in self._rows]
        for row_id in deleted:
            self._unnote(self._rows.pop(row_id))
        if deleted or changed:
            self._compact(changed)
        else:
            self._retag([upsert[i].id for i in known] + list(mutation.supersede))
        fresh = [i for i in fresh if upsert[i].id in self._rows]
        if fresh:
            self._add([self._rows[upsert[i].id] for i in fresh], codes[fresh])

    def _resize(self, upsert: Sequence[Row], codes: np.ndarray) -> None:
        """Every row's codes of another size: a new matrix, in `upsert`'s order.

        Only a re-embedding of every stored row with a model of another size does this
        (`intake.reembed`); anything less would leave rows whose codes no query can score.
        """
        if len(upsert) != len(self._rows) or any(row.id not in self._rows for row in upsert):
            raise ValueError("codes of another size must replace every stored row's")
        self._rows, self._matrix, self._position = {}, None, {}
        self._source_row, self._corrected = {}, {}
        self._add([replace(row, vector=b"") for row in upsert], codes)

    def _changed(
        self, upsert: Sequence[Row], known: list[int], codes: np.ndarray
    ) -> dict[int, np.ndarray]:
        """Codes of re-upserted rows that differ from the codes held for them, by id."""
        if not known:
            return {}
        held = self.codes([self._rows[upsert[i].id] for i in known])
        return {
            upsert[i].id: codes[i]
            for i, old in zip(known, held, strict=True)
            if not np.array_equal(old, codes[i])
        }

    def _retag(self, ids: Sequence[int]) -> None:
        rows = [self._rows[i] for i in ids if i in self._position]
        if rows and self._matrix is not None:
            positions = np.array([self._position[row.id] for row in rows], dtype=np.int64)
            self._matrix.retag(positions, self._tags(rows))

    def _compact(self, changed: dict[int, np.ndarray]) -> None:
        """A new matrix of the stored rows that have a position, in position order."""
        if self._matrix is None:
            return
        snapshot = self._matrix.snapshot()
        kept = [i for i in snapshot.ids.tolist() if i in self._rows]
        codes = snapshot.take(np.array([self._position[i] for i in kept], dtype=np.int64))
        for index, row_id in enumerate(kept):
            if row_id in changed:
                codes[index] = changed[row_id]
        rows = [self._rows[i] for i in kept]
        # Empty but not None: a backend given its snapshot lets go of the deleted rows.
        self._matrix, self._position = CodeMatrix(snapshot.dim), {}
        if rows:
            self._add(rows, codes)

    def get(self, row_id: int) -> Row | None:
        """The row with this id, if stored."""
        return self._rows.get(row_id)

    def rows_of(self, ids: Iterable[int]) -> list[Row]:
        """The stored rows with these ids, in their order (KeyError for an id not stored)."""
        return [self._rows[row_id] for row_id in ids]

    def rows(self) -> list[Row]:
        """Every stored row, current or superseded, in object-id order."""
        if self._ordered is None:
            self._ordered = [self._rows[key] for key in sorted(self._rows)]
        return list(self._ordered)

    def visible(self, viewer: str | None, *, current_only: bool = True) -> list[Row]:
        """Rows the viewer may see (current ones only by default), in object-id order."""
        return [
            row
            for row in self.rows()
            if visible_to(row, viewer) and (row.status == CURRENT or not current_only)
        ]

    def _tallied(self) -> dict[tuple[str, str], int]:
        if self._tally is None:
            self._tally = {}
            for row in self._rows.values():
                key = (row.scope, row.status)
                self._tally[key] = self._tally.get(key, 0) + 1
        return self._tally

    def count(self, scopes: Iterable[str] | None = None, *, current_only: bool = True) -> int:
        """How many rows are in `scopes` (None: every scope), current ones only by default."""
        wanted = None if scopes is None else set(scopes)
        return sum(
            number
            for (scope, status), number in self._tallied().items()
            if (wanted is None or scope in wanted) and (status == CURRENT or not current_only)
        )

    def scope_counts(self) -> dict[str, int]:
        """How many rows, current or superseded, each scope holding any has (from the tally)."""
        counts: dict[str, int] = {}
        for (scope, _status), number in self._tallied().items():
            counts[scope] = counts.get(scope, 0) + number
        return counts

    def _sources(self) -> dict[tuple[str, int], list[Row]]:
        if self._groups is None:
            self._groups = {}
            for row in self.rows():
                self._groups.setdefault(row.source_key, []).append(row)
        return self._groups

    def has_source(self, source_key: tuple[str, int]) -> bool:
        """Whether any row was admitted from this source id and version."""
        return source_key in self._sources()

    def source_rows(self, source_key: tuple[str, int]) -> list[Row]:
        """Every row of one source, in object-id order."""
        return list(self._sources().get(source_key, ()))

    def explicit(self, document: str, owner: str, scope: str) -> Row | None:
        """The current explicit memory with exactly this text, owner and scope, or None.

        The oldest, if several were kept before remembering deduplicated.
        """
        if self._explicit is None:
            self._explicit = {}
            for row in self.rows():
                if row.kind == KIND_EXPLICIT and row.status == CURRENT:
                    self._explicit.setdefault((row.document, row.owner, row.scope), row)
        return self._explicit.get((document, owner, scope))

    def codes(self, rows: Sequence[Row]) -> np.ndarray:
        """The int8 code matrix of `rows`, in their order."""
        if self._matrix is None or not rows:
            return np.zeros((0, self.dim or 0), dtype=np.int8)
        positions = np.array([self._position[row.id] for row in rows], dtype=np.int64)
        return self._matrix.snapshot().take(positions)

    def snapshot(self) -> Snapshot | None:
        """The codes as they are now (None before any row arrived): what selection reads."""
        return self._matrix.snapshot() if self._matrix is not None else None

    def visibility(
        self, viewer: str | None, *, current_only: bool = True
    ) -> Callable[[Snapshot], np.ndarray]:
        """The rows of a snapshot `viewer` may see (as `visible`), as a function of the snapshot.

        A mask is computed from the tags of exactly the rows a selection scores.
        """
        scopes = [HOUSEHOLD] if viewer is None else [HOUSEHOLD, viewer]
        indices = [self._scopes[scope] for scope in scopes if scope in self._scopes]
        tags = [2 * i + 1 for i in indices] + ([] if current_only else [2 * i for i in indices])
        wanted = np.array(tags, dtype=np.int32)
        return lambda snapshot: np.isin(snapshot.tags, wanted)

    @property
    def dim(self) -> int | None:
        """Embedding dimension of the stored rows, None while there are none."""
        return self._matrix.dim if self._matrix is not None and len(self._matrix) else None

    def __len__(self) -> int:
        """The number of rows, current or not."""
        return len(self._rows)


def _quantized(rows: Sequence[Row]) -> np.ndarray:
    """The rows' codes, `QUANTIZED_ROWS` at a time.

    `quantize` sums each row exactly in Python floats (about 32 bytes a component): a whole
    store at once (a start from Chroma, a re-embedding of another size) would hold them all.
    Each row's codes are its own, so a part at a time gives the same codes.
    """
    return np.concatenate(
        [
            quantize(np.stack([vector_array(row.vector) for row in rows[i : i + QUANTIZED_ROWS]]))
            for i in range(0, len(rows), QUANTIZED_ROWS)
        ]
    )
