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
- postings: for each stemmed term, the competing positions whose quote holds it, with the count.

A matrix only appends until it is compacted (a forget, a repair), which gives it a new origin:
`Corpus.start` says from which position the rows are needed (0 after a compaction or a change of
an indexed row), and `Corpus.extend` reads them, stemming only rows it has not read before (their
words are kept by id). A `View` is the corpus at one length: later appends land past it and a
rebuild makes new containers, so a turn reads it without a lock.
"""

from __future__ import annotations

import itertools
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .informative import is_informative
from .lexical import Terms, idf, term_scores, terms
from .matrix import Snapshot
from .records import KIND_SOURCE, Row


def competes(row: Row) -> bool:
    """Step 1 of `recall`: a source competes only when it is informative."""
    return row.kind != KIND_SOURCE or is_informative(row.document)


def warm(rows: Iterable[Row]) -> None:
    """Read rows' words and the filter once (cached by text), so the turn that indexes them
    does not: the store calls it in the writer's thread for the rows it writes."""
    for row in rows:
        if competes(row):
            terms(row.document)


@dataclass(frozen=True, slots=True)
class _Words:
    """What the corpus keeps of one row's quote, by id, across rebuilds."""

    terms: Terms
    length: int
    competes: bool


def _words_of(row: Row) -> _Words:
    found = competes(row)
    counted = terms(row.document) if found else {}
    return _Words(counted, sum(counted.values()), found)


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
    postings: Mapping[str, tuple[array[int], array[int]]]  # term -> positions, counts

    def holders(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The positions below `n` whose quote holds `term`, and its count in each."""
        found = self.postings.get(term)
        if found is None:
            return _NONE, _NONE
        positions, counts = found
        cut = bisect_left(positions, self.n)
        return (
            np.frombuffer(positions[:cut], dtype=np.int32).astype(np.int64),
            np.frombuffer(counts[:cut], dtype=np.int32).astype(np.int64),
        )

    def lexical(
        self, pool: np.ndarray, query: str, names: Mapping[str, str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Okapi BM25 (`lexical.idf`, `lexical.term_scores`) of `query` over the rows at `pool`,
        each read with its speaker's name, the pool as the corpus: the positions that score
        above 0, and their scores."""
        in_pool = np.zeros(self.n, dtype=bool)
        in_pool[pool] = True
        spoken = [terms(names.get(actor, "")) for actor in self.actors]
        length = self.length
        if any(spoken):
            extra = np.array([sum(t.values()) for t in spoken], dtype=np.int64)
            length = length + extra[self.actor]
        n = len(pool)
        total = int(length[pool].sum()) or 1
        scores: np.ndarray = np.zeros(self.n, dtype=np.int64)
        for term in terms(query):
            positions, counts = self.holders(term)
            named = [code for code, said in enumerate(spoken) if term in said]
            if named:
                tf = np.zeros(self.n, dtype=np.int64)
                tf[positions] = counts
                for code in named:
                    tf[self.actor == code] += spoken[code][term]
                holders = np.flatnonzero(in_pool & (tf > 0))
                tf = tf[holders]
            else:
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
    """The store's corpus of the turn's block (see the module docstring). `start` and `extend`
    are called under one lock of the caller's (one sync at a time), `start` and `changed` under
    the lock that guards the rows."""

    def __init__(self) -> None:
        """Empty; the first `extend` reads every row."""
        self._words: dict[int, _Words] = {}
        self._dropped: list[int] = []
        self._reset(None)

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
        self._postings: dict[str, tuple[array[int], array[int]]] = {}

    def changed(self, ids: Sequence[int]) -> None:
        """Rows with these ids were written again: their words are read anew, and the corpus
        is rebuilt at the next `start` if it holds any of them."""
        if ids:
            self._dropped.extend(ids)

    def start(self, snapshot: Snapshot) -> int:
        """The first position whose row `extend` needs for `snapshot`."""
        if self._dropped:
            dropped, self._dropped = set(self._dropped), []
            for row_id in dropped:
                self._words.pop(row_id, None)
            if self._n and np.isin(self._ids[: self._n], list(dropped)).any():
                self._origin = None
        if self._origin != snapshot.origin:
            return 0
        return min(self._n, len(snapshot))  # an older snapshot of the same matrix: a prefix

    def extend(self, snapshot: Snapshot, start: int, rows: Sequence[Row]) -> View:
        """Index `rows`, the snapshot's rows from position `start` (`start`'s answer), and
        return the view of the snapshot."""
        if start == 0 and self._n:
            kept = {row.id for row in rows}
            self._words = {i: w for i, w in self._words.items() if i in kept}
            self._reset(snapshot.origin)
        self._origin = snapshot.origin
        if fresh := rows[self._n - start :]:
            self._append(fresh)
        return self.view(len(snapshot))

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
            postings=self._postings,
        )

    def _append(self, rows: Sequence[Row]) -> None:
        first, end = self._n, self._n + len(rows)
        if end > len(self._ids):
            size = max(end, 2 * len(self._ids), 64)
            self._ids = _grown(self._ids, first, size)
            self._said = _grown(self._said, first, size)
            self._competes = _grown(self._competes, first, size)
            self._length = _grown(self._length, first, size)
            self._actor = _grown(self._actor, first, size)
        for position, row in enumerate(rows, start=first):
            words = self._words.get(row.id)
            if words is None:
                words = self._words[row.id] = _words_of(row)
            self._ids[position] = row.id
            self._said[position] = row.said_at
            self._competes[position] = words.competes
            self._length[position] = words.length
            self._actor[position] = self._actors.setdefault(row.actor, len(self._actors))
            for term, count in words.terms.items():
                found = self._postings.get(term)
                if found is None:
                    found = self._postings[term] = (array("i"), array("i"))
                found[0].append(position)
                found[1].append(count)
            self._rows.append(row)
        self._n = end

    @classmethod
    def of(cls, rows: Sequence[Row]) -> View:
        """A view of `rows` alone, positions in their order (tests, benches, `recall.rank`)."""
        corpus = cls()
        corpus._append(rows)
        return corpus.view(len(rows))


def _grown[A: np.ndarray](values: A, filled: int, size: int) -> A:
    grown = np.zeros(size, dtype=values.dtype)
    grown[:filled] = values[:filled]
    return grown  # type: ignore[return-value]
