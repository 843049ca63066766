"""A memory is embedded with its speaker's words for themselves read as their name.

`pipeline.in_their_name`, by `pipeline.said_by`: families over English, German and Dutch (each
language's words for oneself, its possessives, its contractions, its genitive), and French,
Spanish and Italian, which keep what was said.
"""

from __future__ import annotations

import pytest

from custom_components.alto.memory.languages import LANGUAGES
from custom_components.alto.memory.lexical import WORD, language
from custom_components.alto.memory.pipeline import in_their_name, said_by

# (said, by, embedded): each language's words for oneself and possessives, at a sentence's start
# and inside it, in capitals and not.
NAMED = [
    ("I take my pill with breakfast.", "Walt", "Walt take Walt's pill with breakfast."),
    (
        "My birthday is in March, don't forget me.",
        "Ellie",
        "Ellie's birthday is in March, don't forget Ellie.",
    ),
    (
        "The red bike is mine, I bought it myself.",
        "Jack",
        "The red bike is Jack's, Jack bought it Jack.",
    ),
    ("I'm allergic to peanuts.", "Josh", "Josh is allergic to peanuts."),
    (
        "I’ve booked the dentist and I’ll go alone.",
        "Claire",
        "Claire has booked the dentist and Claire will go alone.",
    ),
    ("I'd rather have tea.", "Pat", "Pat would rather have tea."),
    (
        "Mein Geburtstag ist am 14. Januar, da werde ich achtzig.",
        "Helga",
        "Helgas Geburtstag ist am 14. Januar, da werde Helga achtzig.",
    ),
    (
        "Meine Brille liegt bei mir in der Schublade, ruf mich an.",
        "Jens",
        "Jens' Brille liegt bei Jens in der Schublade, ruf Jens an.",
    ),
    ("Ich bringe meinen Sohn zum Training.", "Max", "Max bringe Max' Sohn zum Training."),
    ("Ik neem elke ochtend mijn pillen.", "Gerda", "Gerda neem elke ochtend Gerdas pillen."),
    (
        "Mijn fiets staat bij m'n broer, geef hem aan mij.",
        "Daan",
        "Daans fiets staat bij Daans broer, geef hem aan Daan.",
    ),
]

# Said with no word for oneself, or in a language that keeps what was said.
KEPT = [
    ("The bins go out on Thursday.", "Walt"),
    ("Die Biotonne wird dienstags geleert.", "Helga"),
    ("De groene container gaat maandag aan de straat.", "Gerda"),
    ("Je prends mon médicament le matin.", "Marie"),
    ("Mi cumpleaños es el 3 de mayo y yo invito.", "Lucía"),
    ("Il mio compleanno è il 3 maggio, io offro.", "Giulia"),
]


@pytest.mark.parametrize(("said", "by", "embedded"), NAMED)
def test_words_for_oneself_are_the_speakers_name(said: str, by: str, embedded: str) -> None:
    """Every word for oneself reads as the name, every possessive as its genitive."""
    assert in_their_name(said, by) == embedded


@pytest.mark.parametrize(("said", "by"), KEPT)
def test_other_texts_are_embedded_as_said(said: str, by: str) -> None:
    """No word for oneself, or a language without the forms: the text is what was said."""
    assert in_their_name(said, by) == said


@pytest.mark.parametrize("code", ["en", "de", "nl"])
def test_no_form_is_left_in_what_is_embedded(code: str) -> None:
    """Every word of a language's forms, in a sentence of that language, is replaced."""
    lang = LANGUAGES[code]
    assert lang.first_person
    filler = " ".join(sorted(lang.function_words)[:12])  # enough of its words to be read as it
    for word in lang.first_person:
        said = f"{word.capitalize()} {filler}"
        assert language(said) is lang
        left = {w.casefold().replace("’", "'") for w in WORD.findall(in_their_name(said, "Zoë"))}
        assert word not in left, (code, word)


def test_said_by_names_the_speaker_once_known() -> None:
    """Without a name the text is embedded as said; with one, after it and in it."""
    names = {"user-a": "Anna"}
    assert said_by("I am home.", "user-a", names) == "Anna said: Anna am home."
    assert said_by("I am home.", "user-b", names) == "I am home."
    assert said_by("I am home.", None, names) == "I am home."
