"""The turn's memory block as it was defined before the store kept a corpus.

A scan of every visible row each turn. The reference the indexed path (`memory.recall`,
`memory.corpus`) must match row for row and in order; kept here, not in the integration, and read by
the recall QA bench (`scripts/benches/bench_recall.py`) for its lexical-only baseline.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from custom_components.alto.memory import update_link
from custom_components.alto.memory.corpus import competes
from custom_components.alto.memory.lexical import (
    ALIKE,
    IDF_BITS,
    MIN_PART,
    PREFIX,
    Terms,
    language,
    log2_fixed,
    name_count,
    terms,
)
from custom_components.alto.memory.recall import (
    AGE_STEPS,
    AGE_WEIGHT,
    CONSIDERED,
    COSINE_WEIGHT,
    LEXICAL_WEIGHT,
    UPDATING,
    content_words,
    fit,
    holds_value,
    says_change,
)
from custom_components.alto.memory.records import Row
from custom_components.alto.memory.references import MAX_REFERENCE_BYTES, MAX_REFERENCES

_K1_NUM, _K1_DEN = 6, 5


@dataclass(frozen=True, slots=True)
class Document:
    """A text as the lexical score reads it: its own terms, and what is read beside it.

    `also` (who said it) is read in each query's language.
    """

    quote: Terms
    also: str

    @property
    def terms(self) -> Terms:
        """Its own terms and those read beside it, the latter as a text of their own."""
        return Counter(self.quote) + Counter(terms(self.also))


@lru_cache(maxsize=65536)
def document(text: str, also: str = "") -> Document:
    """`text` (and `also`, e.g. who said it) as one document.

    Cached, since a store's memories are read again every turn.
    """
    return Document(terms(text), also)


def _related(term: str, vocabulary: set[str], heads: bool) -> set[str]:
    """`term` and the quoted terms it begins or that begin it, both PREFIX letters or more.

    With `heads`, also those it ends or that end it, at least MIN_PART letters longer.
    """
    if len(term) < PREFIX or term.isdigit():
        return {term}
    return {term} | {
        word
        for word in vocabulary
        if len(word) >= PREFIX
        and (
            word.startswith(term)
            or term.startswith(word)
            or (heads and word.endswith(term) and len(word) >= len(term) + MIN_PART)
            or (heads and term.endswith(word) and len(term) >= len(word) + MIN_PART)
        )
    }


def bm25(query: str, documents: Sequence[Document]) -> list[int]:
    """Each document's BM25 score for `query` (fixed point, IDF_BITS fraction bits), in order.

    The statistics (document count, frequencies, average length) are those of `documents`. A
    query term counts its related quoted terms (compound heads too in a language that writes
    them closed); what is read beside a quote, in the query's language, only as written (a
    name's bare genitive "s" aside: `name_count`); a term none of those meet, the quoted terms
    that share its first ALIKE letters.
    """
    n = len(documents)
    if n == 0:
        return []
    lang = language(query)
    also = [terms(d.also, lang.code) for d in documents]
    lengths = [
        sum(d.quote.values()) + sum(a.values()) for d, a in zip(documents, also, strict=True)
    ]
    total = sum(lengths) or 1
    vocabulary = {word for d in documents for word in d.quote}
    scores = [0] * n
    for term in terms(query):
        group = _related(term, vocabulary, lang.compounds)
        counts = [
            sum(d.quote.get(word, 0) for word in group) + name_count(term, a, lang)
            for d, a in zip(documents, also, strict=True)
        ]
        holders = [i for i, count in enumerate(counts) if count]
        if not holders and len(term) >= ALIKE and not term.isdigit():
            group = {w for w in vocabulary if w != term and w[:ALIKE] == term[:ALIKE]}
            counts = [sum(d.quote.get(word, 0) for word in group) for d in documents]
            holders = [i for i, count in enumerate(counts) if count]
        if not holders:
            continue
        # idf = log2(1 + (n - df + 1/2) / (df + 1/2)) = log2((2n + 2) / (2 df + 1))
        weight = log2_fixed(Fraction(2 * n + 2, 2 * len(holders) + 1))
        for i in holders:
            tf = counts[i]
            # tf (k1 + 1) / (tf + k1 (1 - b + b length / avg)), times 20 total top and bottom
            top = 4 * (_K1_NUM + _K1_DEN) * tf * total
            bottom = 20 * total * tf + _K1_NUM * (total + 3 * lengths[i] * n)
            scores[i] += weight * top // bottom
    return scores


def lexical_document(row: Row, names: Mapping[str, str]) -> Document:
    """What the lexical score reads of a row.

    Its quote and who said it ("My goldfish is called Captain", said by Leo, answers "What's
    Leo's fish called?").
    """
    return document(row.document, names.get(row.actor, ""))


def rank(
    rows: Sequence[Row], cosine: Sequence[int], query: str, names: Mapping[str, str] = {}
) -> list[Row]:
    """Steps 1 and 2: the first CONSIDERED competing rows, best first."""
    return _fused(*_competing(rows, cosine), query, names)


def _competing(rows: Sequence[Row], cosine: Sequence[int]) -> tuple[list[Row], list[int]]:
    """Step 1: the rows that compete, and their cosine scores."""
    pairs = [(row, score) for row, score in zip(rows, cosine, strict=True) if competes(row)]
    return [row for row, _ in pairs], [score for _, score in pairs]


def _fused(
    pool: Sequence[Row], cosine: Sequence[int], query: str, names: Mapping[str, str]
) -> list[Row]:
    """Step 2 over competing rows: the first CONSIDERED by fused score, as exact fractions.

    COSINE_WEIGHT times the cosine scaled from the pool's lowest to its highest, plus
    LEXICAL_WEIGHT times BM25 over the pool's highest (a span of 0 read as 1), plus AGE_WEIGHT
    times when it was said between the pool's first and last known time, in whole AGE_STEPS
    (an unknown time, 0, as the first); ties to the newer.
    """
    if not pool:
        return []
    lexical = bm25(query, [lexical_document(row, names) for row in pool])
    low, span = min(cosine), max(max(cosine) - min(cosine), 1)
    top = max(*lexical, 1)
    known = [row.said_at for row in pool if row.said_at > 0]
    first, last = (min(known), max(known)) if known else (0, 0)
    ages = [
        (row.said_at - first) * AGE_STEPS // max(last - first, 1) if row.said_at > 0 else 0
        for row in pool
    ]
    fused = [
        COSINE_WEIGHT * Fraction(c - low, span)
        + LEXICAL_WEIGHT * Fraction(b, top)
        + AGE_WEIGHT * Fraction(age, AGE_STEPS)
        for c, b, age in zip(cosine, lexical, ages, strict=True)
    ]
    best = sorted(range(len(pool)), key=lambda i: (-fused[i], -pool[i].said_at, -pool[i].id))
    return [pool[i] for i in best[:CONSIDERED]]


# (candidates, pool) -> each candidate's integer cosine scores against each pool row: [c, p].
type Similarity = Callable[[Sequence[Row], Sequence[Row]], np.ndarray]


def nearest_older(
    candidates: Sequence[Row], pool: Sequence[Row], similar: Similarity
) -> dict[int, int]:
    """For each candidate, the id of the older row of `pool` most like it, if any.

    The best score wins, then the newer row.
    """
    if not candidates or not pool:
        return {}
    said = np.array([row.said_at for row in pool], dtype=np.int64)
    ids = np.array([row.id for row in pool], dtype=np.int64)
    found: dict[int, int] = {}
    for row, row_scores in zip(candidates, np.asarray(similar(candidates, pool)), strict=True):
        older = np.flatnonzero((said < row.said_at) | ((said == row.said_at) & (ids < row.id)))
        if len(older):
            best = older[np.lexsort((ids[older], said[older], row_scores[older]))[-1]]
            found[row.id] = int(ids[best])
    return found


def newer_first(
    ranked: Sequence[Row],
    pool: Sequence[Row],
    pool_cosine: Sequence[int],
    similar: Similarity,
    *,
    link: update_link.Link = update_link.PLAIN,
    linked: Similarity | None = None,
) -> list[Row]:
    """Step 3: the first CONSIDERED rows.

    Each of the first UPDATING that updates a row ranked above it moves just before that row
    (both stay: the model reads when each was said). `pool_cosine` holds the question's scores
    of the pool's rows, `linked` the newer rows' scores through `link`'s map (None: `similar`);
    whether each is the other's nearest reads `similar`.
    """
    question = {row.id: score for row, score in zip(pool, pool_cosine, strict=True)}
    spread = float(np.std(np.array(pool_cosine, dtype=np.int64))) if pool else 0.0
    order = list(ranked[:CONSIDERED])
    through = linked or similar
    previous = nearest_older(order[:UPDATING], pool, through)
    held = Counter(t for row in pool for t in set(terms(row.document)))

    def weight(term: str) -> int:  # the term's IDF with the pool's quotes as the corpus
        return log2_fixed(Fraction(2 * len(pool) + 2, 2 * held[term] + 1))

    def nearest_newer(older: Row, newer: Row) -> bool:  # no later row more like `older`
        later = [r for r in pool if (r.said_at, r.id) > (older.said_at, older.id)]
        scores = np.asarray(similar([older], later))[0]
        return bool(scores[later.index(newer)] == scores.max())

    fused_place = {row.id: place for place, row in enumerate(order)}  # before any row moves

    def updates(newer: Row, older: Row) -> bool:
        common = content_words(newer.document) & content_words(older.document)
        both = holds_value(newer) and holds_value(older)
        if not (both or says_change(newer) or common):
            return False
        mutual = nearest_newer(older, newer)
        others = [r for r in pool if r.id != newer.id]
        scores = [int(x) for x in np.asarray(through([newer], others))[0]]
        score = scores[others.index(older)]
        pair = update_link.Pair(
            standing=update_link.standing(
                score, len(scores), sum(scores), sum(x * x for x in scores)
            ),
            mutual=mutual,
            shared=sum(map(weight, common)) / (1 << IDF_BITS),
            change=says_change(newer),
            values=both,
        )
        return link.moves(
            update_link.Move(
                pair,
                apart=update_link.apart(question[older.id], question[newer.id], spread),
                adjacent=fused_place[older.id] == fused_place[newer.id] - 1,
            )
        )

    for newer in order[:UPDATING]:
        place = order.index(newer)
        older = next(
            (
                i
                for i, row in enumerate(order[:place])
                if previous.get(newer.id) == row.id and updates(newer, row)
            ),
            None,
        )
        if older is not None:
            order.insert(older, order.pop(place))
    return order


def turn_block(
    rows: Sequence[Row],
    cosine: Sequence[int],
    query: str,
    render: Callable[[Row], str],
    *,
    similar: Similarity,
    link: update_link.Link = update_link.PLAIN,
    linked: Similarity | None = None,
    names: Mapping[str, str] = {},
    max_refs: int = MAX_REFERENCES,
    max_bytes: int = MAX_REFERENCE_BYTES,
) -> list[Row]:
    """The rows of the turn's memory block in order (all four steps).

    `render` gives the bytes each costs as the block shows it, `similar` the scores among
    competing rows, `link` and `linked` how step 3 links them (`newer_first`).
    """
    pool, pool_cosine = _competing(rows, cosine)
    ordered = newer_first(
        _fused(pool, pool_cosine, query, names),
        pool,
        pool_cosine,
        similar,
        link=link,
        linked=linked,
    )
    return fit(ordered, render, max_refs, max_bytes)
