"""Ways into the home ask first in a real Home Assistant, and the bypass check follows them.

The tier is read through `alto.check_action` (or the organ, for domains without services Alto may
call) after a change in HA's own registries: a rename, an alias, an entity id, a device's name, a
device class, a switch shown as a light, a scene or a script that reaches a way in.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from homeassistant.components import assist_pipeline
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
from homeassistant.util import slugify
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)

from custom_components.alto.act.tiers import Tier
from custom_components.alto.act_organ.local_intents import RECHECK_COOLDOWN_S, issue_id
from custom_components.alto.act_organ.organ import ActOrgan
from custom_components.alto.const import DOMAIN

pytestmark = pytest.mark.usefixtures("alto")

SWITCH = "switch.decorative_lights"
SERVICE = {"cover": "open_cover", "lock": "unlock"}


async def tier(hass: HomeAssistant, entity_id: str) -> str:
    """The tier `alto.check_action` gives a call on ``entity_id``."""
    domain = entity_id.partition(".")[0]
    response = await hass.services.async_call(
        "alto",
        "check_action",
        {
            "tool": "call_ha_service",
            "arguments": {"entity": entity_id, "service": SERVICE.get(domain, "turn_on")},
        },
        blocking=True,
        return_response=True,
    )
    assert response is not None
    assert response["verdict"] == "valid", response
    return str(response["tier"])


# One way in per language, and the spellings a household writes.
WAY_IN_NAMES = [
    "Driveway gates",
    "Garagedoor",
    "garage_door",
    "Front entrance",
    "Hoftore",
    "Haustür",
    "voordeur",
    "Porte d'entrée",
    "Portón del jardín",
    "Cancello",
]


@pytest.mark.parametrize("text", WAY_IN_NAMES)
@pytest.mark.parametrize("place", ["name", "alias", "entity_id", "device_name"])
async def test_a_switch_named_as_a_way_in_anywhere_asks_first(
    hass: HomeAssistant, place: str, text: str
) -> None:
    """Wherever HA keeps the text (name, alias, entity id, device name), the switch asks."""
    entities, devices = er.async_get(hass), dr.async_get(hass)
    entity_id = SWITCH
    assert await tier(hass, entity_id) == "autonomous"
    if place == "name":
        entities.async_update_entity(entity_id, name=text)
    elif place == "alias":
        entities.async_update_entity(entity_id, aliases=["Relay", text])
    elif place == "entity_id":
        entity_id = f"switch.{slugify(text)}"
        entities.async_update_entity(SWITCH, name="Relay 1", new_entity_id=entity_id)
    else:
        entry = entities.async_get(entity_id)
        assert entry is not None
        assert entry.device_id is not None
        entities.async_update_entity(entity_id, name="Relay 1")
        devices.async_update_device(entry.device_id, name_by_user=text)
    await hass.async_block_till_done()
    async_expose_entity(hass, "conversation", entity_id, True)
    assert await tier(hass, entity_id) == "confirm_first"


async def test_a_cover_named_gates_or_classed_garage_asks_first(hass: HomeAssistant) -> None:
    """A cover without a device class named "Gates", and one given the class garage, ask."""
    assert await tier(hass, "cover.kitchen_window") == "act_and_notify"
    assert await tier(hass, "cover.hall_window") == "act_and_notify"
    entities = er.async_get(hass)
    entities.async_update_entity("cover.kitchen_window", name="Gates")
    entities.async_update_entity("cover.hall_window", device_class="garage")
    await hass.async_block_till_done()
    assert await tier(hass, "cover.kitchen_window") == "confirm_first"
    assert await tier(hass, "cover.hall_window") == "confirm_first"


async def test_a_relay_beside_a_garage_door_sensor_asks_first(hass: HomeAssistant) -> None:
    """A device that holds a garage door sensor is a door controller: its relay is the opener."""
    entities = er.async_get(hass)
    entry = entities.async_update_entity(SWITCH, name="Relay 2")
    assert await tier(hass, SWITCH) == "autonomous"
    entities.async_get_or_create(
        "binary_sensor",
        "demo",
        "garage_contact",
        device_id=entry.device_id,
        original_device_class="garage_door",
    )
    await hass.async_block_till_done()
    assert await tier(hass, SWITCH) == "confirm_first"


async def test_helpers_named_as_a_way_in_ask_first(hass: HomeAssistant) -> None:
    """An input boolean an automation watches to open the garage asks; a plain one does not."""
    assert await async_setup_component(
        hass,
        "input_boolean",
        {"input_boolean": {"garage_door": {"name": "Garage door"}, "guests": {"name": "Guests"}}},
    )
    await hass.async_block_till_done()
    for entity_id in ("input_boolean.garage_door", "input_boolean.guests"):
        async_expose_entity(hass, "conversation", entity_id, True)
    assert await tier(hass, "input_boolean.garage_door") == "confirm_first"
    assert await tier(hass, "input_boolean.guests") == "autonomous"


async def _switch_as_light(hass: HomeAssistant, switch: str) -> str:
    """``switch`` shown as a light by switch_as_x; returns the light's entity id."""
    entry = MockConfigEntry(
        domain="switch_as_x",
        title="Wrapped",
        options={"entity_id": switch, "invert": False, "target_domain": "light"},
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    (light,) = er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
    async_expose_entity(hass, "conversation", light.entity_id, True)
    return light.entity_id


async def test_a_switch_shown_as_a_light_is_judged_as_the_switch(hass: HomeAssistant) -> None:
    """A switch_as_x light named "Garage door" asks; so does one wrapping the gate relay."""
    entities = er.async_get(hass)
    named = await _switch_as_light(hass, "switch.ac")
    assert await tier(hass, named) == "autonomous"
    entities.async_update_entity(named, name="Garage door")
    await hass.async_block_till_done()
    assert await tier(hass, named) == "confirm_first"

    entities.async_update_entity(SWITCH, name="Driveway gates")
    wrapping = await _switch_as_light(hass, SWITCH)
    entities.async_update_entity(wrapping, name="Porch light")
    await hass.async_block_till_done()
    assert await tier(hass, wrapping) == "confirm_first"


async def test_a_native_light_named_after_a_way_in_is_a_light(hass: HomeAssistant) -> None:
    """A real light named "Garage door" drives no opening: it keeps the light tier."""
    er.async_get(hass).async_update_entity("light.bed_light", name="Garage door")
    await hass.async_block_till_done()
    assert await tier(hass, "light.bed_light") == "autonomous"


async def test_a_scene_turning_on_the_gate_switch_asks_first(hass: HomeAssistant) -> None:
    """The scene takes the gate's tier, exposed to Assist or not."""
    er.async_get(hass).async_update_entity(SWITCH, name="Driveway gates")
    async_expose_entity(hass, "conversation", SWITCH, False)
    assert await async_setup_component(
        hass,
        "scene",
        {
            "scene": [
                {"name": "Arrive", "entities": {SWITCH: "on"}},
                {"name": "Cosy", "entities": {"light.bed_light": "on"}},
            ]
        },
    )
    await hass.async_block_till_done()
    assert await tier(hass, "scene.arrive") == "confirm_first"
    assert await tier(hass, "scene.cosy") == "autonomous"


class TestScriptsAndScenesTransitively:
    """Scripts and scenes lowered to autonomous in the options: what they reach still counts."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """Scripts and scenes autonomous."""
        return {"consent": {"script": "autonomous", "scene": "autonomous"}}

    @pytest.fixture(autouse=True)
    async def scripts(self, hass: HomeAssistant, alto: MockConfigEntry) -> None:
        """A scene that unlocks, scripts calling it, each other, a device, and only a light."""
        garage = er.async_get(hass).async_get("cover.garage_door")
        assert garage is not None
        assert await async_setup_component(
            hass,
            "scene",
            {"scene": [{"name": "Welcome", "entities": {"lock.front_door": "unlocked"}}]},
        )

        def step(action: str, **target: str | None) -> dict[str, Any]:
            return {"action": action, "target": target}

        on = "script.turn_on"
        scripts = {
            "arrive": [step("scene.turn_on", entity_id="scene.welcome")],
            "ping": [step(on, entity_id="script.pong")],
            "pong": [step(on, entity_id="script.ping"), step(on, entity_id="script.arrive")],
            "park": [step("cover.open_cover", device_id=garage.device_id)],
            "cosy": [step("light.turn_on", entity_id="light.bed_light")],
        }
        assert await async_setup_component(
            hass, "script", {"script": {k: {"sequence": v} for k, v in scripts.items()}}
        )
        await hass.async_block_till_done()
        for script in scripts:
            async_expose_entity(hass, "conversation", f"script.{script}", True)
        async_expose_entity(hass, "conversation", "scene.welcome", True)

    @pytest.mark.parametrize(
        "entity_id",
        ["scene.welcome", "script.arrive", "script.ping", "script.pong", "script.park"],
    )
    async def test_what_reaches_a_way_in_asks_first(
        self, hass: HomeAssistant, entity_id: str
    ) -> None:
        """A scene that unlocks, a script calling it, two scripts in a cycle, a device target."""
        assert await tier(hass, entity_id) == "confirm_first"

    async def test_a_script_reaching_only_a_light_is_autonomous(self, hass: HomeAssistant) -> None:
        """The options lowered scripts: one that only turns on a light acts at once."""
        assert await tier(hass, "script.cosy") == "autonomous"


async def test_the_organ_takes_overrides_but_never_lowers_a_lock(
    hass: HomeAssistant, alto: MockConfigEntry
) -> None:
    """Per-entity overrides win over the way-in judgement, except below confirm-first for locks."""
    async_expose_entity(hass, "conversation", "lock.front_door", True)
    runtime = alto.runtime_data
    organ = ActOrgan(
        hass,
        entry_id=alto.entry_id,
        index=runtime.organ.index,
        client=runtime.client,
        model="m",
        keep_alive="5m",
        num_ctx=2048,
        timeout=5.0,
        tiers={},
        overrides={
            "cover.garage_door": Tier.AUTONOMOUS,
            "lock.front_door": Tier.AUTONOMOUS,
            "light.bed_light": Tier.CONFIRM_FIRST,
        },
    )
    registry = runtime.organ.index.registry
    tiers = {
        entity_id: organ.tier_of_entity(entity)
        for entity_id in ("cover.garage_door", "lock.front_door", "light.bed_light")
        if (entity := registry.get(entity_id)) is not None
    }
    assert tiers == {
        "cover.garage_door": Tier.AUTONOMOUS,
        "lock.front_door": Tier.CONFIRM_FIRST,
        "light.bed_light": Tier.CONFIRM_FIRST,
    }
    # The entry's own organ has no overrides: the garage door asks.
    assert await tier(hass, "cover.garage_door") == "confirm_first"


# --- the bypass check follows every change -----------------------------------------------------


async def _settle(hass: HomeAssistant) -> None:
    """Let a debounced re-check run."""
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=RECHECK_COOLDOWN_S + 1))
    await hass.async_block_till_done()


async def test_the_local_intents_issue_follows_a_rename_alone(
    hass: HomeAssistant, alto: MockConfigEntry
) -> None:
    """With a pipeline preferring local intents, renaming a switch "Garage door" raises the issue.

    Renaming it back clears it; a device class or a device's name raises it again.
    """
    assert await async_setup_component(hass, "assist_pipeline", {})
    assert await async_setup_component(hass, "repairs", {})
    await hass.async_block_till_done()
    pipeline = assist_pipeline.async_get_pipelines(hass)[0]
    async_expose_entity(hass, "conversation", "cover.garage_door", False)
    await assist_pipeline.async_update_pipeline(
        hass, pipeline, conversation_engine="conversation.alto", prefer_local_intents=True
    )
    await _settle(hass)
    issues, entities = ir.async_get(hass), er.async_get(hass)

    def raised() -> str | None:
        issue = issues.async_get_issue(DOMAIN, issue_id(pipeline.id))
        return None if issue is None else (issue.translation_placeholders or {})["entities"]

    assert raised() is None

    entities.async_update_entity(SWITCH, name="Garage door")
    await _settle(hass)
    assert raised() == "Garage door"

    entities.async_update_entity(SWITCH, name=None)
    await _settle(hass)
    assert raised() is None

    entities.async_update_entity("cover.kitchen_window", device_class="garage")
    await _settle(hass)
    assert raised() == "Kitchen Window"

    entities.async_update_entity("cover.kitchen_window", device_class=None)
    entry = entities.async_get(SWITCH)
    assert entry is not None
    assert entry.device_id is not None
    dr.async_get(hass).async_update_device(entry.device_id, name_by_user="Hoftore")
    await _settle(hass)
    assert raised() == "Hoftore"
