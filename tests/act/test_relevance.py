"""The executor sees first the entity a span names, among those that can do what it asks."""

from __future__ import annotations

import random

import pytest

from custom_components.alto.act.allowlist import services_for
from custom_components.alto.act.model import ExposedEntity, Registry
from custom_components.alto.act.proposal import candidates, proposal_schema
from custom_components.alto.act.relevance import ranked_entities, ranked_services

# Names that share words across domains: a speaker and a cover share "door" with the lock, a
# light and a media player share "bedroom".
HOME = (
    ExposedEntity("lock.front_door", "Front Door", area="Hall"),
    ExposedEntity("media_player.front_door_speaker", "Front Door Speaker", area="Hall"),
    ExposedEntity("cover.garage_door", "Garage Door", area="Garage"),
    ExposedEntity("light.front_porch", "Front Porch", aliases=("Porch lamp",), area="Outside"),
    ExposedEntity("media_player.bedroom", "Bedroom", area="Bedroom"),
    ExposedEntity("light.bedroom_lamp", "Bedroom Lamp", area="Bedroom"),
    ExposedEntity("vacuum.robbie", "Robbie", area="Hall"),
    ExposedEntity("climate.hallway", "Hallway", area="Hall"),
    ExposedEntity("sensor.front_door_battery", "Front Door Battery", area="Hall"),
)
# A span's verb for each service it may ask, as people say it.
SAID = {
    "turn_on": "turn on",
    "turn_off": "turn off",
    "toggle": "toggle",
    "lock": "lock",
    "unlock": "unlock",
    "open": "open",
    "open_cover": "open",
    "close_cover": "close",
    "stop_cover": "stop",
    "media_play": "play",
    "media_pause": "pause",
    "media_stop": "stop",
    "volume_mute": "mute",
    "start": "start",
    "return_to_base": "return",
    "set_temperature": "set the temperature of",
}


def spans() -> list[tuple[str, ExposedEntity, str]]:
    """(span, the entity it names, the service it asks) for every sayable service of the home."""
    return [
        (f"please {SAID[service]} the {entity.name.lower()}", entity, service)
        for entity in HOME
        for service in services_for(entity.domain)
        if service in SAID
    ]


@pytest.mark.parametrize(("span", "entity", "service"), spans())
def test_the_named_entity_and_its_service_come_first(
    span: str, entity: ExposedEntity, service: str
) -> None:
    """Whatever the order HA lists them in, the entity named, then the service asked."""
    rng = random.Random(span)
    for _ in range(5):
        shuffled = list(HOME)
        rng.shuffle(shuffled)
        assert ranked_entities(shuffled, span, None)[0] == entity
    services = ranked_services(services_for(entity.domain), span)
    assert SAID[services[0]] == SAID[service]


def test_a_domain_that_cannot_do_the_verb_is_not_offered_first() -> None:
    """No speaker or cover can unlock; a span naming no verb puts nothing back."""
    ranked = ranked_entities(HOME, "unlock the front door speaker", None)
    assert ranked[0] == HOME[0]  # the only one that can unlock, though the speaker is named more
    assert [e.domain for e in ranked_entities(HOME, "unlock it", None)][:1] == ["lock"]
    # Another language: no verb of the services, names still count.
    assert ranked_entities(HOME, "déverrouille la front door", None)[0] == HOME[0]


def test_the_speakers_area_breaks_a_tie() -> None:
    """Nothing named: the speaker's area first, then the entity id."""
    ranked = ranked_entities(HOME, "turn it on", "Bedroom")
    assert [e.entity_id for e in ranked[:2]] == ["light.bedroom_lamp", "media_player.bedroom"]


def test_the_executor_schema_follows_the_order() -> None:
    """The schema's enums are ranked: a model taking the first values unlocks the front door."""
    span = "unlock the front door"
    shown = candidates(Registry(HOME), span, None)
    call = proposal_schema(shown, span)["anyOf"][0]["properties"]
    assert call["entity"]["enum"][0] == "lock.front_door"
    assert call["service"]["enum"][0] == "unlock"
    assert len(shown) == len(HOME)
