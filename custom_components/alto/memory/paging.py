"""Every record of a Chroma collection, read a page at a time.

`collection.get()` without a limit loads the whole collection in one response; the store reads
it in pages of PAGE records instead (a start without a checkpoint, the server check, an
erasure's rebuild).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

PAGE = 1000


def pages(collection: Any, include: Sequence[str]) -> Iterator[dict[str, Any]]:
    """The collection's `get` results, PAGE records each, until a short page."""
    offset = 0
    while True:
        page: dict[str, Any] = collection.get(include=list(include), limit=PAGE, offset=offset)
        yield page
        if len(page["ids"]) < PAGE:
            return
        offset += PAGE
