"""Reading a journal from its end: the entries from one sequence on, not the whole file.

A journal's entries are its LF-terminated lines, sequence n on line n; bytes after the last LF
are a torn line, never an entry (see ``journal``). Reading backwards from the end costs the
entries asked for, however long the journal is: a checkpoint a few entries old is verified
against a file of hundreds of megabytes in milliseconds.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_READ_BACK = 1 << 20  # bytes read per step from the end


def entries_from(journal: Path, first: int) -> Iterator[dict[str, Any]] | None:
    """Parsed entries ``first`` .. last, in order (lazily).

    None when the journal is missing, damaged at its end, or has no entry ``first``. Nothing
    here checks hashes or links.
    """
    try:
        with journal.open("rb") as file:
            lines = lines_from(file, first)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None if lines is None else (json.loads(line) for line in lines)


def last_lines(journal: Path, count: int) -> list[bytes]:
    """The last ``count`` complete lines (fewer when the file holds fewer), without their LF.

    Whatever they hold: nothing here parses them. [] when the journal is missing.
    """
    try:
        file = journal.open("rb")
    except FileNotFoundError:
        return []
    with file:
        position = file.seek(0, os.SEEK_END)
        data = b""
        # count + 1 LFs bound count complete lines; the first LF's line may be partial.
        while position and data.count(b"\n") <= count:
            step = min(_READ_BACK, position)
            position -= step
            file.seek(position)
            data = file.read(step) + data
    lines = data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]
    if position:  # the first line read may have begun before the bytes read
        lines = lines[1:]
    return lines[-count:] if count else []


def lines_from(file: io.BufferedReader, first: int) -> list[bytes] | None:
    """The complete lines of entries ``first`` .. last, read backwards.

    The last line's ``sequence`` says how many that is; None when the file holds fewer.
    """
    position = file.seek(0, os.SEEK_END)
    chunks: list[bytes] = []
    breaks = 0  # LFs read so far
    wanted: int | None = None
    while True:
        # Complete lines read: one per LF, less the first one unless the file starts there.
        complete = breaks if position == 0 else breaks - 1
        if wanted is None and complete >= 1:
            data = b"".join(chunks)
            last = data[: data.rfind(b"\n")].rsplit(b"\n", 1)[-1]
            wanted = json.loads(last)["sequence"] - first + 1
            if wanted < 1:
                return None
        if wanted is not None and complete >= wanted:
            data = b"".join(chunks)
            found = data[: data.rfind(b"\n")].split(b"\n")
            return found[len(found) - wanted :]
        if position == 0:
            return None
        step = min(_READ_BACK, position)
        position -= step
        file.seek(position)
        chunks.insert(0, file.read(step))
        breaks += chunks[0].count(b"\n")
