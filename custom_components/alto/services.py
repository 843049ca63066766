"""Alto's services (actions), registered once for the domain.

The memory services' names, schemas and handlers are `memory_actions`' (the panel runs them
too); the reflect services and `check_action` are here.
"""

from __future__ import annotations

from typing import Any

import probatio
from homeassistant.core import HomeAssistant, ServiceCall, SupportsResponse
from homeassistant.helpers.service import async_register_admin_service

from .act.model import (
    CALL_SERVICE_TOOL,
    STATE_QUERY_TOOL,
    GuardRefusal,
    Proposal,
    StateQuery,
)
from .const import ATTR_ENTRY_ID, DOMAIN
from .memory.records import HOUSEHOLD
from .memory_actions import (
    ENTRY_SCHEMA,
    FORGET_SCHEMA,
    PURGE_SCHEMA,
    RECALL_SCHEMA,
    REMEMBER_SCHEMA,
    SCOPED_SCHEMA,
    SERVICE_FORGET,
    SERVICE_PURGE,
    SERVICE_QUALIFY,
    SERVICE_RECALL,
    SERVICE_REEMBED,
    SERVICE_REMEMBER,
    SERVICE_REPLAY,
    async_forget,
    async_purge,
    async_qualify,
    async_recall,
    async_reembed,
    async_remember,
    async_replay,
    async_scope,
    loaded_entry,
)
from .reflect_organ.organ import reflection_response, synthesis_response

SERVICE_CHECK_ACTION = "check_action"
SERVICE_REFLECT = "reflect"
SERVICE_SYNTHESIZE = "synthesize"


CHECK_ACTION_SCHEMA = ENTRY_SCHEMA.extend(
    {
        probatio.Required("tool"): probatio.In([CALL_SERVICE_TOOL, STATE_QUERY_TOOL]),
        probatio.Required("arguments"): dict,
    }
)


async def _async_reflect(call: ServiceCall) -> dict[str, Any]:
    """Reflect now on the turns of a scope the caller may see: the report."""
    scope = await async_scope(call) or HOUSEHOLD
    entry = loaded_entry(call.hass, call.data.get(ATTR_ENTRY_ID))
    return reflection_response(await entry.runtime_data.reflection.async_reflect(scope))


async def _async_synthesize(call: ServiceCall) -> dict[str, Any]:
    """Synthesize now what is new in a scope the caller may see: the synthesis."""
    scope = await async_scope(call) or HOUSEHOLD
    entry = loaded_entry(call.hass, call.data.get(ATTR_ENTRY_ID))
    return synthesis_response(await entry.runtime_data.reflection.async_synthesize(scope))


async def _async_check_action(call: ServiceCall) -> dict[str, Any]:
    """Run the registry and the guard on a raw proposal; never executes."""
    entry = loaded_entry(call.hass, call.data.get(ATTR_ENTRY_ID))
    organ = entry.runtime_data.organ
    checked = organ.check(Proposal(call.data["tool"], call.data["arguments"]))
    if isinstance(checked, GuardRefusal):
        return {"verdict": "refused", "reason": checked.reason.value, "call": None, "tier": None}
    tier = organ.tier_of(checked)
    result: dict[str, Any]
    if isinstance(checked, StateQuery):
        domain = checked.entity_id.partition(".")[0]
        result = {"domain": domain, "service": None, "entity_id": checked.entity_id, "data": {}}
    else:
        result = checked.as_dict()
    return {"verdict": "valid", "reason": "", "call": result, "tier": tier.value}


def async_register_services(hass: HomeAssistant) -> None:
    """Register the domain's services."""
    for name, handler, schema, response in (
        (SERVICE_REMEMBER, async_remember, REMEMBER_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_FORGET, async_forget, FORGET_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_RECALL, async_recall, RECALL_SCHEMA, SupportsResponse.ONLY),
        (SERVICE_REFLECT, _async_reflect, SCOPED_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_SYNTHESIZE, _async_synthesize, SCOPED_SCHEMA, SupportsResponse.OPTIONAL),
    ):
        hass.services.async_register(
            DOMAIN, name, handler, schema=schema, supports_response=response
        )
    # Whole-journal and every-owner operations: administrators only.
    for name, handler, schema, response in (
        (SERVICE_REPLAY, async_replay, ENTRY_SCHEMA, SupportsResponse.ONLY),
        (SERVICE_QUALIFY, async_qualify, ENTRY_SCHEMA, SupportsResponse.ONLY),
        (SERVICE_PURGE, async_purge, PURGE_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_REEMBED, async_reembed, ENTRY_SCHEMA, SupportsResponse.OPTIONAL),
    ):
        async_register_admin_service(hass, DOMAIN, name, handler, schema, response)
    hass.services.async_register(
        DOMAIN,
        SERVICE_CHECK_ACTION,
        _async_check_action,
        schema=CHECK_ACTION_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )
