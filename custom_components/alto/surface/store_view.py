"""`StoreMemoryView`: the Surfacer's read of the memory organ's `MemoryStore`.

Everything is read through `MemoryStore.rows(viewer)` / `MemoryStore.recall(..., viewer, ...)`,
which already keep to what the viewer may see (household rows plus its own private rows), and
every row is checked again with `records.visible_to` before it leaves this module: another user's
private memory can never become a name, a phrase or a recall result. Superseded rows never leave
either; only ``status == "current"`` rows are read.

Names (`known_names`): the quotes of current participant (kind 1) and task (kind 2) mentions, in
admission order, deduplicated caselessly (the first spelling stays). A home that keeps only
sources (mode 1) or explicit memories has no mentions, so nothing is cued there.

Licensed phrases (what a render may quote): a current, viewer-visible

- inferred assertion or correction (kinds 3, 4): the model-free exact quotes mode 2 keeps;
- explicit memory (``"explicit"``, `alto.remember`): authored, never corrected;
- source text (``"source"``) only when it tells something (`corpus.competes`, the rule that
  keeps questions, bare acknowledgements and device commands out of the turn's memory block:
  "When did Ann fix the gate?" names Ann but is no memory of her) and no inferred row (kind 1-4,
  superseded ones included) was admitted from the same source: that is a mode-1 source, kept
  whole and never interpreted. An interpreted source is not licensed because its text still
  holds every assertion a later correction superseded, and because its inferred rows already
  quote the statements in it; the requests and chatter it also holds are not memories.
  (A mode-2 source whose every span the model read as a request has no inferred row either; the
  store does not record the mode, so it is judged like a mode-1 source: by the rule above. The
  verifier still bounds the render to its words.)

Mentions are names, not phrases. A phrase belongs to an entity when its text contains the name as
whole words: the same literal match the cues use (`cues.find_cues`: casefolded, Unicode word
boundaries, clitics and an optional leading article), so "Ann" never licenses a phrase about
"Anna". Phrases come newest first (the Surfacer keeps the first few per entity), one per distinct
text. uniseg segmentation costs about 20 µs a character, so every document first passes a cheap
necessary condition (`_needle`, `_could_mention`: the name's last word as a substring not glued to
neighbouring letters) and only then the exact match.

`recall` embeds the utterance (one `embed` call), quantizes its float32 form as intake does
(`pipeline.query_codes`) and takes exact integer scores through `MemoryStore.recall`; of the
recalled rows it keeps licensed phrases that mention a known name (grouped under a name the
utterance cues if the phrase has one, else under the longest, earliest name in it), skipping the
rest, and fetches deeper until `limit` are found or the store runs out. The known names' cue keys
are kept per viewer (`cues.CueIndex`) and rebuilt, reusing the keys already made, only when the
viewer's names change, so a recall segments only names it has not seen.

What a viewer may quote is derived once per change of the store (`MemoryStore.version`), not per
turn: the licensed rows newest first, their skeletons joined in one string (so the prefilter is
one `str.find` over every phrase, not a call per row), and the viewer's names (`_Licensed`).

Reads take the store's in-memory mirror as it is; like every reader they assume one writer at a
time (a write racing a read can at worst fail the read, which the Surfacer absorbs).

The store is blocking: every store read and the CPU-bound matching run through `run_blocking`
(HA passes ``hass.async_add_executor_job``; the default is `asyncio.to_thread`). A view error
propagates; the Surfacer turns it into outcome "nothing" (or loses only the recall additions).
"""

from __future__ import annotations

import threading
import unicodedata
from bisect import bisect_right
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from uniseg.wordbreak import words

from ..memory.corpus import competes
from ..memory.pipeline import query_codes
from ..memory.records import (
    CURRENT,
    INFERRED_ASSERTIONS,
    KIND_EXPLICIT,
    KIND_SOURCE,
    MENTIONS,
    TEXTS_CACHED,
    Row,
    visible_to,
)
from ..memory.store import MemoryStore
from .cues import CueIndex, find_cues
from .memory_view import Phrase
from .surfacer import RunBlocking, run_in_thread

type Embed = Callable[[list[str]], Awaitable[list[list[float]]]]

_INFERRED_KINDS = frozenset({*MENTIONS, *INFERRED_ASSERTIONS})
DEFAULT_MAX_PHRASES = 16


class StoreMemoryView:
    """A `RecallView` over a `MemoryStore` (see the module docstring for what it returns)."""

    def __init__(
        self,
        store: MemoryStore,
        embed: Embed | None = None,
        *,
        run_blocking: RunBlocking = run_in_thread,
        max_phrases: int = DEFAULT_MAX_PHRASES,
    ) -> None:
        """Read `store`; `embed` (texts -> vectors, the store's embedding model) enables recall."""
        self._store = store
        self._embed = embed
        self._run_blocking = run_blocking
        self._max_phrases = max_phrases
        # The last cue index of each viewer's names; recalls run in threads, hence the lock.
        self._cues: dict[str | None, CueIndex] = {}
        self._cues_lock = threading.Lock()
        # What each viewer may quote, at the store version it was read at.
        self._licensed: dict[str | None, _Licensed] = {}

    def _licensed_for(self, viewer: str | None) -> _Licensed:
        """The viewer's `_Licensed` at the store's current version (read again after a change)."""
        held = self._licensed.get(viewer)
        if held is not None and held.version == self._store.version:
            return held
        version, rows = self._store.versioned_rows(viewer, current_only=False)
        licensed = _Licensed.of(version, rows, viewer)
        with self._cues_lock:
            self._licensed[viewer] = licensed
        return licensed

    async def known_names(self, viewer: str | None) -> list[str]:
        """Mention quotes (kinds 1, 2) of current rows `viewer` may see, caselessly distinct."""
        return await self._run_blocking(lambda: list(self._licensed_for(viewer).names))

    async def phrases(self, name: str, viewer: str | None) -> list[Phrase]:
        """Licensed quotes that contain `name` as whole words, newest first."""
        if not isinstance(name, str) or not name.strip():
            return []
        return await self._run_blocking(lambda: self._phrases(name, viewer))

    async def recall(
        self, utterance: str, viewer: str | None, limit: int
    ) -> list[tuple[str, Phrase]]:
        """Up to `limit` (known name, licensed phrase) pairs nearest `utterance`, best first."""
        if self._embed is None or limit <= 0 or not isinstance(utterance, str):
            return []
        if not utterance.strip():
            return []
        vectors = await self._embed([utterance])
        if not isinstance(vectors, list) or len(vectors) != 1:
            raise ValueError("embed returned no single vector for the utterance")
        vector = np.asarray(vectors[0], dtype="<f4")  # float32, as the store keeps its rows
        return await self._run_blocking(lambda: self._recall(utterance, vector, viewer, limit))

    def _phrases(self, name: str, viewer: str | None) -> list[Phrase]:
        found: list[Phrase] = []
        seen: set[str] = set()
        # Newest first, the rows that pass `_could_mention`; then the exact match.
        for row in self._licensed_for(viewer).mentioning(_needle(name)):
            if row.document in seen or not find_cues(row.document, [name], limit=1):
                continue
            seen.add(row.document)
            found.append(Phrase(text=row.document, source_id=str(row.id)))
            if len(found) >= self._max_phrases:
                break
        return found

    def _recall(
        self, utterance: str, vector: np.ndarray, viewer: str | None, limit: int
    ) -> list[tuple[str, Phrase]]:
        dim = self._store.dim
        if dim is None:
            return []
        if vector.shape != (dim,):
            raise ValueError(f"utterance embedding has shape {vector.shape}, the store {dim}")
        codes = query_codes(vector.tobytes())  # exactly as intake quantizes its queries
        licensed = self._licensed_for(viewer)
        names = list(licensed.names)
        available = self._store.count(viewer)
        if not names:
            return []
        needles = {name: _needle(name) for name in names}
        # A recalled phrase naming an entity the utterance cued joins that entity's group.
        index = self._cue_index(viewer, names)
        cued = frozenset(index.find(utterance, limit=len(names)))
        pairs: list[tuple[str, Phrase]] = []
        seen: set[int] = set()
        depth = max(4 * limit, 16)
        while True:
            recalled = self._store.recall(codes, viewer, depth)
            for row, _score in recalled:
                if row.id in seen:
                    continue
                seen.add(row.id)
                if row.id not in licensed.ids:
                    continue
                skeleton = _skeleton(row.document)
                candidates = [n for n in names if _could_mention(skeleton, needles[n])]
                name = _entity(row.document, candidates, cued, index)
                if name is not None:
                    pairs.append((name, Phrase(text=row.document, source_id=str(row.id))))
                    if len(pairs) >= limit:
                        return pairs
            if len(recalled) < depth or depth >= available:
                return pairs
            depth *= 2

    def _cue_index(self, viewer: str | None, names: list[str]) -> CueIndex:
        """The viewer's names indexed for cue matching.

        The last index while they are unchanged, else a new one that takes every key an
        earlier index holds.
        """
        with self._cues_lock:
            current, earlier = self._cues.get(viewer), tuple(self._cues.values())
        if current is not None and current.names == tuple(names):
            return current
        index = CueIndex.build(names, *earlier)
        with self._cues_lock:
            self._cues[viewer] = index
        return index


def _entity(
    document: str, candidates: list[str], cued: frozenset[str], index: CueIndex
) -> str | None:
    """The name a recalled phrase is grouped under: one the utterance cued if it names one.

    Among equals the longest span in the phrase wins, then the earliest, as cues pick. The
    candidates' keys come from `index`, the viewer's known names.
    """
    preferred = [name for name in candidates if name in cued]
    for group in (preferred, candidates):
        found = CueIndex.build(group, index).find(document, limit=1) if group else []
        if found:
            return found[0]
    return None


def _licensed(row: Row, viewer: str | None, interpreted: set[tuple[str, int]]) -> bool:
    """Whether `row` may be quoted to `viewer` (see the module docstring)."""
    if row.status != CURRENT or not visible_to(row, viewer):
        return False
    if row.kind in INFERRED_ASSERTIONS or row.kind == KIND_EXPLICIT:
        return True
    return row.kind == KIND_SOURCE and row.source_key not in interpreted and competes(row)


def _interpreted(rows: Iterable[Row]) -> set[tuple[str, int]]:
    """Sources with an inferred row, current or superseded."""
    return {row.source_key for row in rows if row.kind in _INFERRED_KINDS}


def _known_names(rows: Iterable[Row], viewer: str | None) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    for row in rows:
        if row.kind not in MENTIONS or row.status != CURRENT or not visible_to(row, viewer):
            continue
        name = row.document.strip()
        key = unicodedata.normalize("NFC", name.casefold())
        if name and key not in seen:
            seen.add(key)
            names.append(name)
    return names


@dataclass(frozen=True, slots=True)
class _Licensed:
    """What one viewer may quote at one store `version`.

    The licensed rows newest first, their `_skeleton`s joined by newlines (`text`; `starts`
    holds where each begins) and the viewer's known names. A newline is no `_plain` character,
    so an occurrence in `text` is glued to a neighbour exactly when it is in its row's skeleton
    alone.
    """

    version: int
    rows: tuple[Row, ...]
    ids: frozenset[int]  # of `rows`
    text: str
    starts: tuple[int, ...]
    names: tuple[str, ...]

    @classmethod
    def of(cls, version: int, rows: Sequence[Row], viewer: str | None) -> _Licensed:
        """From every row `viewer` sees (superseded ones included), in object-id order."""
        interpreted = _interpreted(rows)
        licensed = tuple(row for row in reversed(rows) if _licensed(row, viewer, interpreted))
        skeletons = [_skeleton(row.document) for row in licensed]
        starts, at = [], 0
        for skeleton in skeletons:
            starts.append(at)
            at += len(skeleton) + 1
        names = tuple(_known_names(rows, viewer))
        ids = frozenset(row.id for row in licensed)
        return cls(version, licensed, ids, "\n".join(skeletons), tuple(starts), names)

    def mentioning(self, needle: Needle | None) -> Iterator[Row]:
        """The rows whose skeleton `_could_mention` `needle`, newest first, each once."""
        if needle is None:
            yield from self.rows
            return
        last = -1
        for start in _occurrences(self.text, needle):
            index = bisect_right(self.starts, start) - 1
            if index != last:
                yield self.rows[index]
                last = index


# `_Licensed.of` reads every licensed text at each change of the store: at 100,000 about 0.2 s
# when their skeletons fit, 0.9 s when they do not, for about 19 MB of skeletons.
@lru_cache(maxsize=TEXTS_CACHED)
def _skeleton(text: str) -> str:
    """Casefolded, fully decomposed, without combining marks (canonical class > 0).

    Casefolding and canonical decomposition map each character on its own, and canonical
    reordering only moves marks of nonzero class, which are dropped: so the skeleton of a
    substring is a substring of the skeleton, whatever NFC or NFD form either text is in.
    """
    decomposed = unicodedata.normalize("NFD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@dataclass(frozen=True, slots=True)
class Needle:
    """What a document's skeleton must contain for `find_cues` to find a name (see `_needle`)."""

    text: str
    at_word_start: bool


def _plain(char: str) -> bool:
    """A letter below U+0530 (Latin, IPA, Greek, Cyrillic, Armenian) or an ASCII digit.

    All are ALetter or Numeric in UAX #29, which never breaks a word between two of them.
    """
    return ord(char) < 0x530 and (char.isalpha() or "0" <= char <= "9")


def _could_mention(skeleton: str, needle: Needle | None) -> bool:
    """Whether `needle` occurs in `skeleton` where a word could start (and end) around it.

    A whole-word match has a word boundary before the document word and after it (or after its
    clitic's apostrophe); no boundary can fall between two `_plain` characters, so an occurrence
    glued to one ("ann" in "anna") is no match. Scripts beyond are only substring-checked.
    """
    return needle is None or next(_occurrences(skeleton, needle), None) is not None


def _occurrences(skeleton: str, needle: Needle) -> Iterator[int]:
    """Where `needle` occurs in `skeleton` not glued to a neighbour (see `_could_mention`)."""
    text = needle.text
    head = needle.at_word_start and _plain(text[0])
    tail = _plain(text[-1])
    start = skeleton.find(text)
    while start >= 0:
        end = start + len(text)
        glued_before = head and start > 0 and _plain(skeleton[start - 1])
        glued_after = tail and end < len(skeleton) and _plain(skeleton[end])
        if not (glued_before or glued_after):
            yield start
        start = skeleton.find(text, start + 1)


@lru_cache(maxsize=4096)
def _needle(name: str) -> Needle | None:
    """The necessary condition for `find_cues` to find `name` in a document.

    Every word sequence that cues `name` ends with its last word (only a leading article is
    optional), and a matching document word equals it casefolded and composed, so the skeleton
    of that word's first alphanumeric run is in the document's skeleton. The run ends where the
    word ends or at a non-alphanumeric character the document word has too (a clitic is cut at
    the last apostrophe, after the run), and starts where the word starts unless the word opens
    with a non-alphanumeric character. None when there is no run: no prefilter then.
    """
    pieces: Sequence[str] = [p for p in words(name) if any(c.isalnum() for c in p)]
    if not pieces:
        return None
    word = _skeleton(pieces[-1])
    run: list[str] = []
    for char in word:
        if char.isalnum():
            run.append(char)
        elif run:
            break
    text = "".join(run)
    return Needle(text, word.startswith(text)) if text else None
