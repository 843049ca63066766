"""The verifier in every language Alto speaks: what passes, what each guard catches, which reading.

Each language has one household (`KITS`): a memory, a faithful render in the language's own order
and framing, and one render per guard that breaks it. The labelled sets at the end were each
written in German, Dutch, French, Spanish and Italian by someone who never saw the code, 250
renders a set, and first run on the rule as it then stood; the rule was mended on each after
(so none is blind now). Each first run, failing renders caught and faithful ones kept:
`language_renders_1.json` 143/153 and 60/97 (before the languages' readings: 148/153 and 0/97),
`language_renders_2.json` 153/154 and 73/96, `language_renders_3.json` 152/154 and 67/96,
`language_renders_4.json` 149/153 and 66/97 (before the languages' readings: 149/153 and 0/97).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from custom_components.alto.surface.lexicon import ENGLISH
from custom_components.alto.surface.readings import READINGS, reading_of
from custom_components.alto.surface.verify import verify_render
from tests.surface.test_labelled_set import FIELDS, MODES, load, report, score


@dataclass(frozen=True)
class Kit:
    """One language's household: a memory, a faithful render, and renders each guard drops."""

    code: str
    fragment: dict[str, list[str]]
    faithful: tuple[str, ...]  # framed, reordered as the language does, inflected
    polarity: tuple[str, ...]  # a negation dropped or added
    quantifier: str  # a restricting quantifier for a universal one
    autobiography: str  # the operator claiming the memory as its own life
    swapped: str  # two people's roles exchanged, every word traced


KITS = (
    Kit(
        "de",
        {
            "Jonas": ["Jonas isst keine Haselnüsse", "Jonas schwimmt jeden Sonntag"],
            "Lena": ["Lena bringt Jonas mittwochs zum Training", "Lena mag Kaffee nicht"],
        },
        (
            "Ich erinnere mich, dass Jonas keine Haselnüsse isst.",
            "Soweit ich weiß, schwimmt Jonas jeden Sonntag.",
            "Mittwochs bringt Lena Jonas zum Training.",
            "Ich glaube, dass Lena Kaffee nicht mag.",
        ),
        ("Jonas isst Haselnüsse.", "Ich glaube, dass Lena Kaffee mag."),
        "Jonas schwimmt manchmal sonntags.",
        "Ich schwimme jeden Sonntag.",
        "Mittwochs bringt Jonas Lena zum Training.",
    ),
    Kit(
        "nl",
        {
            "Sanne": ["Sanne drinkt geen koffie", "Sanne fietst elke ochtend naar haar werk"],
            "Bram": ["Bram haalt Sanne op vrijdag van het station", "Bram zwemt niet"],
        },
        (
            "Ik herinner me dat Sanne geen koffie drinkt.",
            "Volgens mij fietst Sanne elke ochtend naar haar werk.",
            "Op vrijdag haalt Bram Sanne van het station.",
            "Ik weet nog dat Bram niet zwemt.",
        ),
        ("Sanne drinkt koffie.", "Bram zwemt."),
        "Sanne fietst soms naar haar werk.",
        "Ik fiets elke ochtend naar mijn werk.",
        "Op vrijdag haalt Sanne Bram van het station.",
    ),
    Kit(
        "fr",
        {
            "Léa": ["Léa ne mange jamais de porc", "Léa fait du yoga tous les mardis"],
            "Paul": ["Paul emmène Léa à la gare le vendredi"],
        },
        (
            "Je me souviens que Léa ne mange jamais de porc.",
            "Si je me souviens bien, Léa fait du yoga le mardi.",
            "Paul m'a dit qu'il emmène Léa à la gare le vendredi.",
        ),
        ("Léa mange du porc.", "Je crois que Paul n'emmène pas Léa à la gare le vendredi."),
        "Léa fait du yoga certains mardis.",
        "Je fais du yoga tous les mardis.",
        "Léa emmène Paul à la gare le vendredi.",
    ),
    Kit(
        "es",
        {
            "Lucía": ["Lucía no come gluten", "Lucía va al gimnasio todos los lunes"],
            "Diego": ["Diego lleva a Lucía al trabajo los jueves"],
        },
        (
            "Recuerdo que Lucía no come gluten.",
            "Si no me equivoco, Lucía va al gimnasio los lunes.",
            "Los jueves Diego lleva a Lucía al trabajo.",
        ),
        ("Lucía come gluten.", "Creo que Diego no lleva a Lucía al trabajo los jueves."),
        "Lucía va al gimnasio algunos lunes.",
        "Voy al gimnasio todos los lunes, y mi hermana también.",
        "Lucía lleva a Diego al trabajo los jueves.",
    ),
    Kit(
        "it",
        {
            "Marco": ["Marco non beve il latte", "Marco porta il cane al parco ogni sera"],
            "Giulia": ["Giulia accompagna Marco a scuola il lunedì"],
        },
        (
            "Mi ricordo che Marco non beve il latte.",
            "Se non sbaglio, Marco porta il cane al parco la sera.",
            "Il lunedì Giulia accompagna Marco a scuola.",
        ),
        ("Marco beve il latte.", "Credo che Giulia non accompagni Marco a scuola il lunedì."),
        "Marco porta il cane al parco qualche sera.",
        "Porto il mio cane al parco ogni sera.",
        "Marco accompagna Giulia a scuola il lunedì.",
    ),
)
BY_CODE = {kit.code: kit for kit in KITS}


def _cases(part: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for kit in KITS:
        renders = getattr(kit, part)
        found += [(kit.code, r) for r in (renders if isinstance(renders, tuple) else (renders,))]
    return found


def test_every_language_alto_speaks_has_a_kit() -> None:
    """Every language Alto speaks but English (its own tests) has a household here."""
    assert set(BY_CODE) | {"en"} == set(READINGS)


@pytest.mark.parametrize(("code", "render"), _cases("faithful"))
def test_a_faithful_render_in_the_language_passes(code: str, render: str) -> None:
    """Framing, subordinate order, a fronted adjunct and inflection are the language's form."""
    verdict = verify_render(BY_CODE[code].fragment, render)
    assert verdict.ok, verdict.failures


@pytest.mark.parametrize(
    ("code", "render", "mode"),
    [
        (code, render, mode)
        for mode in ("polarity", "quantifier", "autobiography", "swapped")
        for code, render in _cases(mode)
    ],
)
def test_each_guard_holds_in_the_language(code: str, render: str, mode: str) -> None:
    """A negation dropped or added, a quantifier weakened, a life claimed, roles swapped."""
    verdict = verify_render(BY_CODE[code].fragment, render)
    assert not verdict.ok
    assert mode in verdict.modes, verdict.failures


@pytest.mark.parametrize(
    ("fragment", "render"),
    [
        # A value from another clause, where adjuncts open clauses.
        (
            {"Lena": ["Lena hat mittwochs Klavier und freitags Tennis"]},
            "Freitags hat Lena Klavier.",
        ),
        (
            {"Lena": ["Lena hat mittwochs Klavier und freitags Tennis"]},
            "Lena hat freitags Klavier.",
        ),
        (
            {"Sanne": ["Sanne heeft op maandag tennis en op woensdag dansles"]},
            "Sanne heeft op maandag dansles.",
        ),
        (
            {"Papa": ["Papa bringt Jonas montags und Lena dienstags hin"]},
            "Papa bringt Lena montags hin.",
        ),
        # Roles exchanged by the verb's move, names told or not.
        ({"de kat": ["de kat jaagt op de hond"]}, "Ik weet dat de hond op de kat jaagt."),
        (
            {"Sanne": ["Sanne bezoekt oma elke zondag"]},
            "Ik weet dat oma Sanne elke zondag bezoekt.",
        ),
        ({"Oma": ["Oma ruft Jonas jeden Sonntag an"]}, "Jonas ruft Oma jeden Sonntag an."),
        ({"Marco": ["Marco porta il cane al parco"]}, "Il cane porta Marco al parco."),
        (
            {"Lucía": ["Lucía visita a su abuela los domingos"]},
            "Los domingos su abuela visita a Lucía.",
        ),
        (
            {"Marie": ["Marie garde le chien de Paul le samedi"]},
            "Le samedi Paul garde le chien de Marie.",
        ),
        (
            {"Bram": ["Bram haalt Sanne op vrijdag op"]},
            "Volgens mij haalt Sanne Bram op vrijdag op.",
        ),
        # Two negations are not one where a negation covers its clause.
        ({"Mila": ["Mila kan niet slapen zonder knuffel"]}, "Mila kan slapen zonder knuffel."),
        ({"Jonas": ["Jonas mag Nüsse nicht"]}, "Ich glaube, dass Jonas Nüsse mag."),
        # A first-person word past "that" is said, not framing.
        ({"Paul": ["Ik ben geboren in Groningen"]}, "Ik weet nog dat ik in Groningen geboren ben."),
        ({"Hélène": ["Ma sœur vit au Canada"]}, "Je me souviens que ma sœur vit au Canada."),
        ({"Cristina": ["Cristina ha due fratelli"]}, "Mi ricordo che ho due fratelli."),
    ],
)
def test_a_reordering_language_keeps_roles_values_and_polarity(
    fragment: dict[str, list[str]], render: str
) -> None:
    """What the verb's move, a fronted adjunct or framing allows never changes what is said."""
    assert not verify_render(fragment, render).ok


@pytest.mark.parametrize(
    ("fragment", "render"),
    [
        # A separable verb joined where its clause puts the verb last.
        (
            {"Stefan": ["Stefan holt die Kinder dienstags von der Kita ab"]},
            "Ich glaube, dass Stefan die Kinder dienstags von der Kita abholt.",
        ),
        (
            {"Sanne": ["Sanne laat elke ochtend de hond uit"]},
            "Ik herinner me dat Sanne elke ochtend de hond uitlaat.",
        ),
        # A memory said in the first person, retold in the third.
        (
            {"Markus": ["Ich trinke morgens nur schwarzen Tee, keinen Kaffee"]},
            "Markus hat mir erzählt, dass er morgens nur schwarzen Tee trinkt, keinen Kaffee.",
        ),
        # The verb first after framing, before a subject of more than one word.
        (
            {"de wifi": ["Het wachtwoord van de wifi staat op de achterkant van de router"]},
            "Volgens mij staat het wachtwoord van de wifi op de achterkant van de router.",
        ),
        ({"Lena": ["Lena hat mittwochs Klavierstunde"]}, "Mittwochs hat Lena Klavierstunde."),
    ],
)
def test_a_retelling_in_the_languages_own_grammar_passes(
    fragment: dict[str, list[str]], render: str
) -> None:
    """A joined separable verb, a person ending, the verb first after framing are form."""
    verdict = verify_render(fragment, render)
    assert verdict.ok, verdict.failures


@pytest.mark.parametrize(
    ("phrase", "render"),
    [
        ("Ella is only free at weekends", "Ella is free at weekends."),
        ("Ella hat nur am Wochenende Zeit", "Soweit ich weiß, hat Ella am Wochenende Zeit."),
        ("Ella heeft alleen in het weekend tijd", "Ella heeft in het weekend tijd."),
        ("Ella est libre seulement le samedi", "Ella est libre le samedi."),
        ("Elena solo tiene tiempo los sábados", "Elena tiene tiempo los sábados."),
        ("Elena ha tempo solo il sabato", "Elena ha tempo il sabato."),
    ],
)
def test_only_is_never_left_out(phrase: str, render: str) -> None:
    """A word for "only" restricts what it binds: left out, the thought claims more."""
    verdict = verify_render({phrase.split(maxsplit=1)[0]: [phrase]}, render)
    assert "quantifier" in verdict.modes, verdict.failures


@pytest.mark.parametrize(
    ("fragment", "render", "ok"),
    [
        (
            {"Paolo": ["Sono nato a Bari nel 1978"]},
            "Mi ricordo che sono nato a Bari nel 1978.",
            False,
        ),
        (
            {"Paolo": ["Sono nato a Bari nel 1978"]},
            "Paolo mi ha detto che è nato a Bari nel 1978.",
            True,
        ),
        (
            {"Paolo": ["Paolo è nato a Bari nel 1978"]},
            "Mi ricordo che Paolo è nato a Bari nel 1978.",
            True,
        ),
        (
            {"Marina": ["Trabajo en una farmacia del centro"]},
            "Trabajo en una farmacia del centro.",
            False,
        ),
        (
            {"Marina": ["Marina trabaja en una farmacia"]},
            "Creo que Marina trabaja en una farmacia.",
            True,
        ),
    ],
)
def test_a_thought_naming_no_one_says_i_where_verbs_say_it_alone(
    fragment: dict[str, list[str]], render: str, ok: bool
) -> None:
    """In Spanish and Italian a verb says "I" alone: a thought must name whom it is about."""
    verdict = verify_render(fragment, render)
    assert verdict.ok is ok, verdict.failures
    assert ok or verdict.modes & {"autobiography", "untraceable"}


@pytest.mark.parametrize(
    ("render", "ok"),
    [
        ("Je crois que Noah finit l'école à 16h30 le vendredi.", True),
        ("Je crois que Noah finit l'école à 16:30 le vendredi.", True),
        ("Je crois que Noah finit l'école à 16 h le vendredi.", False),
        ("Je crois que Noah finit l'école à 17 h 30 le vendredi.", False),
    ],
)
def test_a_french_time_is_one_value_however_written(render: str, ok: bool) -> None:
    """A French time written "16 h 30", "16h30" or "16:30" is one value; "16 h" is another."""
    verdict = verify_render({"Noah": ["Noah finit l'école à 16 h 30 le vendredi"]}, render)
    assert verdict.ok is ok, verdict.failures
    assert ok or "precise" in verdict.modes


@pytest.mark.parametrize(
    ("phrase", "render"),
    [
        ("Hannah works from home on some days", "Hannah works from home."),
        (
            "Hannah arbeitet an manchen Tagen im Homeoffice",
            "Soweit ich weiß, arbeitet Hannah im Homeoffice.",
        ),
        (
            "Vera werkt soms op zaterdag in de bakkerij",
            "Ik weet dat Vera op zaterdag in de bakkerij werkt.",
        ),
        ("Léa travaille certains jours à la maison", "Léa travaille à la maison."),
        ("Elena trabaja algunos días desde casa", "Elena trabaja desde casa."),
        ("Nives lavora da casa alcuni giorni", "Nives lavora da casa, mi pare."),
    ],
)
def test_a_restriction_is_never_left_out_whole(phrase: str, render: str) -> None:
    """Leaving out "on some days" with its days claims more than the memory, in every language."""
    verdict = verify_render({phrase.split(maxsplit=1)[0]: [phrase]}, render)
    assert "quantifier" in verdict.modes, verdict.failures


def test_a_joined_particle_is_read_apart_only_where_the_word_traces_to_nothing() -> None:
    """A word that begins like a particle ("mittwochs", "mit") stays one word."""
    fragment = {"Lena": ["Lena fährt mittwochs mit dem Bus"]}
    assert verify_render(fragment, "Ich glaube, dass Lena mittwochs mit dem Bus fährt.").ok
    assert not verify_render(fragment, "Ich glaube, dass Lena mittwochs abfährt.").ok


def test_a_negation_is_kept_when_the_text_reads_as_another_language() -> None:
    """A negator of any language counts in every other, where it is no function word there."""
    phrase = "Jo walks the dog with us, nunca on Sundays"  # English: "nunca" tells it no more
    assert reading_of([phrase, "Jo walks the dog with us on Sundays."]).code == "en"
    verdict = verify_render({"Jo": [phrase]}, "Jo walks the dog with us on Sundays.")
    assert "polarity" in verdict.modes, verdict.failures


@pytest.mark.parametrize(
    ("code", "framing"),
    [(kit.code, framing) for kit in KITS for framing in READINGS[kit.code].framing],
)
def test_every_framing_of_the_language_is_form(code: str, framing: str) -> None:
    """Every extractive framing a language lists needs no licence."""
    kit = BY_CODE[code]
    owner, phrases = next(iter(kit.fragment.items()))
    render = f"{framing.capitalize()}, {phrases[0]}."
    assert verify_render({owner: phrases}, render).ok, render


@pytest.mark.parametrize("code", sorted(READINGS))
def test_a_languages_guards_are_never_its_form(code: str) -> None:
    """No negator, quantifier or first-person word is a function word, and all are casefolded."""
    lex = READINGS[code]
    guards = lex.negators | lex.universal | lex.restricting
    assert not guards & lex.stopwords
    for words in (guards, lex.stopwords, lex.first_person, lex.openers, lex.months):
        assert all(w == w.casefold() for w in words)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Ich erinnere mich, dass Jonas keine Nüsse isst.", "de"),
        ("Ik herinner me dat Sanne geen koffie drinkt.", "nl"),
        ("Je me souviens que Léa ne mange jamais de porc.", "fr"),
        ("Recuerdo que Lucía no come gluten.", "es"),
        ("Mi ricordo che Marco non beve il latte.", "it"),
        ("I remember Maria walks the dog.", "en"),
    ],
)
def test_a_verification_reads_the_language_its_words_tell(text: str, code: str) -> None:
    """The render and its fragment are read in the language their words tell."""
    assert reading_of([text]).code == code


def test_english_is_read_as_it_was() -> None:
    """English keeps the lists it had: the labelled English sets are its measure."""
    assert READINGS["en"] is ENGLISH
    assert ENGLISH.life_lists
    assert not ENGLISH.verb_moves
    assert not ENGLISH.adjunct_first
    assert not ENGLISH.clause_negation


LANGUAGE_SETS = tuple(Path(__file__).with_name(f"language_renders_{n}.json") for n in (1, 2, 3, 4))


@pytest.mark.parametrize("path", LANGUAGE_SETS, ids=lambda p: p.stem)
def test_language_sets_are_well_formed(path: Path) -> None:
    """Fifty cases in each of five languages, every mode among them."""
    cases = load(path)
    assert len({c["id"] for c in cases}) == len(cases)
    assert Counter(c["id"][:2] for c in cases) == dict.fromkeys(BY_CODE, 50)
    for case in cases:
        assert set(case) == FIELDS
        assert case["label"] in {"faithful", *MODES}
    assert {c["label"] for c in cases} == {"faithful", *MODES}


@pytest.mark.parametrize("path", LANGUAGE_SETS, ids=lambda p: p.stem)
def test_verifier_on_languages_written_apart(path: Path) -> None:
    """Nearly every failing render dropped; most faithful ones kept (English keeps 97 %).

    Measured now (`scripts/verifier_rates`): caught 152/153, 154/154, 154/154, 150/153; kept
    83/97, 76/96, 74/96, 66/97.
    """
    cases = load(path)
    scores = score(cases)
    print(f"\n{path.name}\n{report(scores)}")
    assert scores.catch_rate >= 0.97
    assert scores.false_drop_rate <= 0.35
    for code in BY_CODE:
        kept = score([c for c in cases if c["id"].startswith(code)])
        assert kept.dropped_faithful < kept.faithful * 0.5, code
