"""The turn's memory block: which memories compete, how they rank, and which wins a conflict.

For a user's turn the store offers the rows the speaker may see, each with its integer cosine
score against the utterance (`selection.scores`). The block is chosen from them in four steps,
all on integers and ids, so the same store and utterance always give the same block:

1. Only informative rows compete (`informative.is_informative`): a source that is a question,
   an acknowledgement or a command keeps its place in the store but not in the block. Authored
   and inferred memories always compete.
2. Two rankings of the competitors: by cosine score, and by lexical score (`lexical.bm25`, over
   the competitors as the corpus); in each, ties go to the newer row. They are fused by
   reciprocal rank (1 / (RRF_K + rank) summed, compared as exact fractions); a row with no word in
   common with the utterance has only its cosine term. Ties go to the newer row again. The
   lexical score reads who said a row beside its quote (`lexical_text`): people speak of
   themselves as "I" and are asked about by name.
3. Newer wins: a row among the first UPDATING that updates a row ranked above it moves just
   before that row. B updates A when A is the older row most like B (cosine, among all competing
   rows said before B) and they share SHARED_WORDS content words besides values and numbers
   ("the bus comes at 7:30 now" after "Sofia's bus leaves Carlton Road at 7:40"). Both stay,
   labelled with when each was said, and the block's heading tells the model the newer holds: no
   rule on words and vectors tells a correction from a second fact for sure. In mode 2 a
   correction has already retired what it replaced; this is the rule for sources, which no
   model has read. Being the nearest, not passing a threshold, keeps the rule free of any one
   embedding model's scale.
4. The first MAX_REFERENCES rows that fit MAX_REFERENCE_BYTES rendered, one per text: a text
   said again (case and spacing aside) is shown once, as its best-ranked row.

"Newer" is the later `said_at` (when it was said), then the larger object id (admitted later).
Each line of the block (`memory_line`) names what kind of memory it is, who said it and how long
ago, so the model can tell an old statement from a new one; never a user id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

import numpy as np

from .informative import is_informative
from .lexical import Document, bm25, document, terms
from .records import (
    KIND_EXPLICIT,
    KIND_SOURCE,
    Kind,
    Row,
)
from .references import MAX_REFERENCE_BYTES, MAX_REFERENCES

RRF_K = 60
CONSIDERED = 48
DEPTH = 2 * (RRF_K + CONSIDERED)  # see `rank`: > RRF_K + 2 CONSIDERED - 1 suffices
UPDATING = 16  # the best-ranked rows that may move before an older row they update
SHARED_WORDS = 2
# Words that say a statement replaces an earlier one ("the bus comes at 7:30 now").
_UPDATE_MARKERS_WORDS = (
    "now actually instead anymore longer changed change moved move new rescheduled switched "
    "replaced updated correction wrong"
)
# Words that carry a value an update changes: when, how many, which day.
_VALUES_WORDS = (
    "monday tuesday wednesday thursday friday saturday sunday weekend weekday week month year "
    "january february march april may june july august september october november december "
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty half "
    "quarter noon midnight morning afternoon evening night am pm oclock today tomorrow daily "
    "weekly fortnightly monthly early late earlier later every other"
)
UPDATE_MARKERS = frozenset(terms(_UPDATE_MARKERS_WORDS))
VALUES = frozenset(terms(_VALUES_WORDS))
_NOT_SUBJECT = VALUES | UPDATE_MARKERS
DAY_S = 86400
KINDS: dict[int | str, str] = {
    KIND_SOURCE: "said",
    KIND_EXPLICIT: "asked to remember",
    Kind.PARTICIPANT: "person mentioned",
    Kind.TASK: "task mentioned",
    Kind.ASSERTION: "statement",
    Kind.CORRECTION: "correction",
}


def memory_line(row: Row, *, now: int, names: Mapping[str, str]) -> str:
    """One line of the block: ``[kind; who, when] quote``. `names` maps user ids to the names
    people know them by; an unknown or removed user is "someone"."""
    who = names.get(row.actor, "someone")
    if row.said_at <= 0:
        when = "some time ago"
    else:
        days = max(0, now - row.said_at) // DAY_S
        when = "today" if days == 0 else "yesterday" if days == 1 else f"{days} days ago"
    return f"[{KINDS.get(row.kind, 'memory')}; {who}, {when}] {row.document}\n"


def newer_key(row: Row) -> tuple[int, int]:
    """Sorts the newer row first when negated: when it was said, then admission order."""
    return (row.said_at, row.id)


def shares_subject(newer: Row, older: Row) -> bool:
    """At least SHARED_WORDS content words in common, numbers, VALUES and UPDATE_MARKERS aside
    (a changed time, day or amount is what an update changes)."""
    return len(_core(newer.document) & _core(older.document)) >= SHARED_WORDS


def _core(text: str) -> set[str]:
    return {t for t in terms(text) if not t.isdigit() and t not in _NOT_SUBJECT}


def competes(row: Row) -> bool:
    """Step 1: a source competes only when it is informative."""
    return row.kind != KIND_SOURCE or is_informative(row.document)


def lexical_document(row: Row, names: Mapping[str, str]) -> Document:
    """What the lexical score reads of a row: its quote and who said it ("My goldfish is called
    Captain", said by Leo, answers "What's Leo's fish called?")."""
    return document(row.document, names.get(row.actor, ""))


def warm(rows: Sequence[Row], names: Mapping[str, str]) -> None:
    """Read every row once as a turn will (the filter, the words), so the first turn after a
    start does not pay for stemming the whole store."""
    for row in rows:
        if competes(row):
            lexical_document(row, names)


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
    """Step 2 over competing rows: the first CONSIDERED by fused rank.

    Only a row among the first DEPTH of either ranking can be among them: any other has a fused
    score below 2 / (RRF_K + DEPTH + 1), under the 1 / (RRF_K + CONSIDERED) that each of the first
    CONSIDERED by cosine has at least. So only those rows are fused, as exact fractions.
    """
    if not pool:
        return []
    lexical = bm25(query, [lexical_document(row, names) for row in pool])
    said = np.array([row.said_at for row in pool], dtype=np.int64)
    ids = np.array([row.id for row in pool], dtype=np.int64)
    fused: dict[int, Fraction] = {}
    for column, scored_only in (
        (np.array(cosine, dtype=np.int64), False),
        (np.array(lexical, dtype=np.int64), True),
    ):
        order = np.lexsort((-ids, -said, -column))[:DEPTH]  # best first, then the newer
        for place, i in enumerate(order.tolist(), start=1):
            if scored_only and column[i] == 0:  # no word in common: no lexical term
                break
            fused[i] = fused.get(i, Fraction(0)) + Fraction(1, RRF_K + place)
    best = sorted(fused, key=lambda i: (-fused[i], -said[i], -ids[i]))
    return [pool[i] for i in best[:CONSIDERED]]


# (candidates, pool) -> each candidate's integer cosine scores against each pool row: [c, p].
type Similarity = Callable[[Sequence[Row], Sequence[Row]], np.ndarray]


def nearest_older(
    candidates: Sequence[Row], pool: Sequence[Row], similar: Similarity
) -> dict[int, int]:
    """For each candidate, the id of the older row of `pool` most like it (best score, then the
    newer row), if any."""
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


def newer_first(ranked: Sequence[Row], pool: Sequence[Row], similar: Similarity) -> list[Row]:
    """Step 3: the first CONSIDERED rows; each of the first UPDATING that updates a row ranked
    above it moves just before that row (both stay: the model reads when each was said)."""
    order = list(ranked[:CONSIDERED])
    previous = nearest_older(order[:UPDATING], pool, similar)
    for newer in order[:UPDATING]:
        place = order.index(newer)
        older = next(
            (
                i
                for i, row in enumerate(order[:place])
                if previous.get(newer.id) == row.id and shares_subject(newer, row)
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
    names: Mapping[str, str] = {},
    max_refs: int = MAX_REFERENCES,
    max_bytes: int = MAX_REFERENCE_BYTES,
) -> list[Row]:
    """The rows of the turn's memory block in order (all four steps); `render` gives the bytes
    each costs as the block shows it, `similar` the scores among competing rows."""
    chosen: list[Row] = []
    texts: set[str] = set()
    budget = max_bytes
    pool, pool_cosine = _competing(rows, cosine)
    for row in newer_first(_fused(pool, pool_cosine, query, names), pool, similar):
        cost = len(render(row).encode("utf-8"))
        text = " ".join(row.document.casefold().split())
        if cost <= budget and text not in texts:
            chosen.append(row)
            texts.add(text)
            budget -= cost
            if len(chosen) == max_refs:
                break
    return chosen
