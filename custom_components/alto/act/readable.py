"""What a validated state read tells the model: the state and a per-domain attribute allowlist.

A state read answers "is the door locked?" or "how warm is it?". Everything else an entity
carries (a camera's access token, a media player's entity picture URL, a person's GPS
coordinates, a device tracker's IP address) never reaches a model; a domain not listed here
gives its state alone.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

READABLE_ATTRIBUTES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "light": ("brightness", "color_mode", "color_temp_kelvin", "rgb_color"),
        "fan": ("percentage", "preset_mode", "oscillating", "direction"),
        "cover": ("current_position", "current_tilt_position"),
        "valve": ("current_position",),
        "climate": (
            "current_temperature",
            "temperature",
            "target_temp_low",
            "target_temp_high",
            "current_humidity",
            "hvac_action",
            "preset_mode",
            "fan_mode",
        ),
        "humidifier": ("humidity", "current_humidity", "mode", "action"),
        "water_heater": ("temperature", "current_temperature", "operation_mode"),
        "media_player": (
            "media_title",
            "media_artist",
            "source",
            "volume_level",
            "is_volume_muted",
        ),
        "vacuum": ("battery_level", "fan_speed", "status"),
        "sensor": ("unit_of_measurement", "device_class"),
        "binary_sensor": ("device_class",),
        "weather": ("temperature", "temperature_unit", "humidity", "wind_speed", "wind_speed_unit"),
    }
)


def readable_state(domain: str, state: str, attributes: Mapping[str, Any]) -> str:
    """`state`, then the allowlisted scalar attributes of `domain`, e.g. `on (brightness: 128)`."""
    shown = [
        f"{key}: {attributes[key]}"
        for key in READABLE_ATTRIBUTES.get(domain, ())
        if isinstance(attributes.get(key), str | int | float | bool)
    ]
    return f"{state} ({', '.join(shown)})" if shown else state
