"""Accepted sources not yet interpreted: a turn's words between its reply and its memory.

A turn's source is made durable before the reply returns by an ``accept`` journal entry (one
fsync, no model call); interpreting it (embedding, and in mode 2 the two model calls) comes later
and may have to wait for a restart or for the embedding model to come back. Until an entry
resolves it, an accepted source is *pending*. What each op does to the pending set:

- ``accept``: adds every input of ``request.inputs`` under the entry's sequence and the
  requested ``request.mode`` (1 or 2). A source already pending or already stored is refused
  before the entry is written;
- ``intake`` with ``request.accepted`` true: resolves every input, which must be pending with
  exactly the accepted input and mode (its mutation stores the source's rows);
- ``refuse``: resolves every input with a final refusal (its mutation is empty);
- every other op leaves the set as it is.

Every entry written while sources are pending records ``pending_from``: the sequence of the
oldest accept entry still pending after it (the key is absent when none is). Opening a journal
therefore reads only from there to its end to find what must be resumed, however long the
journal is; replay re-derives the set entry by entry and checks every recorded ``pending_from``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .pipeline import IntakeInput

ACCEPT = "accept"
REFUSE = "refuse"
INTAKE = "intake"


@dataclass(frozen=True, slots=True)
class Accepted:
    """One pending source: the accept entry that holds it, the requested mode, the input."""

    sequence: int
    mode: int
    item: IntakeInput


class PendingError(ValueError):
    """An entry resolves a source that is not pending as recorded, or accepts one twice."""


class Pending:
    """The pending sources after some journal entry, oldest first (an immutable value)."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Accepted] = ()) -> None:
        """Pending sources in acceptance order."""
        self._items = {accepted.item.source_key: accepted for accepted in items}

    def after(self, entry: dict[str, Any], *, tail: bool = False) -> Pending:
        """The pending set once `entry` is written; PendingError when it cannot apply.

        `tail`: the set is being rebuilt from the oldest pending accept on (a journal's open),
        so an entry may also resolve sources accepted before that, which the set never held:
        those are passed over (replay, from the first entry, checks every one).
        """
        op = entry.get("op")
        request = entry.get("request") or {}
        if op not in (ACCEPT, REFUSE) and not (op == INTAKE and request.get("accepted")):
            return self
        inputs = [IntakeInput.from_json(item) for item in request["inputs"]]
        items = dict(self._items)
        if op == ACCEPT:
            for item in inputs:
                if item.source_key in items:
                    raise PendingError(f"source {item.source_id!r} accepted twice")
                items[item.source_key] = Accepted(entry["sequence"], request["mode"], item)
        else:
            for item in inputs:
                held = items.pop(item.source_key, None)
                if held is None and tail:
                    continue
                if held is None or held.item != item:
                    raise PendingError(f"source {item.source_id!r} is not pending as recorded")
                if op == INTAKE and held.mode != request["mode"]:
                    raise PendingError(f"source {item.source_id!r} accepted in another mode")
        return Pending(items.values())

    @property
    def low_water(self) -> int:
        """The sequence of the oldest accept entry still pending; 0 when none is."""
        return min((accepted.sequence for accepted in self._items.values()), default=0)

    def oldest(self, limit: int, *, exclude: Iterable[tuple[str, int]] = ()) -> list[Accepted]:
        """Up to `limit` pending sources of the oldest one's mode, oldest first.

        Sources in `exclude` (already being interpreted) are left out.
        """
        skip = set(exclude)
        candidates = [a for a in self._items.values() if a.item.source_key not in skip]
        if not candidates:
            return []
        mode = candidates[0].mode
        return [accepted for accepted in candidates if accepted.mode == mode][:limit]

    def __contains__(self, source_key: object) -> bool:
        """Whether a source with this key is pending."""
        return source_key in self._items

    def __len__(self) -> int:
        """The number of pending sources."""
        return len(self._items)
