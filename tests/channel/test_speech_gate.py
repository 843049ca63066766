"""The speech gate: no internal label or id is spoken, no action is spoken as done unbacked."""

from __future__ import annotations

import pytest

from custom_components.alto.channel.speech_gate import SpeechGate, claims_done, scrubbed
from custom_components.alto.memory.recall import KINDS


@pytest.mark.parametrize(
    "sentence",
    [
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
    ],
)
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
    assert gate.feed(" the lamp. It is ") == ""
    assert gate.finalize() == "It is "
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


def test_a_withheld_claim_is_spoken_once_an_effector_succeeded() -> None:
    """A "Done." said before the organ ran is spoken after it, if something was done."""
    succeeded = False
    gate = SpeechGate(lambda: succeeded)
    assert gate.feed("Done. ") == ""
    assert gate.backed() == ""  # nothing succeeded yet: still withheld
    succeeded = True
    assert gate.backed() == "Done."
    assert gate.withheld == []
