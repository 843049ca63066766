"""Consent per device: the options list each exposed entity Alto can act on, with its tier.

The list shows the tier a call on the entity gets (Alto's judgement: a way into the home asks
first, else its domain's tier; or the user's choice), lets the user change it, and stores only
the changes; `alto.check_action` then reports the new tier. Nothing lowers a lock below
confirm-first, and an entity no longer exposed leaves the list without taking anyone's choice.
The pure half (rows, offered tiers, what is stored) is checked as a property over every
allowlisted domain, name, target and earlier choice.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from homeassistant.components.homeassistant.exposed_entities import (
    async_expose_entity,
    async_should_expose,
)
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType, InvalidData
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.act.allowlist import ALLOWLIST, services_for
from custom_components.alto.act.model import ExposedEntity, Target
from custom_components.alto.act.tiers import ALWAYS_ASKED, Tier
from custom_components.alto.options import ENTITY_CONSENT, EntityTier

GATES = "switch.decorative_lights"  # renamed "Driveway gates": a gate relay
KITCHEN = "light.kitchen_lights"
LOCK = "lock.front_door"
SERVICE = {"cover": "open_cover", "lock": "unlock"}
STEP = ENTITY_CONSENT.key


type Rows = dict[str, tuple[str, str, list[str]]]


async def open_list(hass: HomeAssistant, entry: MockConfigEntry) -> tuple[str, Rows]:
    """The flow id and the list's rows: {entity id: (label, tier shown, tiers offered)}."""
    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": STEP}
    )
    assert result["type"] is FlowResultType.FORM, result
    assert result["step_id"] == STEP
    rows: Rows = {}
    for marker, selector in result["data_schema"].schema.items():
        label = str(marker.schema)
        entity_id = label.rpartition("(")[2].rstrip(")")
        rows[entity_id] = (label, marker.default(), selector.config["options"])
    return result["flow_id"], rows


async def send(
    hass: HomeAssistant, flow_id: str, rows: Rows, changes: dict[str, str]
) -> dict[str, Any]:
    """Send the list with every tier as shown but `changes`; returns the result."""
    sent = {label: changes.get(e, shown) for e, (label, shown, _) in rows.items()}
    result = await hass.config_entries.options.async_configure(flow_id, sent)
    await hass.async_block_till_done()
    return dict(result)


async def tier(hass: HomeAssistant, entity_id: str) -> str:
    """The tier `alto.check_action` gives a call on `entity_id`."""
    response = await hass.services.async_call(
        "alto",
        "check_action",
        {
            "tool": "call_ha_service",
            "arguments": {
                "entity": entity_id,
                "service": SERVICE.get(entity_id.partition(".")[0], "turn_on"),
            },
        },
        blocking=True,
        return_response=True,
    )
    assert response is not None
    assert response["verdict"] == "valid", response
    return str(response["tier"])


@pytest.fixture
async def gates(hass: HomeAssistant, alto: MockConfigEntry) -> str:
    """The demo's decorative lights switch, named as the driveway gates' relay."""
    er.async_get(hass).async_update_entity(GATES, name="Driveway gates")
    await hass.async_block_till_done()
    return GATES


async def test_the_list_shows_every_exposed_entity_alto_can_act_on_with_its_tier(
    hass: HomeAssistant, setup_alto: MockConfigEntry, gates: str
) -> None:
    """Each exposed entity of an allowlisted domain, by name and id, at the tier a call gets."""
    _, rows = await open_list(hass, setup_alto)
    exposed = {
        state.entity_id
        for state in hass.states.async_all()
        if services_for(state.domain) and async_should_expose(hass, "conversation", state.entity_id)
    }
    assert set(rows) == exposed
    assert rows[gates][:2] == ("Driveway gates (switch.decorative_lights)", "confirm_first")
    assert rows[KITCHEN][:2] == ("Kitchen Lights (light.kitchen_lights)", "autonomous")
    organ = setup_alto.runtime_data.organ
    for entity_id, (label, shown, offered) in rows.items():
        state = hass.states.get(entity_id)
        assert state is not None
        assert label == f"{state.name} ({entity_id})"
        entity = organ.index.registry.get(entity_id)
        assert entity is not None
        assert shown == organ.tier_of_entity(entity), entity_id
        assert shown in offered


@pytest.mark.parametrize(
    ("entity_id", "chosen"),
    [
        (KITCHEN, "confirm_first"),
        (KITCHEN, "act_and_notify"),
        (GATES, "autonomous"),
        ("cover.kitchen_window", "autonomous"),
        ("cover.garage_door", "act_and_notify"),
    ],
)
async def test_a_change_is_stored_alone_and_check_action_follows_it(
    hass: HomeAssistant, setup_alto: MockConfigEntry, gates: str, entity_id: str, chosen: str
) -> None:
    """The one changed entity is stored, its calls get the new tier; choosing back forgets it."""
    flow_id, rows = await open_list(hass, setup_alto)
    judged = rows[entity_id][1]
    assert judged != chosen
    assert await tier(hass, entity_id) == judged
    result = await send(hass, flow_id, rows, {entity_id: chosen})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert setup_alto.options[STEP] == {entity_id: chosen}
    assert await tier(hass, entity_id) == chosen
    flow_id, again = await open_list(hass, setup_alto)
    assert again[entity_id][1] == chosen
    assert {e: row[1] for e, row in again.items() if e != entity_id} == {
        e: row[1] for e, row in rows.items() if e != entity_id
    }
    await send(hass, flow_id, again, {entity_id: judged})
    assert STEP not in setup_alto.options
    assert await tier(hass, entity_id) == judged


async def test_sending_the_list_unchanged_stores_nothing(
    hass: HomeAssistant, setup_alto: MockConfigEntry, gates: str
) -> None:
    """Every tier as shown: no entity is stored, and the other options stay."""
    hass.config_entries.async_update_entry(setup_alto, options={"assistant_name": "Pip"})
    await hass.async_block_till_done()
    flow_id, rows = await open_list(hass, setup_alto)
    result = await send(hass, flow_id, rows, {})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert setup_alto.options == {"assistant_name": "Pip"}


class TestLocks:
    """A lock asks first whatever was stored for it, and the list offers nothing lower."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """A lower tier stored for the lock (never offered, so written by hand), and the light's."""
        return {STEP: {LOCK: "autonomous", KITCHEN: "confirm_first"}}

    @pytest.mark.usefixtures("front_door_exposed")
    async def test_a_lock_offers_no_lower_tier_and_its_stored_one_is_ignored(
        self, hass: HomeAssistant, setup_alto: MockConfigEntry
    ) -> None:
        """The lock asks first, offering only that; saving drops its value, keeps the light's."""
        assert await tier(hass, LOCK) == "confirm_first"
        assert await tier(hass, KITCHEN) == "confirm_first"
        flow_id, rows = await open_list(hass, setup_alto)
        assert rows[LOCK][1:] == ("confirm_first", ["confirm_first"])
        assert rows[KITCHEN][1] == "confirm_first"
        with pytest.raises(InvalidData):
            await send(hass, flow_id, rows, {LOCK: "autonomous"})
        await send(hass, flow_id, rows, {})
        assert setup_alto.options[STEP] == {KITCHEN: "confirm_first"}
        assert await tier(hass, LOCK) == "confirm_first"


class TestNoLongerExposed:
    """An entity taken out of Assist leaves the list; the stored choices all stay."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """The kitchen light asks first, the kitchen window acts."""
        return {STEP: {KITCHEN: "confirm_first", "cover.kitchen_window": "autonomous"}}

    @pytest.mark.usefixtures("alto")
    async def test_an_unexposed_entity_drops_out_and_keeps_its_choice(
        self, hass: HomeAssistant, setup_alto: MockConfigEntry
    ) -> None:
        """Another change keeps both stored choices; exposed again, the light shows its own."""
        async_expose_entity(hass, "conversation", KITCHEN, False)
        await hass.async_block_till_done()
        flow_id, rows = await open_list(hass, setup_alto)
        assert KITCHEN not in rows
        assert rows["cover.kitchen_window"][1] == "autonomous"
        await send(hass, flow_id, rows, {"light.bed_light": "act_and_notify"})
        assert setup_alto.options[STEP] == {
            KITCHEN: "confirm_first",
            "cover.kitchen_window": "autonomous",
            "light.bed_light": "act_and_notify",
        }
        async_expose_entity(hass, "conversation", KITCHEN, True)
        await hass.async_block_till_done()
        _, rows = await open_list(hass, setup_alto)
        assert rows[KITCHEN][1] == "confirm_first"


async def test_nothing_to_list_aborts(hass: HomeAssistant, setup_alto: MockConfigEntry) -> None:
    """Without an exposed entity Alto can act on, the step says so instead of an empty form."""
    result = await hass.config_entries.options.async_init(setup_alto.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": STEP}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "nothing_exposed"


# --- the pure half: rows and what is stored, over every domain, name, target and choice -------

NAMES = ("Driveway gates", "Kitchen", "Haustür")
TARGETS: tuple[tuple[Target, ...], ...] = (
    (),
    (Target("switch.hall", "Hall"),),
    (Target("lock.back_door", "Back door"),),
)
DOMAIN_TIERS: tuple[dict[str, str], ...] = (
    {},
    {"light": "confirm_first", "switch": "act_and_notify", "lock": "autonomous"},
)
CASES = [
    (ExposedEntity(f"{domain}.thing", name, targets=targets), domain_tiers, stored)
    for domain, name, targets, domain_tiers, stored in itertools.product(
        sorted(ALLOWLIST), NAMES, TARGETS, DOMAIN_TIERS, (None, *Tier)
    )
]


def row_of(
    entity: ExposedEntity, domain_tiers: dict[str, str], chosen: dict[str, Tier]
) -> EntityTier:
    """The entity's one row."""
    (row,) = ENTITY_CONSENT.rows([entity], domain_tiers, chosen)
    return row


def test_only_entities_alto_can_act_on_are_listed_by_name_then_id() -> None:
    """A sensor or a conversation agent has no row; the others are sorted by label."""
    entities = [
        ExposedEntity("sensor.power", "Power"),
        ExposedEntity("light.b", "attic"),
        ExposedEntity("switch.a", "Boiler"),
        ExposedEntity("conversation.alto", "Alto"),
        ExposedEntity("lock.c", "lock.c"),
    ]
    rows = ENTITY_CONSENT.rows(entities, {}, {})
    assert [row.label for row in rows] == ["attic (light.b)", "Boiler (switch.a)", "lock.c"]


def test_each_offered_tier_becomes_the_entity_s_and_only_a_change_is_stored() -> None:
    """Whatever was stored, picking an offered tier makes it the tier a call gets.

    Over every case: the offered tiers run from the lowest allowed (confirm-first alone for a
    lock or an alarm panel, or for what reaches a lock; every tier for an entity that reaches
    nothing) to confirm-first; the tier shown is
    offered; what is stored differs from Alto's judgement; other entities' choices stay; sent
    as shown, the entity keeps its tier. (One test, not one per case: every test here starts a
    Home Assistant.)
    """
    others = {"light.elsewhere": Tier.ACT_AND_NOTIFY}
    for entity, domain_tiers, stored in CASES:
        case = (entity.entity_id, entity.name, entity.targets, domain_tiers, stored)
        chosen = others | ({entity.entity_id: stored} if stored else {})
        row = row_of(entity, domain_tiers, chosen)
        offered = row.offered()
        assert row.shown.value in offered, case
        assert offered[-1] == Tier.CONFIRM_FIRST, case
        reaches_a_lock = any(t.domain in ALWAYS_ASKED for t in entity.targets)
        if entity.domain in ALWAYS_ASKED or reaches_a_lock:
            assert offered == [Tier.CONFIRM_FIRST], case
        elif not entity.targets:
            assert offered == list(Tier), case
        for picked in offered:
            kept = ENTITY_CONSENT.chosen([row], {row.label: picked}, chosen)
            assert {e: t for e, t in kept.items() if e != entity.entity_id} == others, case
            assert kept.get(entity.entity_id) != row.judged, case
            again = row_of(entity, domain_tiers, ENTITY_CONSENT.read({STEP: kept}))
            assert again.shown == (row.shown if picked == row.shown else Tier(picked)), case
