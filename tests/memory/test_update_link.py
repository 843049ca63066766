"""Step 3's update link: a pair's standing and the learnt odds that the newer updates the older."""

from __future__ import annotations

import numpy as np
import pytest

from custom_components.alto.memory import update_link
from custom_components.alto.memory.selection import quantize
from custom_components.alto.memory.update_link import (
    LINKS,
    PLAIN,
    Link,
    Move,
    Pair,
    apart,
    link_for,
    odds,
    standing,
)


@pytest.mark.parametrize("seed", range(6))
def test_standing_is_the_z_score_of_the_pair_among_the_newer_rows_scores(seed: int) -> None:
    """Exact integer sums give numpy's z-score (population spread), at any scale of scores."""
    scores = np.random.default_rng(seed).integers(-5000, 16129, size=40)
    for scale in (1, 7):
        values = scores * scale
        expected = (values[3] - values.mean()) / values.std()
        found = standing(
            int(values[3]), len(values), int(values.sum()), int(np.square(values).sum())
        )
        assert found == pytest.approx(expected)
    assert standing(900, 40, int(scores.sum()), int(np.square(scores).sum())) == pytest.approx(
        (900 - scores.mean()) / scores.std()
    )


@pytest.mark.parametrize(
    ("count", "total", "squares"), [(0, 0, 0), (1, 900, 810_000), (3, 2100, 1_470_000)]
)
def test_no_standing_without_a_spread(count: int, total: int, squares: int) -> None:
    """None or one other score, or all alike: the pair stands out by nothing."""
    assert standing(700, count, total, squares) == 0.0


BARE = Pair(standing=2.0, mutual=False, shared=0.0, change=False, values=False)


@pytest.mark.parametrize(
    "raised",
    [
        Pair(standing=4.0, mutual=False, shared=0.0, change=False, values=False),
        Pair(standing=2.0, mutual=True, shared=0.0, change=False, values=False),
        Pair(standing=2.0, mutual=False, shared=9.0, change=False, values=False),
        Pair(standing=2.0, mutual=False, shared=0.0, change=True, values=False),
        Pair(standing=2.0, mutual=False, shared=0.0, change=False, values=True),
    ],
)
@pytest.mark.parametrize("link", [PLAIN, LINKS["multilingual-e5-small"]], ids=["plain", "e5"])
def test_each_sign_of_an_update_raises_the_odds(raised: Pair, link: Link) -> None:
    """Each sign of an update makes one likelier: the learnt weights read them the right way.

    Standing out more, being each other's nearest, rarer shared words, a word of change, a value
    in both; for the odds of a model without a map and for those learnt with e5's.
    """
    assert odds(raised, link.weights, link.bias) > odds(BARE, link.weights, link.bias)


def test_shared_words_count_up_to_their_cap() -> None:
    """A long run of shared words counts no more than SHARED_CAP bits."""
    capped = Pair(
        standing=2.0, mutual=True, shared=update_link.SHARED_CAP, change=False, values=True
    )
    more = Pair(
        standing=2.0, mutual=True, shared=3 * update_link.SHARED_CAP, change=False, values=True
    )
    assert odds(more) == odds(capped)


@pytest.mark.parametrize(
    ("pair", "expected"),
    [
        # A correction that says so: a value in each, a word of change, each the other's nearest.
        (Pair(standing=3.0, mutual=True, shared=0.0, change=True, values=True), True),
        # The same subject in rare words, with a value in each, each the other's nearest.
        (Pair(standing=3.0, mutual=True, shared=12.0, change=False, values=True), True),
        # A second fact of one kind: a value in each, each the other's nearest, nothing more.
        (Pair(standing=2.0, mutual=True, shared=0.0, change=False, values=True), False),
        # Nearest one way only, with a common word.
        (Pair(standing=1.5, mutual=False, shared=1.0, change=False, values=True), False),
        (BARE, False),
    ],
)
def test_what_updates(pair: Pair, expected: bool) -> None:
    """The learnt odds against ODDS, on pairs whose reading is plain."""
    assert update_link.PLAIN.updates(pair) is expected


@pytest.mark.parametrize(
    "model",
    [
        "multilingual-e5-small",
        "jeffh/intfloat-multilingual-e5-small:f16",
        "yxchia/Multilingual-E5-Small:q8_0",
    ],
)
def test_multilingual_e5_small_links_through_its_learnt_map(model: str) -> None:
    """Ollama's names for the model vary by who published it; the bare name decides."""
    link = link_for(model)
    assert link is LINKS["multilingual-e5-small"]
    assert link.matrix is not None
    assert link.matrix.shape == (384, 384)
    assert list(link.weights) == list(update_link.WEIGHTS)
    assert list(link.moving) == list(update_link.MOVING)


@pytest.mark.parametrize(
    "model", ["nomic-embed-text", "embeddinggemma:latest", "e5-small-v2", "multilingual-e5-large"]
)
def test_another_model_links_its_vectors_as_it_gives_them(model: str) -> None:
    """A map learnt in one model's space means nothing in another's: the plain link."""
    assert link_for(model) is PLAIN
    assert PLAIN.matrix is None


def test_the_shipped_map_is_learnt_and_stays_near_the_identity() -> None:
    """Finite, moved from where learning started, and nearer the identity than to nothing.

    A memory is still compared mostly as itself.
    """
    matrix = LINKS["multilingual-e5-small"].matrix
    assert matrix is not None
    identity = np.eye(384)
    assert np.isfinite(matrix).all()
    assert not np.allclose(matrix, identity)
    assert np.linalg.norm(matrix - identity) < np.linalg.norm(identity)


def test_newer_codes_are_mapped_then_quantized_again() -> None:
    """codes·M as int8 codes (`selection.quantize`), row by row."""
    rng = np.random.default_rng(3)
    matrix = np.eye(8) + 0.3 * rng.normal(size=(8, 8))
    codes = quantize(rng.normal(size=(5, 8)))
    mapped = Link(update_link.WEIGHTS, update_link.BIAS, matrix).mapped(codes)
    assert mapped.dtype == np.int8
    assert np.array_equal(mapped, quantize(codes.astype(np.float64) @ matrix))
    assert not np.array_equal(mapped, codes)


def test_codes_without_a_map_or_of_another_size_are_compared_as_they_are() -> None:
    """The plain link, or a store of another model's size under the same name: no error."""
    codes = quantize(np.random.default_rng(4).normal(size=(3, 16)))
    assert PLAIN.mapped(codes) is codes
    assert LINKS["multilingual-e5-small"].mapped(codes) is codes


def test_a_learnt_link_decides_by_its_own_odds() -> None:
    """The same pair, weighed by the odds stored with each link."""
    pair = Pair(standing=3.0, mutual=True, shared=0.0, change=False, values=True)
    eager = Link(update_link.WEIGHTS, update_link.BIAS + 10.0)
    wary = Link(update_link.WEIGHTS, update_link.BIAS - 10.0)
    assert eager.updates(pair)
    assert not wary.updates(pair)


LINKED = (PLAIN, LINKS["multilingual-e5-small"])
ALIKE = Pair(standing=3.0, mutual=True, shared=0.0, change=False, values=True)
SAYS_SO = Pair(standing=3.0, mutual=True, shared=0.0, change=True, values=True)


@pytest.mark.parametrize(
    ("older", "newer", "spread", "expected"),
    [(900, 600, 150.0, 2.0), (600, 900, 150.0, -2.0), (700, 700, 80.0, 0.0), (900, 600, 0.0, 0.0)],
)
def test_apart_is_the_gap_in_the_questions_own_spread(
    older: int, newer: int, spread: float, expected: float
) -> None:
    """How far the question puts the older above the newer, in its spread; 0 with none."""
    assert apart(older, newer, spread) == pytest.approx(expected)


@pytest.mark.parametrize("link", LINKED, ids=["plain", "e5"])
@pytest.mark.parametrize("pair", [ALIKE, SAYS_SO, BARE], ids=["alike", "says-so", "bare"])
@pytest.mark.parametrize("adjacent", [True, False])
def test_the_further_apart_the_question_puts_them_the_less_the_newer_moves(
    link: Link, pair: Pair, adjacent: bool
) -> None:
    """Once a question tells the two apart far enough, the newer stays, and stays further on.

    A question that ranks the older memory well above the newer is asking after the older.
    """
    found = [link.moves(Move(pair, gap / 4, adjacent)) for gap in range(-8, 41)]
    assert found == sorted(found, reverse=True)
    assert not found[-1]  # ten spreads apart


@pytest.mark.parametrize("link", LINKED, ids=["plain", "e5"])
def test_a_question_that_cannot_tell_them_apart_moves_what_looks_like_one_thing_said_twice(
    link: Link,
) -> None:
    """A value in each, each the other's nearest, next to each other, the question alike on both.

    A correction said as a plain fact goes first; a pair with none of the signs does not.
    """
    assert link.moves(Move(ALIKE, 0.0, adjacent=True))
    assert link.moves(Move(SAYS_SO, 0.0, adjacent=False))
    assert not link.moves(Move(BARE, 0.0, adjacent=False))


@pytest.mark.parametrize("link", LINKED, ids=["plain", "e5"])
def test_a_likelier_update_moves_at_least_as_readily(link: Link) -> None:
    """The moving weights read the update link's odds the right way round."""
    for gap in (0.0, 0.5, 1.0, 2.0):
        for adjacent in (True, False):
            if link.moves(Move(BARE, gap, adjacent)):
                assert link.moves(Move(SAYS_SO, gap, adjacent))
    assert (
        link.move_features(Move(SAYS_SO, 0.0, False))["link"]
        > link.move_features(Move(BARE, 0.0, False))["link"]
    )
