"""The fallback heuristics read commitments and hedges in every language Alto speaks."""

from __future__ import annotations

import pytest

from custom_components.alto.reflect import Turn, Urgency
from custom_components.alto.reflect.heuristics import PHRASES, commitments, hedging

from .conftest import LIGHT_OFF, T0

# language -> (the person's commitments, Alto's promises, two hedges, plain sentences)
CASES = {
    "en": (
        ["I'll call the plumber.", "Remind me to take the bins out."],
        "I'll remind you later.",
        "Maybe it is off, I think.",
        ["The bins go out on Tuesday.", "Thanks, that was lovely."],
    ),
    "de": (
        [
            "Ich werde morgen den Klempner anrufen.",
            "Erinnere mich an die Mülltonne.",
            "Ich muss noch den Pass verlängern.",
            "Morgen streiche ich den Zaun.",
            "Lass mich nicht vergessen, die Schlüssel mitzunehmen.",
        ],
        "Ich werde dich später erinnern.",
        "Vielleicht ist die Heizung aus, ich glaube schon.",
        ["Die Biotonne wird dienstags geleert.", "Danke, das war schön."],
    ),
    "fr": (
        [
            "Je vais appeler le plombier.",
            "Rappelle-moi de sortir les poubelles.",
            "Je dois renouveler le passeport.",
            "Demain je peins la clôture.",
        ],
        "Je vais te le rappeler plus tard.",
        "Peut-être que le chauffage est coupé, je pense.",
        ["Les poubelles sortent le mardi.", "Merci, c'était très bien."],
    ),
    "es": (
        [
            "Voy a llamar al fontanero.",
            "Recuérdame sacar la basura.",
            "Tengo que renovar el pasaporte.",
            "No me dejes olvidar las llaves.",
        ],
        "Lo haré más tarde.",
        "Quizás la calefacción está apagada, creo que sí.",
        ["La basura sale los martes.", "Gracias, ha sido estupendo."],
    ),
    "nl": (
        [
            "Ik zal de loodgieter bellen.",
            "Herinner me aan de vuilnisbak.",
            "Ik moet nog mijn paspoort verlengen.",
            "Morgen schilder ik het hek.",
        ],
        "Ik zal je er later aan herinneren.",
        "Misschien staat de verwarming uit, ik denk het wel.",
        ["De gft-bak gaat op maandag buiten.", "Dank je, dat was fijn."],
    ),
    "it": (
        [
            "Devo chiamare l'idraulico.",
            "Ricordami di portare fuori la spazzatura.",
            "Domani vado dal medico.",
            "Non farmi dimenticare le chiavi.",
        ],
        "Lo farò più tardi.",
        "Forse il riscaldamento è spento, penso di sì.",
        ["La spazzatura esce il martedì.", "Grazie, è stato bellissimo."],
    ),
}


def _turn(utterance: str, reply: str, acted: bool = False) -> Turn:
    return Turn(7, T0, utterance, reply, (LIGHT_OFF,) if acted else (), "c")


def test_every_language_has_its_phrases() -> None:
    """One entry per language Alto speaks, each with phrases of every kind."""
    assert set(PHRASES) == set(CASES)
    assert all(p.person and p.alto and p.hedges for p in PHRASES.values())


@pytest.mark.parametrize("code", list(CASES))
def test_commitments_in_each_language(code: str) -> None:
    """Each commitment of the person is one medium observation; plain sentences are none."""
    said, _, _, plain = CASES[code]
    for sentence in said:
        (draft,) = commitments(_turn(sentence, "Ok."))
        assert draft.content == f'The person said: "{sentence}"'
        assert draft.urgency is Urgency.MEDIUM
    for sentence in plain:
        assert commitments(_turn(sentence, sentence)) == []


@pytest.mark.parametrize("code", list(CASES))
def test_alto_promises_in_each_language(code: str) -> None:
    """Alto's promise counts only when no effector acted in the turn."""
    _, promise, _, _ = CASES[code]
    assert [d.content for d in commitments(_turn("Hi", promise))] == [f'Alto said: "{promise}"']
    assert commitments(_turn("Hi", promise, acted=True)) == []


@pytest.mark.parametrize("code", list(CASES))
def test_hedges_in_each_language(code: str) -> None:
    """Two hedges in a short reply are noted, in any language; a plain reply is not."""
    _, _, hedged, plain = CASES[code]
    assert [d.urgency for d in hedging(_turn("?", hedged))] == [Urgency.LOW]
    assert hedging(_turn("?", " ".join(plain))) == []
