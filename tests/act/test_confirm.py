"""Whole-utterance yes/no matching in six languages."""

import pytest

from custom_components.alto.act.confirm import parse_confirmation


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("yes", "en"),
        ("Yes.", "en"),
        ("  YEAH!! ", "en"),
        ("yep", "en"),
        ("sure", "en"),
        ("do it", "en"),
        ("Go ahead.", "en"),
        ("confirm", "en"),
        ("OK", "en"),
        ("okay", "en-US"),
        ("yes please", "en"),
        ("Yes, thank you!", "en"),
        ("please do it", "en"),
        ("yes, do it", "en"),
        ("ja", "de"),
        ("Ja, bitte", "de-DE"),
        ("mach's", "de"),
        ("in Ordnung", "de_AT"),
        ("oui", "fr"),
        ("vas-y", "fr-CA"),
        ("D’accord, merci", "fr"),
        ("Oui, s'il vous plaît", "fr"),
        ("sí", "es"),
        ("Si, por favor", "es-MX"),
        ("vale", "es"),
        ("ja", "nl"),
        ("doe maar", "nl-BE"),
        ("Oké", "nl"),
        ("sì", "it"),
        ("va bene, grazie", "it"),
        ("certo", "it"),
        ("yes", None),
        ("yes", "xx"),
        ("yes", ""),
    ],
)
def test_yes(text: str, language: str | None) -> None:
    """A whole-utterance yes in the utterance's language (English when unknown) is True."""
    assert parse_confirmation(text, language) is True


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("no", "en"),
        ("No.", "en"),
        ("nope", "en"),
        ("cancel", "en"),
        ("don't", "en"),
        ("Don’t!", "en"),
        ("stop", "en"),
        ("never mind", "en"),
        ("no thanks", "en"),
        ("no, cancel", "en"),
        ("nein", "de"),
        ("Nein danke", "de"),
        ("abbrechen", "de-CH"),
        ("non", "fr"),
        ("laisse tomber", "fr"),
        ("non merci", "fr"),
        ("no", "es"),
        ("cancela", "es"),
        ("no, gracias", "es"),
        ("nee", "nl"),
        ("laat maar", "nl"),
        ("no", "it"),
        ("annulla", "it"),
        ("lascia stare", "it"),
        ("no", "zz-ZZ"),
        ("nein", "de-DE-x-private"),
    ],
)
def test_no(text: str, language: str) -> None:
    """A whole-utterance no in the utterance's language (English when unknown) is False."""
    assert parse_confirmation(text, language) is False


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("yes but first tell me the time", "en"),
        ("yes, turn off the kitchen light too", "en"),
        ("what?", "en"),
        ("", "en"),
        ("   ", "en"),
        ("please", "en"),
        ("thanks", "en"),
        ("yes no", "en"),
        ("no yes", "en"),
        ("yes yes yes", "en"),
        ("maybe", "en"),
        ("yess", "en"),
        ("not now", "en"),
        ("I said yes", "en"),
        ("ja", "en"),  # another language's yes does not count
        ("yes", "de"),
        ("oui", "es"),
        ("si", "fr"),
        ("yes " * 20, "en"),
    ],
)
def test_anything_else_is_none(text: str, language: str) -> None:
    """Anything but a bare yes or no, or a yes in another language, is None."""
    assert parse_confirmation(text, language) is None


def test_non_string_input_is_none() -> None:
    """A non-string utterance is None; a non-string language counts as unknown."""
    assert parse_confirmation(None) is None  # type: ignore[arg-type]
    assert parse_confirmation(1) is None  # type: ignore[arg-type]
    assert parse_confirmation("yes", 5) is True  # type: ignore[arg-type]
