"""The verifier against labelled renders: catch rate, false-drop rate, mode recall.

Two sets. `labelled_renders.json` is the project's labelled set: the first 80 cases were written
before the verifier was tuned on them, the polarity, swapped and quantifier cases (and ten faithful
ones) were added with the structural check and are development cases. `heldout_renders.json` is
fresh renders written for that check and committed before it was built; nothing was tuned on it.
`scripts/verifier_rates` prints the same figures as tables; `pytest -s` shows them here.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.surface.verify import verify_render

LABELLED = Path(__file__).with_name("labelled_renders.json")
HELD_OUT = Path(__file__).with_name("heldout_renders.json")
SETS = (LABELLED, HELD_OUT)
MODES = (
    "untraceable",
    "misattributed",
    "precise",
    "echo",
    "framing",
    "autobiography",
    "polarity",
    "swapped",
    "quantifier",
)
STRUCTURAL = ("polarity", "swapped", "quantifier")
FIELDS = {"id", "fragment", "utterance", "render", "label", "note"}


@dataclass(frozen=True)
class Scores:
    """How the verifier did on a labelled set."""

    faithful: int
    dropped_faithful: int
    failures: int
    caught: int
    right_mode: int
    per_mode: dict[str, tuple[int, int, int]]  # label -> cases, caught, expected mode reported

    @property
    def catch_rate(self) -> float:
        """The share of failing renders dropped."""
        return self.caught / self.failures

    @property
    def false_drop_rate(self) -> float:
        """The share of faithful renders dropped."""
        return self.dropped_faithful / self.faithful

    @property
    def mode_rate(self) -> float:
        """The share of failing renders given their labelled mode."""
        return self.right_mode / self.failures


def load(path: Path = LABELLED) -> list[dict[str, Any]]:
    """The labelled cases."""
    return json.loads(path.read_text(encoding="utf-8"))


def score(cases: list[dict[str, Any]]) -> Scores:
    """Verify every case and count how the verifier did."""
    seen: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for case in cases:
        verdict = verify_render(case["fragment"], case["render"], utterance=case["utterance"])
        label = case["label"]
        seen[label] += 1
        caught[label] += not verdict.ok
        right[label] += label in verdict.modes
    failing = [m for m in seen if m != "faithful"]
    return Scores(
        faithful=seen["faithful"],
        dropped_faithful=caught["faithful"],
        failures=sum(seen[m] for m in failing),
        caught=sum(caught[m] for m in failing),
        right_mode=sum(right[m] for m in failing),
        per_mode={m: (seen[m], caught[m], right[m]) for m in MODES},
    )


def report(scores: Scores) -> str:
    """The scores as printed lines."""
    lines = [
        f"catch rate       {scores.catch_rate:6.1%}  "
        f"({scores.caught}/{scores.failures} failing renders dropped)",
        f"false-drop rate  {scores.false_drop_rate:6.1%}  "
        f"({scores.dropped_faithful}/{scores.faithful} faithful renders dropped)",
        f"expected mode    {scores.mode_rate:6.1%}  ({scores.right_mode}/{scores.failures})",
        "",
        f"{'mode':<14}{'cases':>6}{'caught':>8}{'recall':>8}",
    ]
    for mode, (cases, caught, right) in scores.per_mode.items():
        lines.append(f"{mode:<14}{cases:>6}{caught:>8}{right / cases if cases else 0:>8.0%}")
    return "\n".join(lines)


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_cases_are_well_formed(path: Path) -> None:
    """Every labelled case is unique and complete, and every structural mode has cases."""
    cases = load(path)
    assert len({c["id"] for c in cases}) == len(cases)
    for case in cases:
        assert set(case) == FIELDS
        assert case["label"] in {"faithful", *MODES}
        assert all(isinstance(p, list) and p for p in case["fragment"].values())
    labels = Counter(c["label"] for c in cases)
    assert min(labels[m] for m in STRUCTURAL) >= 5
    assert any(len(c["fragment"]) > 1 for c in cases if c["label"] == "faithful")
    assert any(len(c["fragment"]) > 1 for c in cases if c["label"] in STRUCTURAL)


def test_labelled_set_covers_every_mode() -> None:
    """Labelled set covers every mode."""
    cases = load(LABELLED)
    labels = Counter(c["label"] for c in cases)
    assert len(cases) >= 110
    assert set(labels) == {"faithful", *MODES}
    assert 0.25 <= labels["faithful"] / len(cases) <= 0.4
    assert min(labels[m] for m in MODES) >= 5
    assert sum(len(c["fragment"]) > 1 for c in cases if c["label"] == "misattributed") >= 5


def test_held_out_set_mixes_faithful_and_failing_renders() -> None:
    """Held out set mixes faithful and failing renders."""
    cases = load(HELD_OUT)
    labels = Counter(c["label"] for c in cases)
    assert len(cases) >= 60
    assert 0.3 <= labels["faithful"] / len(cases) <= 0.6
    assert not {c["render"] for c in cases} & {c["render"] for c in load(LABELLED)}


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_verifier_meets_its_targets(path: Path) -> None:
    """The verifier drops every failing render, few faithful ones, and names the mode."""
    scores = score(load(path))
    print(f"\n{path.name}\n{report(scores)}")
    assert scores.catch_rate == 1.0
    assert scores.false_drop_rate <= 0.05
    assert scores.mode_rate >= 0.8
