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
4. The first MAX_REFERENCES rows that fit MAX_REFERENCE_BYTES rendered.

"Newer" is the later `said_at` (when it was said), then the larger object id (admitted later).
Each line of the block (`memory_line`) names what kind of memory it is, who said it and how long
ago, so the model can tell an old statement from a new one; never a user id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

from .informative import is_informative
from .lexical import bm25, terms
from .records import (
    KIND_ASSERTION,
    KIND_CORRECTION,
    KIND_EXPLICIT,
    KIND_PARTICIPANT,
    KIND_SOURCE,
    KIND_TASK,
    Row,
)
from .references import MAX_REFERENCE_BYTES, MAX_REFERENCES

RRF_K = 60
CONSIDERED = 48
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
DAY_S = 86400
KINDS: dict[int | str, str] = {
    KIND_SOURCE: "said",
    KIND_EXPLICIT: "asked to remember",
    KIND_PARTICIPANT: "person mentioned",
    KIND_TASK: "task mentioned",
    KIND_ASSERTION: "statement",
    KIND_CORRECTION: "correction",
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
    return {t for t in terms(text) if not t.isdigit() and t not in VALUES | UPDATE_MARKERS}


def competes(row: Row) -> bool:
    """Step 1: a source competes only when it is informative."""
    return row.kind != KIND_SOURCE or is_informative(row.document)


def lexical_text(row: Row, names: Mapping[str, str]) -> str:
    """What the lexical score reads of a row: its quote and who said it ("My goldfish is called
    Captain", said by Leo, answers "What's Leo's fish called?")."""
    name = names.get(row.actor)
    return f"{row.document} {name}" if name else row.document


def rank(
    rows: Sequence[Row], cosine: Sequence[int], query: str, names: Mapping[str, str] = {}
) -> list[Row]:
    """Steps 1 and 2: the competing rows, best first."""
    pairs = [(row, score) for row, score in zip(rows, cosine, strict=True) if competes(row)]
    if not pairs:
        return []
    lexical = bm25(query, [lexical_text(row, names) for row, _ in pairs])
    fused: dict[int, Fraction] = {}
    for column in ([s for _, s in pairs], lexical):
        order = sorted(
            range(len(pairs)),
            key=lambda i: (-column[i], *(-v for v in newer_key(pairs[i][0]))),
        )
        for place, i in enumerate(order, start=1):
            if column is lexical and lexical[i] == 0:
                break
            row_id = pairs[i][0].id
            fused[row_id] = fused.get(row_id, Fraction(0)) + Fraction(1, RRF_K + place)
    ranked = sorted(
        (row for row, _ in pairs),
        key=lambda row: (-fused[row.id], *(-v for v in newer_key(row))),
    )
    return ranked


# (candidates, pool) -> each candidate's integer cosine scores against each pool row, in order.
type Similarity = Callable[[Sequence[Row], Sequence[Row]], Sequence[Sequence[int]]]


def nearest_older(
    candidates: Sequence[Row], pool: Sequence[Row], similar: Similarity
) -> dict[int, int]:
    """For each candidate, the id of the older row of `pool` most like it (best score, then the
    newer row), if any."""
    found: dict[int, int] = {}
    for row, row_scores in zip(candidates, similar(candidates, pool), strict=True):
        older = [
            (score, newer_key(other), other.id)
            for other, score in zip(pool, row_scores, strict=True)
            if newer_key(other) < newer_key(row)
        ]
        if older:
            found[row.id] = max(older)[2]
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
    budget = max_bytes
    pool = [row for row in rows if competes(row)]
    for row in newer_first(rank(rows, cosine, query, names), pool, similar):
        cost = len(render(row).encode("utf-8"))
        if cost <= budget:
            chosen.append(row)
            budget -= cost
            if len(chosen) == max_refs:
                break
    return chosen
