"""What the turn's memory block reads of each stored row, kept by position for the store.

A turn ranks the competing rows a viewer may see (`recall`) by cosine and by an exact BM25, and
reads each row's said time and id to break ties. Reading those from every row object each turn
costs in proportion to the store (about 20 ms at 10,000 memories); a `Corpus` keeps them instead,
by the row's position in the store's code matrix (`matrix.CodeMatrix`), so that the cosine scores,
the viewer's mask and these arrays line up, and a turn's lexical work follows the rows that hold
the query's words:

- by position: the object id, the said time, whether the row competes (step 1 of `recall`), its
  number of terms (BM25's document length, its speaker's name aside) and its speaker (a small
  integer: names change without the rows changing, so a name's words are added per turn);
- postings: for each stemmed term, the competing positions whose quote holds it, with the count;
- by position, the quote's terms (ids into one vocabulary of every term read, with counts), so
  that a rebuild reads them again instead of stemming the rows.

The terms by position are also what a checkpoint saves (`image`, read back by `seed`), so a
start reads them instead of stemming every row (about 3 s at 100,000 memories here); the postings
of the rows a seed read are three flat arrays (`_Seeded`), and rows appended later get a posting
list per term.

Everything is kept in flat integer arrays (a few dozen bytes per memory besides the postings),
not in objects per row: at 100,000 memories per-row dictionaries cost about 100 MB.

A matrix only appends until it is compacted (a forget, a repair), which gives it a new origin:
`Corpus.start` says from which position the rows are needed (0 after a compaction or a change of
an indexed row), and `Corpus.extend` reads them, stemming only rows it did not hold before (a
rebuild copies the terms of the rows it held, by id). A `View` is the corpus at one length:
later appends land past it and a rebuild makes new containers, so a turn reads it without a
lock.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import itertools
import json
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import languages, lexical
from .informative import is_informative
from .lexical import (
    PREFIX,
    alike,
    count_terms,
    idf,
    language,
    name_count,
    related,
    term_scores,
    terms,
)
from .matrix import Snapshot
from .records import KIND_SOURCE, Row


def competes(row: Row) -> bool:
    """Step 1 of `recall`: a source competes only when it is informative."""
    return row.kind != KIND_SOURCE or is_informative(row.document)


def warm(rows: Iterable[Row]) -> None:
    """Read rows' words (cached by word) and the filter (cached by text) once.

    The turn that indexes them then does not stem: the store calls it in the writer's thread for
    the rows it writes.
    """
    for row in rows:
        if competes(row):
            count_terms(row.document)


_RULES = 5  # bump when `count_terms`, `competes` or `detect` change in code, not in their lists


def _lexicon() -> str:
    """What a saved image's terms were read with: an image read by other rules is not used."""
    rules = [
        _RULES,
        lexical.WORD.pattern,
        lexical._CLITIC.pattern,  # the rule itself is what is fingerprinted
        languages.fingerprint(),  # every language's words, what `informative` reads among them
        importlib.metadata.version("snowballstemmer"),
    ]
    return hashlib.sha256(json.dumps(rules).encode()).hexdigest()[:32]


LEXICON = _lexicon()


@dataclass(frozen=True, slots=True)
class Image:
    """The terms of a corpus's first `n` rows by position, as a checkpoint saves them.

    Whether each row competes, and its terms (indexes into `vocabulary`, the terms those rows
    hold) with their counts, row p's at `bounds[p]:bounds[p + 1]`.
    """

    vocabulary: list[str]
    bounds: np.ndarray  # int64, n + 1
    terms: np.ndarray  # int32
    counts: np.ndarray  # int32
    competes: np.ndarray  # bool, n

    def check(self) -> None:
        """ValueError when the arrays do not fit together."""
        bounds, words = self.bounds, self.vocabulary
        if (
            len(bounds) != len(self.competes) + 1
            or bounds[0] != 0
            or bounds[-1] != len(self.terms)
            or len(self.counts) != len(self.terms)
            or (np.diff(bounds) < 0).any()
            or (len(self.terms) and not 0 <= self.terms.min() <= self.terms.max() < len(words))
            or (self.counts <= 0).any()
        ):
            raise ValueError("corpus image arrays do not fit together")


# Each rebuild of any corpus takes the next number: what a reader derived from a view's rows by
# position (`recall.Memo`) holds for every view of the same generation.
_GENERATIONS = itertools.count(1)


@dataclass(frozen=True, slots=True)
class View:
    """The corpus at `n` positions (see the module docstring); every array has length `n`.

    Two views of one `generation` agree on every position the shorter one has.
    """

    generation: int
    n: int
    rows: Sequence[Row]  # by position; only the first n are this view's
    ids: np.ndarray  # int64
    said: np.ndarray  # int64
    competes: np.ndarray  # bool
    length: np.ndarray  # int64: terms of the quote
    actor: np.ndarray  # int32: index into `actors`
    actors: Sequence[str]  # user ids by index; only those the first n rows use are read
    vocabulary: Mapping[str, int]  # term -> its index (in this and later views)
    by_prefix: Mapping[str, Sequence[str]]  # its terms by their first PREFIX letters
    by_suffix: Mapping[str, Sequence[str]]  # and by their last PREFIX letters
    seeded: _Seeded  # postings of the rows a seed read, by term index
    postings: Mapping[int, tuple[array[int], array[int]]]  # term index -> positions, counts

    def holders(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The positions below `n` whose quote holds `term`, and its count in each."""
        index = self.vocabulary.get(term)
        if index is None:
            return _NONE, _NONE
        positions, counts = self.seeded.holders(index, self.n)
        found = self.postings.get(index)
        if found is not None and (cut := bisect_left(found[0], self.n)):
            later = np.frombuffer(found[0][:cut], dtype=np.int32).astype(np.int64)
            times = np.frombuffer(found[1][:cut], dtype=np.int32).astype(np.int64)
            if len(positions):
                return np.concatenate([positions, later]), np.concatenate([counts, times])
            return later, times
        return positions, counts

    def related_holders(self, term: str, heads: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """`holders` of `term` and of the terms related to it (`lexical.related`), summed.

        With `heads`, a compound's head is related too (a query in a language that writes
        compounds closed).
        """
        group = related(term, self.vocabulary, self.by_prefix, self.by_suffix if heads else None)
        if len(group) == 1:
            return self.holders(term)
        return self._summed([self.holders(t) for t in group])

    @staticmethod
    def _summed(found: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """Several terms' holders as one term's: each position once, its counts added."""
        if not found:
            return _NONE, _NONE
        positions = np.concatenate([p for p, _ in found])
        if not len(positions):
            return _NONE, _NONE
        counts = np.concatenate([c for _, c in found])
        order = np.argsort(positions, kind="stable")
        positions, counts = positions[order], counts[order]
        starts = np.flatnonzero(np.r_[True, positions[1:] != positions[:-1]])
        return positions[starts], np.add.reduceat(counts, starts)

    def lexical(
        self, pool: np.ndarray, query: str, names: Mapping[str, str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Okapi BM25 of `query` over the rows at `pool`: the positions above 0, their scores.

        The score is `lexical.idf` and `lexical.term_scores`; each row is read with its speaker's
        name, and the pool is the corpus. A query term counts its related terms in the quotes
        (`lexical.related`, heads too when the query's language writes compounds closed), or,
        when no pool row holds any of those or is named by it, the terms it is `lexical.alike`;
        a speaker's name, read in the query's language, counts only as written (`name_count`).
        """
        in_pool = np.zeros(self.n, dtype=bool)
        in_pool[pool] = True
        lang = language(query)
        spoken = [terms(names.get(actor, ""), lang.code) for actor in self.actors]
        length = self.length
        if any(spoken):
            extra = np.array([sum(t.values()) for t in spoken], dtype=np.int64)
            length = length + extra[self.actor]
        n = len(pool)
        total = int(length[pool].sum()) or 1
        scores: np.ndarray = np.zeros(self.n, dtype=np.int64)
        for term in terms(query):
            positions, counts = self.related_holders(term, lang.compounds)
            named = [code for code, said in enumerate(spoken) if name_count(term, said, lang)]
            if named:
                tf = np.zeros(self.n, dtype=np.int64)
                tf[positions] = counts
                for code in named:
                    tf[self.actor == code] += name_count(term, spoken[code], lang)
                holders = np.flatnonzero(in_pool & (tf > 0))
                tf = tf[holders]
            else:
                kept = in_pool[positions]
                holders, tf = positions[kept], counts[kept]
            if not len(holders):  # nothing holds it: the terms it is `alike`, if any hold them
                positions, counts = self._summed(
                    [self.holders(t) for t in alike(term, self.by_prefix)]
                )
                kept = in_pool[positions]
                holders, tf = positions[kept], counts[kept]
                if not len(holders):
                    continue
            weight = idf(n, len(holders))
            if weight * 44 * int(tf.max()) * total >= INT64_SAFE:  # could overflow: Python ints
                tf, scores = tf.astype(object), scores.astype(object)
            scores[holders] += term_scores(weight, tf, length[holders], total, n)
        found = np.flatnonzero(scores)
        return found, scores[found].astype(np.int64)  # each score is small; only products grow


_NONE = np.zeros(0, dtype=np.int64)
INT64_SAFE = 1 << 62  # a term's products stay below this in int64; above, Python integers


class Corpus:
    """The store's corpus of the turn's block (see the module docstring).

    `start` and `extend` are called under one lock of the caller's (one sync at a time), `start`
    and `changed` under the lock that guards the rows.
    """

    def __init__(self) -> None:
        """Empty; the first `extend` reads every row."""
        self._dropped: list[int] = []
        self._stale: set[int] = set()  # held rows written again: read anew at the rebuild
        # Every term read, for the corpus's life (a vocabulary's size; a view reads it unlocked:
        # it only grows, and an index past a view's postings is not that view's).
        self._vocabulary: dict[str, int] = {}
        # The same terms by their first and by their last PREFIX letters, each list only
        # appended to.
        self._by_prefix: dict[str, list[str]] = {}
        self._by_suffix: dict[str, list[str]] = {}
        self._reset(None)

    def _new_term(self, term: str) -> int:
        """Add `term` to the vocabulary; its index."""
        index = self._vocabulary[term] = len(self._vocabulary)
        if len(term) >= PREFIX:
            self._by_prefix.setdefault(term[:PREFIX], []).append(term)
            self._by_suffix.setdefault(term[-PREFIX:], []).append(term)
        return index

    def _reset(self, origin: int | None) -> None:
        self._generation = next(_GENERATIONS)
        self._origin = origin
        self._n = 0
        self._rows: list[Row] = []
        self._ids = np.zeros(0, dtype=np.int64)
        self._said = np.zeros(0, dtype=np.int64)
        self._competes = np.zeros(0, dtype=bool)
        self._length = np.zeros(0, dtype=np.int64)
        self._actor = np.zeros(0, dtype=np.int32)
        self._actors: dict[str, int] = {}
        self._seeded = _NOT_SEEDED
        self._postings: dict[int, tuple[array[int], array[int]]] = {}
        # Position p's terms: indexes _terms[_bounds[p]:_bounds[p + 1]], counts _counts likewise.
        self._bounds = array("q", [0])
        self._terms = array("i")
        self._counts = array("i")

    def changed(self, ids: Sequence[int]) -> None:
        """Rows with these ids were written again.

        Their words are read anew, and the corpus is rebuilt at the next `start` if it holds
        any of them.
        """
        if ids:
            self._dropped.extend(ids)

    def start(self, snapshot: Snapshot) -> int:
        """The first position whose row `extend` needs for `snapshot`."""
        if self._dropped:
            dropped, self._dropped = set(self._dropped), []
            if self._n and np.isin(self._ids[: self._n], list(dropped)).any():
                self._stale |= dropped
                self._origin = None
        if self._origin != snapshot.origin:
            return 0
        return min(self._n, len(snapshot))  # an older snapshot of the same matrix: a prefix

    def extend(self, snapshot: Snapshot, start: int, rows: Sequence[Row]) -> View:
        """Index `rows` and return the view of the snapshot.

        `rows` are the snapshot's rows from position `start` (`start`'s answer).
        """
        if start == 0 and self._n:
            held = self._held()
            self._reset(snapshot.origin)
            self._append(rows, held)
        self._origin = snapshot.origin
        if fresh := rows[self._n - start :]:
            self._append(fresh)
        return self.view(len(snapshot))

    def image(self, n: int) -> Image:
        """The terms of the first `n` positions.

        The vocabulary holds only what they hold: a forgotten row's words are not saved.
        """
        end = self._bounds[n]
        held = np.frombuffer(self._terms, dtype=np.int32)[:end]
        used, local = np.unique(held, return_inverse=True)
        words = list(self._vocabulary)
        return Image(
            vocabulary=[words[i] for i in used.tolist()],
            bounds=np.frombuffer(self._bounds, dtype=np.int64)[: n + 1].copy(),
            terms=local.astype(np.int32),
            counts=np.frombuffer(self._counts, dtype=np.int32)[:end].copy(),
            competes=self._competes[:n].copy(),
        )

    def seed(self, snapshot: Snapshot, rows: Sequence[Row], image: Image) -> None:
        """Start over as the corpus of `snapshot`, whose rows are `rows`, stemming nothing.

        Their terms are read from `image` (`Corpus.image` of the same rows).
        """
        n = len(rows)
        if len(snapshot) != n or len(image.competes) != n:
            raise ValueError("corpus image of other rows")
        self._reset(snapshot.origin)
        vocabulary = self._vocabulary
        remap = np.array(
            [
                vocabulary[term] if term in vocabulary else self._new_term(term)
                for term in image.vocabulary
            ],
            dtype=np.int32,
        )
        indexes = remap[image.terms] if len(image.terms) else image.terms
        counts = np.asarray(image.counts, dtype=np.int32)
        self._bounds = array("q", np.asarray(image.bounds, dtype=np.int64).tobytes())
        self._terms = array("i", indexes.astype(np.int32).tobytes())
        self._counts = array("i", counts.tobytes())
        total = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        self._ids = np.array([row.id for row in rows], dtype=np.int64)
        self._said = np.array([row.said_at for row in rows], dtype=np.int64)
        self._competes = np.asarray(image.competes, dtype=bool).copy()
        self._length = total[image.bounds[1:]] - total[image.bounds[:-1]]
        actors = self._actors
        self._actor = np.array(
            [actors.setdefault(row.actor, len(actors)) for row in rows], dtype=np.int32
        )
        # Postings: positions grouped by term, ascending within each (a stable sort).
        positions = np.repeat(np.arange(n, dtype=np.int32), np.diff(image.bounds))
        order = np.argsort(indexes, kind="stable")
        by_term, positions, counts = indexes[order], positions[order], counts[order]
        offsets = np.searchsorted(by_term, np.arange(len(vocabulary) + 1), side="left")
        self._seeded = _Seeded(offsets, positions, counts)
        self._rows = list(rows)
        self._n = n

    def _held(self) -> _Held:
        """What this corpus read of each row it holds (rows written again aside), for a rebuild."""
        stale, self._stale = self._stale, set()
        ids = self._ids[: self._n].tolist()
        at = {row_id: p for p, row_id in enumerate(ids) if row_id not in stale}
        return _Held(at, self._bounds, self._terms, self._counts, self._competes, self._length)

    def view(self, n: int) -> View:
        """The corpus at its first `n` positions."""
        return View(
            generation=self._generation,
            n=n,
            rows=self._rows,
            ids=self._ids[:n],
            said=self._said[:n],
            competes=self._competes[:n],
            length=self._length[:n],
            actor=self._actor[:n],
            actors=list(self._actors),
            vocabulary=self._vocabulary,
            by_prefix=self._by_prefix,
            by_suffix=self._by_suffix,
            seeded=self._seeded,
            postings=self._postings,
        )

    def _append(self, rows: Sequence[Row], held: _Held | None = None) -> None:
        first, end = self._n, self._n + len(rows)
        if end > len(self._ids):
            size = max(end, 2 * len(self._ids), 64)
            self._ids = _grown(self._ids, first, size)
            self._said = _grown(self._said, first, size)
            self._competes = _grown(self._competes, first, size)
            self._length = _grown(self._length, first, size)
            self._actor = _grown(self._actor, first, size)
        vocabulary, postings = self._vocabulary, self._postings
        indexes, counts = self._terms, self._counts
        for position, row in enumerate(rows, start=first):
            was = held.at.get(row.id) if held is not None else None
            if was is not None and held is not None:
                low, high = held.bounds[was], held.bounds[was + 1]
                indexes.extend(held.terms[low:high])
                counts.extend(held.counts[low:high])
                found, length = bool(held.competes[was]), int(held.length[was])
            else:
                found = competes(row)
                counted = count_terms(row.document) if found else Counter[str]()
                length = 0
                for term, count in counted.items():
                    index = vocabulary.get(term)
                    if index is None:
                        index = self._new_term(term)
                    indexes.append(index)
                    counts.append(count)
                    length += count
            low = self._bounds[-1]
            self._bounds.append(len(indexes))
            for index, count in zip(indexes[low:], counts[low:], strict=True):
                posting = postings.get(index)
                if posting is None:
                    posting = postings[index] = (array("i"), array("i"))
                posting[0].append(position)
                posting[1].append(count)
            self._ids[position] = row.id
            self._said[position] = row.said_at
            self._competes[position] = found
            self._length[position] = length
            self._actor[position] = self._actors.setdefault(row.actor, len(self._actors))
            self._rows.append(row)
        self._n = end

    @classmethod
    def of(cls, rows: Sequence[Row]) -> View:
        """A view of `rows` alone, positions in their order (tests, benches, `recall.rank`)."""
        corpus = cls()
        corpus._append(rows)
        return corpus.view(len(rows))


@dataclass(frozen=True, slots=True)
class _Seeded:
    """The postings of the rows a seed read, every term's in three arrays (no object per term).

    Term t's positions (ascending) and counts are at `offsets[t]:offsets[t + 1]`.
    """

    offsets: np.ndarray  # int64, by term index (+ 1); a later term index has none here
    positions: np.ndarray  # int32
    counts: np.ndarray  # int32

    def holders(self, index: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Term `index`'s positions below `n`, and its counts."""
        if index + 1 >= len(self.offsets):
            return _NONE, _NONE
        low, high = int(self.offsets[index]), int(self.offsets[index + 1])
        if low == high:
            return _NONE, _NONE
        positions = self.positions[low:high]
        cut = int(np.searchsorted(positions, n)) if positions[-1] >= n else high - low
        return (
            positions[:cut].astype(np.int64),
            self.counts[low : low + cut].astype(np.int64),
        )


_NOT_SEEDED = _Seeded(np.zeros(1, dtype=np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))


@dataclass(frozen=True, slots=True)
class _Held:
    """A corpus's terms, filter and length of each row it held, while it is rebuilt.

    By its old position (`at`, by id).
    """

    at: dict[int, int]
    bounds: array[int]
    terms: array[int]
    counts: array[int]
    competes: np.ndarray
    length: np.ndarray


def _grown[A: np.ndarray](values: A, filled: int, size: int) -> A:
    grown = np.zeros(size, dtype=values.dtype)
    grown[:filled] = values[:filled]
    return grown  # type: ignore[return-value]
