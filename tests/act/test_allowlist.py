"""The allowlist table and the data specs, checked directly."""

import math

import pytest

from custom_components.alto.act.allowlist import (
    ALLOWLIST,
    Choice,
    FixedList,
    Flag,
    InvalidValue,
    Number,
    ServiceSpec,
    Text,
    check_data,
    services_for,
)
from custom_components.alto.act.model import GuardReason, GuardRefusal

EXPECTED_SERVICES = {
    "light": {"turn_on", "turn_off", "toggle"},
    "switch": {"turn_on", "turn_off", "toggle"},
    "input_boolean": {"turn_on", "turn_off", "toggle"},
    "fan": {"turn_on", "turn_off", "toggle", "set_percentage"},
    "lock": {"lock", "unlock", "open"},
    "cover": {"open_cover", "close_cover", "stop_cover", "set_cover_position"},
    "climate": {"set_temperature", "set_hvac_mode", "turn_on", "turn_off"},
    "media_player": {
        "media_play",
        "media_pause",
        "media_stop",
        "volume_set",
        "volume_mute",
        "turn_on",
        "turn_off",
    },
    "scene": {"turn_on"},
    "script": {"turn_on"},
    "vacuum": {"start", "stop", "return_to_base"},
    "alarm_control_panel": {"alarm_arm_home", "alarm_arm_away", "alarm_disarm"},
    "valve": {"open_valve", "close_valve"},
    "humidifier": {"turn_on", "turn_off", "set_humidity"},
}


def test_the_allowlist_is_exactly_the_reviewed_table() -> None:
    """The allowlist holds exactly the reviewed domains and services, no more, no fewer."""
    assert {domain: set(services) for domain, services in ALLOWLIST.items()} == EXPECTED_SERVICES


def test_the_allowlist_cannot_be_edited_at_runtime() -> None:
    """Neither the table nor a domain's services can be changed at runtime."""
    with pytest.raises(TypeError):
        ALLOWLIST["sensor"] = {}  # type: ignore[index]
    with pytest.raises(TypeError):
        ALLOWLIST["light"]["unlock"] = ServiceSpec()  # type: ignore[index]


def test_services_for() -> None:
    """A domain's allowed services come sorted; a domain not on the list has none."""
    assert services_for("vacuum") == ("return_to_base", "start", "stop")
    assert services_for("sensor") == ()


def test_every_param_is_a_known_spec_type() -> None:
    """Every service parameter is a known spec, and exclusive groups name only its parameters."""
    for services in ALLOWLIST.values():
        for spec in services.values():
            for param in spec.params.values():
                assert isinstance(param, Number | Flag | Choice | Text | FixedList)
            for group in spec.exclusive:
                assert group <= spec.params.keys()


@pytest.mark.parametrize(
    ("value", "expected"), [(0, 0), (100, 100), (42, 42), (42.0, 42), (-0.0, 0)]
)
def test_integral_number_accepts(value: object, expected: int) -> None:
    """An integral number in range comes back as an int, whole floats included."""
    result = Number(0, 100).check(value, {})
    assert result == expected
    assert type(result) is int


@pytest.mark.parametrize(
    "value",
    [True, False, "50", "fifty", None, [50], {"v": 50}, 42.5, -1, 101, math.nan, math.inf, 10**400],
)
def test_integral_number_refuses(value: object) -> None:
    """Booleans, strings, containers, fractions, out-of-range and non-finite values are refused."""
    with pytest.raises(InvalidValue):
        Number(0, 100).check(value, {})


def test_real_number_returns_a_float_and_refuses_non_finite() -> None:
    """A real number comes back as a float; out of range, non-finite, bool or text is refused."""
    number = Number(0, 1, integral=False)
    assert number.check(1, {}) == 1.0
    assert type(number.check(1, {})) is float
    assert number.check(0.25, {}) == 0.25
    for bad in (1.01, -0.01, math.nan, -math.inf, True, "0.5"):
        with pytest.raises(InvalidValue):
            number.check(bad, {})


@pytest.mark.parametrize(
    ("attributes", "bounds"),
    [
        ({"min_temp": 10, "max_temp": 28}, (10, 28)),
        ({"min_temp": 45.0, "max_temp": 95.0}, (45.0, 95.0)),  # Fahrenheit entity
        ({}, (7, 35)),
        ({"min_temp": 10}, (7, 35)),  # one bound alone is not trusted
        ({"min_temp": 30, "max_temp": 10}, (7, 35)),  # inverted
        ({"min_temp": "10", "max_temp": "28"}, (7, 35)),
        ({"min_temp": True, "max_temp": 28}, (7, 35)),
        ({"min_temp": math.nan, "max_temp": 28}, (7, 35)),
    ],
)
def test_bounds_come_from_attributes_only_when_both_are_sane(
    attributes: dict[str, object], bounds: tuple[float, float]
) -> None:
    """The entity's own temperature bounds are used only when both are numbers in order."""
    temperature = ALLOWLIST["climate"]["set_temperature"].params["temperature"]
    assert isinstance(temperature, Number)
    assert temperature.bounds(attributes) == bounds


def test_choice_prefers_the_entitys_own_options() -> None:
    """A choice checks the entity's own options if it lists them, else the generic list."""
    hvac = Choice(("off", "heat", "cool"), options_attr="hvac_modes")
    assert hvac.check("cool", {}) == "cool"
    assert hvac.check("heat", {"hvac_modes": ["off", "heat"]}) == "heat"
    with pytest.raises(InvalidValue):
        hvac.check("cool", {"hvac_modes": ["off", "heat"]})
    with pytest.raises(InvalidValue):
        hvac.check("heat", {"hvac_modes": []})
    # A junk attribute falls back to the generic list.
    assert hvac.check("cool", {"hvac_modes": "heat"}) == "cool"
    for bad in ("COOL", " cool", 1, None, ["cool"]):
        with pytest.raises(InvalidValue):
            hvac.check(bad, {})


def test_flag_text_and_fixed_list() -> None:
    """Flags take booleans, text strings of a bounded length, fixed lists exactly N valid items."""
    assert Flag().check(True, {}) is True
    for bad in (1, 0, "true", None):
        with pytest.raises(InvalidValue):
            Flag().check(bad, {})
    assert Text(4).check("1234", {}) == "1234"
    for bad in ("", "12345", 1234, None):
        with pytest.raises(InvalidValue):
            Text(4).check(bad, {})
    rgb = FixedList(3, Number(0, 255))
    assert rgb.check([255, 0, 10.0], {}) == (255, 0, 10)
    for bad in ([1, 2], [1, 2, 3, 4], [1, 2, 256], [1, 2, True], "1,2,3", {"r": 1}, (1, 2, "3")):
        with pytest.raises(InvalidValue):
            rgb.check(bad, {})


def _light_on() -> ServiceSpec:
    """The `light.turn_on` spec."""
    return ALLOWLIST["light"]["turn_on"]


def test_check_data_cleans_values() -> None:
    """Checked data comes back cleaned: whole floats as ints, lists as tuples."""
    cleaned = check_data(_light_on(), {"brightness_pct": 30.0, "rgb_color": [1, 2, 3]}, {})
    assert cleaned == {"brightness_pct": 30, "rgb_color": (1, 2, 3)}


@pytest.mark.parametrize(
    ("spec", "data", "code"),
    [
        (_light_on(), {"flash": "long"}, GuardReason.BAD_DATA_KEY),
        (_light_on(), {1: 2}, GuardReason.BAD_DATA_KEY),
        (_light_on(), {"brightness": 10, "brightness_pct": 10}, GuardReason.BAD_DATA_KEY),
        (
            _light_on(),
            {"color_temp_kelvin": 3000, "rgb_color": [1, 2, 3]},
            GuardReason.BAD_DATA_KEY,
        ),
        (ALLOWLIST["cover"]["set_cover_position"], {}, GuardReason.BAD_DATA_KEY),
        (ALLOWLIST["light"]["turn_off"], {"brightness": 0}, GuardReason.BAD_DATA_KEY),
        (_light_on(), {"brightness": 256}, GuardReason.BAD_DATA_VALUE),
        (_light_on(), {"brightness_pct": True}, GuardReason.BAD_DATA_VALUE),
    ],
)
def test_check_data_refusals(
    spec: ServiceSpec, data: dict[object, object], code: GuardReason
) -> None:
    """Bad keys (unknown, exclusive, missing, forbidden) and bad values are refused as such."""
    result = check_data(spec, data, {})  # type: ignore[arg-type]
    assert isinstance(result, GuardRefusal)
    assert result.reason is code
