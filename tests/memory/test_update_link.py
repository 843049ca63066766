"""Step 3's update link: a pair's standing and the learnt odds that the newer updates the older."""

from __future__ import annotations

import numpy as np
import pytest

from custom_components.alto.memory import update_link
from custom_components.alto.memory.update_link import Pair, odds, standing, updates


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


PLAIN = Pair(standing=2.0, mutual=False, shared=0.0, change=False, values=False)


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
def test_each_sign_of_an_update_raises_the_odds(raised: Pair) -> None:
    """Each sign of an update makes one likelier: the learnt weights read them the right way.

    Standing out more, being each other's nearest, rarer shared words, a word of change, a value
    in both.
    """
    assert odds(raised) > odds(PLAIN)


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
        (PLAIN, False),
    ],
)
def test_what_updates(pair: Pair, expected: bool) -> None:
    """The learnt odds against ODDS, on pairs whose reading is plain."""
    assert updates(pair) is expected
