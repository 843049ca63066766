"""The deterministic half of N+1 (Verify, commitments, hedging) and the frame of mind."""

from __future__ import annotations

import pytest

from custom_components.alto.reflect import Frame, Outcome, Turn, Urgency, frame_for, frame_line
from custom_components.alto.reflect.heuristics import (
    MAX_QUOTED,
    commitments,
    fallback,
    hedging,
    verify,
)

from .conftest import LIGHT_OFF, LOCK_FAILED, T0

READ = Outcome("executed", "sensor.temperature", "get_device_state")


def turn(utterance: str = "", reply: str = "", *outcomes: Outcome) -> Turn:
    """Turn 7 with these texts and outcomes."""
    return Turn(7, T0, utterance, reply, outcomes, "c")


@pytest.mark.parametrize(
    ("reply", "outcomes", "urgency"),
    [
        ("Done.", (), Urgency.HIGH),
        ("I've turned off the kitchen light.", (), Urgency.HIGH),
        (
            "The door is now locked.",
            (Outcome("awaiting_confirmation", "lock.door", "lock"),),
            Urgency.HIGH,
        ),
        ("I've turned off the kitchen light.", (READ,), Urgency.HIGH),  # a read is no action
        (
            "I've turned off the light and locked the door.",
            (LIGHT_OFF, LOCK_FAILED),
            Urgency.MEDIUM,
        ),
        ("I've turned off the kitchen light.", (LIGHT_OFF,), None),
        ("I'll turn off the light.", (), None),  # a promise, not a claim
        ("It is 21 degrees.", (READ,), None),
    ],
)
def test_verify_checks_claims_against_the_effector(
    reply: str, outcomes: tuple[Outcome, ...], urgency: Urgency | None
) -> None:
    """A completed-action claim needs an effector success; a partial failure is medium."""
    found = verify(turn("x", reply, *outcomes))
    assert [d.urgency for d in found] == ([urgency] if urgency else [])
    if found:
        assert found[0].turns == (7,)
        assert reply.split(" and ", maxsplit=1)[0].rstrip(".") in found[0].content


@pytest.mark.parametrize(
    "utterance",
    [
        "I'll call the plumber.",
        "I will be late tonight.",
        "Remind me to take the bins out.",
        "Don't let me forget the keys.",
        "Tomorrow I paint the fence.",
        "I'm going to bake a cake.",
        "I need to renew the passport.",
    ],
)
def test_commitment_phrases_of_the_person(utterance: str) -> None:
    """Each phrase is one medium "complete" observation quoting the sentence."""
    (draft,) = commitments(turn(f"Hello there. {utterance}", "Okay."))
    assert draft.content == f'The person said: "{utterance}"'
    assert draft.urgency is Urgency.MEDIUM


def test_alto_promises_count_only_when_nothing_was_done() -> None:
    """Alto's "I'll …" is a commitment unless an effector acted in that turn."""
    assert [d.content for d in commitments(turn("Hi", "I'll remind you later."))] == [
        'Alto said: "I\'ll remind you later."'
    ]
    assert commitments(turn("Hi", "I'll dim it now.", LIGHT_OFF)) == []
    assert commitments(turn("The sky is blue", "It is.")) == []


def test_hedge_density() -> None:
    """Two hedges in a short reply are noted; the same two in a long reply are not."""
    short = "Maybe the heating is off, I think."
    long = short + " The rest of this reply is plain and sure of itself" * 10
    assert [d.urgency for d in hedging(turn("?", short))] == [Urgency.LOW]
    assert hedging(turn("?", long)) == []
    assert hedging(turn("?", "Perhaps.")) == []


def test_fallback_gathers_every_heuristic_in_turn_order() -> None:
    """Verify, then commitments, then hedging, turn by turn."""
    first = turn("I'll be back", "Done. Maybe, probably.")
    second = Turn(8, T0, "Remind me", "Sure.", (), "c")
    kinds = [(d.turns, d.mandate.value) for d in fallback([first, second])]
    assert kinds == [((7,), "verify"), ((7,), "complete"), ((7,), "surface"), ((8,), "complete")]


@pytest.mark.parametrize(
    ("elapsed", "frame"),
    [
        (None, Frame.COLD),
        (0, Frame.PRESENT),
        (299, Frame.PRESENT),
        (300, Frame.WARM),
        (3599, Frame.WARM),
        (3600, Frame.COOL),
        (86399, Frame.COOL),
        (86400, Frame.COLD),
    ],
)
def test_frame_of_mind_boundaries(elapsed: float | None, frame: Frame) -> None:
    """Present < 5 min, Warm < 1 h, Cool < 1 day, Cold beyond or never."""
    assert frame_for(elapsed) is frame


def test_frame_line() -> None:
    """One line naming the frame and how long ago."""
    assert frame_line(720) == "Frame of mind: warm (the last exchange was 12 minutes ago)."
    assert frame_line(30) == "Frame of mind: present (the last exchange was moments ago)."
    assert frame_line(90000) == "Frame of mind: cold (the last exchange was 1 day ago)."
    assert frame_line(None) == "Frame of mind: cold (no earlier exchange is remembered)."


def test_a_long_sentence_is_quoted_cut() -> None:
    """An observation quotes at most MAX_QUOTED characters of a sentence."""
    (draft,) = commitments(turn("I'll " + "very " * 100 + "soon.", "Okay."))
    quote = draft.content.removeprefix('The person said: "').removesuffix('"')
    assert len(quote) == MAX_QUOTED
    assert quote.endswith("…")
