"""The websocket API behind the Alto panel (`alto/...`), per viewer under HA's own auth.

`alto/view` answers one viewer's whole view at once: their memories (one entry per thing said
that they may see, the household's and their own, newest first; only those listed as memories
unless `everything`, `memories.Entry`) and the other sections (`view`). `alto/subscribe` is what
the panel follows: its first event carries the view's sections and the first page of entries
with their total, later events only what changed for that viewer; `alto/memories` gives the
subscription's next older page and `alto/everything` switches its list between the listed
entries and every one (`feed`, `docs/panel-and-dashboard.md`). Both read the store in executor
jobs; a subscription shares one snapshot per change with every other panel of the entry.

The other commands (`alto/remember`, `alto/forget`, `alto/recall`, `alto/qualify`,
`alto/purge`) run the services' own schemas and handlers (`memory_actions`) with the user's
context, so every scope check is the one the services make, not a second copy of it; they are
not service calls, because the effector stays Alto's one service call site.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import probatio
from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, ServiceCall, callback
from homeassistant.exceptions import ServiceValidationError, Unauthorized
from homeassistant.helpers.translation import async_get_translations

from ..const import ATTR_ENTRY_ID, DOMAIN
from ..coordinator import AltoConfigEntry

# The memory services' own schemas and handlers: the panel allows exactly what they allow.
from ..memory_actions import (
    ENTRY_SCHEMA,
    FORGET_SCHEMA,
    PURGE_SCHEMA,
    RECALL_SCHEMA,
    REMEMBER_SCHEMA,
    SERVICE_FORGET,
    SERVICE_PURGE,
    SERVICE_QUALIFY,
    SERVICE_RECALL,
    SERVICE_REMEMBER,
    async_forget,
    async_purge,
    async_qualify,
    async_recall,
    async_remember,
    loaded_entry,
)
from .feed import Subscription, subscribe
from .memories import build_snapshot, recalled_view
from .view import Viewer, async_names, async_sections

# The panel's own strings are the `common` keys with this prefix (translations/<lang>.json).
STRING_PREFIX = "panel_"
# Every command takes the entry as the services do (default: the first loaded one).
ENTRY: dict[str | probatio.Marker, Any] = {probatio.Optional(ATTR_ENTRY_ID): str}


async def async_view(
    hass: HomeAssistant, entry: AltoConfigEntry, viewer: Viewer, *, everything: bool = False
) -> dict[str, Any]:
    """Everything the panel shows `viewer` for one entry, every entry of their list included."""
    memory = entry.runtime_data.memory
    names = await async_names(hass)
    snapshot = await hass.async_add_executor_job(
        build_snapshot, memory.store if memory else None, None, names
    )
    view = await async_sections(hass, entry, viewer, snapshot)
    view["memories"] = await hass.async_add_executor_job(
        snapshot.memories, viewer.user_id, everything
    )
    return view


# -- commands ------------------------------------------------------------------------------------
@websocket_api.websocket_command(
    {probatio.Required("type"): "alto/view", probatio.Optional("everything"): bool, **ENTRY}
)
@websocket_api.async_response
async def ws_view(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """The caller's whole view of one entry."""
    entry = loaded_entry(hass, msg.get(ATTR_ENTRY_ID))
    view = await async_view(
        hass, entry, Viewer.of(connection.user), everything=msg.get("everything", False)
    )
    connection.send_result(msg["id"], view)


@websocket_api.websocket_command({probatio.Required("type"): "alto/subscribe", **ENTRY})
@callback
def ws_subscribe(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """Send the caller's view now, then what changes for them (until unsubscribed)."""
    subscribe(hass, connection, msg["id"], loaded_entry(hass, msg.get(ATTR_ENTRY_ID)))


def _subscription(connection: websocket_api.ActiveConnection, msg_id: int) -> Subscription:
    """This connection's open panel subscription `msg_id`."""
    subscription = connection.subscriptions.get(msg_id)
    if not isinstance(subscription, Subscription) or subscription.closed:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="not_subscribed")
    return subscription


@websocket_api.websocket_command(
    {probatio.Required("type"): "alto/memories", probatio.Required("subscription"): int}
)
@callback
def ws_memories(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """The next older page of entries of one of this connection's subscriptions."""
    connection.send_result(msg["id"], _subscription(connection, msg["subscription"]).page())


@websocket_api.websocket_command(
    {
        probatio.Required("type"): "alto/everything",
        probatio.Required("subscription"): int,
        probatio.Required("everything"): bool,
    }
)
@callback
def ws_everything(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """List every entry (everything said) or only memories; the list starts over (``reset``)."""
    subscription = _subscription(connection, msg["subscription"])
    subscription.show_everything(msg["everything"])
    connection.send_result(msg["id"])


@dataclass(frozen=True, slots=True)
class ServiceAction:
    """One of Alto's services as the panel runs it: its own schema and handler, as registered."""

    service: str
    schema: probatio.Schema
    handler: Callable[[ServiceCall], Coroutine[Any, Any, dict[str, Any]]]
    admin: bool  # registered with `async_register_admin_service`


async def _run_service(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
    action: ServiceAction,
    data: dict[str, Any],
) -> dict[str, Any]:
    """Run a service's handler as the connection's user, with the checks its registration adds.

    Not through `hass.services`: the effector is Alto's one service call site. The service's
    own schema validates the data and its own handler decides scope (`async_scope`), so a
    command allows exactly what the service allows; an administrator service refuses a
    non-administrator here as HA's admin wrapper does.
    """
    context = connection.context(msg)
    if action.admin and not connection.user.is_admin:
        raise Unauthorized(context=context)
    if ATTR_ENTRY_ID in msg:
        data = {**data, ATTR_ENTRY_ID: msg[ATTR_ENTRY_ID]}
    data = action.schema(data)
    call = ServiceCall(hass, DOMAIN, action.service, data, context, return_response=True)
    return await action.handler(call)


def _passing(*fields: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The message's fields the service takes, as given."""
    return lambda msg: {name: msg[name] for name in fields if name in msg}


def _service_command(
    command: str,
    schema: dict[Any, Any],
    action: ServiceAction,
    data: Callable[[dict[str, Any]], dict[str, Any]],
    answer: Callable[[HomeAssistant, AltoConfigEntry, Viewer, Any], Coroutine[Any, Any, Any]]
    | None = None,
) -> websocket_api.WebSocketCommandHandler:
    """A command that runs one Alto service as the caller; `answer` may reshape its result."""

    @websocket_api.websocket_command({probatio.Required("type"): command, **ENTRY, **schema})
    @websocket_api.async_response
    async def handler(
        hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
    ) -> None:
        result: Any = await _run_service(hass, connection, msg, action, data(msg))
        if answer is not None:
            entry = loaded_entry(hass, msg.get(ATTR_ENTRY_ID))
            result = await answer(hass, entry, Viewer.of(connection.user), result)
        connection.send_result(msg["id"], result)

    return handler


async def _recalled(
    hass: HomeAssistant, entry: AltoConfigEntry, viewer: Viewer, result: dict[str, Any]
) -> dict[str, Any]:
    """The recalled memories as the panel shows them, best first."""
    memory = entry.runtime_data.memory
    if memory is None:
        return {"memories": []}
    store, ids, names = memory.store, [m["id"] for m in result["memories"]], await async_names(hass)

    def shown() -> list[dict[str, Any]]:
        # Every row the viewer sees: what replaced a recalled memory may be any of them.
        return recalled_view(store.rows(viewer.user_id, current_only=False), ids, names)

    return {"memories": await hass.async_add_executor_job(shown)}


async def _qualified(
    hass: HomeAssistant, entry: AltoConfigEntry, viewer: Viewer, result: dict[str, Any]
) -> dict[str, Any]:
    """Qualification's verdict without the raw answers (the service response has them)."""
    return {key: value for key, value in result.items() if key != "answers"}


@websocket_api.websocket_command(
    {probatio.Required("type"): "alto/strings", probatio.Required("language"): str}
)
@websocket_api.async_response
async def ws_strings(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """The panel's strings in `language` (English where a string has no translation)."""
    found = await async_get_translations(hass, msg["language"], "common", [DOMAIN])
    prefix = f"component.{DOMAIN}.common.{STRING_PREFIX}"
    strings = {
        key.removeprefix(prefix): value for key, value in found.items() if key.startswith(prefix)
    }
    connection.send_result(msg["id"], strings)


# The services the panel runs, with the schema and handler `services` registers for each.
RECALL = ServiceAction(SERVICE_RECALL, RECALL_SCHEMA, async_recall, admin=False)
REMEMBER = ServiceAction(SERVICE_REMEMBER, REMEMBER_SCHEMA, async_remember, admin=False)
FORGET = ServiceAction(SERVICE_FORGET, FORGET_SCHEMA, async_forget, admin=False)
QUALIFY = ServiceAction(SERVICE_QUALIFY, ENTRY_SCHEMA, async_qualify, admin=True)
PURGE = ServiceAction(SERVICE_PURGE, PURGE_SCHEMA, async_purge, admin=True)

COMMANDS: tuple[websocket_api.WebSocketCommandHandler, ...] = (
    ws_view,
    ws_subscribe,
    ws_memories,
    ws_everything,
    ws_strings,
    _service_command(
        "alto/recall",
        {probatio.Required("query"): str, probatio.Optional("limit"): int},
        RECALL,
        _passing("query", "limit"),
        _recalled,
    ),
    _service_command(
        "alto/remember",
        {probatio.Required("text"): str, probatio.Optional("owner"): str},
        REMEMBER,
        _passing("text", "owner"),
    ),
    _service_command(
        "alto/forget",
        {probatio.Required("memory_id"): int},  # `id` is the websocket message's own
        FORGET,
        lambda msg: {"id": msg["memory_id"]},
    ),
    _service_command("alto/qualify", {}, QUALIFY, _passing(), _qualified),
    _service_command("alto/purge", {probatio.Required("owner"): str}, PURGE, _passing("owner")),
)


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register every `alto/...` command."""
    for command in COMMANDS:
        websocket_api.async_register_command(hass, command)
