"""Consent tiers: how much the user is asked before a validated call runs.

Tier 1 (autonomous) acts at once, tier 2 (act and notify) acts and tells the user, tier 3
(confirm first) holds the call until the user's own next utterance confirms it. State queries are
reads and always autonomous (``READ_TIER``). Calls take their domain's tier from the options
overrides, else from ``DEFAULT_TIERS``; a domain without a default (one added to the allowlist
but not here) is confirm-first, so forgetting a row errs towards asking. One rule beats the
overrides: covers of a guarded device class (garage, gate, door) are always confirm-first,
because opening one lets people in, and a per-domain override for ordinary blinds must not
silently extend to them.
"""

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from .model import ExposedEntity


class Tier(StrEnum):
    AUTONOMOUS = "autonomous"
    ACT_AND_NOTIFY = "act_and_notify"
    CONFIRM_FIRST = "confirm_first"


READ_TIER: Final = Tier.AUTONOMOUS

DEFAULT_TIERS: Mapping[str, Tier] = MappingProxyType(
    {
        "light": Tier.AUTONOMOUS,
        "switch": Tier.AUTONOMOUS,
        "fan": Tier.AUTONOMOUS,
        "input_boolean": Tier.AUTONOMOUS,
        "media_player": Tier.AUTONOMOUS,
        "scene": Tier.AUTONOMOUS,
        "climate": Tier.ACT_AND_NOTIFY,
        "cover": Tier.ACT_AND_NOTIFY,
        "vacuum": Tier.ACT_AND_NOTIFY,
        "script": Tier.ACT_AND_NOTIFY,
        "humidifier": Tier.ACT_AND_NOTIFY,
        "lock": Tier.CONFIRM_FIRST,
        "alarm_control_panel": Tier.CONFIRM_FIRST,
        "valve": Tier.CONFIRM_FIRST,
    }
)

GUARDED_COVER_CLASSES: Final = frozenset({"garage", "gate", "door"})


def tier_for(entity: ExposedEntity, overrides: Mapping[str, str] | None = None) -> Tier:
    """The tier of a service call on ``entity``; invalid override values are ignored."""
    if entity.domain == "cover" and entity.device_class in GUARDED_COVER_CLASSES:
        return Tier.CONFIRM_FIRST
    override = (overrides or {}).get(entity.domain)
    if isinstance(override, str) and override in Tier:
        return Tier(override)
    return DEFAULT_TIERS.get(entity.domain, Tier.CONFIRM_FIRST)
