"""`alto.check_action`: the guard and the tiers as a response-only service that never acts."""

from __future__ import annotations

from typing import Any

import probatio
import pytest
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import Event, HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from pytest_homeassistant_custom_component.common import MockConfigEntry

pytestmark = pytest.mark.usefixtures("alto")


async def check(hass: HomeAssistant, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call `alto.check_action`; returns its response, checked for its keys."""
    response = await hass.services.async_call(
        "alto",
        "check_action",
        {"tool": tool, "arguments": arguments},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    assert {"verdict", "reason", "call", "tier"} <= response.keys()
    return dict(response)


def device_service_calls(events: list[Event]) -> list[dict[str, Any]]:
    """The service calls other than `alto.check_action` itself."""
    return [dict(e.data) for e in events if e.data.get("domain") != "alto"]


async def test_valid_light_call_is_described_not_executed(
    hass: HomeAssistant, service_calls: list[Event]
) -> None:
    """A valid call is described with its tier and never executed."""
    response = await check(
        hass, "call_ha_service", entity="light.bed_light", service="turn_on", data={}
    )
    assert response["verdict"] == "valid"
    assert response["tier"] == "autonomous"
    assert response["call"] == {
        "domain": "light",
        "service": "turn_on",
        "entity_id": "light.bed_light",
        "data": {},
    }
    assert hass.states.get("light.bed_light").state == "off"
    assert device_service_calls(service_calls) == []


async def test_entity_is_resolved_by_name_and_data_is_cleaned(hass: HomeAssistant) -> None:
    """The entity is resolved by name and the data comes back cleaned."""
    response = await check(
        hass,
        "call_ha_service",
        entity="Kitchen Lights",
        service="turn_on",
        data={"brightness": 128.0},
    )
    assert response["verdict"] == "valid"
    assert response["call"]["entity_id"] == "light.kitchen_lights"
    assert response["call"]["data"] == {"brightness": 128}


async def test_unexposed_lock_is_refused(hass: HomeAssistant) -> None:
    """An unexposed lock is refused, with no call and no tier."""
    response = await check(hass, "call_ha_service", entity="lock.front_door", service="unlock")
    assert response["verdict"] == "refused"
    assert response["reason"].startswith("unknown_entity")
    assert response["call"] is None
    assert response["tier"] is None


async def test_exposed_lock_is_valid_and_confirm_first_but_stays_locked(
    hass: HomeAssistant, service_calls: list[Event]
) -> None:
    """An exposed lock is valid and confirm-first, and stays locked."""
    async_expose_entity(hass, "conversation", "lock.front_door", True)
    response = await check(hass, "call_ha_service", entity="lock.front_door", service="unlock")
    assert response["verdict"] == "valid"
    assert response["tier"] == "confirm_first"
    assert response["call"]["domain"] == "lock"
    assert hass.states.get("lock.front_door").state == "locked"
    assert device_service_calls(service_calls) == []


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (
            {"entity": "light.bed_light", "service": "unlock", "domain": "lock"},
            "service_not_allowed",
        ),
        ({"entity": "light.bed_light", "service": "lock.unlock"}, "service_not_allowed"),
        ({"entity": "switch.ac", "service": "light.turn_on"}, "service_not_allowed"),
        (
            {"entity": "light.bed_light", "service": "turn_on", "data": {"entity_id": "lock.x"}},
            "entity_smuggled",
        ),
        (
            {"entity": "climate.hvac", "service": "set_temperature", "data": {"temperature": 40}},
            "bad_data_value",
        ),
        ({"entity": "climate.hvac", "service": "set_temperature"}, "bad_data_key"),
        ({"entity": "light.nowhere", "service": "turn_on"}, "unknown_entity"),
    ],
)
async def test_refusals(hass: HomeAssistant, arguments: dict[str, Any], reason: str) -> None:
    """Every guard refusal is reported with its reason and no call."""
    response = await check(hass, "call_ha_service", **arguments)
    assert response["verdict"] == "refused"
    assert response["reason"].startswith(reason), response["reason"]
    assert response["call"] is None


async def test_model_domain_is_ignored(hass: HomeAssistant) -> None:
    """The model's domain is ignored in favour of the entity's."""
    response = await check(
        hass, "call_ha_service", entity="light.bed_light", service="turn_on", domain="lock"
    )
    assert response["verdict"] == "valid"
    assert response["call"]["domain"] == "light"


async def test_tiers(hass: HomeAssistant) -> None:
    """Climate and ordinary covers act and notify, garage doors ask first, and nothing moves."""
    climate = await check(
        hass,
        "call_ha_service",
        entity="climate.hvac",
        service="set_temperature",
        data={"temperature": 22},
    )
    assert (climate["verdict"], climate["tier"]) == ("valid", "act_and_notify")
    garage = await check(hass, "call_ha_service", entity="cover.garage_door", service="open_cover")
    assert (garage["verdict"], garage["tier"]) == ("valid", "confirm_first")
    window = await check(
        hass, "call_ha_service", entity="cover.kitchen_window", service="open_cover"
    )
    assert (window["verdict"], window["tier"]) == ("valid", "act_and_notify")
    assert hass.states.get("cover.garage_door").state == "closed"
    assert hass.states.get("cover.kitchen_window").state == "closed"
    assert hass.states.get("climate.hvac").attributes["temperature"] == 21


async def test_state_query(hass: HomeAssistant) -> None:
    """A state query of an exposed entity is valid and autonomous; of an unexposed one, refused."""
    response = await check(hass, "get_device_state", entity="climate.hvac")
    assert response["verdict"] == "valid"
    assert response["tier"] == "autonomous"
    assert response["call"] is None or response["call"]["entity_id"] == "climate.hvac"
    refused = await check(hass, "get_device_state", entity="lock.front_door")
    assert refused["verdict"] == "refused"
    assert refused["reason"].startswith("unknown_entity")


async def test_missing_tool_is_invalid(hass: HomeAssistant) -> None:
    """A call without a tool is rejected by the schema."""
    with pytest.raises((probatio.Invalid, ServiceValidationError)):
        await hass.services.async_call(
            "alto",
            "check_action",
            {"arguments": {"entity": "light.bed_light", "service": "turn_on"}},
            blocking=True,
            return_response=True,
        )


async def test_response_is_required(hass: HomeAssistant) -> None:
    """The service must be called for its response."""
    with pytest.raises(ServiceValidationError):
        await hass.services.async_call(
            "alto",
            "check_action",
            {"tool": "call_ha_service", "arguments": {"entity": "light.bed_light"}},
            blocking=True,
        )


class TestConsentOptions:
    """Consent tiers changed in the options."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """Lights confirm first, covers autonomous."""
        return {"consent": {"light": "confirm_first", "cover": "autonomous"}}

    async def test_options_change_tiers_but_not_guarded_covers(
        self, hass: HomeAssistant, setup_alto: MockConfigEntry
    ) -> None:
        """The options change tiers, but a garage door still asks first."""
        light = await check(hass, "call_ha_service", entity="light.bed_light", service="turn_on")
        assert light["tier"] == "confirm_first"
        window = await check(
            hass, "call_ha_service", entity="cover.kitchen_window", service="open_cover"
        )
        assert window["tier"] == "autonomous"
        garage = await check(
            hass, "call_ha_service", entity="cover.garage_door", service="open_cover"
        )
        assert garage["tier"] == "confirm_first"
