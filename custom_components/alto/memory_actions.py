"""The memory actions a person or an administrator takes: each a service's name, schema, handler.

`services` registers them as Alto's memory services; the panel's websocket commands validate
with the same schemas and run the very same handlers with the connection's user as the call's
context, so both allow exactly the same things. Each handler finds the loaded entry the call names
(`loaded_entry`) and decides whose data it may touch (`async_scope`): the caller's own or the
household's, another user's only for an administrator. The reflect services use those two rules
as well. `purge` also deletes the owner's turn log, which the reflect organ keeps: a user's data
goes as a whole.
"""

from __future__ import annotations

import hashlib
from typing import Any

import probatio
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant, ServiceCall
from homeassistant.exceptions import ServiceValidationError, Unauthorized
from homeassistant.util.ulid import ulid_now

from .channel.admission import admit
from .const import ATTR_ENTRY_ID, DOMAIN
from .coordinator import AltoConfigEntry
from .memory import recall
from .memory.records import HOUSEHOLD
from .memory_organ.organ import MemoryOrgan, row_dict
from .reflect.records import valid_scope

SERVICE_REMEMBER = "remember"
SERVICE_FORGET = "forget"
SERVICE_RECALL = "recall"
SERVICE_REPLAY = "replay"
SERVICE_QUALIFY = "qualify"
SERVICE_PURGE = "purge"
SERVICE_REEMBED = "reembed"


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


# Every call may name its entry; a scoped call may name the owner it acts for (`async_scope`).
ENTRY_SCHEMA = probatio.Schema({probatio.Optional(ATTR_ENTRY_ID): _text})
SCOPED_SCHEMA = ENTRY_SCHEMA.extend({probatio.Optional("owner"): _text})
REMEMBER_SCHEMA = SCOPED_SCHEMA.extend(
    {
        probatio.Required("text"): _text,
        probatio.Optional("idempotency_key"): probatio.All(_text, probatio.Length(min=1, max=256)),
    }
)
FORGET_SCHEMA = ENTRY_SCHEMA.extend(
    {probatio.Required("id"): probatio.All(_whole_number, probatio.Range(min=0))}
)
RECALL_SCHEMA = SCOPED_SCHEMA.extend(
    {
        probatio.Required("query"): _text,
        probatio.Optional("limit", default=5): probatio.All(
            _whole_number, probatio.Range(min=1, max=recall.CONSIDERED)
        ),
    }
)
PURGE_SCHEMA = ENTRY_SCHEMA.extend({probatio.Required("owner"): _text})


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


async def async_scope(call: ServiceCall) -> str | None:
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


async def async_remember(call: ServiceCall) -> dict[str, Any]:
    """Remember `text` explicitly in the scope: the new memories' ids."""
    owner = await async_scope(call) or HOUSEHOLD
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


async def async_forget(call: ServiceCall) -> dict[str, Any]:
    """Forget memory `id` (and what was interpreted from it) if the caller may see it."""
    report = await _memory(call).async_forget([call.data["id"]], viewer=call.context.user_id)
    report.raise_if_refused()
    return {"forgotten": report.ids}


async def async_recall(call: ServiceCall) -> dict[str, Any]:
    """The first `limit` memories for `query` that the scope may see, best first.

    Ranked as a turn's memory block ranks them (`MemoryOrgan.async_recall`), so a turn with room
    for as many memories would read these, in this order; at most `recall.CONSIDERED`.
    """
    # A query goes to the embedding model: it passes the same admission as an utterance.
    if (refusal := admit(call.data["query"])) is not None:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="query_refused",
            translation_placeholders={"reason": refusal.value},
        )
    viewer = await async_scope(call)
    rows = await _memory(call).async_recall(
        call.data["query"], viewer=viewer, limit=call.data["limit"]
    )
    return {"memories": [row_dict(row) for row in rows]}


async def async_replay(call: ServiceCall) -> dict[str, Any]:
    """Re-derive every journal entry without the model: the replay's report."""
    return await _memory(call).async_replay()


async def async_reembed(call: ServiceCall) -> dict[str, Any]:
    """Embed every stored memory again with the embedding model now configured: the report."""
    return (await _memory(call).async_reembed()).raise_if_stopped()


async def async_qualify(call: ServiceCall) -> dict[str, Any]:
    """Run the acceptance matrix against the chat model (the pair recorded if all pass)."""
    return await _memory(call).async_qualify()


async def async_purge(call: ServiceCall) -> dict[str, Any]:
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
