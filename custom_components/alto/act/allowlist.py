"""Per-domain service allowlist and per-service data schemas, as data.

Adding a capability means adding a row to ``ALLOWLIST`` and a test; no other code changes.

The schemas are small typed specs rather than voluptuous: voluptuous's ``int`` accepts ``True``,
several bounds come from the entity's own attributes (so a schema would be rebuilt per call),
and the guard needs stable refusal codes, not exception messages to map back. A spec is a frozen
value that checks one field and returns the cleaned value or raises ``InvalidValue``, which
``check_data`` turns into a refusal; nothing escapes it.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeGuard

from .model import GuardReason, GuardRefusal, clip

type Value = bool | int | float | str | tuple[int, ...]
type Attributes = Mapping[str, Any]


class InvalidValue(Exception):
    """A data value failed its spec; the message says why."""


def _is_real(value: object) -> TypeGuard[int | float]:
    """A finite int or float, and not a bool (Python counts True as an int; JSON does not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not isinstance(value, float) or math.isfinite(value)


@dataclass(frozen=True, slots=True)
class Number:
    """A number in [lo, hi].

    ``bounds_attrs`` names the entity attributes (min, max) that replace the default bounds when
    the entity reports both as numbers with min <= max.
    """

    lo: float
    hi: float
    integral: bool = True
    bounds_attrs: tuple[str, str] | None = None
    required: bool = False

    def bounds(self, attributes: Attributes) -> tuple[float, float]:
        """The bounds for this entity: its own attributes' when valid, else the defaults."""
        if self.bounds_attrs is not None:
            lo, hi = (attributes.get(name) for name in self.bounds_attrs)
            if _is_real(lo) and _is_real(hi) and lo <= hi:
                return lo, hi
        return self.lo, self.hi

    def check(self, value: object, attributes: Attributes) -> int | float:
        """The number, as an int when integral; InvalidValue outside the bounds."""
        if not _is_real(value):
            raise InvalidValue("must be a number")
        if self.integral and isinstance(value, float):
            if not value.is_integer():
                raise InvalidValue("must be a whole number")
            value = int(value)
        lo, hi = self.bounds(attributes)
        if not lo <= value <= hi:
            raise InvalidValue(f"must be within {lo}..{hi}")
        return value if self.integral else float(value)


@dataclass(frozen=True, slots=True)
class Flag:
    """A JSON boolean; 0, 1 and "true" are refused."""

    required: bool = False

    def check(self, value: object, attributes: Attributes) -> bool:
        """The boolean; InvalidValue for anything else."""
        if not isinstance(value, bool):
            raise InvalidValue("must be true or false")
        return value


@dataclass(frozen=True, slots=True)
class Choice:
    """One of ``options``, or of the entity attribute ``options_attr``.

    The attribute is used when it is a list of strings, so an entity's own supported modes win
    over the generic list.
    """

    options: tuple[str, ...]
    options_attr: str | None = None
    required: bool = False

    def check(self, value: object, attributes: Attributes) -> str:
        """The option; InvalidValue for anything not offered."""
        options = self.options
        reported = attributes.get(self.options_attr) if self.options_attr else None
        if isinstance(reported, list | tuple) and all(isinstance(o, str) for o in reported):
            options = tuple(reported)
        if not isinstance(value, str) or value not in options:
            raise InvalidValue(f"must be one of {', '.join(options)}")
        return value


@dataclass(frozen=True, slots=True)
class Text:
    """A non-empty string of at most ``max_len`` characters (codes, PINs)."""

    max_len: int
    required: bool = False

    def check(self, value: object, attributes: Attributes) -> str:
        """The string; InvalidValue when empty, too long or not a string."""
        if not isinstance(value, str) or not 0 < len(value) <= self.max_len:
            raise InvalidValue(f"must be a string of 1..{self.max_len} characters")
        return value


@dataclass(frozen=True, slots=True)
class FixedList:
    """A list of exactly ``length`` items, each checked by ``item``."""

    length: int
    item: Number
    required: bool = False

    def check(self, value: object, attributes: Attributes) -> tuple[int, ...]:
        """The items as ints; InvalidValue unless exactly ``length`` valid numbers."""
        if not isinstance(value, list | tuple) or len(value) != self.length:
            raise InvalidValue(f"must be a list of {self.length} numbers")
        return tuple(int(self.item.check(v, attributes)) for v in value)


type Param = Number | Flag | Choice | Text | FixedList


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """The data a service accepts.

    Allowed keys with their specs, and groups of keys of which at most one may appear (Home
    Assistant rejects, e.g., brightness together with brightness_pct).
    """

    params: Mapping[str, Param] = field(default_factory=lambda: MappingProxyType({}))
    exclusive: tuple[frozenset[str], ...] = ()


def _spec(*exclusive: frozenset[str], **params: Param) -> ServiceSpec:
    return ServiceSpec(MappingProxyType(params), exclusive)


_BARE = ServiceSpec()
_ON_OFF_TOGGLE = {"turn_on": _BARE, "turn_off": _BARE, "toggle": _BARE}
_PERCENT = Number(0, 100)
_CODE = Text(max_len=64)
# Home Assistant's HVAC modes, used when a climate entity does not report its own.
_HVAC_MODES = ("off", "heat", "cool", "heat_cool", "auto", "dry", "fan_only")

ALLOWLIST: Mapping[str, Mapping[str, ServiceSpec]] = MappingProxyType(
    {
        domain: MappingProxyType(services)
        for domain, services in {
            "light": {
                "turn_on": _spec(
                    frozenset({"brightness", "brightness_pct"}),
                    frozenset({"color_temp_kelvin", "rgb_color"}),
                    brightness_pct=_PERCENT,
                    brightness=Number(0, 255),
                    color_temp_kelvin=Number(
                        1000, 10000, bounds_attrs=("min_color_temp_kelvin", "max_color_temp_kelvin")
                    ),
                    rgb_color=FixedList(3, Number(0, 255)),
                ),
                "turn_off": _BARE,
                "toggle": _BARE,
            },
            "switch": _ON_OFF_TOGGLE,
            "input_boolean": _ON_OFF_TOGGLE,
            "fan": {
                "turn_on": _spec(percentage=_PERCENT),
                "turn_off": _BARE,
                "toggle": _BARE,
                "set_percentage": _spec(percentage=Number(0, 100, required=True)),
            },
            "lock": {
                "lock": _spec(code=_CODE),
                "unlock": _spec(code=_CODE),
                "open": _spec(code=_CODE),
            },
            "cover": {
                "open_cover": _BARE,
                "close_cover": _BARE,
                "stop_cover": _BARE,
                "set_cover_position": _spec(position=Number(0, 100, required=True)),
            },
            "climate": {
                "set_temperature": _spec(
                    temperature=Number(
                        7, 35, integral=False, bounds_attrs=("min_temp", "max_temp"), required=True
                    )
                ),
                "set_hvac_mode": _spec(
                    hvac_mode=Choice(_HVAC_MODES, options_attr="hvac_modes", required=True)
                ),
                "turn_on": _BARE,
                "turn_off": _BARE,
            },
            "media_player": {
                "media_play": _BARE,
                "media_pause": _BARE,
                "media_stop": _BARE,
                "volume_set": _spec(volume_level=Number(0, 1, integral=False, required=True)),
                "volume_mute": _spec(is_volume_muted=Flag(required=True)),
                "turn_on": _BARE,
                "turn_off": _BARE,
            },
            "scene": {"turn_on": _BARE},
            "script": {"turn_on": _BARE},
            "vacuum": {"start": _BARE, "stop": _BARE, "return_to_base": _BARE},
            "alarm_control_panel": {
                "alarm_arm_home": _spec(code=_CODE),
                "alarm_arm_away": _spec(code=_CODE),
                "alarm_disarm": _spec(code=_CODE),
            },
            "valve": {"open_valve": _BARE, "close_valve": _BARE},
            "humidifier": {
                "turn_on": _BARE,
                "turn_off": _BARE,
                "set_humidity": _spec(
                    humidity=Number(
                        0, 100, bounds_attrs=("min_humidity", "max_humidity"), required=True
                    )
                ),
            },
        }.items()
    }
)


def services_for(domain: str) -> tuple[str, ...]:
    """The allowlisted services of a domain, sorted; empty for a domain with none."""
    return tuple(sorted(ALLOWLIST.get(domain, {})))


def check_data(
    spec: ServiceSpec, data: Mapping[str, Any], attributes: Attributes
) -> dict[str, Value] | GuardRefusal:
    """The cleaned service data, or the first reason it is refused."""
    unknown = sorted(repr(key) for key in data if key not in spec.params)
    if unknown:
        return GuardRefusal(GuardReason.BAD_DATA_KEY, f"keys not allowed: {clip(unknown, 120)}")
    missing = sorted(
        key for key, param in spec.params.items() if param.required and key not in data
    )
    if missing:
        return GuardRefusal(
            GuardReason.BAD_DATA_KEY, f"required keys missing: {', '.join(missing)}"
        )
    for group in spec.exclusive:
        clash = sorted(group.intersection(data))
        if len(clash) > 1:
            return GuardRefusal(GuardReason.BAD_DATA_KEY, f"keys are exclusive: {', '.join(clash)}")
    cleaned: dict[str, Value] = {}
    for key, value in data.items():
        try:
            cleaned[key] = spec.params[key].check(value, attributes)
        except InvalidValue as err:
            return GuardRefusal(GuardReason.BAD_DATA_VALUE, f"{key} {err}")
    return cleaned
