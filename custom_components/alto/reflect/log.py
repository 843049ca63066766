"""One scope's journal file: verified load, append, compaction, deletion (all blocking).

Each scope has its own file, ``<root>/<scope>.jsonl`` (a scope is ``household`` or 32 hex, so
the name is safe): a scope's text is never in another scope's file, and purging a scope deletes
its file. The file is memory's write-ahead journal (`memory.journal.Journal`): canonical JSON
lines, ``sequence`` = line number, ``prev`` = the previous line's ``hash``, ``hash`` = SHA-256 of
the canonical entry without it, each append fsync'd; a torn last line is cut off on open.

Forgetting has to erase text, which an append-only chain cannot do, so the chain runs in
generations. `compact` replaces the file, atomically (temporary file, fsync, rename, fsync of
the directory), by one ``snapshot`` entry holding the current state, whose ``prev`` is the
hash of the replaced file's last entry: the new generation continues the old chain's head, and
what the state no longer holds (forgotten turns, turns past the retention limit, raw model
answers) is gone from disk. `load` verifies every line (parse, sequence, hash, link; the first
line links to the 64-zero genesis unless it is a snapshot) and folds it into the state; any
failure is `JournalDamaged` and nothing is appended to that file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..memory.journal import GENESIS, Journal, entry_hash, read_lines
from ..memory.records import canonical_json
from .state import FORMAT, ScopeState


class JournalDamaged(Exception):
    """A scope's journal does not verify; the scope is read-only until an operator looks."""


class ScopeLog:
    """The journal file of one scope, used by a single writer."""

    def __init__(self, root: Path, scope: str) -> None:
        """The log of `scope` under `root`; nothing is read before `load`."""
        self.scope = scope
        self.path = root / f"{scope}.jsonl"
        self._journal: Journal | None = None
        self._head = GENESIS

    @property
    def count(self) -> int:
        """Entries in the current generation (0 before `load`)."""
        return self._journal.count if self._journal else 0

    def load(self) -> ScopeState:
        """Verify the file and fold it into a state (an empty state when there is no file)."""
        try:
            self._journal = Journal(self.path)
        except ValueError as err:
            raise JournalDamaged(str(err)) from err
        state = ScopeState(self.scope)
        self._head = GENESIS
        for number, line in enumerate(read_lines(self.path), 1):
            try:
                entry = json.loads(line)
                if entry["sequence"] != number or entry_hash(entry) != entry["hash"]:
                    raise ValueError("sequence or hash")
                if number == 1 and entry["op"] == "snapshot":
                    state = ScopeState.restored(entry, self.scope)
                else:
                    if entry["prev"] != self._head:
                        raise ValueError("chain link")
                    state.apply(entry)
            except (ValueError, KeyError, TypeError, AttributeError) as err:
                raise JournalDamaged(f"{self.path} entry {number}: {err}") from err
            self._head = entry["hash"]
        return state

    def append(self, body: dict[str, Any]) -> dict[str, Any]:
        """Journal one entry (fsync'd); returns it as written."""
        if self._journal is None:
            raise RuntimeError("load the scope first")
        entry = self._journal.append(body)
        self._head = entry["hash"]
        return entry

    def compact(self, state: ScopeState, at: int) -> None:
        """Replace the file by one snapshot of `state`, the next generation of the chain."""
        snapshot: dict[str, Any] = {
            "sequence": 1,
            "prev": self._head,
            "op": "snapshot",
            "scope": self.scope,
            "at": at,
            "format": FORMAT,
            "generation": state.generation + 1,
            "state": state.to_json(),
        }
        snapshot["hash"] = entry_hash(snapshot)
        temporary = self.path.with_name(self.path.name + ".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with temporary.open("wb") as file:
            file.write((canonical_json(snapshot) + "\n").encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        _fsync_dir(self.path.parent)
        state.generation += 1
        self._journal = Journal(self.path)
        self._head = snapshot["hash"]

    def delete(self) -> None:
        """Remove the file: nothing of the scope stays on disk."""
        self.path.with_name(self.path.name + ".tmp").unlink(missing_ok=True)
        if self.path.exists():
            self.path.unlink()
            _fsync_dir(self.path.parent)
        self._journal = None
        self._head = GENESIS


def _fsync_dir(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
