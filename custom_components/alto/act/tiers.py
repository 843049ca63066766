"""Consent tiers: how much the user is asked before a validated call runs.

Tier 1 (autonomous) acts at once, tier 2 (act and notify) acts and tells the user, tier 3
(confirm first) holds the call until the user's own next utterance confirms it. State queries are
reads and always autonomous (``READ_TIER``). Calls take their domain's tier from the options
overrides, else from ``DEFAULT_TIERS``; a domain without a default (one added to the allowlist
but not here) is confirm-first, so forgetting a row errs towards asking. A script can do
anything, so it asks unless the user lowers the script tier.

Two rules beat the overrides, because opening the way in must always be asked for:
- a cover of a guarded device class (garage, gate, door), and a switch or cover whose name or
  alias says garage, gate or door (in the languages Alto confirms in) — a relay that opens the
  garage is often a plain switch, and a cover often has no device class — are confirm-first;
- a scene takes the strictest tier of the entities it sets, exposed to Assist or not: a scene
  that unlocks the front door asks first like the lock would.
"""

import re
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from .model import ExposedEntity, SceneTarget


class Tier(StrEnum):
    """How much consent an action needs before it runs."""

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
        "script": Tier.CONFIRM_FIRST,
        "humidifier": Tier.ACT_AND_NOTIFY,
        "lock": Tier.CONFIRM_FIRST,
        "alarm_control_panel": Tier.CONFIRM_FIRST,
        "valve": Tier.CONFIRM_FIRST,
    }
)

GUARDED_COVER_CLASSES: Final = frozenset({"garage", "gate", "door"})


# Words that name a way into the home, casefolded: en, de, fr, es, nl, it.
GUARDED_WORDS: Final = frozenset(
    {
        "garage", "gate", "door", "doors",
        "garagentor", "tor", "tür", "tur", "haustür", "gartentor",
        "porte", "portail",
        "garaje", "puerta", "portón", "porton", "cancela",
        "deur", "poort", "garagedeur",
        "cancello", "porta", "portone",
    }
)  # fmt: skip
_ORDER: Final = (Tier.AUTONOMOUS, Tier.ACT_AND_NOTIFY, Tier.CONFIRM_FIRST)


def _names_a_way_in(names: tuple[str, ...]) -> bool:
    return any(
        word in GUARDED_WORDS for name in names for word in re.split(r"[^\w]+", name.casefold())
    )


def _own_tier(
    entity: ExposedEntity | SceneTarget, names: tuple[str, ...], overrides: Mapping[str, str]
) -> Tier:
    if entity.domain == "cover" and entity.device_class in GUARDED_COVER_CLASSES:
        return Tier.CONFIRM_FIRST
    if entity.domain in {"cover", "switch"} and _names_a_way_in(names):
        return Tier.CONFIRM_FIRST
    override = overrides.get(entity.domain)
    if isinstance(override, str) and override in Tier:
        return Tier(override)
    return DEFAULT_TIERS.get(entity.domain, Tier.CONFIRM_FIRST)


def tier_for(entity: ExposedEntity, overrides: Mapping[str, str] | None = None) -> Tier:
    """The tier of a service call on ``entity``; invalid override values are ignored."""
    overrides = overrides or {}
    tiers = [_own_tier(entity, (entity.name, *entity.aliases), overrides)]
    tiers += [_own_tier(target, (target.name,), overrides) for target in entity.targets]
    return max(tiers, key=_ORDER.index)
