"""The write-ahead journal: append-only JSON Lines, hash-chained, fsync'd before the store changes.

Every line is the canonical JSON (`records.canonical_json`) of one entry::

    {"sequence": n, "prev": <hash of entry n-1, or 64 zeros for n = 1>, "hash": <own hash>,
     "op": "intake" | "remember" | "forget", ...}

`hash` is the SHA-256 hex of the canonical JSON of the entry without its `hash` key. Sequence n
is the 1-based line number and the `sequence` of the entry's mutation. What each op records
(request, raw model outputs, digests, correction tables, selections, vectors, the canonical
mutation) is written by `intake` and checked by `replay`.

`Journal.append` writes one line with a single write, flushes and fsyncs it (and the directory
when it creates the file) before returning, so a store write that follows is always covered.
A crash mid-write leaves at most a final line without its LF: it was never acknowledged, no store
write followed it, and opening the journal cuts it off. Nothing else is ever rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .records import canonical_json

GENESIS = "0" * 64


def entry_hash(entry: dict[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of `entry` without its `hash` key."""
    body = {key: value for key, value in entry.items() if key != "hash"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def read_lines(path: Path) -> list[bytes]:
    """The complete (LF-terminated) lines of a journal, without their LF; [] if absent."""
    if not path.exists():
        return []
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]


class Journal:
    """One journal file, opened for appending by a single writer."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._cut_torn_tail()
        lines = read_lines(self.path)
        self._count = len(lines)
        try:
            self._last = str(json.loads(lines[-1])["hash"]) if lines else GENESIS
        except (ValueError, KeyError, TypeError) as err:
            # Appending to a damaged chain would hide the damage; replay names the entry.
            raise ValueError(f"journal {self.path} ends in a damaged entry") from err

    def _cut_torn_tail(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        complete = data.rfind(b"\n") + 1
        if complete != len(data):
            with self.path.open("r+b") as file:
                file.truncate(complete)
                file.flush()
                os.fsync(file.fileno())

    @property
    def count(self) -> int:
        """Entries written so far."""
        return self._count

    @property
    def next_sequence(self) -> int:
        """The sequence the next appended entry gets."""
        return self._count + 1

    def append(self, body: dict[str, Any]) -> dict[str, Any]:
        """Chain, hash, write and fsync one entry; returns it as written."""
        entry = {"sequence": self.next_sequence, "prev": self._last, **body}
        entry["hash"] = entry_hash(entry)
        line = (canonical_json(entry) + "\n").encode("utf-8")
        created = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as file:
            file.write(line)
            file.flush()
            os.fsync(file.fileno())
        if created:
            _fsync_dir(self.path.parent)
        self._count += 1
        self._last = entry["hash"]
        return entry

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every written entry, parsed, in order."""
        for line in read_lines(self.path):
            yield json.loads(line)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
