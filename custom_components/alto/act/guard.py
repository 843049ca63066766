"""The guard: the deterministic edge between a model's proposal and a device.

It trusts nothing in a proposal. The entity is resolved in the registry, the model's ``domain``
argument is discarded and the domain taken from the registry entry, the service must be
allowlisted for that domain, and the data must fit the service's schema. Both validators return
a value or a ``GuardRefusal`` and never raise: anything unreadable is refused (fail closed).
"""

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any

from .allowlist import ALLOWLIST, check_data
from .model import (
    CALL_SERVICE_TOOL,
    STATE_QUERY_TOOL,
    GuardReason,
    GuardRefusal,
    Proposal,
    Registry,
    StateQuery,
    ValidatedCall,
    clip,
)

# Keys with which Home Assistant would aim a call at something other than the resolved entity.
TARGET_KEYS = frozenset({"entity_id", "target", "area_id", "device_id", "floor_id", "label_id"})
# ``domain`` is accepted so a model that states it is not refused, but its value is never read.
_CALL_ARGUMENTS = frozenset({"entity", "service", "data", "domain"})
_QUERY_ARGUMENTS = frozenset({"entity", "domain"})
# Bounds the walk over nested data; real service data has a handful of nodes.
_MAX_DATA_NODES = 256


def _fail_closed[R](
    validate: Callable[[Registry, Proposal], R | GuardRefusal],
) -> Callable[[Registry, Proposal], R | GuardRefusal]:
    """Turn any exception from hostile input into a refusal.

    Hostile input is a Mapping or str subclass that raises; no input can make the guard raise
    instead of refusing.
    """

    @wraps(validate)
    def guarded(registry: Registry, proposal: Proposal) -> R | GuardRefusal:
        try:
            return validate(registry, proposal)
        except Exception as err:  # noqa: BLE001 - failing closed is the point of the guard
            return GuardRefusal(
                GuardReason.BAD_ARGUMENTS, f"unreadable proposal: {type(err).__name__}"
            )

    return guarded


def _is_target_key(key: object) -> bool:
    return isinstance(key, str) and key.strip().casefold() in TARGET_KEYS


def _arguments(
    proposal: object, tool: str, allowed: frozenset[str]
) -> dict[Any, Any] | GuardRefusal:
    """A plain copy of the arguments after checking the tool and the top-level keys."""
    if not isinstance(proposal, Proposal):
        return GuardRefusal(GuardReason.MALFORMED_PROPOSAL, f"not a proposal: {clip(proposal)}")
    if proposal.tool != tool:
        return GuardRefusal(GuardReason.UNKNOWN_TOOL, f"expected {tool}, got {clip(proposal.tool)}")
    if not isinstance(proposal.arguments, Mapping):
        return GuardRefusal(GuardReason.BAD_ARGUMENTS, "arguments must be an object")
    arguments = dict(proposal.arguments)
    extra = [key for key in arguments if key not in allowed]
    if any(_is_target_key(key) for key in extra):
        return GuardRefusal(GuardReason.ENTITY_SMUGGLED, f"targeting argument: {clip(extra)}")
    if extra:
        return GuardRefusal(GuardReason.BAD_ARGUMENTS, f"unexpected arguments: {clip(extra)}")
    if not isinstance(arguments.get("entity"), str):
        return GuardRefusal(GuardReason.BAD_ARGUMENTS, "entity is required and must be a string")
    return arguments


def _smuggled_target(data: Mapping[Any, Any]) -> GuardRefusal | None:
    """A refusal if a targeting key appears anywhere in the data, at any depth."""
    pending: list[object] = [data]
    for _ in range(_MAX_DATA_NODES):
        if not pending:
            return None
        node = pending.pop()
        if isinstance(node, Mapping):
            for key, value in node.items():
                if _is_target_key(key):
                    return GuardRefusal(
                        GuardReason.ENTITY_SMUGGLED, f"targeting key in data: {clip(key)}"
                    )
                pending.append(value)
        elif isinstance(node, list | tuple):
            pending.extend(node)
    return GuardRefusal(GuardReason.BAD_DATA_VALUE, "data is too large")


@_fail_closed
def validate_tool_call(registry: Registry, proposal: Proposal) -> ValidatedCall | GuardRefusal:
    """The one validated service call a ``call_ha_service`` proposal may become, or why not."""
    arguments = _arguments(proposal, CALL_SERVICE_TOOL, _CALL_ARGUMENTS)
    if isinstance(arguments, GuardRefusal):
        return arguments
    service = arguments.get("service")
    if not isinstance(service, str):
        return GuardRefusal(GuardReason.BAD_ARGUMENTS, "service is required and must be a string")
    data = arguments.get("data")
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        return GuardRefusal(GuardReason.BAD_ARGUMENTS, "data must be an object")
    data = dict(data)
    if (refusal := _smuggled_target(data)) is not None:
        return refusal

    entity = registry.resolve(arguments["entity"])
    if isinstance(entity, GuardRefusal):
        return entity
    domain = entity.domain  # from the registry; the model's "domain" argument is never read
    prefix, dot, name = service.strip().partition(".")
    if not dot:
        prefix, name = domain, prefix
    spec = ALLOWLIST.get(domain, {}).get(name)
    if prefix != domain or spec is None:
        return GuardRefusal(
            GuardReason.SERVICE_NOT_ALLOWED, f"{clip(service)} is not allowed on {entity.entity_id}"
        )
    cleaned = check_data(spec, data, entity.attributes)
    if isinstance(cleaned, GuardRefusal):
        return cleaned
    return ValidatedCall(domain, name, entity.entity_id, cleaned)


@_fail_closed
def validate_state_query(registry: Registry, proposal: Proposal) -> StateQuery | GuardRefusal:
    """The state read a ``get_device_state`` proposal may become, or why not."""
    arguments = _arguments(proposal, STATE_QUERY_TOOL, _QUERY_ARGUMENTS)
    if isinstance(arguments, GuardRefusal):
        return arguments
    entity = registry.resolve(arguments["entity"])
    if isinstance(entity, GuardRefusal):
        return entity
    return StateQuery(entity.entity_id)
