"""Memory modes and qualified model/processor pairs.

Modes of the automatic-retention field: 0 explicit only (`alto.remember`), 1 source text
retained verbatim with its spans and no interpretation, 2 automatic semantic interpretation.

Mode 2 needs an exact qualified pair: the Ollama model digest (`/api/tags`, 64 hex) and this
processor's digest (`profile.processor_digest()`). Qualified pairs come only from the shipped
`qualified_pairs.json` (a JSON list of {"model_digest", "processor_digest", "model"}; it ships
empty: no model is qualified by default) and from rows that `record_qualification` writes after
a passing acceptance run (the `alto.qualify` flow), kept in a JSON file whose path the caller
owns. There is no override: no option, flag or argument makes an unlisted pair usable.

`effective_mode` decides before any model call. An unknown or changed pair gives status 12:
a direct semantic request (a service asking for interpretation) is refused; conversation input
falls back to mode 1 (source text kept, nothing interpreted) and the status reports it.
Qualification never changes already journaled decisions: replay checks them as recorded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from ..model.digest import normalize_digest
from .profile import processor_digest
from .reasons import Status

SHIPPED_TABLE = Path(__file__).with_name("qualified_pairs.json")


class Mode(IntEnum):
    """The memory binding's automatic-retention field."""

    EXPLICIT = 0
    SOURCE = 1
    AUTOMATIC = 2


@dataclass(frozen=True, slots=True)
class QualificationTable:
    """The set of exact (model digest, processor digest) pairs qualified for mode 2."""

    pairs: frozenset[tuple[str, str]]

    def qualified(self, model_digest: str | None, processor: str | None = None) -> bool:
        """Whether the pair (model, processor; default this processor) is qualified."""
        model = normalize_digest(model_digest)
        return model is not None and (model, processor or processor_digest()) in self.pairs


def _pairs(rows: Iterable[Any]) -> set[tuple[str, str]]:
    found = set()
    for row in rows:
        if not isinstance(row, dict):
            continue
        model = normalize_digest(row.get("model_digest"))
        processor = normalize_digest(row.get("processor_digest"))
        if model and processor:
            found.add((model, processor))
    return found


def _read(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    return data if isinstance(data, list) else []


def load_table(user_path: Path | str | None = None) -> QualificationTable:
    """Shipped pairs plus the pairs recorded in `user_path` (missing file: none)."""
    pairs = _pairs(_read(SHIPPED_TABLE))
    if user_path is not None:
        pairs |= _pairs(_read(Path(user_path)))
    return QualificationTable(frozenset(pairs))


def record_qualification(
    user_path: Path | str, model_digest: str, model: str, answers: list[dict[str, Any]]
) -> dict[str, Any]:
    """Append a qualified row for (model, this processor) with every raw answer; atomic write.

    Call only for a passing acceptance run (`acceptance.run_acceptance(...).passed`).
    """
    digest = normalize_digest(model_digest)
    if digest is None:
        raise ValueError("model digest must be 64 hex digits")
    path = Path(user_path)
    rows = [row for row in _read(path) if isinstance(row, dict)]
    row = {
        "model_digest": digest,
        "processor_digest": processor_digest(),
        "model": model,
        "answers": answers,
    }
    rows = [
        r
        for r in rows
        if (r.get("model_digest"), r.get("processor_digest")) != (digest, row["processor_digest"])
    ] + [row]
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as file:
        json.dump(rows, file, ensure_ascii=False, indent=1)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    return row


def effective_mode(
    requested: int, model_digest: str | None, table: QualificationTable, *, direct: bool = False
) -> tuple[Mode | None, Status]:
    """(effective mode, status) for a request; mode None means refused with status 12.

    Modes 0 and 1 need no model. Mode 2 with a qualified pair stays mode 2 (status 0); with an
    unknown pair a direct request is refused and conversation input falls back to mode 1, both
    with status 12.
    """
    mode = Mode(requested)
    if mode is not Mode.AUTOMATIC or table.qualified(model_digest):
        return mode, Status.OK
    return (None if direct else Mode.SOURCE), Status.UNQUALIFIED
