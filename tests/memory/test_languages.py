"""The memory reads each of Alto's six languages by its own words (`memory.languages`).

Families of cases per language: inflected forms meet their base form, function words never
score, German and Dutch compounds meet their heads, questions, commands and acknowledgements do
not compete while statements do; and English reads exactly as it did before the other languages
(over every text of the English recall sets).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.memory import recall
from custom_components.alto.memory.corpus import Corpus
from custom_components.alto.memory.informative import _SENTENCE, is_informative
from custom_components.alto.memory.languages import ENGLISH, LANGUAGES, detect
from custom_components.alto.memory.lexical import (
    ALIKE,
    PREFIX,
    WORD,
    alike,
    language,
    stems,
    terms,
    with_names,
)
from custom_components.alto.memory.records import KIND_SOURCE, Row

from . import recall_reference as reference

RECALL_DATA = Path(__file__).parents[2] / "scripts" / "benches" / "recall_data"


def _row(row_id: int, text: str) -> Row:
    return Row(
        id=row_id,
        document=text,
        kind=KIND_SOURCE,
        owner="household",
        scope="household",
        actor="unknown",
        source_id=f"s{row_id}",
        source_version=1,
        offset=0,
        length=len(text.encode()),
        status="current",
        sequence=row_id,
        said_at=row_id,
    )


def _meets(query: str, stored: str, speaker: str = "") -> bool:
    """Whether the lexical score of `query` lifts the row that says `stored` (beside another).

    The row is said by someone called `speaker`, if given.
    """
    rows = [replace(_row(1, stored), actor="a" * 32), _row(2, "Zzz qqq.")]
    view = Corpus.of(rows)
    found, _ = view.lexical(np.arange(len(rows)), query, {"a" * 32: speaker} if speaker else {})
    return 0 in found.tolist()


# (language, a sentence with {} for the word, a base form, its inflected forms)
INFLECTIONS = [
    ("en", "Where are the {} we need?", "lesson", ["lessons"]),
    ("en", "When is the {} of the club?", "meeting", ["meetings", "meet"]),
    ("de", "Wo ist die {} für den Keller?", "Tonne", ["Tonnen"]),
    ("de", "Wann ist der {} bei dem Arzt?", "Termin", ["Termine", "Terminen"]),
    ("de", "Wer hat die {} und das Auto?", "Schlüssel", ["Schlüsseln", "Schlüssels"]),
    ("fr", "Où est la {} de la maison?", "clé", ["clés"]),
    ("fr", "Quand est le {} chez le médecin?", "rendez-vous", ["rendez-vous"]),
    ("fr", "Qui a les {} pour la voiture?", "pneu", ["pneus"]),
    ("es", "¿Dónde están las {} de la casa?", "llave", ["llaves"]),
    ("es", "¿Cuándo es la {} del médico?", "cita", ["citas"]),
    ("es", "¿Quién tiene los {} del coche?", "documento", ["documentos"]),
    ("nl", "Waar is de {} van het huis?", "sleutel", ["sleutels"]),
    ("nl", "Wanneer is de {} bij de dokter?", "afspraak", ["afspraken"]),
    ("nl", "Wie heeft de {} van de auto?", "band", ["banden"]),
    ("it", "Dove sono le {} della casa?", "chiave", ["chiavi"]),
    ("it", "Quando è la {} dal medico?", "visita", ["visite"]),
    ("it", "Chi ha i {} della macchina?", "documento", ["documenti"]),
]


@pytest.mark.parametrize(("code", "sentence", "base", "forms"), INFLECTIONS)
def test_inflected_forms_meet_their_base_form(
    code: str, sentence: str, base: str, forms: list[str]
) -> None:
    """Asked with the base form, the row saying an inflected form scores, and the other way."""
    asked = sentence.format(base)
    assert language(asked).code == code
    for form in forms:
        said = sentence.format(form).replace("?", ".").replace("¿", "")
        assert language(said).code == code
        assert _meets(asked, said)
        assert _meets(sentence.format(form), sentence.format(base).replace("?", "."))


@pytest.mark.parametrize("code", list(LANGUAGES))
def test_function_words_do_not_score(code: str) -> None:
    """A text of nothing but a language's function words reads as that language, with no term."""
    lang = LANGUAGES[code]
    words = sorted(lang.function_words)
    text = " ".join(words)
    assert detect(words) == lang
    assert dict(terms(text)) == {}
    assert not _meets(text, text + " Kiwi")


@pytest.mark.parametrize(
    ("code", "text"),
    [
        ("nl", "Wat mag m'n dochter niet eten?"),  # "m'" elides only in French, before a vowel
        ("nl", "Luuk heeft schoenmaat 43 en kledingmaat M."),  # a size, not an elision
        ("de", "Lena trägt Größe S und Schuhgröße 38."),
        ("it", "Giulia porta la taglia S e il 37 di scarpe."),
        ("it", "Un'amica di Giulia viene domani."),
        ("fr", "L'anniversaire de Léa est en mars."),
        ("fr", "J'ai rendez-vous chez le dentiste."),
        ("en", "I'm home by six."),
        ("de", "Gibt's heute Kuchen?"),
    ],
)
def test_elisions_and_clitics_tell_a_language_only_beside_their_apostrophe(
    code: str, text: str
) -> None:
    """An elision tells its language before an apostrophe, a clitic after; a letter alone, none."""
    assert language(text).code == code


# (language, a sentence with {} for the word, a compound, its head, its first part)
COMPOUNDS = [
    ("de", "Wo steht die {} von uns?", "Biomülltonne", "Tonne", "Biomüll"),
    ("de", "Wo liegt der {} von uns?", "Ersatzschlüssel", "Schlüssel", "Ersatz"),
    ("de", "Wo ist die {} von Oma?", "Lesebrille", "Brille", "Lese"),
    ("de", "Wie ist die Nummer der {} von uns?", "Hausarztpraxis", "Praxis", "Hausarzt"),
    ("de", "Wann ist die {} in der Schule?", "Geburtstagsfeier", "Feier", "Geburtstag"),
    ("de", "Wie lautet das {} für das Haus?", "Internetpasswort", "Passwort", "Internet"),
    ("nl", "Waar is de {} van ons?", "reservesleutel", "sleutel", "reserve"),
    ("nl", "Waar zit de {} in het huis?", "watermeter", "meter", "water"),
    ("nl", "Wat is het nummer van de {} van de kinderen?", "kindertandarts", "tandarts", "kinder"),
    ("nl", "Wanneer moeten de {} terug?", "bibliotheekboeken", "boeken", "bibliotheek"),
    ("nl", "Wat is het {} van de wifi?", "internetwachtwoord", "wachtwoord", "internet"),
    ("nl", "Waar ligt de {} voor het afval?", "vuilniszak", "vuilnis", "vuilnis"),
]


@pytest.mark.parametrize(("code", "sentence", "compound", "head", "first"), COMPOUNDS)
def test_compounds_meet_their_parts(
    code: str, sentence: str, compound: str, head: str, first: str
) -> None:
    """A compound and its head or first part meet, whichever of them is asked."""
    for asked, said in ((head, compound), (compound, head), (first, compound)):
        question = sentence.format(asked)
        assert language(question).code == code
        assert _meets(question, sentence.format(said).replace("?", "."))


@pytest.mark.parametrize("name", ["blind_de_1", "blind_nl_1"])
def test_the_indexed_score_is_the_scan_in_other_languages(name: str) -> None:
    """On a German or Dutch household, every question scores each row as the reference scan."""
    data = json.loads((RECALL_DATA / f"{name}.json").read_text(encoding="utf-8"))
    rows = [_row(i, u["text"]) for i, u in enumerate(data["utterances"], start=1)]
    view = Corpus.of(rows)
    competing = np.flatnonzero(view.competes)
    documents = [reference.lexical_document(rows[i], {}) for i in competing]
    met = 0
    for question in data["questions"]:
        expected = reference.bm25(question["text"], documents)
        found = view.lexical(competing, question["text"], {})
        scored = dict(zip(found[0].tolist(), found[1].tolist(), strict=True))
        assert scored == {int(p): s for p, s in zip(competing, expected, strict=True) if s}
        met += bool(scored)
    assert met >= 0.8 * len(data["questions"])  # most questions hold a word some row holds


@pytest.mark.parametrize(
    ("query", "stored"),
    [
        ("Wann kommt die Reise?", "Die Preise sind im Keller."),  # "P" is no compound's part
        ("Waar is de bel?", "De rebel is in de tuin."),  # a head of three letters stands alone
        ("Where is the teacher?", "The headteacher is Mrs Kaur."),  # English: prefixes only
    ],
)
def test_a_part_is_a_word_of_its_own(query: str, stored: str) -> None:
    """A head is at least PREFIX letters after at least MIN_PART; English compounds as before."""
    assert not _meets(query, stored)


# (language, words with a "ge" inside that is their own: no stemmer cuts it out)
INNER_GE = [
    ("en", ["passageway", "vegetables", "pigeonhole"]),
    ("de", ["Regenjacke", "Garagentor", "Tagebuch"]),
    ("fr", ["fromagerie", "imagerie", "dangereux"]),
    ("es", ["agenda", "urgente", "vegetariano"]),
    ("nl", ["garagedeur", "regenjas", "beugeldoos", "hagelslag", "bagagerek", "begeleid"]),
    ("it", ["agenda", "vegetariano", "angelo"]),
]


@pytest.mark.parametrize(("code", "words"), INNER_GE)
def test_a_words_own_inner_ge_stays(code: str, words: list[str]) -> None:
    """A word's term keeps its letters up to and past an inner "ge" no particle comes before.

    Snowball's Dutch stemmer cuts a participle's "ge" out wherever it finds one ("garagedeur"
    read as "garadeur", "begeleid" as "beleid"); every language's terms keep it.
    """
    for word in words:
        inner = word.casefold().index("ge", 1)
        (term,) = terms(word, code)
        assert term.startswith(word.casefold()[: inner + 3]), (word, term)


# (a Dutch question, a statement it must meet, a statement it must not)
INNER_GE_MEETS = [
    ("Wanneer gaat de garage open?", "De code van de garagedeur is 2648.", "Het beleid is streng."),
    ("Waar is het bagagerek?", "De bagage staat in de gang.", "Het barek is dicht."),
    ("Wie begeleidt de groep?", "Ik begeleid de kinderen.", "Het beleid van school."),
    ("Wanneer wordt het plastic opgehaald?", "Het plastic ophalen doen we op maandag.", ""),
    ("Wie heeft de boiler aangezet?", "De boiler aanzetten doet Thijs om zes uur.", ""),
]


@pytest.mark.parametrize(("query", "meets", "misses"), INNER_GE_MEETS)
def test_a_dutch_compound_begins_with_its_first_part(query: str, meets: str, misses: str) -> None:
    """A compound with an inner "ge" meets its first part; a word the cut made alike does not.

    A separable verb's participle still meets its infinitive (its particle before the "ge").
    """
    assert language(query).code == "nl"
    assert _meets(query, meets)
    if misses:
        assert not _meets(query, misses)


def _lifted(query: str, stored: list[str]) -> set[int]:
    """Which of the rows saying `stored` (in order, from 0) the lexical score of `query` lifts."""
    rows = [_row(i + 1, text) for i, text in enumerate(stored)]
    found, _ = Corpus.of(rows).lexical(np.arange(len(rows)), query, {})
    return set(found.tolist())


# (language, a question, a statement whose only word like the question's shares its first
# ALIKE letters, a statement holding the asked word itself)
ALIKE_WORDS = [
    ("en", "Where are the plantpots?", "The planter is by the door.", "Two plantpots broke."),
    (
        "de",
        "Wann ist das Klavierspielen?",
        "Die Klavierstunde ist am Montag.",
        "Das Klavierspielen ist laut.",
    ),
    (
        "fr",
        "Qui fait le jardinage?",
        "Le jardinier vient le lundi.",
        "Le jardinage prend du temps.",
    ),
    (
        "es",
        "¿Quién es el farmacéutico?",
        "La farmacia cierra a las nueve.",
        "El farmacéutico es Luis.",
    ),
    (
        "nl",
        "Wanneer moet de groenbak buiten?",
        "De groene container gaat op maandag.",
        "De groenbak is vol.",
    ),
    (
        "it",
        "Quando apre la macelleria?",
        "Il macellaio chiude alle nove.",
        "La macelleria è piccola.",
    ),
]


@pytest.mark.parametrize(("code", "query", "like", "held"), ALIKE_WORDS)
def test_a_word_nothing_holds_meets_words_that_begin_alike(
    code: str, query: str, like: str, held: str
) -> None:
    """A query word no row holds or relates to meets the words sharing its first ALIKE letters.

    An inflection or compound the stemmer leaves apart; once a row holds the word, only that row.
    """
    assert language(query).code == code
    assert _lifted(query, [like, "Zzz qqq."]) == {0}
    assert _lifted(query, [like, held]) == {1}


@pytest.mark.parametrize("term", ["plantpot", "klavierspiel", "jardinag", "groenbak", "12345"])
def test_alike_shares_the_first_alike_letters(term: str) -> None:
    """Exactly the other terms that begin with the term's first ALIKE letters; never a number."""
    near = [term[:ALIKE] + "x", term[: ALIKE - 1] + "yz", term, term[:PREFIX] + term[ALIKE:]]
    found = alike(term, {term[:PREFIX]: near})
    assert found == ([] if term.isdigit() else [term[:ALIKE] + "x"])
    assert alike(term[: ALIKE - 1], {term[:PREFIX]: near}) == []


# (a question naming someone, the name, what they said, the alias the question calls them by)
NAMES = [
    ("Wann ist Leas Auftritt?", "Lea", "Im Dezember spiele ich in der Aula.", ""),
    ("Wer hilft Lea freitags?", "Lea", "Herr Brenner kommt um vier.", ""),
    ("Bij wie krijgt Sanne les?", "Sanne", "Meneer Hendriks komt op vrijdag.", ""),
    ("Wat is Sannes mentor?", "Sanne", "Mevrouw Kaya geeft Engels.", ""),
    ("Wann ist Omas Chorprobe?", "Gisela", "Wir singen mittwochs im Pfarrsaal.", "Oma"),
    ("Wat drinkt opa 's avonds?", "Henk", "Alleen muntthee na het eten.", "Opa"),
    ("What does Grandma's doctor say?", "Rosa", "I walk every morning.", "Grandma"),
]


@pytest.mark.parametrize(("query", "name", "said", "alias"), NAMES)
def test_a_question_names_the_speaker_in_its_language(
    query: str, name: str, said: str, alias: str
) -> None:
    """A name is read as the question's words are, its German or Dutch genitive "s" included.

    So is an alias: the question then names the person it calls so.
    """
    if alias:
        assert not _meets(query, said, name)
        query = with_names(query, {alias: name})
        assert query.endswith(name)
    assert _meets(query, said, name)


# (language, texts that compete, texts that do not: questions, commands, acknowledgements)
FILTER = [
    (
        "en",
        ["Sofia's swimming is on Wednesdays.", "Will is coming on Friday.", "Dan set the alarm."],
        ["When is swimming?", "when is swimming", "Turn off the lights.", "Thanks, that'll do."],
    ),
    (
        "de",
        [
            "Die Biotonne wird dienstags geleert.",
            "Wir haben das Licht im Flur repariert.",
            "Oma kommt am Montag mit dem Zug.",
        ],
        [
            "Wann kommt die Biotonne?",
            "wann kommt die Biotonne",
            "Kannst du das Licht ausmachen",
            "Mach das Licht im Wohnzimmer aus.",
            "Bitte schalte die Heizung auf 21 Grad.",
            "Spiel Musik in der Küche.",
            "Alles klar, danke!",
            "Vielen Dank.",
            "Gute Nacht.",
        ],
    ),
    (
        "fr",
        ["Le médecin de Léa est le docteur Martin.", "La poubelle sort le mardi soir."],
        [
            "Quand passe le camion poubelle?",
            "quand passe le camion poubelle",
            "Allume la lumière du salon.",
            "Éteins la télé.",
            "D'accord, merci beaucoup!",
            "Bonne nuit.",
        ],
    ),
    (
        "es",
        ["La cita de la abuela es el martes.", "Como pasta los lunes."],
        [
            "¿Cuándo es la cita de la abuela?",
            "Enciende la luz de la cocina.",
            "Por favor, apaga la tele.",
            "Vale, gracias.",
            "Muchas gracias.",
            "Buenas noches.",
        ],
    ),
    (
        "nl",
        ["De gft-bak gaat op maandag aan de straat.", "Ben is vrijdag jarig."],
        [
            "Wanneer moet de gft-bak buiten?",
            "wanneer moet de gft-bak buiten",
            "Doe het licht in de woonkamer uit.",
            "Zet de verwarming op 20 graden.",
            "Oké, dank je wel!",
            "Top, bedankt.",
            "Welterusten.",
        ],
    ),
    (
        "it",
        ["La nonna prende la pastiglia la mattina.", "Come sempre, il martedì c'è nuoto."],
        [
            "Quando c'è nuoto?",
            "quando c'è nuoto",
            "Accendi la luce in cucina.",
            "Per favore, spegni la TV.",
            "Va bene, grazie!",
            "Grazie mille.",
            "Buonanotte.",
        ],
    ),
]


@pytest.mark.parametrize(("code", "statements", "others"), FILTER)
def test_each_language_filters_its_own_non_facts(
    code: str, statements: list[str], others: list[str]
) -> None:
    """Statements compete; questions, commands and acknowledgements of the language do not."""
    for text in statements:
        assert is_informative(text), text
    for text in others:
        assert not is_informative(text), text


# (language, commands said without their verb, statements that end as one does).
VERBLESS = [
    (
        "en",
        ["Lights off.", "Kitchen lights off", "Living room lamp on!", "Please, bedroom light off."],
        ["The heating is on.", "The kids are off.", "My shift is on.", "It was on."],
    ),
    (
        "de",
        ["Licht aus.", "Küchenlicht an", "Wohnzimmer Licht aus!", "Bitte Rollladen runter."],
        ["Die Schule ist aus.", "Papa ist heute aus.", "Das Licht war die ganze Nacht an."],
    ),
    (
        "nl",
        ["Licht uit.", "Woonkamer lamp aan", "Muziek zachter!", "Alsjeblieft, rolluik omlaag."],
        ["De verwarming staat aan.", "De school is uit.", "Oma is vandaag uit."],
    ),
]


@pytest.mark.parametrize(("code", "commands", "statements"), VERBLESS)
def test_commands_without_their_verb_do_not_compete(
    code: str, commands: list[str], statements: list[str]
) -> None:
    """A command without its verb does not compete; a statement that ends as one does still does."""
    for text in commands:
        assert not is_informative(text), text
        assert is_informative(f"{text} {statements[0]}"), text  # a statement beside it tells
    for text in statements:
        assert is_informative(text), text


# (language, a statement a command verb opens, commands and questions a command verb opens)
OPENED_BY_A_COMMAND_VERB = [
    (
        "en",
        ["Set of spare keys is under the blue plant pot", "Play rehearsal is on Wednesday"],
        ["Turn the heating up, it's freezing in here.", "Tell me when the dentist appointment is"],
    ),
    (
        "nl",
        ["Open dag op de middelbare school is op veertien maart"],
        ["Zet de verwarming lager, het is hier bloedheet.", "Doe het licht uit"],
    ),
    (
        "de",
        ["Spiel der Kinder ist am Samstag in der Halle"],
        ["Mach es aus", "Dreh die Heizung runter, es ist warm"],
    ),
    (
        "fr",
        ["Ferme-porte du garage est cassé"],
        ["Monte le son !", "Ferme les volets, il fait chaud"],
    ),
]


@pytest.mark.parametrize(("code", "statements", "others"), OPENED_BY_A_COMMAND_VERB)
def test_a_statement_a_command_verb_opens_tells(
    code: str, statements: list[str], others: list[str]
) -> None:
    """A finite "is" or "has" of its language in the first clause makes it a statement.

    A reason after a comma, or a question word soon after the verb, does not.
    """
    for text in statements:
        assert is_informative(text), text
    for text in others:
        assert not is_informative(text), text


# (language, thanks, whom thanks may be said to): "Ta, love." acknowledges as "Ta." does.
ADDRESSED = [
    ("en", ["Thanks", "Ta", "Cheers", "Thank you"], ["love", "dear", "mate", "darling", "pet"]),
    ("de", ["Danke", "Vielen Dank"], ["Schatz", "Liebling"]),
    ("fr", ["Merci", "Merci beaucoup"], ["mon chéri", "chérie"]),
    ("es", ["Gracias", "Vale, gracias"], ["cariño", "mi amor", "cielo"]),
    ("nl", ["Dank je", "Bedankt"], ["schat", "lieverd", "schatje"]),
    ("it", ["Grazie", "Grazie mille"], ["tesoro", "amore"]),
]


@pytest.mark.parametrize(("code", "thanks", "addressed"), ADDRESSED)
def test_thanks_to_someone_acknowledges(code: str, thanks: list[str], addressed: list[str]) -> None:
    """Thanks said to someone do not compete; a statement said to them still does."""
    [statements] = [told for language_code, told, _ in FILTER if language_code == code]
    for word in addressed:
        for said in thanks:
            assert not is_informative(f"{said}, {word}."), (said, word)
            assert not is_informative(f"{word.capitalize()}, {said.lower()}!"), (said, word)
        for statement in statements:
            assert is_informative(f"{word.capitalize()}, {statement}"), (word, statement)


# The English sets the rules were checked on, named: a set written later stays unread by the
# tests until it has been measured blind (`scripts/benches/bench_recall.py`).
ENGLISH_SETS = ["household", "heldout", *(f"blind{n}" for n in ("", *range(2, 19)))]


def _english_texts() -> list[str]:
    texts: list[str] = []
    for name in ENGLISH_SETS:
        data = json.loads((RECALL_DATA / f"{name}.json").read_text(encoding="utf-8"))
        assert data.get("language", "en") == "en"
        texts += [u["text"] for u in data["utterances"]]
        texts += [q["text"] for q in data["questions"]]
    return texts


def _tells_in_english(sentence: str) -> bool:
    """`informative`'s rule on English's lists alone (Alto's rule before other languages)."""
    words = [w.casefold().replace("’", "'") for w in WORD.findall(sentence)]
    end = sentence.rstrip()[-1:]
    if not words or end == "?" or all(w in ENGLISH.acknowledgements for w in words):
        return False
    opening = 0
    while opening < len(words) - 1 and words[opening] in ENGLISH.courtesies:
        opening += 1
    if words[opening] in ENGLISH.questions and end not in ".!…":
        return False
    return words[opening] not in ENGLISH.commands


def test_english_reads_as_before() -> None:
    """Over the English recall sets: English is read, filtered and marked as before.

    Every text of four words or more reads as English (the few shorter ones that do not are
    "Ta." and the like); the union of the languages' lists filters every text as English's
    own did, but a Spanish "Gracias." said in an English house and thanks said to someone by
    name ("Cheers Keith."); no other language's word of change or value is a term of any of them.
    """
    texts = _english_texts()
    assert len(texts) > 3000
    assert [t for t in texts if len(t.split()) >= 4 and language(t) != ENGLISH] == []
    sentences = (s for t in texts for s in _SENTENCE.findall(t))
    changed = {s.strip() for s in sentences if is_informative(s) != _tells_in_english(s)}
    assert changed == {"Gracias.", "Cheers Keith."}
    said = set().union(*(terms(t) for t in texts))
    assert said & (recall.UPDATE_MARKERS - stems(ENGLISH, ENGLISH.changes)) == set()
    assert said & (recall.VALUES - stems(ENGLISH, ENGLISH.values)) == set()


def test_a_compounded_value_opens_no_english_word_that_holds_none() -> None:
    """German and Dutch values read inside a compound change no English text's reading."""
    said = set().union(*(terms(t) for t in _english_texts()))
    opened = {
        t for t in said if len(t) > recall.VALUE_PART and t.startswith(recall.COMPOUNDED_VALUES)
    }
    assert opened <= recall.VALUES  # month names both languages hold ("septemb")


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ("De grijze kliko moet op dinsdagavond aan de straat.", True),
        ("Zaterdagochtend halen we brood bij de bakker.", True),
        ("Gosia komt op maandagmiddag schoonmaken.", True),
        ("Ich singe mittwochabends im Gospelchor.", True),
        ("Sonntagnachmittag kommt Oma zum Kaffee.", True),
        ("Die Putzfrau kommt donnerstagmorgens.", True),
        ("De reservesleutel ligt onder de deurmat.", False),
        ("Der Ersatzschlüssel liegt unter der Fußmatte.", False),
    ],
)
def test_a_value_inside_a_german_or_dutch_compound_is_a_value(text: str, holds: bool) -> None:
    """A day inside a compound ("dinsdagavond", "Mittwochabend") is a value."""
    assert recall.holds_value(_row(1, text)) is holds


@pytest.mark.parametrize("code", [c for c in LANGUAGES if c != "en"])
def test_step_three_reads_each_language(code: str) -> None:
    """Each language's words of change and of values are step 3's, stemmed in that language."""
    lang = LANGUAGES[code]
    assert stems(lang, lang.changes) <= recall.UPDATE_MARKERS
    assert stems(lang, lang.values) <= recall.VALUES


def test_utterances_written_apart_in_six_languages() -> None:
    """Facts compete, questions, commands and acknowledgements mostly do not, in every language.

    `utterances_written_apart.json`: 40 utterances a language, written by people who never saw
    the lists. Measured (`pytest -s`): facts kept 60/72 (57 before a command verb's sentence
    could tell), questions out 53/60, commands out 46/60, acknowledgements out 32/48.
    """
    cases = json.loads(Path(__file__).with_name("utterances_written_apart.json").read_text("utf-8"))
    kept: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for case in cases:
        seen[case["kind"]] += 1
        kept[case["kind"]] += is_informative(case["text"])
    print(f"\nkept as informative, of each kind: {dict(kept)} of {dict(seen)}")
    assert {c["id"][:2] for c in cases} == set(LANGUAGES)
    assert kept["fact"] >= 0.8 * seen["fact"]
    assert kept["question"] <= 0.15 * seen["question"]
    assert kept["command"] + kept["ack"] <= 0.35 * (seen["command"] + seen["ack"])


# (language, an acknowledgement said to someone by name or a "never mind", a statement like it)
SAID_TO = [
    ("en", "Good night Nova", "Nova switches the porch light off at eleven."),
    ("en", "Forget it.", "Forget the blue bin, it is the green one on Mondays."),
    ("de", "Gute Nacht Alexa!", "Alexa weckt Leo um sieben."),
    ("de", "Ach, vergiss es.", "Vergiss nicht, dass Oma am Montag kommt."),
    ("nl", "Goedemorgen Nova!", "Nova komt op dinsdag de ramen lappen."),
    ("nl", "Laat maar.", "Laat de hond om zeven uur uit."),
    ("fr", "Bonne nuit Alexa", "Alexa allume la lampe du salon à huit heures."),
    ("fr", "Non, laisse tomber.", "Le ramoneur passe le mardi 3 décembre."),
    ("es", "Buenas noches Alexa", "Alexa nos despierta a las siete los lunes."),
    ("es", "Déjalo, no importa.", "La farmacia de guardia está en la calle Mayor."),
    ("it", "Buonanotte Alexa", "Alexa sveglia Luca alle sette il lunedì."),
    ("it", "Lascia stare, non importa.", "Il dentista di Luca è giovedì alle tre."),
]


@pytest.mark.parametrize(("code", "acknowledged", "statement"), SAID_TO)
def test_an_acknowledgement_to_a_name_or_a_never_mind_does_not_compete(
    code: str, acknowledged: str, statement: str
) -> None:
    """Thanks or good night said to someone by name, and "never mind", in every language.

    A sentence whose words are all acknowledgements but a last one written with a capital (whom
    it is said to) tells nothing; a statement that names the same one, or opens with the same
    verb, still tells.
    """
    assert not is_informative(acknowledged), code
    assert is_informative(statement), code
