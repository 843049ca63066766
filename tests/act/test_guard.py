"""The guard: every refusal reason, spoofed domains, smuggled targets, and a fuzz.

The fuzz must never make the guard raise.
"""

import random
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from custom_components.alto.act.guard import validate_state_query, validate_tool_call
from custom_components.alto.act.model import (
    ExposedEntity,
    GuardReason,
    GuardRefusal,
    Proposal,
    Registry,
    StateQuery,
    ValidatedCall,
)

from . import home

REGISTRY = home()


def call(entity: object = "light.kitchen", service: object = "turn_on", **extra: Any) -> Any:
    """Validate a `call_ha_service` proposal against the synthetic home."""
    return validate_tool_call(
        REGISTRY, Proposal("call_ha_service", {"entity": entity, "service": service, **extra})
    )


def refused(result: object) -> GuardReason:
    """The reason of a refusal (fails if the result is not one)."""
    assert isinstance(result, GuardRefusal), result
    return result.reason


@pytest.mark.parametrize(
    ("entity", "service", "data", "expected"),
    [
        ("light.kitchen", "turn_on", None, ("light", "turn_on", "light.kitchen", {})),
        ("Kitchen lamp", "light.turn_off", {}, ("light", "turn_off", "light.kitchen", {})),
        (
            "light.kitchen",
            " turn_on ",
            {"brightness_pct": 40, "color_temp_kelvin": 2700},
            (
                "light",
                "turn_on",
                "light.kitchen",
                {"brightness_pct": 40, "color_temp_kelvin": 2700},
            ),
        ),
        ("kettle", "toggle", None, ("switch", "toggle", "switch.kettle", {})),
        (
            "guest mode",
            "turn_on",
            None,
            ("input_boolean", "turn_on", "input_boolean.guest_mode", {}),
        ),
        (
            "fan.bedroom",
            "set_percentage",
            {"percentage": 30},
            ("fan", "set_percentage", "fan.bedroom", {"percentage": 30}),
        ),
        ("front door", "unlock", None, ("lock", "unlock", "lock.front_door", {})),
        (
            "front door",
            "open",
            {"code": "1234"},
            ("lock", "open", "lock.front_door", {"code": "1234"}),
        ),
        (
            "Living room blinds",
            "set_cover_position",
            {"position": 0},
            ("cover", "set_cover_position", "cover.blinds", {"position": 0}),
        ),
        ("cover.garage", "close_cover", None, ("cover", "close_cover", "cover.garage", {})),
        (
            "thermostat",
            "set_temperature",
            {"temperature": 21.5},
            ("climate", "set_temperature", "climate.living", {"temperature": 21.5}),
        ),
        (
            "thermostat",
            "set_hvac_mode",
            {"hvac_mode": "heat"},
            ("climate", "set_hvac_mode", "climate.living", {"hvac_mode": "heat"}),
        ),
        (
            "office heater",
            "set_hvac_mode",
            {"hvac_mode": "cool"},
            ("climate", "set_hvac_mode", "climate.office", {"hvac_mode": "cool"}),
        ),
        (
            "telly",
            "volume_set",
            {"volume_level": 0.3},
            ("media_player", "volume_set", "media_player.tv", {"volume_level": 0.3}),
        ),
        (
            "tv",
            "volume_mute",
            {"is_volume_muted": True},
            ("media_player", "volume_mute", "media_player.tv", {"is_volume_muted": True}),
        ),
        ("movie time", "turn_on", None, ("scene", "turn_on", "scene.movie", {})),
        ("script.bedtime", "turn_on", None, ("script", "turn_on", "script.bedtime", {})),
        ("robot vacuum", "return_to_base", None, ("vacuum", "return_to_base", "vacuum.robo", {})),
        (
            "house alarm",
            "alarm_disarm",
            {"code": "0000"},
            ("alarm_control_panel", "alarm_disarm", "alarm_control_panel.house", {"code": "0000"}),
        ),
        ("garden tap", "close_valve", None, ("valve", "close_valve", "valve.garden", {})),
        (
            "bedroom humidifier",
            "set_humidity",
            {"humidity": 45},
            ("humidifier", "set_humidity", "humidifier.bedroom", {"humidity": 45}),
        ),
    ],
)
def test_valid_calls(
    entity: str, service: str, data: dict[str, Any] | None, expected: tuple[Any, ...]
) -> None:
    """Valid calls resolve id, name or alias, with the registry's domain and cleaned data."""
    result = call(entity, service, data=data)
    assert isinstance(result, ValidatedCall), result
    domain, name, entity_id, clean = expected
    assert result.as_dict() == {
        "domain": domain,
        "service": name,
        "entity_id": entity_id,
        "data": clean,
    }


def test_data_may_be_omitted() -> None:
    """A call without `data` is valid and carries empty data."""
    result = validate_tool_call(
        REGISTRY, Proposal("call_ha_service", {"entity": "light.hall", "service": "turn_off"})
    )
    assert isinstance(result, ValidatedCall)
    assert result.data == {}


@pytest.mark.parametrize("domain", ["lock", "light", "alarm_control_panel", None, 7, ["lock"]])
def test_the_models_domain_is_discarded(domain: object) -> None:
    """Whatever domain the model names, the entity's own domain is used."""
    result = call("light.kitchen", "turn_on", domain=domain)
    assert isinstance(result, ValidatedCall)
    assert result.domain == "light"
    assert result.entity_id == "light.kitchen"


@pytest.mark.parametrize(
    ("service", "domain"),
    [
        ("unlock", "lock"),
        ("lock.unlock", "lock"),
        ("lock.unlock", "light"),
        ("open", "lock"),
        ("alarm_disarm", "alarm_control_panel"),
        ("alarm_control_panel.alarm_disarm", None),
    ],
)
def test_a_spoofed_domain_never_reaches_another_domains_service(
    service: str, domain: str | None
) -> None:
    """A light never reaches another domain's service, whatever domain the model claims."""
    assert refused(call("light.kitchen", service, domain=domain)) is GuardReason.SERVICE_NOT_ALLOWED


@pytest.mark.parametrize(
    ("entity", "service"),
    [
        ("light.kitchen", "lock.unlock"),
        ("light.kitchen", "unlock"),
        ("light.kitchen", "switch.turn_on"),
        ("light.kitchen", "homeassistant.turn_on"),
        ("light.kitchen", "light.turn_on.extra"),
        ("light.kitchen", ".turn_on"),
        ("light.kitchen", "light."),
        ("light.kitchen", "TURN_ON"),
        ("light.kitchen", "turn on"),
        ("light.kitchen", "reload"),
        ("light.kitchen", ""),
        ("switch.kettle", "set_percentage"),
        ("lock.front_door", "turn_off"),
        ("scene.movie", "turn_off"),
        ("script.bedtime", "reload"),
        ("cover.garage", "set_cover_tilt_position"),
        ("sensor.outside_temperature", "turn_on"),
        ("sensor.outside_temperature", "update_entity"),
    ],
)
def test_service_not_allowed(entity: str, service: str) -> None:
    """A service outside the entity domain's allowlist is refused."""
    assert refused(call(entity, service)) is GuardReason.SERVICE_NOT_ALLOWED


@pytest.mark.parametrize(
    "entity",
    ["light.kltchen", "light.kitсhen", "light.KITCHEM", "light.basement", "lock.back_door", "x"],
)
def test_unknown_or_unexposed_entities(entity: str) -> None:
    """Misspelt, look-alike, unexposed or missing entities are unknown."""
    assert refused(call(entity)) is GuardReason.UNKNOWN_ENTITY


def test_an_entity_that_exists_in_home_assistant_but_is_not_exposed_is_unknown() -> None:
    """An entity HA has but Assist does not expose is unknown to the guard."""
    registry = Registry([ExposedEntity("light.kitchen", "Kitchen")])
    result = validate_tool_call(
        registry, Proposal("call_ha_service", {"entity": "lock.front_door", "service": "unlock"})
    )
    assert refused(result) is GuardReason.UNKNOWN_ENTITY


def test_ambiguous_entity() -> None:
    """A name that matches two exposed entities is refused as ambiguous."""
    registry = Registry([ExposedEntity("light.a", "Lamp"), ExposedEntity("light.b", "lamp")])
    result = validate_tool_call(
        registry, Proposal("call_ha_service", {"entity": "lamp", "service": "turn_on"})
    )
    assert refused(result) is GuardReason.AMBIGUOUS_ENTITY


@pytest.mark.parametrize(
    "entity",
    [
        "light.kitchen, lock.front_door",
        "light.kitchen and lock.front_door",
        "light.kitchen & light.hall",
        "light.kitchen lock.front_door",
        "light.kitchen;lock.front_door",
    ],
)
def test_a_second_entity_in_the_entity_string_is_smuggling(entity: str) -> None:
    """An entity string naming a second entity is smuggling."""
    assert refused(call(entity)) is GuardReason.ENTITY_SMUGGLED


@pytest.mark.parametrize(
    "data",
    [
        {"entity_id": "lock.front_door"},
        {"entity_id": ["light.kitchen", "lock.front_door"]},
        {"target": {"entity_id": "lock.front_door"}},
        {"area_id": "hall"},
        {"device_id": "abc"},
        {"floor_id": "ground"},
        {"label_id": "all"},
        {"Entity_ID ": "lock.front_door"},
        {"brightness": 10, "extra": {"deep": [{"entity_id": "lock.front_door"}]}},
        {"rgb_color": [1, 2, {"target": "lock.front_door"}]},
    ],
)
def test_a_targeting_key_anywhere_in_data_is_smuggling(data: dict[str, Any]) -> None:
    """A targeting key anywhere in the data, however nested or spelt, is smuggling."""
    assert refused(call(data=data)) is GuardReason.ENTITY_SMUGGLED


@pytest.mark.parametrize("key", ["entity_id", "target", "area_id", "device_id"])
def test_a_targeting_key_beside_the_arguments_is_smuggling(key: str) -> None:
    """A targeting key beside entity and service is smuggling."""
    assert refused(call(**{key: "lock.front_door"})) is GuardReason.ENTITY_SMUGGLED


@pytest.mark.parametrize(
    "arguments",
    [
        {"entity": "light.kitchen", "service": "turn_on", "reason": "because"},
        {"entity": "light.kitchen", "service": "turn_on", "service_data": {}},
        {"entity": "light.kitchen", "service": "turn_on", 1: 2},
        {"service": "turn_on"},
        {"entity": "light.kitchen"},
        {"entity": None, "service": "turn_on"},
        {"entity": ["light.kitchen"], "service": "turn_on"},
        {"entity": {"id": "light.kitchen"}, "service": "turn_on"},
        {"entity": "light.kitchen", "service": None},
        {"entity": "light.kitchen", "service": ["turn_on"]},
        {"entity": "light.kitchen", "service": "turn_on", "data": "brightness=10"},
        {"entity": "light.kitchen", "service": "turn_on", "data": [["brightness", 10]]},
        {"entity": "x" * 10_000, "service": "turn_on"},
    ],
)
def test_bad_arguments(arguments: dict[Any, Any]) -> None:
    """Extra, missing or mistyped arguments are refused as bad arguments."""
    assert refused(validate_tool_call(REGISTRY, Proposal("call_ha_service", arguments))) is (
        GuardReason.BAD_ARGUMENTS
    )


@pytest.mark.parametrize("arguments", [None, [], "entity=light.kitchen", 42])
def test_arguments_that_are_not_a_mapping(arguments: object) -> None:
    """Arguments that are not a mapping are refused as bad arguments."""
    result = validate_tool_call(REGISTRY, Proposal("call_ha_service", arguments))  # type: ignore[arg-type]
    assert refused(result) is GuardReason.BAD_ARGUMENTS


@pytest.mark.parametrize("tool", ["get_device_state", "none", "call_service", "", None, 1])
def test_unknown_tool(tool: object) -> None:
    """A tool other than the two known ones is refused as unknown."""
    proposal = Proposal(tool, {"entity": "light.kitchen", "service": "turn_on"})  # type: ignore[arg-type]
    assert refused(validate_tool_call(REGISTRY, proposal)) is GuardReason.UNKNOWN_TOOL


@pytest.mark.parametrize("proposal", [None, {"tool": "call_ha_service"}, "call_ha_service"])
def test_not_a_proposal(proposal: object) -> None:
    """Anything that is not a Proposal is refused as malformed."""
    assert refused(validate_tool_call(REGISTRY, proposal)) is GuardReason.MALFORMED_PROPOSAL  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entity", "service", "data"),
    [
        ("light.kitchen", "turn_on", {"brightness_pct": 101}),
        ("light.kitchen", "turn_on", {"brightness_pct": -1}),
        ("light.kitchen", "turn_on", {"brightness_pct": "50"}),
        ("light.kitchen", "turn_on", {"brightness_pct": True}),
        ("light.kitchen", "turn_on", {"brightness_pct": 50.5}),
        ("light.kitchen", "turn_on", {"brightness": 300}),
        ("light.kitchen", "turn_on", {"color_temp_kelvin": 7000}),  # entity max 6500
        ("light.kitchen", "turn_on", {"color_temp_kelvin": 1900}),  # entity min 2000
        ("light.hall", "turn_on", {"color_temp_kelvin": 12000}),  # default max 10000
        ("light.kitchen", "turn_on", {"rgb_color": [256, 0, 0]}),
        ("light.kitchen", "turn_on", {"rgb_color": "red"}),
        ("fan.bedroom", "turn_on", {"percentage": 150}),
        ("cover.blinds", "set_cover_position", {"position": "half"}),
        ("cover.blinds", "set_cover_position", {"position": 100.1}),
        ("thermostat", "set_temperature", {"temperature": 29}),  # entity max 28
        ("thermostat", "set_temperature", {"temperature": 9.5}),  # entity min 10
        ("office heater", "set_temperature", {"temperature": 36}),  # default max 35
        ("office heater", "set_temperature", {"temperature": 6}),  # default min 7
        ("thermostat", "set_temperature", {"temperature": "21"}),
        ("thermostat", "set_hvac_mode", {"hvac_mode": "cool"}),  # not in hvac_modes
        ("office heater", "set_hvac_mode", {"hvac_mode": "sauna"}),
        ("tv", "volume_set", {"volume_level": 1.5}),
        ("tv", "volume_set", {"volume_level": -0.1}),
        ("tv", "volume_mute", {"is_volume_muted": 1}),
        ("tv", "volume_mute", {"is_volume_muted": "true"}),
        ("bedroom humidifier", "set_humidity", {"humidity": 70}),  # entity max 60
        ("house alarm", "alarm_disarm", {"code": 1234}),
        ("house alarm", "alarm_disarm", {"code": "1" * 65}),
    ],
)
def test_bad_data_value(entity: str, service: str, data: dict[str, Any]) -> None:
    """Values of the wrong type or outside the entity's or the spec's range are refused."""
    assert refused(call(entity, service, data=data)) is GuardReason.BAD_DATA_VALUE


@pytest.mark.parametrize(
    ("entity", "service", "data"),
    [
        ("light.kitchen", "turn_on", {"transition": 2}),
        ("light.kitchen", "turn_on", {"brightness": 10, "brightness_pct": 10}),
        ("light.kitchen", "turn_off", {"brightness_pct": 0}),
        ("switch.kettle", "turn_on", {"percentage": 10}),
        ("cover.blinds", "set_cover_position", {}),
        ("thermostat", "set_temperature", {"target_temp_high": 25}),
        ("tv", "volume_set", {}),
        ("script.bedtime", "turn_on", {"variables": {"x": 1}}),
        ("lock.front_door", "unlock", {"pin": "1234"}),
    ],
)
def test_bad_data_key(entity: str, service: str, data: dict[str, Any]) -> None:
    """Keys the spec does not allow, exclusive pairs and missing required keys are refused."""
    assert refused(call(entity, service, data=data)) is GuardReason.BAD_DATA_KEY


def test_the_validated_call_does_not_follow_later_edits_of_the_proposal() -> None:
    """A validated call keeps its own copy of the data: later edits of the proposal miss it."""
    data = {"rgb_color": [1, 2, 3]}
    result = call(data=data)
    assert isinstance(result, ValidatedCall)
    data["rgb_color"][0] = 255
    data["entity_id"] = "lock.front_door"  # type: ignore[assignment]
    assert result.as_dict()["data"] == {"rgb_color": (1, 2, 3)}


def test_state_queries() -> None:
    """A state query resolves its entity by id or name and ignores the model's domain."""
    for text, entity_id in [
        ("sensor.outside_temperature", "sensor.outside_temperature"),
        ("Front door", "lock.front_door"),
    ]:
        proposal = Proposal("get_device_state", {"entity": text, "domain": "lock"})
        assert validate_state_query(REGISTRY, proposal) == StateQuery(entity_id)


@pytest.mark.parametrize(
    ("proposal", "code"),
    [
        (Proposal("call_ha_service", {"entity": "light.kitchen"}), GuardReason.UNKNOWN_TOOL),
        (Proposal("get_device_state", {"entity": "light.kltchen"}), GuardReason.UNKNOWN_ENTITY),
        (Proposal("get_device_state", {"entity": "tv, light.hall"}), GuardReason.ENTITY_SMUGGLED),
        (Proposal("get_device_state", {}), GuardReason.BAD_ARGUMENTS),
        (Proposal("get_device_state", {"entity": 1}), GuardReason.BAD_ARGUMENTS),
        (
            Proposal("get_device_state", {"entity": "tv", "service": "turn_on"}),
            GuardReason.BAD_ARGUMENTS,
        ),
        (
            Proposal("get_device_state", {"entity": "tv", "entity_id": "x"}),
            GuardReason.ENTITY_SMUGGLED,
        ),
    ],
)
def test_state_query_refusals(proposal: Proposal, code: GuardReason) -> None:
    """State queries are refused for a wrong tool, unknown entity, smuggling or bad arguments."""
    assert refused(validate_state_query(REGISTRY, proposal)) is code


class _ExplodingMapping(Mapping[str, Any]):
    """A mapping that raises on every read."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1


class _ExplodingStr(str):
    """A string that raises when split or stripped."""

    __slots__ = ()

    def split(self, *args: Any, **kwargs: Any) -> list[str]:  # type: ignore[override]
        raise RuntimeError("boom")

    def strip(self, *args: Any) -> str:
        raise RuntimeError("boom")


def test_hostile_objects_are_refused_not_raised() -> None:
    """Objects that raise when read are refused as bad arguments, never raised."""
    for arguments in (
        _ExplodingMapping(),
        {"entity": "light.kitchen", "service": "turn_on", "data": _ExplodingMapping()},
        {"entity": "light.kitchen", "service": _ExplodingStr("turn_on")},
    ):
        result = validate_tool_call(REGISTRY, Proposal("call_ha_service", arguments))
        assert refused(result) is GuardReason.BAD_ARGUMENTS
    result = validate_state_query(REGISTRY, Proposal("get_device_state", _ExplodingMapping()))
    assert refused(result) is GuardReason.BAD_ARGUMENTS


def test_absurdly_nested_data_is_refused() -> None:
    """Absurdly deep or wide data is refused as a bad value, without recursion errors."""
    nested: Any = 0
    for _ in range(5000):
        nested = [nested]
    assert refused(call(data={"rgb_color": nested})) is GuardReason.BAD_DATA_VALUE
    wide = {f"k{i}": [0] * 10 for i in range(100)}
    assert refused(call(data=wide)) is GuardReason.BAD_DATA_VALUE


_SCALARS: list[Any] = [
    None,
    True,
    10**30,
    -3,
    1e308,
    float("nan"),
    float("-inf"),
    "",
    "light.kitchen",
    "Kitchen lamp",
    "turn_on",
    "lock.unlock",
    "entity_id",
    "light.kitchen, lock.front_door",
    "x" * 50_000,
    b"\xff\x00",
]


def _junk(rng: random.Random, depth: int = 0) -> Any:
    """One random JSON-ish value; built lazily so nesting stays cheap."""
    kind = rng.randrange(4 if depth < 4 else 2)
    if kind == 0:
        return rng.choice(_SCALARS)
    if kind == 1:
        return "".join(chr(rng.randint(0, 0x2FFFF)) for _ in range(rng.randint(0, 40)))
    if kind == 2:
        return [_junk(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_key(rng): _junk(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _key(rng: random.Random) -> Any:
    """One random key, real or junk."""
    return rng.choice(
        ["entity", "service", "data", "domain", "brightness_pct", "target", 1, None, ("t",), ""]
    )


_ENTITIES = ["light.kitchen", "Thermostat", "tv", "cover.garage", "house alarm", "sensor.x"]
_SERVICES = ["turn_on", "set_temperature", "volume_set", "light.toggle", "lock.open", "stop"]
_DATA_KEYS = ["brightness_pct", "rgb_color", "temperature", "hvac_mode", "volume_level", "code"]


def _shaped(rng: random.Random) -> dict[Any, Any]:
    """Arguments of the right shape with junk mixed into the values, to reach the deep checks."""

    def pick(real: list[str]) -> Any:
        return rng.choice(real) if rng.random() < 0.7 else _junk(rng)

    keys = [rng.choice(_DATA_KEYS) if rng.random() < 0.7 else _key(rng) for _ in range(2)]
    data = {key: _junk(rng) for key in keys[: rng.randint(0, 2)]}
    return {"entity": pick(_ENTITIES), "service": pick(_SERVICES), "data": data}


def test_fuzz_never_raises_and_never_accepts_junk_targets() -> None:
    """Random proposals never raise, and only exposed entities in their own domain validate."""
    rng = random.Random(20250401)
    tools = ["call_ha_service", "call_ha_service", "get_device_state", "none", None, 3]
    reasons: set[GuardReason] = set()
    for _ in range(3000):
        if rng.random() < 0.5:
            arguments = _shaped(rng)
        elif rng.random() < 0.5:
            arguments = {_key(rng): _junk(rng) for _ in range(rng.randint(0, 5))}
        else:
            arguments = _junk(rng)
        proposal = Proposal(rng.choice(tools), arguments)
        for validate in (validate_tool_call, validate_state_query):
            result = validate(REGISTRY, proposal)
            assert isinstance(result, GuardRefusal | ValidatedCall | StateQuery)
            if isinstance(result, GuardRefusal):
                reasons.add(result.reason)
                assert len(result.detail) < 400
            elif isinstance(result, ValidatedCall):
                assert result.entity_id in REGISTRY.entity_ids
                assert result.domain == result.entity_id.split(".")[0]
    # The fuzz reached every check past the tool name, not only the first one.
    assert reasons >= set(GuardReason) - {
        GuardReason.MALFORMED_PROPOSAL,
        GuardReason.AMBIGUOUS_ENTITY,
    }
