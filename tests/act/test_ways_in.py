"""Ways into the home ask first whatever they are called, wherever the name sits, in any domain.

Properties over generated families: every language × spelling × domain that can open something ×
place the text can sit; ordinary names that stay ordinary; scenes and scripts, transitively; the
user's overrides.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

import pytest

from custom_components.alto.act.model import ExposedEntity, Target
from custom_components.alto.act.tiers import (
    ALWAYS_ASKED,
    DEFAULT_TIERS,
    Tier,
    reach,
    tier_for,
)
from custom_components.alto.act.ways_in import (
    LEXICONS,
    OPENING_DOMAINS,
    fold,
    is_way_in,
    words,
)

LANGUAGES = ("en", "de", "fr", "es", "nl", "it")


@dataclass(frozen=True)
class WayIn:
    """A way in, as one language says it: where it is, what it is, its plural, its compound."""

    room: str
    way: str
    plural: str
    compound: str | None = None  # the closed compound, where the language writes one


# Head-last languages put the room first; head-first ones after ("Porte d'entrée").
WAYS_IN: dict[str, tuple[WayIn, ...]] = {
    "en": (
        WayIn("Driveway", "gate", "gates", "Drivewaygate"),
        WayIn("Front", "door", "doors", "Frontdoor"),
        WayIn("Garage", "door", "doors", "Garagedoor"),
        WayIn("Main", "entrance", "entrances"),
        WayIn("Garden", "gateway", "gateways"),
        WayIn("Double", "garage", "garages"),
    ),
    "de": (
        WayIn("Einfahrt", "Tor", "Tore", "Einfahrtstor"),
        WayIn("Hof", "Tor", "Tore", "Hoftor"),
        WayIn("Garagen", "Tor", "Tore", "Garagentor"),
        WayIn("Haus", "Tür", "Türen", "Haustür"),
        WayIn("Garten", "Pforte", "Pforten", "Gartenpforte"),
        WayIn("Tief", "Garage", "Garagen", "Tiefgarage"),
        WayIn("Haupt", "Eingang", "Eingänge", "Haupteingang"),
    ),
    "nl": (
        WayIn("Voor", "deur", "deuren", "Voordeur"),
        WayIn("Garage", "deur", "deuren", "Garagedeur"),
        WayIn("Tuin", "poort", "poorten", "Tuinpoort"),
        WayIn("Tuin", "hek", "hekken", "Tuinhek"),
        WayIn("Hoofd", "ingang", "ingangen", "Hoofdingang"),
    ),
    "fr": (
        WayIn("d'entrée", "Porte", "Portes"),
        WayIn("du jardin", "Portail", "Portails"),
        WayIn("du garage", "Porte", "Portes"),
        WayIn("principale", "Entrée", "Entrées"),
        WayIn("du parking", "Barrière", "Barrières"),
    ),
    "es": (
        WayIn("principal", "Puerta", "Puertas"),
        WayIn("de la entrada", "Portón", "Portones"),
        WayIn("del jardín", "Cancela", "Cancelas"),
        WayIn("doble", "Garaje", "Garajes"),
        WayIn("principal", "Entrada", "Entradas"),
    ),
    "it": (
        WayIn("d'ingresso", "Porta", "Porte"),
        WayIn("del giardino", "Cancello", "Cancelli"),
        WayIn("principale", "Portone", "Portoni"),
        WayIn("doppio", "Garage", "Garage"),
        WayIn("principale", "Ingresso", "Ingressi"),
    ),
}


def spellings(language: str, way_in: WayIn) -> Iterator[str]:
    """Every way a household writes one way in: separated, joined, cased, plural, numbered."""
    room, way, plural = way_in.room, way_in.way, way_in.plural
    head_first = LEXICONS[language].head_first
    phrase = f"{way} {room}" if head_first else f"{room} {way}"
    first, second = phrase.split(" ", 1)
    yield phrase
    yield phrase.upper()
    yield phrase.casefold()
    yield phrase.title()
    for separator in ("_", "-", ".", "/", "  "):
        yield phrase.replace(" ", separator)
    yield phrase.casefold().replace(" ", "_").replace("'", "_")  # snake_case
    yield first + second.replace(" ", "").title().replace("'", "")  # camelCase
    yield f"{plural} {room}" if head_first else f"{room} {plural}"
    yield f"{phrase} 2"
    yield way.capitalize()
    yield plural.capitalize()
    if way_in.compound:
        yield way_in.compound
        yield way_in.compound.casefold()
        yield way_in.compound + plural.removeprefix(way).casefold()  # the compound's plural


def family(language: str, place: str = "name") -> list[str]:
    """The generated way-in names of one language, each spelt also without accents.

    French, Spanish and Italian write no closed compounds of these words ("porta-" in Italian
    ones means "holder"): a camelCase name, whose humps its entity id loses, is read from the
    name there, not from the entity id.
    """
    names = [name for way_in in WAYS_IN[language] for name in spellings(language, way_in)]
    if place == "entity_id" and LEXICONS[language].head_first:
        names = [name for name in names if not re.search(r"[a-zà-ÿ][A-ZÀ-Þ]", name)]
    return sorted({*names, *map(fold, names)})


def object_id(text: str) -> str:
    """The object id Home Assistant would make of a name (ASCII, lower case, underscores)."""
    return re.sub(r"[^a-z0-9]+", "_", fold(text).casefold()).strip("_")


# Domains that can open something, and lights and fans that are switches (switch_as_x).
OPENERS: tuple[tuple[str, bool], ...] = (
    *((domain, False) for domain in sorted(OPENING_DOMAINS)),
    ("light", True),
    ("fan", True),
)


def placed(place: str, domain: str, text: str, *, wraps_switch: bool) -> ExposedEntity:
    """An entity whose only text naming it is ``text``, in ``place``; elsewhere "Relay 1"."""
    neutral = ExposedEntity(f"{domain}.relay_1", "Relay 1", wraps_switch=wraps_switch)
    match place:
        case "name":
            return ExposedEntity(neutral.entity_id, text, wraps_switch=wraps_switch)
        case "alias":
            return ExposedEntity(
                neutral.entity_id, "Relay 1", aliases=("Relay", text), wraps_switch=wraps_switch
            )
        case "entity_id":
            return ExposedEntity(
                f"{domain}.{object_id(text)}", "Relay 1", wraps_switch=wraps_switch
            )
        case "device_name":  # as Home Assistant composes it: the device's, then the entity's own
            return ExposedEntity(
                neutral.entity_id,
                "Relay 1",
                texts=("Relay 1", f"{text} Relay 1"),
                wraps_switch=wraps_switch,
            )
    raise AssertionError(place)


PLACES = ("name", "alias", "entity_id", "device_name")


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_way_in_asks_first_in_every_domain_and_place(language: str, place: str) -> None:
    """Language × spelling × opening domain × place: confirm-first, whatever the domain tier."""
    missed = []
    for text in family(language, place):
        for domain, wraps_switch in OPENERS:
            entity = placed(place, domain, text, wraps_switch=wraps_switch)
            if tier_for(entity, {domain: "autonomous"}) is not Tier.CONFIRM_FIRST:
                missed.append((domain, text))
    assert missed == []


def test_the_family_is_large_and_varied() -> None:
    """The generated family holds every language, compound and separator it claims to."""
    names = {language: family(language) for language in LANGUAGES}
    assert all(len(found) >= 60 for found in names.values()), {k: len(v) for k, v in names.items()}
    assert {"Hoftore", "Haustur", "Einfahrtstor", "Voordeur", "Garagedoor"} <= {
        n for found in names.values() for n in found
    }


@pytest.mark.parametrize("device_class", ["door", "gate", "garage"])
@pytest.mark.parametrize(("domain", "wraps_switch"), OPENERS)
def test_a_device_class_of_a_way_in_asks_first(
    domain: str, wraps_switch: bool, device_class: str
) -> None:
    """Its own device class (the cover classes of openings) makes any opener a way in."""
    entity = ExposedEntity(
        f"{domain}.relay_1", "Relay 1", device_class=device_class, wraps_switch=wraps_switch
    )
    assert tier_for(entity, {domain: "autonomous"}) is Tier.CONFIRM_FIRST


@pytest.mark.parametrize("hint", ["garage_door", "garage", "gate"])
@pytest.mark.parametrize(("domain", "wraps_switch"), OPENERS)
def test_a_relay_on_a_garage_door_controller_asks_first(
    domain: str, wraps_switch: bool, hint: str
) -> None:
    """A relay beside a garage door sensor or cover is the opener; its light is a light."""
    relay = ExposedEntity(
        f"{domain}.relay_1", "Relay 1", device_classes=(hint, "power"), wraps_switch=wraps_switch
    )
    assert tier_for(relay, {domain: "autonomous"}) is Tier.CONFIRM_FIRST
    light = ExposedEntity(
        f"{domain}.opener_light", "Opener light", device_classes=(hint,), wraps_switch=wraps_switch
    )
    assert not is_way_in(light)


@pytest.mark.parametrize("hint", ["door", "window", "opening", "moisture"])
def test_a_door_sensor_beside_it_is_no_hint(hint: str) -> None:
    """Cars and fridges have door sensors: their switches are not ways into the home."""
    assert not is_way_in(
        ExposedEntity("switch.super_freeze", "Super freeze", device_classes=(hint,))
    )


# Ordinary names, and names that mention a way in but are about something else (their head).
ORDINARY: dict[str, tuple[str, ...]] = {
    "en": (
        "Kitchen light", "Plug", "Fan", "Kettle", "Porch door light", "Doorbell chime",
        "Garage light", "Garage light switch", "Gate light", "Outdoor plug", "Outdoor fountain",
        "Irrigate lawn", "Navigate", "Port 1 PoE", "Motor", "Monitor", "Garage door opener light",
        "Entrance lamp", "Front door camera", "Doorbell", "Outdoor lights", "Living room TV",
    ),
    "de": (
        "Küchenlicht", "Stehlampe", "Wasserkocher", "Steckdose", "Ventilator", "Deckenventilator",
        "Türklingel", "Garagenlicht", "Garagenlichter", "Garagenlichtschalter", "Torbeleuchtung",
        "Eingangslicht", "Schaltaktor 1", "Aktor Küche", "Temperatur", "Armatur", "Kultur",
        "Tastatur", "Motor", "Türkis Lampe", "Heizkörper Flur", "Garagen Steckdose",
    ),
    "fr": (
        "Lumière salon", "Lampe de chevet", "Prise cuisine", "Ventilateur", "Lumière entrée",
        "Lumière de la porte", "Sonnette porte", "Radiateur garage", "Caméra portail", "Port 1",
        "Porter", "Éclairage du garage",
    ),
    "es": (
        "Luz cocina", "Lámpara salón", "Enchufe", "Ventilador", "Luz de la puerta",
        "Luces del garaje", "Timbre de la entrada", "Puerto 2", "Cámara del portón",
        "Interruptor luz entrada",
    ),
    "nl": (
        "woonkamerlamp", "Keukenlicht", "Stekker", "Ventilator", "Deurbel", "Poortverlichting",
        "Garagelamp", "Radiator", "Tuinverlichting", "Ingangslamp",
    ),
    "it": (
        "Luce cucina", "Lampada ingresso", "Presa", "Ventilatore", "Luce del cancello",
        "Campanello porta", "Porto", "Portata acqua", "Portatile", "Interruttore luce garage",
    ),
}  # fmt: skip


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_ordinary_names_keep_their_domain_tier(language: str, place: str) -> None:
    """Lights, plugs, bells and lookalikes in every place keep their domain's tier."""
    wrong = []
    for text in ORDINARY[language]:
        for domain, wraps_switch in (("switch", False), ("input_boolean", False), ("light", True)):
            entity = placed(place, domain, text, wraps_switch=wraps_switch)
            if tier_for(entity) is not DEFAULT_TIERS[domain]:
                wrong.append((domain, text))
    assert wrong == []


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("domain", ["light", "fan", "media_player", "climate", "vacuum"])
def test_what_cannot_open_is_not_a_way_in(language: str, domain: str) -> None:
    """A native light named "Garage" is the light in the garage: only openers are ways in."""
    named = [d for d in family(language) if not is_way_in(ExposedEntity(f"{domain}.x", d))]
    assert len(named) == len(family(language))
    assert not is_way_in(ExposedEntity(f"{domain}.x", "X", device_class="garage"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Garage door", ("garage", "door")),
        ("garage_door", ("garage", "door")),
        ("GarageDoor", ("garage", "door")),
        ("garage-door.2/left", ("garage", "door", "2", "left")),
        ("Relay1", ("relay", "1")),
        ("HAUSTÜR", ("haustur",)),
        ("Ｇａｒａｇｅ", ("garage",)),  # full-width, NFKC
        ("Straße", ("strasse",)),
    ],
)
def test_words(text: str, expected: tuple[str, ...]) -> None:
    """Words split at separators, camelCase and digits; casefolded, NFKC, without accents."""
    assert words(text) == expected


# --- scenes and scripts, transitively ---------------------------------------------------------

FACTS = {
    "lock.front": Target("lock.front", "Front"),
    "switch.gate_relay": Target("switch.gate_relay", "Driveway gates"),
    "switch.relay_7": Target("switch.relay_7", "Relay 7", texts=("Hoftor Relay 7",)),
    "cover.big": Target("cover.big", "Big", "garage"),
    "light.relay_as_light": Target("light.relay_as_light", "Garage door", wraps_switch=True),
    "light.lamp": Target("light.lamp", "Lamp"),
    "switch.kettle": Target("switch.kettle", "Kettle"),
    "cover.blind": Target("cover.blind", "Blind", "shade"),
}
WAYS = ("lock.front", "switch.gate_relay", "switch.relay_7", "cover.big", "light.relay_as_light")
DRIVERS = ("scene.a", "script.b", "group.c", "scene.d")


def exposed(start: str, graph: dict[str, tuple[str, ...]]) -> ExposedEntity:
    """``start`` with its targets as the exposure index builds them: everything it reaches."""
    targets = reach(start, lambda entity_id: graph.get(entity_id, ()))
    return ExposedEntity(
        start,
        start,
        targets=tuple(FACTS.get(t, Target(t, t)) for t in targets),
    )


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_a_chain_to_a_way_in_asks_first(depth: int, way: str) -> None:
    """A scene, script or group reaching a way in through any chain of others asks first."""
    chain = DRIVERS[:depth]
    graph = {a: (b, "light.lamp") for a, b in pairwise(chain)}
    graph[chain[-1]] = (way, "switch.kettle")
    domain_tiers = {"scene": "autonomous", "script": "autonomous", "group": "autonomous"}
    for start in chain:
        assert tier_for(exposed(start, graph), domain_tiers) is Tier.CONFIRM_FIRST, start


def test_a_chain_of_ordinary_things_keeps_the_strictest_ordinary_tier() -> None:
    """Lights and kettles leave a scene autonomous; a blind makes it act and notify."""
    graph = {"scene.a": ("script.b",), "script.b": ("light.lamp", "switch.kettle")}
    assert tier_for(exposed("scene.a", graph), {"script": "autonomous"}) is Tier.AUTONOMOUS
    graph["script.b"] += ("cover.blind",)
    assert tier_for(exposed("scene.a", graph), {"script": "autonomous"}) is Tier.ACT_AND_NOTIFY


def test_cycles_end() -> None:
    """Two scripts calling each other end, and what either reaches still counts."""
    graph = {
        "script.a": ("script.b",),
        "script.b": ("script.a", "scene.c"),
        "scene.c": ("scene.c", "lock.front"),
    }
    assert reach("script.a", lambda e: graph.get(e, ())) == ("lock.front", "scene.c", "script.b")
    assert tier_for(exposed("script.a", graph), {"script": "autonomous"}) is Tier.CONFIRM_FIRST


# --- overrides ---------------------------------------------------------------------------------

SUBJECTS = (
    ExposedEntity("light.lamp", "Lamp"),
    ExposedEntity("switch.gate", "Driveway gates"),
    ExposedEntity("cover.garage", "Garage", device_class="garage"),
    ExposedEntity("valve.garden", "Garden tap"),
    ExposedEntity("script.bedtime", "Bedtime"),
    ExposedEntity("scene.evening", "Evening"),
    ExposedEntity("climate.hall", "Hall"),
    ExposedEntity("siren.hall", "Hall siren"),
    ExposedEntity("lock.front", "Front door"),
    ExposedEntity("alarm_control_panel.house", "House"),
)


@pytest.mark.parametrize("tier", list(Tier))
@pytest.mark.parametrize("entity", SUBJECTS, ids=lambda e: e.entity_id)
def test_an_override_wins_but_never_lowers_a_lock(entity: ExposedEntity, tier: Tier) -> None:
    """The user's tier for an entity is its tier, raised or lowered; locks and alarms ask."""
    expected = Tier.CONFIRM_FIRST if entity.domain in ALWAYS_ASKED else tier
    for value in (tier, str(tier)):
        overrides = {entity.entity_id: value}
        assert tier_for(entity, overrides=overrides) is expected
        # Beats the domain tiers too, in either direction.
        for domain_tier in Tier:
            assert tier_for(entity, {entity.domain: domain_tier}, overrides=overrides) is expected


@pytest.mark.parametrize("entity", SUBJECTS, ids=lambda e: e.entity_id)
def test_an_override_is_for_its_entity_only(entity: ExposedEntity) -> None:
    """Another entity's override, or one that is not a tier's name, changes nothing."""
    unchanged = tier_for(entity)
    assert tier_for(entity, overrides={"light.other": "confirm_first"}) is unchanged
    for value in ("", "Autonomous", None, 1):
        assert tier_for(entity, overrides={entity.entity_id: value}) is unchanged


def test_lowering_a_scene_does_not_lower_the_gate_it_opens() -> None:
    """An override sets a scene's own tier; the gate it opens asks until the gate is lowered."""
    graph = {"scene.a": ("switch.gate_relay",)}
    scene = exposed("scene.a", graph)
    assert tier_for(scene, overrides={"scene.a": "autonomous"}) is Tier.CONFIRM_FIRST
    both = {"scene.a": "autonomous", "switch.gate_relay": "autonomous"}
    assert tier_for(scene, overrides=both) is Tier.AUTONOMOUS
    with_lock = exposed("scene.b", {"scene.b": ("lock.front",)})
    assert tier_for(with_lock, overrides={"scene.b": "autonomous", "lock.front": "autonomous"}) is (
        Tier.CONFIRM_FIRST
    )
