"""Whether a span names an exposed entity, alias or area: a home named in six languages."""

from __future__ import annotations

import pytest

from custom_components.alto.act.mentions import Mentions, opens_with_a_command
from custom_components.alto.act.model import ExposedEntity

HOME = Mentions(
    [
        ExposedEntity("light.kitchen", "Kitchen Lights", area="Kitchen"),
        ExposedEntity("lock.front_door", "Front Door Lock", aliases=("Main entrance",)),
        ExposedEntity("media_player.tv", "Living Room TV", area="Living Room"),
        ExposedEntity("light.kuchenlicht", "Küchenlicht", area="Küche"),
        ExposedEntity("cover.volets", "Volets du salon", area="Salon"),
        ExposedEntity("light.luz_cocina", "Luz de la cocina", area="Cocina"),
        ExposedEntity("light.keukenlamp", "Keukenlamp", area="Keuken"),
        ExposedEntity("climate.termostato", "Termostato", area="Soggiorno"),
        ExposedEntity("switch.the_lamp", "The Lamp"),
    ]
)

NAMES = [
    "turn on the kitchen light",  # an inflection of one word of the name
    "Turning the kitchen lights down.",
    "unlock the front door",  # two words of the lock's name
    "lock the main entrance",  # an alias
    "switch the living room tv off",
    "light.kitchen to 40 percent",  # the entity id
    "the lights of the kitchen",  # one word saying two of a name is one
    "Schalte das Küchenlicht ein",
    "Mach das Licht in der Küche aus",  # the area
    "Ferme les volets du salon",
    "Enciende la luz de la cocina",
    "Zet de keukenlamp aan",
    "Imposta il termostato a 21 gradi",
    "turn the lamp on",  # "The Lamp": every word said
]

SMALL_TALK = [
    "I love jazz",
    "The Eiffel tower is 330 metres tall",
    "tell the user a joke",  # "the" alone does not say "The Lamp"
    "Ich mag das Wetter heute",
    "J'adore le fromage de la région",
    "Me encanta la música de los ochenta",
    "Ik hou van de zee",
    "Adoro il caffè la mattina",
    "",
]


@pytest.mark.parametrize("span", NAMES)
def test_a_span_saying_a_name_names_something(span: str) -> None:
    """Every span that says a name, an alias, an entity id or an area names something."""
    assert HOME.names_something(span)


@pytest.mark.parametrize("span", SMALL_TALK)
def test_small_talk_names_nothing(span: str) -> None:
    """Small talk, an opinion or a fact in any language names nothing of this home."""
    assert not HOME.names_something(span)


@pytest.mark.parametrize(
    ("text", "part"),
    [("tv", True), ("front door", True), ("Küche", True), ("capital of France", False)],
)
def test_part_of_a_name(text: str, part: bool) -> None:
    """A partial name is part of one; free text that shares no name is not."""
    assert HOME.part_of_a_name(text) is part


def test_an_empty_home_names_nothing() -> None:
    """Without entities nothing is named, whatever the span says."""
    assert not Mentions([]).names_something("turn on the kitchen light")


@pytest.mark.parametrize(
    "span",
    [
        "turn off the porch light",
        "please switch it off",
        "Bitte mach das Bettlicht an",
        "Allume la lampe",
        "enciende la luz",
        "zet het bedlampje aan",
        "Accendi la luce del letto",
    ],
)
def test_a_span_opening_with_a_command(span: str) -> None:
    """A span that opens with a device command, after any courtesy, in six languages."""
    assert opens_with_a_command(span)


@pytest.mark.parametrize("span", [*SMALL_TALK[:2], *SMALL_TALK[3:-1], "the porch light is on"])
def test_small_talk_opens_with_no_command(span: str) -> None:
    """Small talk, and a statement that ends in a command word, open with none."""
    assert not opens_with_a_command(span)
