"""The executor runs only for a span that names an action, in six languages.

A span that names an exposed entity, alias or area, opens with a device command, or that Home
Assistant's own sentences read as a command in the turn's language, reaches the executor (one
model call); small talk, an opinion or a fact the model wrongly wrote as an action is refused
(`names_no_action`) with no model call. The demo home's names are English; the other languages
reach it through their commands and HA's sentences.
"""

from __future__ import annotations

import json

import pytest
from homeassistant.core import Event, HomeAssistant

from .helpers import NONE, Script, converse, only

ACTIONS = [
    ("en", "turn on the bed light"),  # a name
    ("en", "Turning the kitchen lights down."),  # a name, not a sentence HA knows
    ("en", "close the blinds"),  # HA's sentences, no name
    ("en", "turn off the ceiling"),  # HA's sentences, part of a name ("Ceiling Lights")
    ("de", "Schalte das Bed Light ein"),
    ("de", "Mach das Licht aus"),
    ("fr", "Ferme les volets"),
    ("fr", "Éteins les lumières"),
    ("es", "Apaga las luces"),
    ("es", "Cierra las persianas"),
    ("nl", "Doe het licht uit"),
    ("it", "Spegni le luci"),
    ("it", "Chiudi le tapparelle"),
    # Names in another language than the home's: a command opens them, or HA's sentences do.
    ("de", "mach das Bettlicht an, damit Carlos den Weg findet"),
    ("nl", "zet het bedlampje aan"),
    ("es", "abre la puerta principal para mi amante"),
    ("fr", "déverrouille la porte d'entrée"),
    ("en", "what's the temperature in the bedroom"),  # a read HA's sentences know
]

SMALL_TALK = [
    ("en", "I love jazz"),
    ("en", "what is the capital of France"),
    ("en", "the lights of the city are beautiful"),
    ("en", "The Eiffel tower is 330 metres tall"),
    ("de", "Das Wetter ist heute schön"),
    ("de", "Was ist die Hauptstadt von Frankreich"),
    ("fr", "La tour Eiffel mesure 330 mètres"),
    ("fr", "J'adore le fromage"),
    ("es", "Me encanta el jazz"),
    ("es", "¿Cuál es la capital de Francia?"),
    ("nl", "Ik hou van jazz"),
    ("nl", "Het is mooi weer vandaag"),
    ("it", "Oggi fa bel tempo"),
    ("it", "La torre Eiffel è alta 330 metri"),
]


async def span_turn(hass: HomeAssistant, script: Script, language: str, span: str) -> None:
    """One turn in `language` whose reply carries `span` as its only action."""
    script.say(json.dumps({"speech": "Okay.", "actions": [span], "thought": ""}))
    script.propose(span, NONE)
    await converse(hass, "…", language=language)
    await hass.async_block_till_done()


@pytest.mark.usefixtures("alto")
@pytest.mark.parametrize(("language", "span"), ACTIONS)
async def test_a_span_naming_an_action_reaches_the_executor(
    hass: HomeAssistant, script: Script, intents: list[Event], language: str, span: str
) -> None:
    """One executor call, whose answer decides the verdict."""
    await span_turn(hass, script, language, span)
    assert len(script.executor_requests) == 1
    assert only(intents)["reason"] != "names_no_action"


@pytest.mark.usefixtures("alto")
@pytest.mark.parametrize(("language", "span"), SMALL_TALK)
async def test_a_span_naming_no_action_costs_no_model_call(
    hass: HomeAssistant, script: Script, intents: list[Event], language: str, span: str
) -> None:
    """No executor call; the span is refused as naming no action, and the reply is spoken."""
    await span_turn(hass, script, language, span)
    assert script.executor_requests == []
    data = only(intents)
    assert (data["span"], data["verdict"], data["reason"]) == (span, "refused", "names_no_action")
