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

B updates A when the logistic odds reach ODDS (a probability of 0.3): a logistic regression,
each weight per unit of its feature.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SHARED_CAP = 30.0
# Learnt by scripts/benches/_update_link.py from the households in scripts/benches/adapter_data/.
WEIGHTS = {
    "standing": 1.0606,
    "mutual": 2.1235,
    "shared": 0.2904,
    "change": 2.3855,
    "values": 1.6396,
}
BIAS = -8.7891
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


def odds(pair: Pair, weights: dict[str, float] = WEIGHTS, bias: float = BIAS) -> float:
    """The probability that the newer memory of `pair` updates the older one."""
    logit = bias + sum(weights[name] * value for name, value in pair.features().items())
    return 1.0 / (1.0 + math.exp(-logit))


def updates(pair: Pair) -> bool:
    """Whether the newer memory of `pair` updates the older one (its odds reach ODDS)."""
    return odds(pair) >= ODDS
