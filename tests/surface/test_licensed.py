"""The Surfacer's phrases and names, kept per store version, are those of the scan.

What a viewer may quote is read once per store version (`store_view._Licensed`); on random rows
and changes, its phrases and names are those of the scan of every row it replaced.
"""

from __future__ import annotations

import random

import pytest

from custom_components.alto.memory.records import (
    CURRENT,
    KIND_EXPLICIT,
    KIND_SOURCE,
    SUPERSEDED,
    Kind,
    Row,
    visible_to,
)
from custom_components.alto.surface.cues import find_cues
from custom_components.alto.surface.memory_view import Phrase
from custom_components.alto.surface.store_view import (
    StoreMemoryView,
    _interpreted,
    _known_names,
    _licensed,
    _needle,
)

from .mentions import mentions

NAMES = ("Ann", "Anna", "Zoë", "ZOE", "the Boiler", "Mr. O'Neil", "Ana-Lu", "7th Street")
FILLER = ("came", "round", "on", "Sunday", "boiler's", "annals", "zoë's", "o'neil", "lu")
USERS = ("u1", "u2")


class _Store:
    """The store reads a view makes, over a fixed row list that can change."""

    def __init__(self, rows: list[Row]) -> None:
        self.all, self.version = rows, 1

    def rows(self, viewer: str | None, *, current_only: bool = True) -> list[Row]:
        return [
            r
            for r in self.all
            if visible_to(r, viewer) and (r.status == CURRENT or not current_only)
        ]

    def versioned_rows(
        self, viewer: str | None, *, current_only: bool = True
    ) -> tuple[int, list[Row]]:
        return self.version, self.rows(viewer, current_only=current_only)


def _scan(store: _Store, name: str, viewer: str | None, limit: int) -> list[Phrase]:
    """The phrases as read before: every row, newest first."""
    rows = store.rows(viewer, current_only=False)
    interpreted, needle = _interpreted(rows), _needle(name)
    found: list[Phrase] = []
    seen: set[str] = set()
    for row in reversed(rows):
        if (
            row.document in seen
            or not _licensed(row, viewer, interpreted)
            or not mentions(row.document, name, needle)
        ):
            continue
        seen.add(row.document)
        found.append(Phrase(text=row.document, source_id=str(row.id)))
        if len(found) >= limit:
            break
    return found


def _rows(rng: random.Random, count: int) -> list[Row]:
    rows = []
    for n in range(count):
        kind = rng.choice([KIND_SOURCE, KIND_EXPLICIT, *Kind])
        words = rng.choices(NAMES + FILLER, k=1 if kind in (1, 2) else rng.randint(1, 7))
        rows.append(
            Row(
                id=n + 1,
                document=" ".join(words) + ("" if kind in (1, 2) else rng.choice([".", "!"])),
                kind=kind,
                owner="household",
                scope=rng.choice(["household", "household", *USERS]),
                actor="unknown",
                source_id=f"s{rng.randint(0, count // 3)}",
                source_version=1,
                offset=0,
                length=1,
                status=rng.choice([CURRENT, CURRENT, SUPERSEDED]),
            )
        )
    return rows


@pytest.mark.parametrize("seed", range(25))
async def test_phrases_and_names_are_the_scans(seed: int) -> None:
    """Every viewer, every name, before and after changes."""
    rng = random.Random(seed)
    store = _Store(_rows(rng, rng.randint(0, 120)))
    view = StoreMemoryView(store, max_phrases=rng.randint(1, 6))  # type: ignore[arg-type]
    for _ in range(3):
        for viewer in (None, *USERS):
            names = await view.known_names(viewer)
            assert names == _known_names(store.rows(viewer), viewer)
            for name in NAMES:
                expected = _scan(store, name, viewer, view._max_phrases)
                assert await view.phrases(name, viewer) == expected, (seed, name, viewer)
                assert all(find_cues(p.text, [name], limit=1) for p in expected)
        store.all = store.all + _rows(rng, 10)  # a change: read again at the next version
        store.all = [r for r in store.all if rng.random() < 0.9]
        store.version += 1
