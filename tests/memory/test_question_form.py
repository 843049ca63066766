"""A query's form (its function and question words) and its embedding with the form taken out."""

from __future__ import annotations

import numpy as np
import pytest

from custom_components.alto.memory.languages import LANGUAGES
from custom_components.alto.memory.lexical import language
from custom_components.alto.memory.question_form import FORM_WEIGHT, question_form, without_form

# The same question in every language Alto speaks: what it asks about is Sofia and the dentist.
ASKED = {
    "en": ("When is Sofia going to the dentist?", "When is to the"),
    "de": ("Wann geht Sofia zum Zahnarzt?", "Wann geht zum"),
    "nl": ("Wanneer gaat Sofia naar de tandarts?", "Wanneer gaat naar de"),
    "fr": ("Quand est-ce que Sofia va chez le dentiste ?", "Quand est ce que chez le"),
    "es": ("¿Cuándo va Sofia al dentista?", "Cuándo al"),
    "it": ("Quando va Sofia dal dentista?", "Quando dal"),
}


def test_every_language_alto_speaks_has_a_question() -> None:
    """The family below covers every language of `languages.LANGUAGES`."""
    assert set(ASKED) == set(LANGUAGES)


@pytest.mark.parametrize(("code", "asked"), ASKED.items())
def test_the_form_is_the_question_without_what_it_asks_about(
    code: str, asked: tuple[str, str]
) -> None:
    """Read in the question's own language, in the order said, as said: no name, no noun."""
    text, form = asked
    assert language(text).code == code
    assert question_form(text) == form
    assert "Sofia" not in form
    assert not {"dentist", "Zahnarzt", "tandarts", "dentiste", "dentista"} & set(form.split())


@pytest.mark.parametrize(
    "text",
    [
        "Sofia dentist Friday",  # nothing but what it is about
        "Zahnarzt Freitag",
        "what is it",  # nothing but form
        "Wann ist das?",
        "",
        "4821",
    ],
)
def test_a_query_all_form_or_with_none_has_no_form(text: str) -> None:
    """Nothing would be left of it, or nothing taken out: it is embedded as it is."""
    assert question_form(text) == ""


def test_a_contracted_question_word_is_form() -> None:
    """A question word with a clitic ("What's", "Who's") is form, as the bare word is."""
    assert question_form("What's the wifi password?") == "What's the"
    assert question_form("Who's picking Ben up?") == "Who's"


def test_the_form_is_taken_out_by_its_weight_and_the_rest_made_unit() -> None:
    """FORM_WEIGHT of the form's vector is subtracted and the difference has unit length."""
    asked = np.array([0.6, 0.8, 0.0])
    form = np.array([1.0, 0.0, 0.0])
    left = np.asarray(without_form(asked.tolist(), form.tolist()))
    expected = asked - FORM_WEIGHT * form
    assert np.allclose(left, expected / np.linalg.norm(expected))
    assert np.isclose(np.linalg.norm(left), 1.0)
    # Less like the form than the question was, and still mostly the question.
    assert left @ form < asked @ form
    assert left @ asked > 0.95


def test_a_form_that_cancels_the_question_leaves_it_as_it_was() -> None:
    """A model that embeds both alike (FORM_WEIGHT of a 5-times-longer form): no division by 0."""
    asked = [0.2, 0.0]
    assert without_form(asked, [1.0, 0.0]) == asked
