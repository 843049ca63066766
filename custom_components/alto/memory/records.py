"""Rows, mutations and the in-memory state shared by the store, intake and replay.

A `Row` is one memory: an exact quote (`document`) with its provenance. Kinds:

- ``"source"``: a retained source text (modes 1 and 2), the whole admitted input;
- ``"explicit"``: an authored memory (`alto.remember`), protected from corrections;
- 1 participant mention, 2 task mention, 3 assertion, 4 correction: inferred (mode 2) quotes.

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
restart and in replay.

A `Mutation` is the canonical change of one journal entry: rows to upsert, ids to supersede,
ids to delete. Applying it twice gives the same state. `MemoryState` is the exact in-memory image
(rows plus int8 codes) that the store mirrors from Chroma and replay rebuilds from the journal,
so both select with the same code.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from .selection import CodeMatrix, quantize

KIND_SOURCE = "source"
KIND_EXPLICIT = "explicit"
KIND_PARTICIPANT = 1
KIND_TASK = 2
KIND_ASSERTION = 3
KIND_CORRECTION = 4
INFERRED_ASSERTIONS = (KIND_ASSERTION, KIND_CORRECTION)

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


class MemoryState:
    """Rows by id plus their int8 codes: the exact image that selection runs against.

    Codes live in a `selection.CodeMatrix` (append-only); a row's position is kept by id.
    Superseding changes only the row's status. Deleting, or re-upserting an id with another
    vector, rebuilds the matrix from the remaining rows: both are rare (forget, repair) and a
    rebuild keeps every position exact.
    """

    def __init__(self) -> None:
        self._rows: dict[int, Row] = {}
        self._matrix: CodeMatrix | None = None
        self._position: dict[int, int] = {}
        # Object-id order and source groups, rebuilt lazily after a change.
        self._ordered: list[Row] | None = None
        self._groups: dict[tuple[str, int], list[Row]] | None = None
        self.applied = 0

    def load(self, rows: Iterable[Row], applied: int) -> None:
        """Replace the state with stored rows (store open)."""
        self._rows = {row.id: row for row in rows}
        self._ordered = self._groups = None
        self._rebuild()
        self.applied = applied

    def _rebuild(self) -> None:
        self._matrix = None
        self._position = {}
        self._append(list(self._rows.values()))

    def _append(self, rows: list[Row]) -> None:
        if not rows:
            return
        codes = quantize(np.stack([vector_array(row.vector) for row in rows]))
        if self._matrix is None:
            self._matrix = CodeMatrix(codes.shape[1], len(rows))
        base = len(self._matrix)
        self._matrix.append(codes, np.array([row.id for row in rows], dtype=np.int64))
        for offset, row in enumerate(rows):
            self._position[row.id] = base + offset

    def apply(self, mutation: Mutation) -> None:
        """Apply a mutation; idempotent."""
        fresh: list[Row] = []
        rebuild = False
        for row in mutation.upsert:
            old = self._rows.get(row.id)
            rebuild |= old is not None and old.vector != row.vector
            if old is None:
                fresh.append(row)
            self._rows[row.id] = row
        for row_id in mutation.supersede:
            if row_id in self._rows:
                self._rows[row_id] = replace(self._rows[row_id], status=SUPERSEDED)
        for row_id in mutation.delete:
            rebuild |= self._rows.pop(row_id, None) is not None
        if rebuild:
            self._rebuild()
        else:
            self._append(fresh)
        self._ordered = self._groups = None
        self.applied = max(self.applied, mutation.sequence)

    def get(self, row_id: int) -> Row | None:
        """The row with this id, if stored."""
        return self._rows.get(row_id)

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

    def codes(self, rows: Sequence[Row]) -> np.ndarray:
        """The int8 code matrix of `rows`, in their order."""
        if self._matrix is None or not rows:
            return np.zeros((0, self.dim or 0), dtype=np.int8)
        codes, _ = self._matrix.view()
        return codes[[self._position[row.id] for row in rows]]

    @property
    def dim(self) -> int | None:
        """Embedding dimension of the stored rows, None while empty."""
        return self._matrix.dim if self._matrix is not None else None

    def __len__(self) -> int:
        return len(self._rows)
