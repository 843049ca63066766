"""Consent tiers: how much the user is asked before a validated call runs.

Tier 1 (autonomous) acts at once, tier 2 (act and notify) acts and tells the user, tier 3
(confirm first) holds the call until the user's own next utterance confirms it. State queries are
reads and always autonomous (``READ_TIER``).

An entity's own tier, first rule that applies:
1. the user's override for that entity (``overrides``, by entity id);
2. confirm-first when it is a way into the home (`ways_in.is_way_in`: a garage relay, a gate
   cover, a switch named "Hoftor"), whatever the domain tiers say;
3. its domain's tier from the options (``domain_tiers``), else ``DEFAULT_TIERS``; a domain
   without a default (one added to the allowlist but not here) is confirm-first, so forgetting
   a row errs towards asking. A script can do anything, so it asks unless the user lowers it.
Nothing lowers a lock or an alarm panel below confirm-first (``ALWAYS_ASKED``).

A call's tier is the strictest of its entity's own tier and the own tiers of everything the entity
drives (``ExposedEntity.targets``, transitively: a script calling a scene that unlocks the door
asks like the lock would). An override sets the entity's own tier only: lowering a scene does not
lower the gate it opens; lowering the gate itself does.
"""

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from .model import ExposedEntity, Target
from .ways_in import is_way_in


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

ALWAYS_ASKED: Final = frozenset({"lock", "alarm_control_panel"})
_ORDER: Final = (Tier.AUTONOMOUS, Tier.ACT_AND_NOTIFY, Tier.CONFIRM_FIRST)


def _tier(value: object) -> Tier | None:
    """``value`` as a tier when it is exactly one's name (options store strings), else None."""
    return Tier(value) if isinstance(value, str) and value in Tier else None


def _strictest(tiers: Iterable[Tier]) -> Tier:
    return max(tiers, key=_ORDER.index)


def own_tier(
    entity: ExposedEntity | Target,
    domain_tiers: Mapping[str, object],
    overrides: Mapping[str, object],
) -> Tier:
    """The tier of ``entity`` itself, ignoring what it drives (the module's rules 1 to 3)."""
    floor = Tier.CONFIRM_FIRST if entity.domain in ALWAYS_ASKED else Tier.AUTONOMOUS
    if (override := _tier(overrides.get(entity.entity_id))) is not None:
        return _strictest((override, floor))
    if is_way_in(entity):
        return Tier.CONFIRM_FIRST
    domain = _tier(domain_tiers.get(entity.domain))
    if domain is None:
        domain = DEFAULT_TIERS.get(entity.domain, Tier.CONFIRM_FIRST)
    return _strictest((domain, floor))


def tier_for(
    entity: ExposedEntity,
    domain_tiers: Mapping[str, object] | None = None,
    *,
    overrides: Mapping[str, object] | None = None,
) -> Tier:
    """The tier of a service call on ``entity``: the strictest of its own and its targets'.

    ``domain_tiers`` maps a domain, ``overrides`` an entity id, to a tier or its name; values
    that are not exactly a tier's name are ignored.
    """
    domain_tiers, overrides = domain_tiers or {}, overrides or {}
    subjects: tuple[ExposedEntity | Target, ...] = (entity, *entity.targets)
    return _strictest(own_tier(each, domain_tiers, overrides) for each in subjects)


def reach(start: str, drives: Callable[[str], Iterable[str]]) -> tuple[str, ...]:
    """Every entity id reachable from ``start`` through ``drives``, sorted, ``start`` left out.

    ``drives`` gives what one entity drives (a scene's entities, a script's references, a
    wrapper's switch); each is asked once, so a cycle (two scripts calling each other) ends.
    """
    seen = {start}
    queue = deque([start])
    while queue:
        for driven in drives(queue.popleft()):
            if driven not in seen:
                seen.add(driven)
                queue.append(driven)
    return tuple(sorted(seen - {start}))
