"""The speech gate: no internal label or id is spoken, no action is spoken as done unbacked."""

from __future__ import annotations

import pytest

from custom_components.alto.channel import claims
from custom_components.alto.channel.speech_gate import (
    SpeechGate,
    claims_done,
    scrubbed,
    settled,
)
from custom_components.alto.memory.recall import KINDS

CLAIMS = [
    "The front door was locked, but I managed to unlock it.",
    "The lights are turned off now.",
    "I've turned off the kitchen lights.",
    "I’ve switched it on for you.",
    "I have locked the front door.",
    "The garage door has been opened.",
    "The porch light is now on.",
    "Done!",
    "All set, the heating is at 21.",
    "Ich habe das Licht ausgeschaltet.",
    "Die Tür ist jetzt offen.",
    "J'ai éteint la lumière.",
    "La porte est maintenant verrouillée.",
    "He apagado la luz.",
    "Las luces están ahora encendidas.",
    "Ik heb de lamp uitgezet.",
    "De deur is nu open.",
    "Ho spento la luce.",
    "La porta è ora chiusa.",
    # a claim after words that may be spoken before it
    "Okay, so the porch light is now on.",
    "Alright then, ich habe heute das Licht im Flur ausgeschaltet.",
    "Well, the heater in the hall has now been switched off.",
    "Sure thing, the lamp is on now.",
    "Right, ik heb net de lamp in de gang uitgezet.",
]


@pytest.mark.parametrize("sentence", CLAIMS)
def test_completed_actions_are_recognized(sentence: str) -> None:
    """What a model says when it pretends to have acted, in every confirmation language."""
    assert claims_done(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "I'll switch the porch light off.",
        "Shall I turn it on now?",
        "The porch light is on.",
        "It's 21 degrees in the living room.",
        "Ich schalte das Licht aus.",
        "Je vais éteindre la lumière.",
        "Voy a apagar la luz.",
        "Ik zet de lamp uit.",
        "Spengo la luce.",
        "Ana visits on Sundays.",
    ],
)
def test_intents_and_state_reports_are_not_claims(sentence: str) -> None:
    """Saying what Alto will try, or how a device is, is not a claim that something was done."""
    assert not claims_done(sentence)


def test_unbacked_claims_are_withheld_and_backed_ones_spoken() -> None:
    """Sentence by sentence: the claim goes when no effector succeeded, stays when one did."""
    succeeded = False
    gate = SpeechGate(lambda: succeeded)
    assert gate.feed("Sure. I've turned on") == "Sure. "
    assert gate.feed(" the lamp. It is ") == "It "  # "is" may begin "is now on"
    assert gate.finalize() == "is "
    assert gate.withheld == ["I've turned on the lamp."]
    succeeded = True
    backed = SpeechGate(lambda: succeeded)
    assert backed.feed("I've turned on the lamp. ") == "I've turned on the lamp. "


def test_labels_ids_and_markers_are_never_spoken() -> None:
    """A memory label, a user id or a marker character is taken out before anyone hears it."""
    said = "[said; Maria, 3 days ago] The front door ¤is¦ locked."
    assert scrubbed(said) == "The front door is locked."
    for kind in KINDS.values():  # every label the memory block writes
        assert scrubbed(f"[{kind}; someone, today] Fine.") == "Fine."
    assert scrubbed("[see note; below] Fine.") == "[see note; below] Fine."
    assert scrubbed("User 2d6f58a5bcb346a08bcbd0f84f8b07d7 asked.") == "User  asked."
    gate = SpeechGate(lambda: False)
    assert gate.feed(said + " ") == "The front door is locked. "


def test_a_label_the_reply_ends_inside_is_never_spoken() -> None:
    """A reply cut off inside a memory label (its length ran out) loses the label's start.

    A small model echoes the block's lines; its reply can end before the label closes.
    """
    gate = SpeechGate(lambda: False)
    said = gate.feed("See you at ten. Goodnight [said; Mock User, to")
    assert said == "See you at ten. Goodnight "
    assert said + gate.finalize() == "See you at ten. Goodnight "
    assert scrubbed("Fine. [correction; Ana") == "Fine. "
    assert scrubbed("Fine [see note") == "Fine [see note"  # not a label: spoken as written


def test_a_withheld_claim_is_spoken_once_an_effector_succeeded() -> None:
    """A "Done." said before the organ ran is spoken after it, if something was done."""
    succeeded = False
    gate = SpeechGate(lambda: succeeded)
    assert gate.feed("Done. ") == ""
    assert gate.backed() == ""  # nothing succeeded yet: still withheld
    succeeded = True
    assert gate.backed() == "Done."
    assert gate.withheld == []


def test_words_flow_before_the_sentence_ends() -> None:
    """A sentence with no claim is spoken as it comes, whole words only."""
    sentence = "It should stay dry until about six, so an early walk is the safer bet. "
    gate = SpeechGate(lambda: False)
    pieces = [gate.feed(sentence[i : i + 4]) for i in range(0, len(sentence), 4)]
    assert "".join(pieces) == sentence
    assert pieces[:4] == ["It ", "", "should ", "stay "]
    assert all(not piece or piece[-1] in " ,." for piece in pieces)  # never half a word


def test_speech_stops_where_a_claim_could_begin() -> None:
    """Words before a claim are spoken; the claim waits for its sentence to end and be judged."""
    gate = SpeechGate(lambda: False)
    assert gate.feed("Okay, the porch light is") == "Okay, the porch light "
    assert gate.feed(" now") == ""  # "is now" may go on "on"
    assert gate.feed(" on. ") == ""
    assert gate.withheld == ["is now on."]
    flowing = SpeechGate(lambda: False)
    assert flowing.feed("The porch light is") == "The porch light "
    assert flowing.feed(" the brightest. ") == "is the brightest. "
    backed = SpeechGate(lambda: True)
    assert backed.feed("Okay, the porch light is") == "Okay, the porch light "
    assert backed.feed(" now on. ") == "is now on. "


@pytest.mark.parametrize("sentence", CLAIMS)
def test_no_part_of_a_claim_is_spoken_early(sentence: str) -> None:
    """However the sentence arrives, what is released before it ends stops short of the claim.

    At every length of its start: the settled part ends before the first claim match, reading
    on from an earlier answer gives the same as reading from the start, and fed in chunks of
    every size the gate speaks nothing that claims.
    """
    first = min(found.start() for pattern in claims.CLAIMS if (found := pattern.search(sentence)))
    known = 0
    for length in range(len(sentence) + 1):
        early = settled(sentence[:length])
        assert sentence.startswith(early)
        assert len(early) <= first, (sentence[:length], early)
        assert settled(sentence[:length], known) == early
        known = len(early)
    for size in range(1, 12):
        gate = SpeechGate(lambda: False)
        said = "".join(gate.feed(sentence[i : i + size]) for i in range(0, len(sentence), size))
        said += gate.finalize()
        assert not claims_done(said), (size, said)
        assert said + "".join(gate.withheld) == sentence  # the rest is withheld, as one piece


def test_labels_and_ids_are_held_until_whole() -> None:
    """Fed a character at a time, a memory label or an id is never partly spoken."""
    for said, clean in (
        ("[said; Maria, 3 days ago] The front door is locked. ", "The front door is locked. "),
        ("User 2d6f58a5bcb346a08bcbd0f84f8b07d7 asked. ", "User  asked. "),
    ):
        gate = SpeechGate(lambda: False)
        pieces = [gate.feed(char) for char in said]
        assert "".join(pieces) == clean
        assert not any("[" in piece or "2d6f" in piece for piece in pieces)
