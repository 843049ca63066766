"""The extractive verifier: what must pass, what each failure mode catches, that it never raises."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from uniseg.wordbreak import words

from custom_components.alto.surface import lexicon
from custom_components.alto.surface.segments import segments
from custom_components.alto.surface.verify import Failure, Verdict, verify_render

MARIA = {"Maria": ["Maria walks the dog every morning"]}
FAMILY = {
    "Maria": ["Maria walks the dog every morning", "Maria is allergic to cats"],
    "Tom": ["Tom takes the bins out on Thursday night", "Tom is allergic to peanuts"],
}
BOILER = {"the boiler": ["the boiler was serviced on March 3 at 7:30"]}


def modes(verdict: Verdict) -> set[str]:
    """The verdict's failure modes."""
    return {f.mode for f in verdict.failures}


def spans(verdict: Verdict, mode: str) -> list[str]:
    """The verdict's spans failing with `mode`."""
    return [f.span for f in verdict.failures if f.mode == mode]


@pytest.mark.parametrize(
    ("fragment", "render"),
    [
        (MARIA, "I remember Maria walking the dog every morning."),
        (MARIA, "Maria walked the dog every morning, I think."),
        (MARIA, "I recall that Maria walks the dog every morning."),
        (MARIA, "Maria told me she walks the dog every morning."),
        (MARIA, "I think Maria mentioned walking the dog every morning."),
        (MARIA, "I know Maria walks the dog every morning."),
        (MARIA, "I remember Maria."),
        (
            FAMILY,
            "Maria walks the dog every morning, and Tom takes the bins out on Thursday night.",
        ),
        (FAMILY, "Tom is allergic to peanuts; Maria is allergic to cats."),
        (FAMILY, "Maria told me Tom is allergic to peanuts."),
        (FAMILY, "Every morning Maria walks the dog."),
        (FAMILY, "Tom takes the bins out on Thursday night and he is allergic to peanuts."),
        (FAMILY, "Maria and Tom are allergic."),
        (BOILER, "I remember the boiler being serviced on March 3 at 7:30."),
        (BOILER, "Our boiler was serviced on the 3rd of March at 7.30."),
        (BOILER, "The boiler was serviced on March third at 7:30."),
        ({"Grandma Rose": ["Grandma Rose can't eat gluten"]}, "Grandma Rose cannot eat gluten."),
        ({"Priya": ["Priya's party is at 7 pm"]}, "I remember Priya's party is at 7pm."),
        ({"Dev": ["Dev ran twenty-five laps"]}, "Dev ran 25 laps."),
        ({"Biscuit": ["Biscuit broke the gate"]}, "Biscuit breaks the gate, I recall."),
        ({"Zoë": ["Zoë's café shift starts at 9"]}, "I remember Zoë’s café shift starts at 9."),
        ({"Sam": ["Sam is scared of the dark"]}, "Sam is scared of the dark."),
        (
            {"Maria": ["the car is due for its MOT in May"]},
            "Maria told me the car is due for its MOT in May.",
        ),
    ],
)
def test_faithful_renders_pass(fragment: dict[str, list[str]], render: str) -> None:
    """Faithful renders pass."""
    verdict = verify_render(fragment, render)
    assert verdict.ok, verdict.failures
    assert verdict.failures == ()


@pytest.mark.parametrize(
    ("fragment", "render", "span"),
    [
        (MARIA, "I remember Maria walking the dog every morning along the canal.", "canal"),
        (MARIA, "Maria walks the dog every morning before breakfast.", "breakfast"),
        (
            BOILER,
            "The boiler was serviced on March 3 and the engineer replaced the valve.",
            "valve",
        ),
        ({"Alto": []}, "My name is Alto.", "name"),
        ({}, "I remember the dog.", "dog"),
    ],
)
def test_invented_content_is_untraceable(
    fragment: dict[str, list[str]], render: str, span: str
) -> None:
    """Invented content is untraceable."""
    verdict = verify_render(fragment, render)
    assert not verdict.ok
    assert span in spans(verdict, "untraceable")
    assert span in verdict.untraceable_spans


@pytest.mark.parametrize(
    ("render", "span"),
    [
        ("I remember Tom walking the dog every morning.", "dog"),
        ("Tom is allergic to cats.", "cats"),
        ("Maria takes the bins out.", "bins"),
        ("Maria walks the dog every morning and she is allergic to peanuts.", "peanuts"),
        ("Maria and Tom walk the dog.", "dog"),
        ("Maria told me Tom walks the dog.", "dog"),
    ],
)
def test_true_phrase_on_the_wrong_entity_is_misattributed(render: str, span: str) -> None:
    """True phrase on the wrong entity is misattributed."""
    verdict = verify_render(FAMILY, render)
    assert not verdict.ok
    assert span in spans(verdict, "misattributed")


@pytest.mark.parametrize(
    ("fragment", "render", "span"),
    [
        (BOILER, "The boiler was serviced on March 4 at 7:30.", "4"),
        (BOILER, "The boiler was serviced on March 3 at 7:45.", "7:45"),
        (BOILER, "The boiler was serviced on April 3 at 7:30.", "April"),
        (BOILER, "The boiler was serviced on the 4th of March at 7:30.", "4th"),
        (BOILER, "The boiler was serviced on March 3 at 7:30 in 2024.", "2024"),
        (
            {"Biscuit": ["Biscuit needs three walks a day"]},
            "Biscuit needs four walks a day.",
            "four",
        ),
        ({"Biscuit": ["Biscuit needs three walks a day"]}, "Biscuit needs 4 walks a day.", "4"),
        ({"Priya": ["Priya's party is at 7am"]}, "Priya's party is at 7 pm.", "7 pm"),
        ({"Tom": ["Tom plays football with Sam"]}, "Tom plays football with Sid.", "Sid"),
        ({"Tom": ["Tom's swimming is in June"]}, "Tom's swimming is in May.", "May"),
    ],
)
def test_altered_precise_items(fragment: dict[str, list[str]], render: str, span: str) -> None:
    """An altered precise item (a date, time or number) is a precise failure."""
    verdict = verify_render(fragment, render)
    assert not verdict.ok
    assert span in spans(verdict, "precise")


def test_precise_item_must_belong_to_the_clause_entity() -> None:
    """Precise item must belong to the clause entity."""
    fragment = {"Maria": ["Maria's birthday is March 3"], "Tom": ["Tom's birthday is March 4"]}
    assert verify_render(fragment, "Maria's birthday is March 3, and Tom's is March 4.").ok
    verdict = verify_render(fragment, "Maria's birthday is March 4.")
    assert spans(verdict, "precise") == ["4"]


@pytest.mark.parametrize(
    ("utterance", "render", "span"),
    [
        (
            "Does Maria walk the dog in the park?",
            "Maria walks the dog in the park every morning.",
            "park",
        ),
        (
            "Is Maria's walk a long one?",
            "I remember Maria's long walk with the dog every morning.",
            "long",
        ),
        ("Who takes Rex out?", "Maria walks the dog every morning and takes it out.", "takes"),
    ],
)
def test_words_from_the_utterance_are_echo(utterance: str, render: str, span: str) -> None:
    """Words from the utterance are echo."""
    verdict = verify_render(MARIA, render, utterance=utterance)
    assert not verdict.ok
    assert span in spans(verdict, "echo")


def test_utterance_words_that_are_also_licensed_pass() -> None:
    """Utterance words that are also licensed pass."""
    verdict = verify_render(
        MARIA, "Maria walks the dog every morning.", utterance="Who walks the dog?"
    )
    assert verdict.ok


@pytest.mark.parametrize(
    ("render", "span"),
    [
        ("Sadly, Maria walks the dog every morning.", "Sadly"),
        ("I have a lovely memory of Maria walking the dog every morning.", "lovely"),
        ("Maria walks the dog every morning, which is wonderful.", "wonderful"),
        ("Unfortunately Maria walks the dog every morning.", "Unfortunately"),
        ("Maria's favourite thing is walking the dog every morning.", "favourite"),
        ("Maria is worried when she walks the dog every morning.", "worried"),
        ("Maria loves walking the dog every morning.", "loves"),
    ],
)
def test_invented_evaluation_is_framing(render: str, span: str) -> None:
    """Invented evaluation is framing."""
    verdict = verify_render(MARIA, render)
    assert not verdict.ok
    assert span in spans(verdict, "framing")
    assert span not in spans(verdict, "untraceable")


def test_evaluation_present_in_the_source_is_not_framing() -> None:
    """Evaluation present in the source is not framing."""
    fragment = {"Priya": ["Priya loves the lemon cake", "Priya is worried about her exam"]}
    assert verify_render(
        fragment, "Priya loves the lemon cake and she is worried about her exam."
    ).ok


@pytest.mark.parametrize(
    ("fragment", "render", "span"),
    [
        ({"Maria": ["Maria grew up in Leeds"]}, "I grew up in Leeds.", "I grew"),
        (
            {"Maria": ["Maria's childhood was in Leeds"]},
            "My childhood was in Leeds.",
            "My childhood",
        ),
        ({"Dev": ["Dev used to live in Bristol"]}, "I used to live in Bristol.", "I used to live"),
        ({"Maria": ["Maria's mother lives in Galway"]}, "My mother lives in Galway.", "My mother"),
        ({"Sam": ["Sam was young"]}, "When I was young, Sam was young.", "I was young"),
        ({"Priya": ["Priya visited Lisbon"]}, "I visited Lisbon.", "I visited"),
        ({"Biscuit": ["Biscuit felt scared"]}, "I felt scared.", "I felt"),
        ({"Tom": ["Tom was born in 2015"]}, "I was born in 2015.", "I was born"),
        ({"Tom": ["Tom goes to school"]}, "Tom goes to school, like my own kids.", "my own kids"),
    ],
)
def test_first_person_life_claims_are_autobiography(
    fragment: dict[str, list[str]], render: str, span: str
) -> None:
    """First person life claims are autobiography."""
    verdict = verify_render(fragment, render)
    assert not verdict.ok
    assert span in spans(verdict, "autobiography")


def test_autobiography_is_reported_even_when_every_word_traces() -> None:
    """Autobiography is reported even when every word traces."""
    verdict = verify_render({"Maria": ["Maria grew up in Leeds"]}, "I grew up in Leeds.")
    assert modes(verdict) == {"autobiography"}


@pytest.mark.parametrize(
    "render",
    [
        "I remember Maria walks the dog.",
        "I think I recall Maria walking the dog.",
        "Maria told me.",
    ],
)
def test_speaker_framing_is_not_autobiography(render: str) -> None:
    """Speaker framing is not autobiography."""
    assert "autobiography" not in modes(verify_render(MARIA, render))


@pytest.mark.parametrize(
    ("fragment", "render"),
    [
        (MARIA, ""),
        (MARIA, "   "),
        (MARIA, "..."),
        (MARIA, None),
        (MARIA, 42),
        (MARIA, b"Maria walks the dog"),
        (None, "Maria walks the dog."),
        (["Maria"], "Maria walks the dog."),
        ({"Maria": "Maria walks the dog"}, "Maria walks the dog."),
        ({"Maria": [None]}, "Maria walks the dog."),
        ({1: ["one"]}, "one"),
    ],
)
def test_cannot_run_drops_instead_of_raising(fragment: object, render: object) -> None:
    """Cannot run drops instead of raising."""
    verdict = verify_render(fragment, render)  # type: ignore[arg-type]
    assert verdict.ok is False
    assert [f.mode for f in verdict.failures] == ["untraceable"]
    assert verdict.failures[0].span == (render if isinstance(render, str) else "")


@pytest.mark.parametrize(
    "render",
    [
        "\x00\x01\ufffd",
        "🙂🙂 Maria 🐕",
        "Maria walks the dog every morning " * 50,
        "7:30:45/12-99 1st 2nd 3,000.5 ½ ١٢٣",
        "'s n't '' ’’ - -- — ;;; ::",
        "МАРИЯ гуляет с собакой 每天早上",
        "\ud800 lone surrogate",
    ],
)
def test_junk_never_raises(render: str) -> None:
    """Junk never raises."""
    verdict = verify_render(MARIA, render, utterance=render)
    assert isinstance(verdict, Verdict)
    assert verdict.ok == (not verdict.failures)


def test_utterance_that_is_not_text_drops() -> None:
    """Utterance that is not text drops."""
    verdict = verify_render(MARIA, "Maria walks the dog.", utterance=None)  # type: ignore[arg-type]
    assert not verdict.ok


def test_verdict_is_frozen_and_spans_are_distinct() -> None:
    """Verdict is frozen and spans are distinct."""
    verdict = verify_render(MARIA, "Maria walks the dog by the canal and the canal path.")
    assert verdict.untraceable_spans == ("canal", "path")
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.ok = True  # type: ignore[misc]
    assert isinstance(verdict.failures[0], Failure)


def test_spans_are_render_text() -> None:
    """Failing spans are quoted as the render wrote them."""
    verdict = verify_render(BOILER, "The Boiler was serviced on MARCH 3 at 07:30 by Kevin.")
    assert verdict.untraceable_spans == ("Kevin",)
    assert spans(verdict, "precise") == ["Kevin"]


# The structural check: each clause must say what one licensed phrase says, in its order, with
# its polarity and its quantifiers.

HUGO = {"Hugo": ["Hugo is not allergic to cats"]}
TOM_WEEK = {"Tom": ["Tom has football on Tuesday and piano on Thursday"]}
ANA = {"Ana": ["Ana drives Ben to school"]}
ANA_BEN = {"Ana": ["Ana drives Ben to school"], "Ben": ["Ben plays chess on Fridays"]}


@pytest.mark.parametrize(
    ("fragment", "render", "span"),
    [
        (HUGO, "Hugo is allergic to cats.", "Hugo is allergic to cats"),
        (
            {"Lena": ["Lena doesn't drink coffee anymore"]},
            "Lena drinks coffee.",
            "Lena drinks coffee",
        ),
        ({"Joe": ["Joe never drives at night"]}, "Joe drives at night.", "Joe drives at night"),
        ({"Joe": ["Joe no longer drives"]}, "I remember Joe drives.", "Joe drives"),
        ({"Dad": ["Dad doesn't eat mushrooms or olives"]}, "Dad eats olives.", "Dad eats olives"),
        (
            {"Sam": ["Sam sleeps without a night light"]},
            "Sam sleeps with a night light.",
            "Sam sleeps with a night light",
        ),
        (
            {"Maria": ["Maria likes tea", "Maria doesn't like coffee"]},
            "Maria doesn't like tea.",
            "Maria doesn't like tea",
        ),
        (
            {"Maria": ["Maria doesn't eat fish but eats eggs"]},
            "Maria eats fish.",
            "Maria eats fish",
        ),
        (MARIA, "Maria never walks the dog.", "never"),
        (MARIA, "Maria doesn't walk the dog.", "doesn't"),
        (
            {"Jo": ["I think, on Sundays Jo doesn't swim"]},
            "Jo swims on Sundays.",
            "Jo swims on Sundays",
        ),
        ({"Jo": ["Jo doesn't swim on Sundays"]}, "On Sundays Jo swims.", "Sundays Jo swims"),
    ],
)
def test_negation_dropped_or_added_is_polarity(
    fragment: dict[str, list[str]], render: str, span: str
) -> None:
    """Negation dropped or added is polarity."""
    verdict = verify_render(fragment, render)
    assert not verdict.ok
    assert span in spans(verdict, "polarity")
    assert span in verdict.untraceable_spans  # named in the one regeneration


@pytest.mark.parametrize(
    ("fragment", "render"),
    [
        (ANA, "Ben drives Ana to school."),
        (ANA, "I remember Ben drives to school."),
        (ANA_BEN, "Ben drives Ana to school."),
        (ANA_BEN, "Ben plays chess on Fridays and drives Ana to school."),
        (TOM_WEEK, "Tom has piano on Tuesday and football on Thursday."),
        (TOM_WEEK, "Tom has football on Thursday."),
        (TOM_WEEK, "On Tuesday, Tom has piano."),
        ({"Finn": ["the cat scratched Finn"]}, "Finn scratched the cat."),
        ({"Jo": ["On Tuesdays, Jo swims and on Fridays Jo runs"]}, "Jo swims on Fridays."),
        ({"Jo": ["Jo walks the dog, feeds the cat and waters the plants"]}, "Jo walks the plants."),
        (
            {"Ana": ["Ana owes Ben ten pounds"], "Ben": ["Ben owes Ana five pounds"]},
            "Ben owes Ana ten pounds.",
        ),
    ],
)
def test_roles_or_values_swapped_within_a_phrase(
    fragment: dict[str, list[str]], render: str
) -> None:
    """Roles or values swapped within a phrase."""
    verdict = verify_render(fragment, render)
    assert not verdict.ok
    assert modes(verdict) == {"swapped"}


@pytest.mark.parametrize(
    ("fragment", "render", "mode_span"),
    [
        (
            {"Maria": ["Maria goes to church every Sunday"]},
            "Maria goes to church some Sundays.",
            "some",
        ),
        (
            {"the kids": ["all the kids have had the flu jab"]},
            "Some of the kids have had the flu jab.",
            "Some",
        ),
        ({"Tom": ["Tom always wears a helmet"]}, "Tom sometimes wears a helmet.", "sometimes"),
        ({"Zara": ["Zara eats most vegetables"]}, "Zara eats all vegetables.", "all"),
        (MARIA, "Maria walks all the dogs every morning.", "all"),
        ({"Leo": ["Leo usually walks to school"]}, "Leo walks to school.", "Leo walks to school"),
        (
            {"Piet": ["Piet cycles every Friday", "Piet swims some Mondays"]},
            "Piet cycles some Fridays.",
            "Piet cycles some Fridays",
        ),
    ],
)
def test_weakened_or_changed_quantifier(
    fragment: dict[str, list[str]], render: str, mode_span: str
) -> None:
    """Weakened or changed quantifier."""
    verdict = verify_render(fragment, render)
    assert not verdict.ok
    assert mode_span in spans(verdict, "quantifier")


@pytest.mark.parametrize(
    ("fragment", "render"),
    [
        # subsets of a span
        (TOM_WEEK, "Tom has football on Tuesday."),
        (TOM_WEEK, "Tom has piano on Thursday."),
        (TOM_WEEK, "Tom has piano on Thursday and football on Tuesday."),
        (
            {"Jo": ["Jo walks the dog, feeds the cat and waters the plants"]},
            "Jo waters the plants.",
        ),
        ({"Priya": ["Priya likes apples, pears and plums"]}, "Priya likes pears and plums."),
        (
            {"Maya": ["Maya waters the plants on Mondays and Thursdays"]},
            "Maya waters the plants on Thursdays.",
        ),
        (
            {"Oskar": ["Oskar feeds the chickens every evening before dark"]},
            "Oskar feeds the chickens.",
        ),
        (ANA, "I remember Ana drives Ben."),
        # polarity and quantifiers kept, or a universal one left out
        (HUGO, "Hugo isn't allergic to cats."),
        ({"Lena": ["Lena doesn't drink coffee anymore"]}, "Lena doesn't drink coffee."),
        ({"Dad": ["Dad doesn't eat mushrooms or olives"]}, "Dad doesn't eat olives."),
        ({"Maria": ["Maria doesn't eat fish but eats eggs"]}, "Maria eats eggs."),
        ({"Maria": ["Maria goes to church every Sunday"]}, "Maria goes to church on Sundays."),
        (
            {"Ivan": ["Ivan visits his mother every other weekend"]},
            "Ivan visits his mother every other weekend.",
        ),
        ({"Zara": ["Zara has some gluten-free bread"]}, "Zara has some gluten-free bread."),
        # an adjunct moved to the front, or back from it; a date however it is written
        (TOM_WEEK, "On Thursday Tom has piano."),
        (
            {"the heating": ["the heating comes on at 6:30 on weekdays"]},
            "On weekdays, the heating comes on at 6:30.",
        ),
        (
            {"Lena": ["Every morning, Lena runs along the river"]},
            "Lena runs along the river every morning.",
        ),
        ({"Jo": ["On Tuesdays, Jo swims and on Fridays Jo runs"]}, "Jo runs on Fridays."),
        (BOILER, "On the 3rd of March at 7:30 the boiler was serviced."),
        ({"Jo": ["I think, on Sundays Jo doesn't swim"]}, "Jo doesn't swim on Sundays."),
        ({"Jo": ["Jo doesn't swim on Sundays"]}, "On Sundays Jo doesn't swim."),
        # two entities in one render
        (ANA_BEN, "Ana drives Ben to school, and Ben plays chess on Fridays."),
        (ANA_BEN, "Ben plays chess on Fridays, and Ana drives him to school."),
        (
            {"Mia": ["Mia is allergic to nuts"], "Leo": ["Leo is allergic to nuts too"]},
            "Mia and Leo are both allergic to nuts.",
        ),
        (
            {"Ana": ["Ana owes Ben ten pounds"], "Ben": ["Ben owes Ana five pounds"]},
            "Ana owes Ben ten pounds and Ben owes Ana five pounds.",
        ),
    ],
)
def test_faithful_structure_passes(fragment: dict[str, list[str]], render: str) -> None:
    """Faithful structure passes."""
    verdict = verify_render(fragment, render)
    assert verdict.ok, verdict.failures


@pytest.mark.parametrize("framing", lexicon.FRAMING)
def test_every_extractive_framing_is_form(framing: str) -> None:
    """Every extractive framing is form."""
    render = f"{framing.capitalize()}, Maria walks the dog every morning."
    assert verify_render(MARIA, render).ok


def test_framing_words_are_form_only_as_framing() -> None:
    """Framing words are form only as framing."""
    verdict = verify_render(MARIA, "As far as the canal, Maria walks the dog every morning.")
    assert "far" in spans(verdict, "untraceable")


def test_structural_failure_names_the_clause_and_keeps_render_order() -> None:
    """Structural failure names the clause and keeps render order."""
    verdict = verify_render(HUGO, "Hugo is allergic to cats, and Hugo has a cockatoo.")
    assert verdict.failures == (
        Failure("polarity", "Hugo is allergic to cats"),
        Failure("untraceable", "cockatoo"),
    )


def test_a_clause_that_failed_word_by_word_is_not_also_misaligned() -> None:
    """A clause that failed word by word is not also misaligned."""
    verdict = verify_render(ANA, "Ben drives Ana to the station.")
    assert modes(verdict) == {"untraceable"}


def _corpus() -> list[str]:
    """Every text of both labelled sets, and text built to stress the segmentation shortcut."""
    texts = [
        " a \u0301b  c",  # a combining mark after a space joins the space (WB4)
        "x \u200db",  # so does a zero-width joiner
        "Zoë’s café  opens at 7:30 — or 7.30?",
        "  two  spaces,\ttab\tand\nnew\r\nlines ",
        "👩\u200d👩\u200d👧 🇬🇧🇫🇷 e.g. U.S.A. 3,000.5 can't",
        "",
    ]
    for name in ("labelled_renders.json", "heldout_renders.json"):
        cases = json.loads(Path(__file__).with_name(name).read_text(encoding="utf-8"))
        for case in cases:
            texts += [case["render"], case["utterance"]]
            texts += [p for phrases in case["fragment"].values() for p in phrases]
    return texts


def test_piecewise_segmentation_is_uniseg_segmentation() -> None:
    """Piecewise segmentation is uniseg segmentation."""
    for text in _corpus():
        assert segments(text) == list(words(text)), text
