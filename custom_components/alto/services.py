"""Alto's services (actions), registered once for the domain."""

from __future__ import annotations

from typing import Any

import voluptuous as vol
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant, ServiceCall, SupportsResponse
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import config_validation as cv

from .act.model import CALL_SERVICE_TOOL, STATE_QUERY_TOOL, Proposal, Refusal
from .const import DOMAIN
from .runtime import AltoConfigEntry

SERVICE_CHECK_ACTION = "check_action"
ATTR_ENTRY_ID = "config_entry_id"

CHECK_ACTION_SCHEMA = vol.Schema(
    {
        vol.Required("tool"): vol.In([CALL_SERVICE_TOOL, STATE_QUERY_TOOL]),
        vol.Required("arguments"): dict,
        vol.Optional(ATTR_ENTRY_ID): cv.string,
    }
)


def loaded_entry(hass: HomeAssistant, entry_id: str | None) -> AltoConfigEntry:
    """The named loaded entry, or the only/first loaded one."""
    entries = [
        e
        for e in hass.config_entries.async_entries(DOMAIN)
        if e.state is ConfigEntryState.LOADED and (entry_id is None or e.entry_id == entry_id)
    ]
    if not entries:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="not_loaded")
    return entries[0]


async def _async_check_action(call: ServiceCall) -> dict[str, Any]:
    """Run the registry and the guard on a raw proposal; never executes."""
    entry = loaded_entry(call.hass, call.data.get(ATTR_ENTRY_ID))
    organ = entry.runtime_data.organ
    checked = organ.check(Proposal(call.data["tool"], call.data["arguments"]))
    if isinstance(checked, Refusal):
        return {"verdict": "refused", "reason": checked.reason.value, "call": None, "tier": None}
    tier = organ.tier_of(checked)
    if call.data["tool"] == STATE_QUERY_TOOL:
        domain = checked.entity_id.partition(".")[0]
        result = {"domain": domain, "service": None, "entity_id": checked.entity_id, "data": {}}
    else:
        result = checked.as_dict()
    return {"verdict": "valid", "reason": "", "call": result, "tier": tier.value}


def async_register_services(hass: HomeAssistant) -> None:
    """Register the domain's services."""
    hass.services.async_register(
        DOMAIN,
        SERVICE_CHECK_ACTION,
        _async_check_action,
        schema=CHECK_ACTION_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )
