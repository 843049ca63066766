"""The turn's memory block: which memories compete, how they rank, and which wins a conflict.

For a user's turn the store offers the rows the speaker may see, each with its integer cosine
score against the utterance (`selection.scores`). The block is chosen from them in four steps,
all on integers and ids, so the same store and utterance always give the same block:

1. Only informative rows compete (`informative.is_informative`): a source that is a question,
   an acknowledgement or a command keeps its place in the store but not in the block. Authored
   and inferred memories always compete. The store leaves out the source row of a turn one of
   whose statements a correction replaced (`MemoryState.retired`): its text still says what
   was replaced, and its other statements compete through their own rows.
2. Three parts of each competitor's score: its cosine score, its lexical score (Okapi BM25 in
   integers, `lexical.term_scores`, over the competitors as the corpus), and its age (when it
   was said). Each is scaled to the pool (cosine from the pool's lowest to its highest, BM25
   from 0 to the pool's highest, the age from the pool's first said time to its last, in
   AGE_STEPS) and they are added, COSINE_WEIGHT to LEXICAL_WEIGHT to AGE_WEIGHT, a convex
   combination compared exactly as integers; ties go to the newer row. Scores, not ranks, are
   fused: a rare asked word ("coat") that one row holds lifts it by how far it stands out,
   where a rank fusion would give it only the place a row holding a common name also gets. The
   lexical score reads who said a row beside its quote, as the row's embedding does
   (`pipeline.said_by`): people speak of themselves as "I" and are asked about by name. The
   age part decides between rows the question scores almost alike: of two such, the newer is
   the likelier answer, for what a household says again it says because it changed.
3. Newer wins: a row among the first UPDATING that updates a row ranked above it moves just
   before that row. B may update A when A is the older row most like B (cosine, among all
   competing rows said before B, B's vector through the model's learnt link map:
   `update_link.Link`) and words could link them (a value in both: a number, a day, a time; a
   word of change in B: "now", "moved", "jetzt"; or a content word both hold, values aside).
   Whether B moves is weighed from two things (`update_link.Link.moves`, learnt from written
   households and their questions): how much the pair looks like one thing said twice (the
   update link's odds: how far A stands out among B's scores against the pool, whether B is
   also the newer row most like A, how rare their shared words are, B's word of change, a
   value in both), and how well the question tells them apart (how far its cosine puts A
   above B in the spread of its scores over the pool, whether it ranks them next to each
   other). A correction is often said as a plain fact ("Collection is Thursday mornings." after
   "The recycling goes out on Monday evenings."), and a question that cannot tell it from what
   it replaces is asking after both; one that ranks A well above B is asking after A, and B,
   a second fact of one kind ("My birthday is the 3rd" after "Grandma's birthday is the
   14th"), stays below it. Both stay, labelled with when each was said, and the block's heading
   tells the model the newer holds: nothing read from words and vectors tells a correction from
   a second fact of one kind for sure. In mode 2 a correction has already retired what it
   replaced; this is the rule for sources, which no model has read. Standings in their own
   spreads, being the nearest and being ranked next keep the rule free of any one embedding
   model's scale.
4. The first MAX_REFERENCES rows that fit MAX_REFERENCE_BYTES rendered, one per text: a text
   said again (case and spacing aside) is shown once, as its best-ranked row.

The rows come as a `corpus.View` (what the store keeps of each row, by position), so a turn's
lexical work follows the rows that hold the query's words, not the size of the store.

"Newer" is the later `said_at` (when it was said), then the larger object id (admitted later).
Each line of the block (`memory_line`) names what kind of memory it is, who said it and how long
ago, so the model can tell an old statement from a new one; never a user id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import update_link
from .corpus import INT64_SAFE, Corpus, View
from .languages import LANGUAGES
from .lexical import IDF_BITS, idf, stems, terms
from .records import (
    KIND_EXPLICIT,
    KIND_SOURCE,
    Kind,
    Row,
)
from .references import MAX_REFERENCE_BYTES, MAX_REFERENCES

# The fused score's parts. Cosine carries meaning across paraphrase; the lexical part lifts a
# rare asked word ("teacher" in "Who is Sofia's teacher?") that cosine alone ranks below a
# question on the same topic. A heavier lexical part ranks by shared words over meaning, which
# paraphrased questions lack. How the ratio was measured: docs/memory.md, "The weight".
COSINE_WEIGHT = 32
LEXICAL_WEIGHT = 1
# The age part: as much as the lexical part, a thirty-fourth of the score, so it only decides
# between rows the question scores almost alike (docs/memory.md, "A memory's age"). It is read
# in AGE_STEPS steps between the pool's first and last said time, which keeps the integers
# small whatever the store's span.
AGE_WEIGHT = 1
AGE_STEPS = 1024
CONSIDERED = 48
UPDATING = 16  # the best-ranked rows that may move before an older row they update
# Words that say a statement changes an earlier one ("the bus comes at 7:30 now", "jetzt",
# "inmiddels"), and words that carry a value an update changes (when, how many, which day): every
# language's (`languages`), each stemmed in its own.
UPDATE_MARKERS = frozenset(t for lang in LANGUAGES.values() for t in stems(lang, lang.changes))
VALUES = frozenset(t for lang in LANGUAGES.values() for t in stems(lang, lang.values))
# Where compounds are written closed a value also opens a word ("dinsdagavond", "Mittwochabend"):
# the values long enough not to open unrelated words by chance (days, months, "nachmittag").
VALUE_PART = 6
COMPOUNDED_VALUES = tuple(
    sorted(
        t
        for lang in LANGUAGES.values()
        if lang.compounds
        for t in stems(lang, lang.values)
        if len(t) >= VALUE_PART
    )
)
_NOT_SUBJECT = VALUES | UPDATE_MARKERS
_DIGIT = re.compile(r"\d")
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
    """One line of the block: ``[kind; who, when] quote``.

    `names` maps user ids to the names people know them by; an unknown or removed user is
    "someone".
    """
    who = names.get(row.actor, "someone")
    if row.said_at <= 0:
        when = "some time ago"
    else:
        days = max(0, now - row.said_at) // DAY_S
        when = "today" if days == 0 else "yesterday" if days == 1 else f"{days} days ago"
    return f"[{KINDS.get(row.kind, 'memory')}; {who}, {when}] {row.document}\n"


def holds_value(row: Row) -> bool:
    """Whether the row's quote holds a value an update changes (`holds_text_value`)."""
    return holds_text_value(row.document)


def holds_text_value(text: str) -> bool:
    """Whether `text` holds a value an update changes.

    A digit, a VALUES word, or a word a COMPOUNDED_VALUES word opens.
    """
    return _DIGIT.search(text) is not None or _has_value_word(text)


@lru_cache(maxsize=4096)
def _has_value_word(text: str) -> bool:
    said = terms(text)
    return not VALUES.isdisjoint(said) or any(term.startswith(COMPOUNDED_VALUES) for term in said)


def says_change(row: Row) -> bool:
    """Whether the row's quote holds a word of change (UPDATE_MARKERS)."""
    return not UPDATE_MARKERS.isdisjoint(terms(row.document))


def _nearest_newer(
    view: View, older: int, newer: int, in_pool: np.ndarray, likeness: Likeness, *, memo: Memo
) -> bool:
    """Whether no pool row said after `older` is more like it than `newer` (ties count)."""
    pair = np.asarray(likeness(np.array([older], np.int64), np.array([newer], np.int64)))
    return int(pair[0, 0]) == _best_newer(view, older, in_pool, likeness, memo)


def _best_newer(view: View, older: int, in_pool: np.ndarray, likeness: Likeness, memo: Memo) -> int:
    """The highest score against `older` of a pool row said after it (`memo` keeps it).

    As in `nearest_older`: within a generation only the positions past those seen need scoring,
    unless the best row seen has left the pool.
    """
    n = view.n
    held = memo.newer.get(older)
    if held is None or held[0] > n or (held[1] >= 0 and not in_pool[held[1]]):
        held = (0, -1, 0)
    first, best, score = held
    if first < n:
        said, ids = view.said[first:n], view.ids[first:n]
        when, row_id = view.said[older], view.ids[older]
        later = first + np.flatnonzero(
            in_pool[first:n] & ((said > when) | ((said == when) & (ids > row_id)))
        )
        if len(later):
            among = None if first == 0 else np.arange(first, n)  # the whole matrix's fast path
            found = np.asarray(likeness(np.array([older], np.int64), among))[0][later - first]
            top = int(found.argmax())
            if best < 0 or int(found[top]) > score:
                best, score = int(later[top]), int(found[top])
    memo.newer[older] = (n, best, score)
    return score


@lru_cache(maxsize=4096)
def content_words(text: str) -> frozenset[str]:
    """The terms of `text` an update keeps: numbers, VALUES and UPDATE_MARKERS aside."""
    return frozenset(t for t in terms(text) if not t.isdigit() and t not in _NOT_SUBJECT)


# (positions, among) -> the integer cosine scores of the rows at `positions` against the rows
# at `among` (None: every position of the corpus): [c, len(among)] or [c, n].
type Likeness = Callable[[np.ndarray, np.ndarray | None], np.ndarray]


class Memo:
    """What step 3 found for one viewer, kept from turn to turn.

    Each candidate's nearest older row (`Nearest`), and the best score of a newer row against each
    row a candidate may update.

    Within one corpus generation (`corpus.View`) a row's position, words, said time and codes do
    not change, rows only join at new positions, and the rows a viewer may see only leave (a
    row superseded); a row written again or forgotten starts a new generation. So while no row
    seen has left the pool, what was found over the first `seen` positions still holds, and only
    the positions past `seen` need scoring: a turn scores every row only for candidates it meets
    first. The same holds for the newer rows most like a row.
    """

    def __init__(self, generation: int) -> None:
        """Empty, for views of `generation`."""
        self.generation = generation
        self.found: dict[int, Nearest] = {}  # by candidate position
        # older position -> (positions seen, best newer position or -1, its score)
        self.newer: dict[int, tuple[int, int, int]] = {}


@dataclass(frozen=True, slots=True)
class Nearest:
    """A candidate's older pool row most like it, over the pool's first `seen` positions.

    `best` is its position (-1: none) and `score` its score; `count`, `total` and `squares` are
    the number, sum and sum of squares of the candidate's scores against every other pool row
    among them (`update_link.standing` reads how far `score` stands out).
    """

    seen: int
    best: int
    score: int
    count: int
    total: int
    squares: int


def _sums(
    candidate: int, scores: np.ndarray, in_pool: np.ndarray, first: int
) -> tuple[int, int, int]:
    """The count, sum and sum of squares of `scores` at pool positions other than `candidate`.

    `scores` and `in_pool` start at position `first`. Exact: Python integers where int64 could
    overflow, as in `_fused`.
    """
    kept = in_pool.copy()
    if first <= candidate < first + len(kept):
        kept[candidate - first] = False
    found = scores[kept].astype(np.int64)
    if len(found) and int(np.abs(found).max()) ** 2 * len(found) >= INT64_SAFE:
        found = found.astype(object)
    return len(found), int(found.sum()), int((found * found).sum())


def rank(
    rows: Sequence[Row], cosine: Sequence[int], query: str, names: Mapping[str, str] = {}
) -> list[Row]:
    """Steps 1 and 2 over `rows` alone: the first CONSIDERED competing rows, best first."""
    view = Corpus.of(rows)
    pool = np.flatnonzero(view.competes)
    return [view.rows[p] for p in _fused(view, pool, np.array(cosine, np.int64), query, names)]


def _best(positions: np.ndarray, column: np.ndarray, view: View, k: int) -> list[int]:
    """The first `k` of `positions` by `column` (highest first), ties to the newer row."""
    if len(positions) > k:  # only values at least the k-th highest can be among them
        kth = np.partition(column, len(column) - k)[len(column) - k]
        kept = column >= kth
        positions, column = positions[kept], column[kept]
    order = np.lexsort((-view.ids[positions], -view.said[positions], -column))[:k]
    return positions[order].tolist()  # type: ignore[no-any-return]


def _fused(
    view: View, pool: np.ndarray, cosine: np.ndarray, query: str, names: Mapping[str, str]
) -> list[int]:
    """Step 2: the first CONSIDERED of the competing positions `pool` by fused score.

    `cosine` holds their scores by position. With c' = (c - lowest) / (highest - lowest),
    b' = b / highest (a span of 0 read as 1) and a' = `ages` / AGE_STEPS, the fused score is
    COSINE_WEIGHT c' + LEXICAL_WEIGHT b' + AGE_WEIGHT a'; times the product of the two spans and
    AGE_STEPS it is the integer compared here.
    """
    if not len(pool):
        return []
    close = cosine[pool]
    low = int(close.min())
    span = max(int(close.max()) - low, 1)
    lexical = np.zeros(view.n, dtype=np.int64)
    found, found_scores = view.lexical(pool, query, names)  # only rows with a word in common
    lexical[found] = found_scores
    words = lexical[pool]
    top = max(int(words.max()), 1)
    age = ages(view.said[pool])
    if (COSINE_WEIGHT + LEXICAL_WEIGHT + AGE_WEIGHT) * span * top * AGE_STEPS >= INT64_SAFE:
        close, words, age = close.astype(object), words.astype(object), age.astype(object)
    fused = (
        COSINE_WEIGHT * (close - low) * top * AGE_STEPS
        + LEXICAL_WEIGHT * words * span * AGE_STEPS
        + AGE_WEIGHT * age * span * top
    )
    return _best(pool, np.asarray(fused), view, CONSIDERED)


def ages(said: np.ndarray) -> np.ndarray:
    """Each of the `said` times' place between the first and the last known, 0 to AGE_STEPS.

    Rounded down; a time not known (0, rows written before it was recorded) reads as the first.
    """
    known = said > 0
    if not known.any():
        return np.zeros(len(said), dtype=np.int64)
    first = int(said[known].min())
    length = max(int(said[known].max()) - first, 1)
    return np.where(known, (said - first) * AGE_STEPS // length, 0).astype(np.int64)


def nearest_older(
    view: View,
    candidates: Sequence[int],
    in_pool: np.ndarray,
    likeness: Likeness,
    memo: Memo | None = None,
) -> dict[int, int]:
    """For each candidate position, the position of the older pool row most like it.

    `in_pool` marks the pool's positions (a bool mask of `view.n`). The best score wins, then
    the newer row; a candidate without an older row has none. `memo` keeps what was found
    (`Nearest`) for step 3 and the next turn.
    """
    if not candidates or not in_pool.any():
        return {}
    if memo is None or memo.generation != view.generation:
        memo = Memo(view.generation)
    n = view.n
    fresh: list[int] = []
    since: dict[int, Nearest] = {}
    found: dict[int, Nearest] = {}
    for candidate in candidates:
        held = memo.found.get(candidate)  # read once: another turn may write it meanwhile
        if held is None or held.seen > n or held.count != _others(in_pool, held.seen, candidate):
            fresh.append(candidate)  # new, or a row it counted has left the pool
        elif held.seen < n:
            since[candidate] = held
        else:
            found[candidate] = held
    if fresh:
        alike = np.asarray(likeness(np.array(fresh, dtype=np.int64), None))
        for candidate, scores in zip(fresh, alike, strict=True):
            best, score = _most_alike(view, candidate, scores, in_pool, 0)
            found[candidate] = Nearest(n, best, score, *_sums(candidate, scores, in_pool, 0))
    if since:
        first = min(held.seen for held in since.values())
        positions = np.array(list(since), dtype=np.int64)
        alike = np.asarray(likeness(positions, np.arange(first, n)))
        for (candidate, held), scores in zip(since.items(), alike, strict=True):
            new = scores[held.seen - first :]
            best, score = _most_alike(view, candidate, new, in_pool[held.seen :], held.seen)
            if best < 0 or (
                held.best >= 0 and _key(view, held.best, held.score) > _key(view, best, score)
            ):
                best, score = held.best, held.score
            count, total, squares = _sums(candidate, new, in_pool[held.seen : n], held.seen)
            found[candidate] = Nearest(
                n, best, score, held.count + count, held.total + total, held.squares + squares
            )
    memo.found.update(found)
    return {c: held.best for c, held in found.items() if held.best >= 0}


def _others(in_pool: np.ndarray, seen: int, candidate: int) -> int:
    """How many pool rows other than `candidate` lie among the first `seen` positions."""
    inside = candidate < seen and bool(in_pool[candidate])
    return int(np.count_nonzero(in_pool[:seen])) - inside


def _key(view: View, position: int, score: int) -> tuple[int, int, int]:
    return score, int(view.said[position]), int(view.ids[position])


def _most_alike(
    view: View, candidate: int, scores: np.ndarray, in_pool: np.ndarray, first: int
) -> tuple[int, int]:
    """The older pool row most like `candidate` among positions `first` onwards.

    `scores` and `in_pool` start there. Its position and score, or (-1, 0).
    """
    said = view.said[first : first + len(scores)]
    ids = view.ids[first : first + len(scores)]
    when, row_id = view.said[candidate], view.ids[candidate]
    older = np.flatnonzero(in_pool & ((said < when) | ((said == when) & (ids < row_id))))
    if not len(older):
        return -1, 0
    older = older[scores[older] == scores[older].max()]
    older = older[said[older] == said[older].max()]
    best = int(older[ids[older].argmax()])
    return first + best, int(scores[best])


def newer_first(
    view: View,
    ranked: Sequence[int],
    pool: np.ndarray,
    likeness: Likeness,
    memo: Memo | None = None,
    *,
    cosine: np.ndarray,
    link: update_link.Link = update_link.PLAIN,
    linking: Likeness | None = None,
) -> list[Row]:
    """Step 3: the first CONSIDERED ranked positions' rows.

    Each of the first UPDATING that updates a row ranked above it moves just before that row
    (both stay: the model reads when each was said). `cosine` holds the question's integer
    scores by position, `link` is the embedding model's (`update_link.link_for`), `linking` the
    scores of newer rows through its map against rows (None: `likeness`, for a link without a
    map).
    """
    if memo is None or memo.generation != view.generation:
        memo = Memo(view.generation)
    order = list(ranked[:CONSIDERED])
    rows = view.rows
    in_pool = np.zeros(view.n, dtype=bool)
    in_pool[pool] = True
    weight = _pool_weights(view, in_pool, len(pool))

    ranked_at = {position: place for place, position in enumerate(order)}

    def words(newer: int, older: int) -> tuple[bool, bool, frozenset[str]]:
        """A value in both, a word of change in the newer, and the content words both hold."""
        return (
            holds_value(rows[newer]) and holds_value(rows[older]),
            says_change(rows[newer]),
            content_words(rows[newer].document) & content_words(rows[older].document),
        )

    def worded(newer: int, older: int) -> bool:  # words that could link them (see `may_move`)
        return any(words(newer, older))

    def moves(newer: int, older: int) -> bool:
        both, change, common = words(newer, older)
        if not (both or change or common):
            return False
        nearest = memo.found[newer]
        pair = update_link.Pair(
            standing=update_link.standing(
                nearest.score, nearest.count, nearest.total, nearest.squares
            ),
            mutual=_nearest_newer(view, older, newer, in_pool, likeness, memo=memo),
            shared=sum(map(weight, common)) / (1 << IDF_BITS),
            change=change,
            values=both,
        )
        return link.moves(
            update_link.Move(
                pair,
                apart=update_link.apart(int(cosine[older]), int(cosine[newer]), spread),
                adjacent=ranked_at[older] == ranked_at[newer] - 1,
            )
        )

    # A row moves only before an older row of these that words could link it to: the nearest
    # older row (a product with every row) is needed only for the rows that have one.
    when = {p: (int(view.said[p]), int(view.ids[p])) for p in order}
    may_move = [
        candidate
        for candidate in order[:UPDATING]
        if any(when[other] < when[candidate] and worded(candidate, other) for other in order)
    ]
    previous = nearest_older(view, may_move, in_pool, linking or likeness, memo)
    # The spread of the question's scores over the pool, read only where a move is weighed.
    spread = float(np.std(cosine[pool])) if previous else 0.0
    for newer in order[:UPDATING]:
        place = order.index(newer)
        older = next(
            (
                i
                for i, position in enumerate(order[:place])
                if previous.get(newer) == position and moves(newer, position)
            ),
            None,
        )
        if older is not None:
            order.insert(older, order.pop(place))
    return [rows[position] for position in order]


def _pool_weights(view: View, in_pool: np.ndarray, size: int) -> Callable[[str], int]:
    """A term's `lexical.idf` with the quotes of the `size` pool rows as the corpus (cached).

    `in_pool` marks the pool's positions.
    """
    found: dict[str, int] = {}

    def weight(term: str) -> int:
        if term not in found:
            positions, _ = view.holders(term)
            found[term] = idf(size, int(np.count_nonzero(in_pool[positions])))
        return found[term]

    return weight


def turn_block(
    view: View,
    visible: np.ndarray,
    cosine: np.ndarray,
    query: str,
    render: Callable[[Row], str],
    *,
    likeness: Likeness,
    link: update_link.Link = update_link.PLAIN,
    linking: Likeness | None = None,
    names: Mapping[str, str] = {},
    memo: Memo | None = None,
    max_refs: int = MAX_REFERENCES,
    max_bytes: int = MAX_REFERENCE_BYTES,
) -> list[Row]:
    """The rows of the turn's memory block in order (all four steps).

    They are chosen among the `visible` positions of `view` (a bool mask), `cosine` their
    integer scores by position; `render` gives the bytes each costs as the block shows it,
    `likeness` the scores between rows, `link` and `linking` how step 3 links them
    (`newer_first`), `memo` what earlier turns of the same viewer found (`Memo`).
    """
    pool = np.flatnonzero(visible[: view.n] & view.competes)
    scores = np.asarray(cosine, dtype=np.int64)
    ranked = _fused(view, pool, scores, query, names)
    ordered = newer_first(
        view, ranked, pool, likeness, memo, cosine=scores, link=link, linking=linking
    )
    return fit(ordered, render, max_refs, max_bytes)


def fit(
    ordered: Iterable[Row], render: Callable[[Row], str], max_refs: int, max_bytes: int
) -> list[Row]:
    """Step 4: the first `max_refs` rows of `ordered` whose renders fit `max_bytes` together.

    One per text: a text said again (case and spacing aside) shows once, as its first row.
    """
    chosen: list[Row] = []
    texts: set[str] = set()
    budget = max_bytes
    for row in ordered:
        cost = len(render(row).encode("utf-8"))
        text = " ".join(row.document.casefold().split())
        if cost <= budget and text not in texts:
            chosen.append(row)
            texts.add(text)
            budget -= cost
            if len(chosen) == max_refs:
                break
    return chosen
