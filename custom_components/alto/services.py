"""Alto's services (actions), registered once for the domain."""

from __future__ import annotations

import hashlib
from typing import Any

import probatio
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant, ServiceCall, SupportsResponse
from homeassistant.exceptions import ServiceValidationError, Unauthorized
from homeassistant.helpers.service import async_register_admin_service
from homeassistant.util.ulid import ulid_now

from .act.model import (
    CALL_SERVICE_TOOL,
    STATE_QUERY_TOOL,
    GuardRefusal,
    Proposal,
    StateQuery,
)
from .channel.admission import admit
from .const import DOMAIN
from .coordinator import AltoConfigEntry
from .memory.records import HOUSEHOLD
from .memory_organ.organ import MemoryOrgan, row_dict
from .reflect.records import valid_scope
from .reflect_organ.organ import reflection_response, synthesis_response

SERVICE_CHECK_ACTION = "check_action"
SERVICE_REMEMBER = "remember"
SERVICE_FORGET = "forget"
SERVICE_RECALL = "recall"
SERVICE_REPLAY = "replay"
SERVICE_QUALIFY = "qualify"
SERVICE_PURGE = "purge"
SERVICE_REEMBED = "reembed"
SERVICE_REFLECT = "reflect"
SERVICE_SYNTHESIZE = "synthesize"
ATTR_ENTRY_ID = "config_entry_id"


def _text(value: object) -> str:
    """A string, as given: `true` or `12` are not text (checked, not coerced)."""
    if not isinstance(value, str):
        raise probatio.Invalid("expected text")
    return value


def _whole_number(value: object) -> int:
    """An int, as given: `true` is not 1 and `1.5` is not 1 (checked, not coerced)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise probatio.Invalid("expected a whole number")
    return value


CHECK_ACTION_SCHEMA = probatio.Schema(
    {
        probatio.Required("tool"): probatio.In([CALL_SERVICE_TOOL, STATE_QUERY_TOOL]),
        probatio.Required("arguments"): dict,
        probatio.Optional(ATTR_ENTRY_ID): _text,
    }
)


ENTRY_SCHEMA = probatio.Schema({probatio.Optional(ATTR_ENTRY_ID): _text})
REMEMBER_SCHEMA = ENTRY_SCHEMA.extend(
    {
        probatio.Required("text"): _text,
        probatio.Optional("owner"): _text,
        probatio.Optional("idempotency_key"): probatio.All(_text, probatio.Length(min=1, max=256)),
    }
)
FORGET_SCHEMA = ENTRY_SCHEMA.extend(
    {probatio.Required("id"): probatio.All(_whole_number, probatio.Range(min=0))}
)
RECALL_SCHEMA = ENTRY_SCHEMA.extend(
    {
        probatio.Required("query"): _text,
        probatio.Optional("owner"): _text,
        probatio.Optional("limit", default=5): probatio.All(
            _whole_number, probatio.Range(min=1, max=50)
        ),
    }
)
PURGE_SCHEMA = ENTRY_SCHEMA.extend({probatio.Required("owner"): _text})
PASS_SCHEMA = ENTRY_SCHEMA.extend({probatio.Optional("owner"): _text})


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


def _memory(call: ServiceCall) -> MemoryOrgan:
    memory = loaded_entry(call.hass, call.data.get(ATTR_ENTRY_ID)).runtime_data.memory
    if memory is None:
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="memory_unavailable"
        )
    return memory


async def _async_scope(call: ServiceCall) -> str | None:
    """Whose memories or turn log a call reads or writes.

    `owner` if given, else the caller (or household).

    Only an administrator may name another user as owner; a name in text authenticates nobody.
    """
    caller = call.context.user_id
    owner = call.data.get("owner")
    if owner is None or owner == caller:
        return caller
    if owner == HOUSEHOLD:
        return None
    user = await call.hass.auth.async_get_user(caller) if caller else None
    if caller is not None and (user is None or not user.is_admin):
        raise Unauthorized(context=call.context)
    if await call.hass.auth.async_get_user(owner) is None:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="unknown_owner")
    return str(owner)


async def _async_remember(call: ServiceCall) -> dict[str, Any]:
    owner = await _async_scope(call) or HOUSEHOLD
    key = call.data.get("idempotency_key")
    report = await _memory(call).async_remember(
        call.data["text"],
        owner=owner,
        actor=call.context.user_id,
        # One script run shares a context: each call is its own source, unless the caller
        # names the request: a retry with the same key is the same source, stored once.
        source_id=_keyed_source(owner, key) if key else f"service/{call.context.id}/{ulid_now()}",
    )
    report.raise_if_refused()
    return {"ids": report.ids}


def _keyed_source(owner: str, key: str) -> str:
    """The source id of a remember named by an idempotency key.

    Per owner (one user's key never finds another's memory), any key text giving a valid id.
    """
    digest = hashlib.sha256(f"{owner}\n{key}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"service/key/{digest}"


async def _async_forget(call: ServiceCall) -> dict[str, Any]:
    report = await _memory(call).async_forget([call.data["id"]], viewer=call.context.user_id)
    report.raise_if_refused()
    return {"forgotten": report.ids}


async def _async_recall(call: ServiceCall) -> dict[str, Any]:
    # A query goes to the embedding model: it passes the same admission as an utterance.
    if (refusal := admit(call.data["query"])) is not None:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="query_refused",
            translation_placeholders={"reason": refusal.value},
        )
    viewer = await _async_scope(call)
    rows = await _memory(call).async_recall(
        call.data["query"], viewer=viewer, limit=call.data["limit"]
    )
    return {"memories": [row_dict(row) for row in rows]}


async def _async_replay(call: ServiceCall) -> dict[str, Any]:
    return await _memory(call).async_replay()


async def _async_reembed(call: ServiceCall) -> dict[str, Any]:
    return (await _memory(call).async_reembed()).raise_if_stopped()


async def _async_qualify(call: ServiceCall) -> dict[str, Any]:
    return await _memory(call).async_qualify()


async def _async_purge(call: ServiceCall) -> dict[str, Any]:
    """Forget every memory owned by one user, and delete their turn log.

    All the reflect organ derived from the log goes with it. An administrator's service: the
    user may be gone, and a deleted user's memories must not become permanent.
    """
    owner = call.data["owner"]
    if owner == HOUSEHOLD:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="purge_household")
    entry = loaded_entry(call.hass, call.data.get(ATTR_ENTRY_ID))
    if valid_scope(owner):
        await entry.runtime_data.reflection.async_purge(owner)
    memory = _memory(call)
    ids = [row.id for row in memory.rows(owner) if row.scope == owner]
    if not ids:
        return {"forgotten": []}
    report = await memory.async_forget(ids, viewer=owner)
    report.raise_if_refused()
    return {"forgotten": report.ids}


async def _async_reflect(call: ServiceCall) -> dict[str, Any]:
    """Reflect now on the turns of a scope the caller may see: the report."""
    scope = await _async_scope(call) or HOUSEHOLD
    entry = loaded_entry(call.hass, call.data.get(ATTR_ENTRY_ID))
    return reflection_response(await entry.runtime_data.reflection.async_reflect(scope))


async def _async_synthesize(call: ServiceCall) -> dict[str, Any]:
    """Synthesize now what is new in a scope the caller may see: the synthesis."""
    scope = await _async_scope(call) or HOUSEHOLD
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
        (SERVICE_REMEMBER, _async_remember, REMEMBER_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_FORGET, _async_forget, FORGET_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_RECALL, _async_recall, RECALL_SCHEMA, SupportsResponse.ONLY),
        (SERVICE_REFLECT, _async_reflect, PASS_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_SYNTHESIZE, _async_synthesize, PASS_SCHEMA, SupportsResponse.OPTIONAL),
    ):
        hass.services.async_register(
            DOMAIN, name, handler, schema=schema, supports_response=response
        )
    # Whole-journal and every-owner operations: administrators only.
    for name, handler, schema, response in (
        (SERVICE_REPLAY, _async_replay, ENTRY_SCHEMA, SupportsResponse.ONLY),
        (SERVICE_QUALIFY, _async_qualify, ENTRY_SCHEMA, SupportsResponse.ONLY),
        (SERVICE_PURGE, _async_purge, PURGE_SCHEMA, SupportsResponse.OPTIONAL),
        (SERVICE_REEMBED, _async_reembed, ENTRY_SCHEMA, SupportsResponse.OPTIONAL),
    ):
        async_register_admin_service(hass, DOMAIN, name, handler, schema, response)
    hass.services.async_register(
        DOMAIN,
        SERVICE_CHECK_ACTION,
        _async_check_action,
        schema=CHECK_ACTION_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )
