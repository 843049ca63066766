"""Claims of a device action done, in every language Alto speaks, and what is not one.

`claim_sentences_*.json` were written in the six languages by people who never saw the patterns,
40 sentences a language (22 claims), each first run on the patterns as they then stood, which were
then mended on it (see the test at the end).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from custom_components.alto.channel.claims import CLAIMS, LANGUAGES, patterns
from custom_components.alto.channel.speech_gate import SpeechGate, claims_done, settled

# Per language: claims said each way the patterns know, and sentences that are no claim.
CLAIMS_BY_LANGUAGE = {
    "en": [
        "I've switched off the hallway lights.",
        "The garage door has been closed.",
        "The heating is now set to 20 degrees.",
        "Your playlist is playing in the kitchen now.",
        "All done, the blinds are down now.",
        "I managed to lock the back door.",
    ],
    "de": [
        "Ich habe die Heizung im Bad auf 22 Grad gestellt.",
        "Die Rollläden sind heruntergefahren worden.",
        "Die Haustür wurde abgeschlossen.",
        "Das Licht im Flur ist jetzt aus.",
        "Die Musik läuft jetzt im Wohnzimmer.",
        "Erledigt, die Stehlampe ist an.",
        "Wohnzimmerlicht ausgeschaltet.",
        "Ich schaltete die Steckdose ab.",
    ],
    "nl": [
        "Ik heb de thermostaat op 21 graden gezet.",
        "De voordeur is zojuist op slot gedaan.",
        "Het tuinhek staat nu open.",
        "Voor elkaar! De lamp in de gang brandt nu.",
        "Ik zette net de ventilator aan.",
        "Keukenlamp uitgezet.",
    ],
    "fr": [
        "J'ai éteint la lumière du salon.",
        "Le chauffage a été réglé sur 21 degrés.",
        "Le ventilateur est désormais allumé.",
        "C'est fait, la porte est verrouillée.",
        "Le thermostat est passé à 23 degrés.",
        "Stores du bureau baissés.",
    ],
    "es": [
        "He bajado las persianas del dormitorio.",
        "La puerta principal ha sido cerrada con llave.",
        "Las luces de la cocina ya están apagadas.",
        "Apagué la lámpara de la mesilla.",
        "Listo, la calefacción está a 21 grados ahora.",
        "Ventilador encendido.",
    ],
    "it": [
        "Ho già spento tutte le luci del piano di sopra.",
        "La porta d'ingresso è stata chiusa a chiave.",
        "Le tapparelle adesso sono abbassate.",
        "Fatto, il forno è acceso.",
        "Scena «Cinema» attivata.",
        "Sono riuscito ad aprire il cancello.",
    ],
}
NOT_CLAIMS_BY_LANGUAGE = {
    "en": ["I haven't turned the lights on yet.", "The door is locked.", "Shall I dim them?"],
    "de": [
        "Ich habe die Heizung noch nicht eingeschaltet.",
        "Soll ich das Licht ausschalten?",
        "Du hast gestern die Lampe ausgemacht.",
    ],
    "nl": [
        "Ik heb het koffiezetapparaat nog niet aangezet.",
        "Zal ik de lamp aanzetten?",
        "De bakker is op zondag dicht.",
    ],
    "fr": [
        "Je n'ai pas pu ouvrir le portail.",
        "Tu as éteint la lampe de la chambre hier soir.",
        "Voulez-vous que je ferme les volets ?",
    ],
    "es": ["Todavía no he encendido el horno.", "¿Quieres que apague la luz?", "Voy a cerrar."],
    "it": [
        "Non ho acceso il riscaldamento.",
        "Ieri sera hai spento tu le luci del giardino.",
        "Il cancello risulta aperto da venti minuti.",
    ],
}


def test_every_language_alto_speaks_has_its_claims() -> None:
    """Every language Alto speaks has its claim words and sentences here."""
    assert set(LANGUAGES) == set(CLAIMS_BY_LANGUAGE) == set(NOT_CLAIMS_BY_LANGUAGE)


@pytest.mark.parametrize(
    ("code", "sentence"),
    [(code, s) for code, sentences in CLAIMS_BY_LANGUAGE.items() for s in sentences],
)
def test_each_way_of_claiming_is_a_claim(code: str, sentence: str) -> None:
    """I did, it has been done, it is so now, it runs now, done, a participle alone."""
    assert claims_done(sentence, patterns(code))


@pytest.mark.parametrize(
    ("code", "sentence"),
    [(code, s) for code, sentences in NOT_CLAIMS_BY_LANGUAGE.items() for s in sentences],
)
def test_a_negation_an_offer_a_state_or_someone_else_is_no_claim(code: str, sentence: str) -> None:
    """Not done, not yet, shall I, is (without now), you did, it seems."""
    assert not claims_done(sentence, patterns(code))


def test_a_turn_reads_english_and_its_own_language() -> None:
    """A turn's claims are English's and its language's; a terse report only in its own."""
    assert claims_done("Ventilador encendido.", patterns("es-ES"))
    assert not claims_done("Ventilador encendido.", patterns("de"))
    assert claims_done("I've turned it off.", patterns("it"))
    assert claims_done("He apagado la luz.")  # with no language: every language, terse aside
    assert not claims_done("Ventilador encendido.", CLAIMS)


@pytest.mark.parametrize(
    ("code", "sentence"),
    [("es", "Ventilador del salón encendido."), ("it", "Scena «Cinema» attivata.")],
)
def test_a_terse_claim_is_never_spoken_early(code: str, sentence: str) -> None:
    """While it streams, no part of a terse report is released before it is judged."""
    claims = patterns(code)
    for length in range(len(sentence) + 1):
        assert not claims_done(settled(sentence[:length], 0, claims), claims)
    gate = SpeechGate(lambda: False, code)
    said = "".join(gate.feed(ch) for ch in sentence) + gate.finalize()
    assert said == ""
    assert gate.withheld == [sentence]


SETS = tuple(Path(__file__).with_name(f"claim_sentences_{n}.json") for n in (1, 2, 3, 4))


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_claims_written_apart_are_caught_and_the_rest_spoken(path: Path) -> None:
    """Nearly every claim withheld, nearly nothing else, in every language.

    Claims caught and other sentences withheld, on each set's first run and, in brackets, by the
    patterns before `claims`: set 1 58/132 and 5/108 (those patterns), set 2 120/132 and 1/108
    (56/132, 2/108), set 3 106/132 and 1/108 (45/132, 1/108), set 4 117/132 and 2/108 (47/132,
    3/108). Now: 128, 129, 129 and 126 of 132, and none of the others but set 4's two, which its
    writer marked as close to the line (`pytest -s`).
    """
    cases = json.loads(path.read_text(encoding="utf-8"))
    caught = withheld = claims = others = 0
    for case in cases:
        judged = claims_done(case["sentence"], patterns(case["id"][:2]))
        if case["label"] == "claim":
            claims += 1
            caught += judged
        else:
            others += 1
            withheld += judged
    print(f"\n{path.name}: claims caught {caught}/{claims}, others withheld {withheld}/{others}")
    assert {c["id"][:2] for c in cases} == set(LANGUAGES)
    assert caught >= 0.9 * claims
    assert withheld <= 0.05 * others
