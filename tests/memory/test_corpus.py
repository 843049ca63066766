"""The indexed memory block (`recall` over the store's `corpus`) is the scan it replaced.

Row for row and in order: on random rows full of ties, through the store's writes, supersedes,
forgets and rewrites, for every viewer (`recall_reference` is the scan).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.memory import corpus, lexical, recall, update_link
from custom_components.alto.memory.corpus import Corpus
from custom_components.alto.memory.matrix import CodeMatrix
from custom_components.alto.memory.records import KIND_EXPLICIT, KIND_SOURCE, Kind, Mutation, Row
from custom_components.alto.memory.selection import quantize, scores
from custom_components.alto.memory.store import MemoryStore

from . import recall_reference as reference
from .conftest import USER_A, USER_B

_WORDS = (
    "sofia swimming lesson wednesday five bus school stop carlton road seven bins tuesday "
    "piano teacher patel boiler cellar dog walk leo goldfish captain key mat garden shed now "
    # stems that begin others (`lexical.related`), one beginning a speaker's name
    "milk milkman head headteacher allergic allergy teaching pass passport sofiane"
)
WORDS = _WORDS.split()
ENDINGS = (".", ".", ".", "?", "!")
OPENERS = ("", "", "", "When is ", "Turn on ", "OK ", "Actually ")
NAMES = {USER_A: "Leo", USER_B: "Sofia Patel"}
DIM = 8


def random_row(rng: random.Random, row_id: int, scopes: Sequence[str]) -> Row:
    """A row of a few words from a small vocabulary (many shared words, many ties)."""
    words = rng.choices(WORDS, k=rng.randint(1, 9))
    text = rng.choice(OPENERS) + " ".join(words) + rng.choice(ENDINGS)
    return Row(
        id=row_id,
        document=text.capitalize() if rng.random() < 0.5 else text,
        kind=rng.choice([KIND_SOURCE, KIND_SOURCE, KIND_EXPLICIT, Kind.ASSERTION]),
        owner="household",
        scope=rng.choice(scopes),
        actor=rng.choice([USER_A, USER_B, "unknown"]),
        source_id=f"s{row_id}",
        source_version=1,
        offset=0,
        length=len(text.encode()),
        said_at=rng.choice([0, 1_790_000_000 + rng.randint(0, 4) * 86_400]),
    )


def table_similar(table: np.ndarray) -> reference.Similarity:
    """Scores between rows by id from a table."""

    def similar(candidates: Sequence[Row], pool: Sequence[Row]) -> np.ndarray:
        found: np.ndarray = table[np.ix_([r.id for r in candidates], [r.id for r in pool])]
        return found

    return similar


def render(row: Row) -> str:
    """A row as the block shows it."""
    return f"[{row.kind}] {row.document}\n"


@pytest.mark.parametrize("seed", range(40))
def test_the_indexed_block_is_the_scan_on_random_rows(seed: int) -> None:
    """The indexed block is the scan on random rows."""
    rng = random.Random(seed)
    n = rng.randint(1, 160)
    rows = [random_row(rng, i, ["household"]) for i in range(n)]
    table = np.array([[rng.randint(0, 5) for _ in range(n)] for _ in range(n)])
    cosine = np.array([rng.randint(-3, 3) for _ in range(n)], dtype=np.int64)
    visible = np.array([rng.random() < 0.8 for _ in range(n)])
    view = Corpus.of(rows)

    def likeness(positions: np.ndarray, among: np.ndarray | None) -> np.ndarray:
        found: np.ndarray = table[positions] if among is None else table[np.ix_(positions, among)]
        return found

    shown = [r for r, v in zip(rows, visible, strict=True) if v]
    for query in (
        "When is Sofia's swimming lesson?",
        "Leo's goldfish",
        "bins bins now",
        "zzz",
        "Who is the head? Any allergy, milk or passes?",
    ):
        for names in (NAMES, {}):
            for budget in ({}, {"max_refs": 3, "max_bytes": 120}):
                expected = reference.turn_block(
                    shown,
                    cosine[visible].tolist(),
                    query,
                    render,
                    similar=table_similar(table),
                    names=names,
                    **budget,
                )
                found = recall.turn_block(
                    view, visible, cosine, query, render, likeness=likeness, names=names, **budget
                )
                assert found == expected, (seed, query, names, budget)
        expected_rank = reference.rank(rows, cosine.tolist(), query, NAMES)
        assert recall.rank(rows, cosine.tolist(), query, NAMES) == expected_rank


def test_a_word_in_every_row_weighs_nothing_as_in_the_scan() -> None:
    """A term every row holds has a weight that floors to 0 in a large corpus.

    No lexical term for it, in both paths.
    """
    rows = [
        Row(i, f"boiler {i}.", KIND_EXPLICIT, "household", "household", "unknown", "s", 1, 0, 1)
        for i in range(200_000 // 1000)
    ]
    view = Corpus.of(rows)
    found = view.lexical(np.arange(len(rows)), "boiler", {})
    documents = [reference.lexical_document(row, {}) for row in rows]
    expected = reference.bm25("boiler", documents)
    assert dict(zip(found[0].tolist(), found[1].tolist(), strict=True)) == {
        i: s for i, s in enumerate(expected) if s
    }


def test_products_too_large_for_int64_are_exact_python_integers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Forced onto Python integers, the lexical scores are the scan's all the same."""
    rng = random.Random(3)
    rows = [random_row(rng, i, ["household"]) for i in range(60)]
    documents = [reference.lexical_document(row, NAMES) for row in rows]
    queries = ("When is Sofia's swimming lesson?", "Leo's goldfish bins", "teacher allergy pass")
    for query in queries:
        competing = np.flatnonzero(Corpus.of(rows).competes)
        expected = reference.bm25(query, [documents[i] for i in competing])
        for safe in (corpus.INT64_SAFE, 0):
            monkeypatch.setattr(corpus, "INT64_SAFE", safe)
            found = Corpus.of(rows).lexical(competing, query, NAMES)
            scored = dict(zip(found[0].tolist(), found[1].tolist(), strict=True))
            assert scored == {int(p): s for p, s in zip(competing, expected, strict=True) if s}


def _vector(rng: np.random.Generator) -> bytes:
    return rng.standard_normal(DIM).astype("<f4").tobytes()


def test_the_store_block_is_the_scan_through_writes_forgets_and_rewrites(tmp_path: Path) -> None:
    """Random mutations through a store, a block for every viewer after each.

    New rows, supersedes, deletes, and rows written again with other words or other codes.
    """
    rng = random.Random(7)
    vectors = np.random.default_rng(7)
    store = MemoryStore.open_persistent(tmp_path / "chroma")
    try:
        next_id = 1
        for sequence in range(1, 41):
            stored = [row.id for row in store.state.rows()]
            fresh = []
            for _ in range(rng.randint(0, 12)):
                row = random_row(rng, next_id, ["household", USER_A, USER_B])
                fresh.append(Row(**{**_fields(row), "vector": _vector(vectors)}))
                next_id += 1
            if stored and rng.random() < 0.3:  # a row written again: other words, maybe codes
                again = store.state.get(rng.choice(stored))
                assert again is not None
                text = again.document + (" boiler" if rng.random() < 0.5 else "")
                fresh.append(
                    Row(**{**_fields(again), "document": text, "vector": _vector(vectors)})
                )
            supersede = tuple(rng.sample(stored, min(len(stored), rng.randint(0, 2))))
            delete = tuple(rng.sample(stored, min(len(stored), rng.choice([0, 0, 0, 1, 3]))))
            store.apply(Mutation(sequence, tuple(fresh), supersede, delete))
            _check(store, vectors)  # each viewer's block again: what its memo kept still holds
    finally:
        store.close()


def _fields(row: Row) -> dict[str, object]:
    return {name: getattr(row, name) for name in Row.__slots__}


def _check(store: MemoryStore, vectors: np.random.Generator) -> None:
    # A query near a stored row now and then, so that its rows rank first again and again.
    rows = store.state.rows()
    near = store.state.codes(rows[-1:]) if rows and vectors.random() < 0.5 else None
    query = quantize(vectors.standard_normal(DIM).astype("<f4")) if near is None else near[0]

    def similar(candidates: Sequence[Row], pool: Sequence[Row]) -> np.ndarray:
        found: np.ndarray = scores(store.state.codes(pool), store.state.codes(candidates))
        return found

    for viewer in (None, USER_A, USER_B):
        rows = store.state.visible(viewer)
        cosine = scores(store.state.codes(rows), query).tolist() if rows else []
        for text in ("When does Sofia go swimming?", "Leo's dog and the boiler"):
            expected = reference.turn_block(
                rows, cosine, text, render, similar=similar, names=NAMES
            )
            assert store.turn_block(query, viewer, text, render, NAMES) == expected


def _remembered(row_id: int, text: str, day: int, vector: list[float]) -> Row:
    """An authored household row said on `day`, its vector the given leading components."""
    return Row(
        id=row_id,
        document=text,
        kind=KIND_EXPLICIT,
        owner="household",
        scope="household",
        actor="unknown",
        source_id=f"s{row_id}",
        source_version=1,
        offset=0,
        length=len(text),
        said_at=1_790_000_000 + day * 86_400,
        vector=np.array(vector + [0.0] * (DIM - len(vector)), dtype="<f4").tobytes(),
    )


def _shelves(first_id: int, count: int) -> list[Row]:
    """`count` rows on other things: unlike the query and every other row, said on day 0."""
    return [
        _remembered(
            first_id + n, f"Shelf {chr(97 + n)} holds jars.", 0, [0.0] * (2 + n % 6) + [1.0]
        )
        for n in range(count)
    ]


def test_a_remembered_nearest_row_that_left_is_looked_for_again(tmp_path: Path) -> None:
    """The memo holds the bus at 7:40 as the 7:30 one's nearest older row.

    Once that row is superseded, the next nearest (7:45) is found, and the 7:30 row moves before
    it: among a household's other memories the question hardly tells the two apart.
    """
    store = MemoryStore.open_persistent(tmp_path / "chroma")
    try:
        old = _remembered(1, "The school bus comes at 7:40.", 1, [1.0, 0.1])
        other = _remembered(2, "The school bus leaves at 7:45.", 2, [1.0, 0.8])
        new = _remembered(3, "The school bus comes at 7:30 now.", 3, [1.0, 0.3])
        store.apply(Mutation(1, (old, other, new, *_shelves(10, 12))))
        query = quantize(np.array([1.0, 0.9] + [0.0] * (DIM - 2), dtype="<f4"))
        ids = [r.id for r in store.turn_block(query, None, "school bus", render, {})]
        assert ids[:3] == [2, 3, 1]  # the 7:30 row's nearest older is 7:40, ranked below it
        store.apply(Mutation(2, supersede=(1,)))
        ids = [r.id for r in store.turn_block(query, None, "school bus", render, {})]
        assert ids[:2] == [3, 2]  # now its nearest older is 7:45: it moves before it
    finally:
        store.close()


def test_the_nearest_newer_row_is_found_again_as_rows_join_and_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memo keeps the best newer score step 3 reads whether each is the other's nearest.

    "We're on 31 now" is the nearest newer row of "Our mooring's number 23" until a newer row
    more like it joins, and again once that row is superseded: the pair step 3 weighs says so.
    """
    weighed: list[bool] = []
    moves = update_link.Link.moves

    def recorded(link: update_link.Link, move: update_link.Move) -> bool:
        weighed.append(move.pair.mutual)
        return moves(link, move)

    monkeypatch.setattr(update_link.Link, "moves", recorded)
    store = MemoryStore.open_persistent(tmp_path / "chroma")
    try:

        def mutual() -> list[bool]:
            weighed.clear()
            store.turn_block(query, None, "berth", render, {})
            return list(weighed)

        query = quantize(np.array([1.0, -0.2] + [0.0] * (DIM - 2), dtype="<f4"))
        store.apply(
            Mutation(
                1,
                (
                    _remembered(1, "Our mooring's number 23.", 1, [1.0, 0.0]),
                    _remembered(2, "We're on 31 now.", 2, [1.0, 0.3]),
                    *_shelves(10, 12),
                ),
            )
        )
        assert mutual() == [True]
        store.apply(Mutation(2, (_remembered(3, "The fees go by direct debit.", 3, [1.0, 0.1]),)))
        assert mutual() == [False]  # the fees are more like the mooring: 31 is not its nearest
        store.apply(Mutation(3, supersede=(3,)))
        assert mutual() == [True]
    finally:
        store.close()


@pytest.mark.parametrize("seed", range(10))
def test_a_corpus_seeded_from_its_image_is_the_corpus_read(seed: int) -> None:
    """`Corpus.image` then `Corpus.seed` (a checkpoint's round trip) rebuild the same corpus.

    Every array and posting list equals the corpus that stemmed the rows, and both grow alike.
    """
    rng = random.Random(seed)
    rows = [random_row(rng, i, ["household"]) for i in range(rng.randint(1, 120))]
    cut = rng.randint(0, len(rows))
    matrix = CodeMatrix(DIM)
    codes = np.zeros((len(rows), DIM), dtype=np.int8)
    matrix.append(codes, np.array([r.id for r in rows], dtype=np.int64), np.zeros(len(rows)))
    read = Corpus()
    read.extend(matrix.snapshot(), 0, rows)
    image = read.image(len(rows))
    image.check()
    seeded = Corpus()
    seeded.seed(matrix.snapshot(), rows, image)
    more = [random_row(rng, len(rows) + i, ["household"]) for i in range(cut)]
    matrix.append(
        np.zeros((cut, DIM), dtype=np.int8),
        np.array([r.id for r in more], dtype=np.int64),
        np.zeros(cut),
    )
    views = []
    for built in (read, seeded):
        snapshot = matrix.snapshot()
        start = built.start(snapshot)
        assert start == len(rows)
        views.append(built.extend(snapshot, start, more))
    one, other = views
    for name in ("ids", "said", "competes", "length", "actor"):
        assert getattr(one, name).tolist() == getattr(other, name).tolist()
    assert [one.actors[a] for a in one.actor] == [other.actors[a] for a in other.actor]
    prefix = rng.randint(0, len(rows) + cut)  # a view of an older snapshot: a prefix
    for term in {t for row in rows + more for t in lexical.terms(row.document)}:
        assert [a.tolist() for a in one.holders(term)] == [a.tolist() for a in other.holders(term)]
        assert [a.tolist() for a in read.view(prefix).holders(term)] == [
            a.tolist() for a in seeded.view(prefix).holders(term)
        ]
