"""Whether a newer memory updates the older memory most like it: odds learnt from households.

Step 3 of the turn's block (`recall.newer_first`) asks it of a memory B and A, the older memory
most like B. A correction is often said in other words and by someone else ("Bin collection is on
Wednesdays" after "The bins go out on Monday"), and a second fact of one kind looks much the same
("My birthday is the 3rd of December" after "Grandma's birthday is the 14th of November"). No one
word or vector rule told them apart on households it was not chosen on, so the signs rules had
read each alone, and how far the pair stands out, are weighed together, with weights learnt from
households written for it (`scripts/benches/_update_link.py`):

- `standing`: how far A's score against B stands above B's scores against every memory of the
  pool, in B's own spread (a z-score): free of any one embedding model's scale;
- `mutual`: B is also the newer memory most like A;
- `shared`: the rarity of the content words both hold, values and words of change aside (the
  sum of their `lexical.idf` over the pool, in bits, at most SHARED_CAP);
- `change`: B holds a word of change ("now", "moved", "nicht mehr", "verzet");
- `values`: both hold a value (a digit, a day, a time, a month).

These odds say how much the pair looks like one thing said twice. Whether step 3 moves B before
A, which a question ranks above it, is weighed from them and from the question (`Move`,
`Link.moves`): the odds' log, how far the question's cosine puts A above B in the spread of its
scores over the pool (`apart`), whether it ranks them next to each other, and whether both hold
a value and each is the other's nearest. A question that scores the two alike asks after both,
and the newer goes first; one that scores A well above B asks after A, and a second fact of one
kind ("My birthday is the 3rd of December" below "Grandma's birthday is the 14th of November")
stays below it. Learnt from the same households' questions (MOVING), each half ranked and linked
by what was learnt on the other half. B moves when those odds reach ODDS (a probability of 0.3):
each a logistic regression, each weight per unit of its feature.

Which older memory is "most like" B, and how far it stands out, is read through a map learnt for
the embedding model where one was (`Link`, `link_for`): B's vector is mapped by a matrix before it
is compared with the older memories, as the query adapter maps a question. Learnt on the same
households, it moves what a memory says of a thing (the spare key, the bin) over what kind of
value it holds, so a correction said in other words is nearer what it replaces than a second fact
of the same kind ("The MOT's the 7th of December" nearer "The MOT is booked for the 9th of
December" than "My mocks start on Monday the 7th of December"). The odds are learnt again with
it. A model no map was learnt for compares the vectors as the model gives them (`PLAIN`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .instructions import learnt_for
from .selection import quantize

SHARED_CAP = 30.0
FOLDER = Path(__file__).with_name("update_links")
# Learnt by scripts/benches/_update_link.py from the households in scripts/benches/adapter_data/,
# for vectors compared as the model gives them (`PLAIN`).
WEIGHTS = {
    "standing": 0.8195,
    "mutual": 1.9579,
    "shared": 0.2434,
    "change": 2.3694,
    "values": 1.8430,
}
BIAS = -7.9189
# Learnt the same way, from the households' questions (the moves of `Link.moves`).
MOVING = {
    "link": 0.5501,
    "apart": -0.8231,
    "adjacent": 0.3438,
    "alike": -0.5313,
}
MOVING_BIAS = 1.6198
ODDS = 0.3


@dataclass(frozen=True, slots=True)
class Pair:
    """What step 3 reads of a newer memory and the older memory most like it (see the module)."""

    standing: float
    mutual: bool
    shared: float
    change: bool
    values: bool

    def features(self) -> dict[str, float]:
        """Each feature as the weights read it."""
        return {
            "standing": self.standing,
            "mutual": float(self.mutual),
            "shared": min(self.shared, SHARED_CAP),
            "change": float(self.change),
            "values": float(self.values),
        }


def standing(score: int, count: int, total: int, squares: int) -> float:
    """How far `score` stands above `count` scores with sum `total` and sum of squares `squares`.

    In their standard deviations; 0 when they do not spread (or there are none).
    """
    if count < 2:
        return 0.0
    spread = count * squares - total * total  # count² times their variance, exact in integers
    if spread <= 0:
        return 0.0
    return (count * score - total) / math.sqrt(spread)


def logit(pair: Pair, weights: Mapping[str, float] = WEIGHTS, bias: float = BIAS) -> float:
    """The log-odds that the newer memory of `pair` updates the older one."""
    return bias + sum(weights[name] * value for name, value in pair.features().items())


def odds(pair: Pair, weights: Mapping[str, float] = WEIGHTS, bias: float = BIAS) -> float:
    """The probability that the newer memory of `pair` updates the older one."""
    return _probability(logit(pair, weights, bias))


def _probability(log_odds: float) -> float:
    return 1.0 / (1.0 + math.exp(-log_odds))


@dataclass(frozen=True, slots=True)
class Move:
    """What step 3 reads of moving a newer memory before the older one a question ranks above it.

    The pair's signs (`Pair`, the older memory the one most like the newer), how far the
    question's cosine puts the older above the newer in the spread of its scores over the pool
    (`apart`), and whether the question ranked them next to each other.
    """

    pair: Pair
    apart: float
    adjacent: bool


def apart(older: int, newer: int, spread: float) -> float:
    """How far a question's score `older` stands above `newer`, in `spread` (0 if none)."""
    return (older - newer) / spread if spread > 0 else 0.0


@dataclass(frozen=True, eq=False)  # one per model, compared and hashed as itself
class Link:
    """How step 3 links the memories of one embedding model: a map, and the odds learnt with it.

    `matrix` (d × d) maps a newer memory's vector before it is compared with older ones; None
    compares them as the model gives them. `moving` and `moving_bias` weigh a move (`moves`).
    """

    weights: Mapping[str, float]
    bias: float
    matrix: npt.NDArray[np.float64] | None = None
    moving: Mapping[str, float] = field(default_factory=lambda: MOVING)
    moving_bias: float = MOVING_BIAS

    def mapped(self, codes: np.ndarray) -> np.ndarray:
        """Newer rows' int8 codes ([c, d]) as they are compared with older rows' codes.

        Through the map, as int8 codes again (`selection.quantize`); as they are without a map or
        when of another size.
        """
        if self.matrix is None or codes.shape[-1] != self.matrix.shape[0]:
            return codes
        return quantize(codes.astype(np.float64) @ self.matrix)

    def updates(self, pair: Pair) -> bool:
        """Whether the newer memory of `pair` updates the older one (its odds reach ODDS)."""
        return odds(pair, self.weights, self.bias) >= ODDS

    def move_features(self, move: Move) -> dict[str, float]:
        """Each sign of `move` as the moving weights read it (the pair through this link's odds)."""
        return {
            "link": logit(move.pair, self.weights, self.bias),
            "apart": move.apart,
            "adjacent": float(move.adjacent),
            "alike": float(move.pair.values and move.pair.mutual),
        }

    def moves(self, move: Move) -> bool:
        """Whether step 3 moves the newer memory of `move` before the older (odds reach ODDS)."""
        features = self.move_features(move)
        found = self.moving_bias + sum(self.moving[name] * features[name] for name in features)
        return _probability(found) >= ODDS


PLAIN = Link(WEIGHTS, BIAS)


def _load(file: str) -> Link:
    """A learnt link: its matrix, its odds' weights and bias, its moving weights and bias.

    Weights in the order of WEIGHTS and MOVING.
    """
    with np.load(FOLDER / file) as learnt:
        return Link(
            dict(zip(WEIGHTS, map(float, learnt["weights"]), strict=True)),
            float(learnt["bias"]),
            learnt["matrix"].astype(np.float64),
            dict(zip(MOVING, map(float, learnt["moving"]), strict=True)),
            float(learnt["moving_bias"]),
        )


# A fragment of the model's bare name → its link, read once when the module is imported (Home
# Assistant imports an integration off the event loop), as the query adapters are.
LINKS: dict[str, Link] = {
    "multilingual-e5-small": _load("multilingual-e5-small.npz"),
}


def link_for(model: str) -> Link:
    """The link learnt for `model` ("namespace/name:tag" as configured), PLAIN if none was."""
    return learnt_for(LINKS, model) or PLAIN
