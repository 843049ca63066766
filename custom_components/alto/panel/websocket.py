"""The websocket API behind the Alto panel (`alto/...`), per viewer under HA's own auth.

Reads build one *view* for the connection's user: the memories that user may see (household
and their own private ones, current and superseded) with who said each and when, the user's
recent thoughts and captured intents, the reflect organ's inbox items and latest synthesis
of the household's scope and of the user's own, and for an administrator the qualification
state and each user's private-memory count. The other commands (`alto/remember`,
`alto/forget`, `alto/recall`, `alto/qualify`, `alto/purge`) run the services' own schemas and
handlers (`memory_actions`) with the user's context, so every scope check is the one the
services make, not a second copy of it; they are not service calls, because the effector stays
Alto's one service call site.

`alto/subscribe` sends the view at once and again whenever it changes for that user; a memory
or reflection change another user cannot see sends them nothing. A later section is one more
entry in `SECTIONS` and one more renderer in the panel.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import probatio
from homeassistant.auth.models import User
from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, ServiceCall, callback
from homeassistant.exceptions import Unauthorized
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.translation import async_get_translations
from homeassistant.util.ulid import ulid_to_bytes_or_none

from ..const import ATTR_ENTRY_ID, DOMAIN, LOGGER, MODE_STATES
from ..coordinator import AltoConfigEntry
from ..memory.profile import processor_digest
from ..memory.records import (
    CURRENT,
    HOUSEHOLD,
    KIND_CORRECTION,
    UNKNOWN_ACTOR,
    Row,
    visible_to,
)

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
from ..memory_organ.organ import MemoryOrgan, signal_memory_changed
from ..reflect import Box, Observation, Synthesis
from ..reflect.records import SYNTHESIS_FIELDS, valid_scope
from ..reflect_organ.organ import ReflectOrgan, scope_of, signal_reflection
from .recent import IntentRecord, RecentActivity, ThoughtRecord, recent_activity, signal_recent

# The panel's own strings are the `common` keys with this prefix (translations/<lang>.json).
STRING_PREFIX = "panel_"
# Row kinds as the panel names them (a translation key each: panel_kind_<name>).
KIND_KEYS: dict[int | str, str] = {
    "source": "source",
    "explicit": "explicit",
    1: "participant",
    2: "task",
    3: "assertion",
    4: "correction",
}
# Every command takes the entry as the services do (default: the first loaded one).
ENTRY: dict[str | probatio.Marker, Any] = {probatio.Optional(ATTR_ENTRY_ID): str}


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who a view is for: the connection's user."""

    user_id: str
    name: str
    is_admin: bool

    @classmethod
    def of(cls, user: User) -> Viewer:
        """The viewer a websocket connection's user is."""
        return cls(user.id, user.name or "", user.is_admin)


async def _users(hass: HomeAssistant) -> list[User]:
    """The household's users (HA's own system users are nobody's speaker)."""
    return [user for user in await hass.auth.async_get_users() if not user.system_generated]


async def _names(hass: HomeAssistant) -> dict[str, str]:
    """Display names by user id."""
    return {user.id: user.name or "" for user in await _users(hass)}


# -- the view ------------------------------------------------------------------------------------
def source_of(source_id: str) -> dict[str, Any]:
    """Where a memory came from, as the panel shows it.

    `type` (conversation, service, todo, or the id's first part), `ref` (the conversation's
    digest or the service call's context id, to tell sources apart), `when` (ms since the epoch,
    from the id's ULID; None without one).
    """
    parts = source_id.split("/")
    ref = parts[1][:12] if len(parts) > 2 else None  # digests are long; 12 hex digits tell apart
    raw = ulid_to_bytes_or_none(parts[-1]) if len(parts) > 1 else None
    when = int.from_bytes(raw[:6], "big") if raw is not None else None  # a ULID's first 48 bits
    return {"type": parts[0], "ref": ref, "when": when}


def memory_view(
    row: Row, names: Mapping[str, str], superseded_by: Mapping[int, int]
) -> dict[str, Any]:
    """One memory as the panel shows it: display names, never user ids."""
    private = row.scope != HOUSEHOLD
    return {
        "id": row.id,
        "quote": row.document,
        "kind": KIND_KEYS.get(row.kind, str(row.kind)),
        "scope": "private" if private else "household",
        "owner": names.get(row.owner) if private else None,
        "actor": None if row.actor == UNKNOWN_ACTOR else names.get(row.actor),
        "source": source_of(row.source_id),
        "status": row.status,
        "superseded_by": superseded_by.get(row.id),
        "replaces": row.target if row.kind == KIND_CORRECTION and row.target else None,
    }


def memories_view(rows: Sequence[Row], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """The viewer's memories, newest admission first (object ids follow the journal)."""
    # A correction and what it replaced share owner and scope: both are among the viewer's rows.
    superseded_by = {row.target: row.id for row in rows if row.kind == KIND_CORRECTION}
    ordered = sorted(rows, key=lambda row: row.id, reverse=True)
    return [memory_view(row, names, superseded_by) for row in ordered]


def thoughts_view(
    records: Sequence[ThoughtRecord], sources: Mapping[int, Row], viewer: str
) -> list[dict[str, Any]]:
    """The thoughts the viewer may see, newest first.

    Every memory a thought quotes must still exist (a forgotten memory takes its thoughts with
    it) and be visible to the viewer.
    """
    shown = []
    for record in reversed(records):
        rows = [sources.get(i) for i in record.source_ids]
        if any(row is None or not visible_to(row, viewer) for row in rows):
            continue
        shown.append(
            {
                "when": int(record.when * 1000),
                "verdict": record.verdict,
                "thought": record.thought,
                "failure_modes": list(record.failure_modes),
            }
        )
    return shown


def intents_view(records: Sequence[IntentRecord], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """Captured intents with their verdicts, newest first; `user` is a display name."""
    return [
        {
            "when": int(record.when * 1000),
            "verdict": record.verdict,
            "span": record.span,
            "entity_id": record.entity_id,
            "service": record.service,
            "tier": record.tier,
            "reason": record.reason,
            "user": names.get(record.user_id) if record.user_id else None,
        }
        for record in records
    ]


# The reflect scopes a viewer sees, as the panel names them: the household's and their own.
SCOPE_HOUSEHOLD = "household"
SCOPE_PRIVATE = "private"
BOX_ORDER = {box: rank for rank, box in enumerate((Box.INTRUSIVE, Box.PENDING, Box.SENT))}


@dataclass(frozen=True, slots=True)
class Reflections:
    """What the reflect organ holds for one viewer, per scope name (`SCOPE_*`)."""

    inbox: Mapping[str, Sequence[Observation]]
    syntheses: Mapping[str, Synthesis | None]


def reflect_scopes(user_id: str) -> dict[str, str]:
    """The reflect scopes a viewer sees, by the panel's name for each.

    The household's, and their own turn log's (`reflection.scope_of`), as intents show their
    speaker's and the household's; never another user's.
    """
    scopes = {SCOPE_HOUSEHOLD: HOUSEHOLD}
    own = scope_of(user_id)
    if own != HOUSEHOLD and valid_scope(own):
        scopes[SCOPE_PRIVATE] = own
    return scopes


async def _read_reflections(reflection: ReflectOrgan, viewer: str) -> Reflections:
    """Each visible scope's inbox (every box) and latest synthesis.

    A scope whose journal cannot be read shows nothing (the view is still built).
    """
    inbox: dict[str, Sequence[Observation]] = {}
    syntheses: dict[str, Synthesis | None] = {}
    for name, scope in reflect_scopes(viewer).items():
        try:
            boxes = await reflection.reflector.inbox(scope)
            syntheses[name] = await reflection.reflector.latest_synthesis(scope)
        except Exception as err:  # noqa: BLE001 - a damaged journal hides its scope, not the view
            LOGGER.warning("The Alto panel could not read a reflect journal: %s", err)
            syntheses[name] = None
            continue
        inbox[name] = (*boxes.intrusive, *boxes.pending, *boxes.sent)
    return Reflections(inbox, syntheses)


def inbox_view(inbox: Mapping[str, Sequence[Observation]]) -> list[dict[str, Any]]:
    """The viewer's inbox items: intrusive, then pending, then sent.

    The more urgent first, then the newer. `scope` says whose (household or private), never a
    user id.
    """
    items = [(name, item) for name, found in inbox.items() for item in found]
    items.sort(key=lambda pair: (BOX_ORDER[pair[1].box], -pair[1].urgency.rank, -pair[1].at))
    return [
        {
            "scope": name,
            "content": item.content,
            "urgency": item.urgency.value,
            "box": item.box.value,
            "when": item.at * 1000,
        }
        for name, item in items
    ]


def synthesis_view(synthesis: Synthesis | None) -> dict[str, Any] | None:
    """A synthesis as the panel shows it.

    When, why, and each non-empty field's texts in `SYNTHESIS_FIELDS` order (the citations are
    turn and ledger numbers: not shown).
    """
    if synthesis is None:
        return None
    return {
        "when": synthesis.at * 1000,
        "trigger": synthesis.trigger,
        "elements": [
            {"field": name, "texts": [element.text for element in found]}
            for name in SYNTHESIS_FIELDS
            if (found := synthesis.elements.get(name))
        ],
    }


def syntheses_view(syntheses: Mapping[str, Synthesis | None]) -> dict[str, Any]:
    """The latest synthesis of the household's scope and of the viewer's own (None: none)."""
    return {name: synthesis_view(syntheses.get(name)) for name in (SCOPE_HOUSEHOLD, SCOPE_PRIVATE)}


def _read_memory(
    memory: MemoryOrgan, viewer: str, thought_ids: set[int], every_owner: bool
) -> tuple[list[Row], dict[int, Row], dict[str, int]]:
    """Everything a view reads from the store, in one executor job (the store is blocking).

    The viewer's rows, the rows recent thoughts quote, and (for an administrator) how many
    current private memories each owner has, users deleted from HA included.
    """
    rows = memory.store.rows(viewer, current_only=False)
    sources = {row.id: row for row in memory.store.get(sorted(thought_ids))}
    counts: Counter[str] = Counter()
    # Every stored row has codes: the selection snapshot's ids are all of them.
    snapshot = memory.store.codes_snapshot() if every_owner else None
    if snapshot is not None:
        for row in memory.store.get(snapshot.ids.tolist()):
            if row.scope != HOUSEHOLD and row.status == CURRENT:
                counts[row.scope] += 1
    return rows, sources, dict(counts)


async def async_view(hass: HomeAssistant, entry: AltoConfigEntry, viewer: Viewer) -> dict[str, Any]:
    """Everything the panel shows `viewer` for one entry."""
    users = await _users(hass)
    names = {user.id: user.name or "" for user in users}
    recent = recent_activity(hass, entry.entry_id)
    memory = entry.runtime_data.memory
    view: dict[str, Any] = {
        "entry": {"id": entry.entry_id, "title": entry.title},
        "entries": [
            {"id": e.entry_id, "title": e.title} for e in hass.config_entries.async_entries(DOMAIN)
        ],
        "viewer": {"name": viewer.name, "is_admin": viewer.is_admin},
        "memory_available": memory is not None,
    }
    rows: list[Row] = []
    sources: dict[int, Row] = {}
    counts: dict[str, int] = {}
    if memory is not None:
        thought_ids = {i for record in recent.thoughts for i in record.source_ids}
        rows, sources, counts = await hass.async_add_executor_job(
            _read_memory, memory, viewer.user_id, thought_ids, viewer.is_admin
        )
    reflections = await _read_reflections(entry.runtime_data.reflection, viewer.user_id)
    data = SectionInput(entry, viewer, names, rows, sources, counts, recent, memory, reflections)
    for name, section in SECTIONS:
        view[name] = section(data)
    return view


@dataclass(frozen=True, slots=True)
class SectionInput:
    """What every section of the view is built from (read once per view)."""

    entry: AltoConfigEntry
    viewer: Viewer
    names: Mapping[str, str]
    rows: Sequence[Row]
    sources: Mapping[int, Row]
    counts: Mapping[str, int]
    recent: RecentActivity
    memory: MemoryOrgan | None
    reflections: Reflections


def _admin_section(data: SectionInput) -> dict[str, Any] | None:
    """Qualification state and per-user private counts: administrators only."""
    memory = data.memory
    if not data.viewer.is_admin or memory is None:
        return None
    return {
        "model": data.entry.runtime_data.settings.model,
        "model_digest": memory.model_digest,
        "processor_digest": processor_digest(),
        "qualified": memory.automatic_available,
        "requested_mode": MODE_STATES[memory.requested_mode],
        "effective_mode": MODE_STATES[memory.effective_mode],
        # Every user, and every owner whose user is gone (name None): purge is for them too.
        "users": [
            {
                "id": owner,
                "name": data.names.get(owner),
                "private_memories": data.counts.get(owner, 0),
            }
            for owner in [*data.names, *sorted(data.counts.keys() - data.names.keys())]
        ],
    }


# Name and builder of each section, in the order the panel shows them.
SECTIONS: tuple[tuple[str, Callable[[SectionInput], Any]], ...] = (
    ("memories", lambda data: memories_view(data.rows, data.names)),
    (
        "thoughts",
        lambda data: thoughts_view(data.recent.thoughts, data.sources, data.viewer.user_id),
    ),
    (
        "intents",
        lambda data: intents_view(data.recent.intents_for(data.viewer.user_id), data.names),
    ),
    ("inbox", lambda data: inbox_view(data.reflections.inbox)),
    ("synthesis", lambda data: syntheses_view(data.reflections.syntheses)),
    ("admin", _admin_section),
)


# -- commands ------------------------------------------------------------------------------------
def _viewer(connection: websocket_api.ActiveConnection) -> Viewer:
    return Viewer.of(connection.user)


@websocket_api.websocket_command({probatio.Required("type"): "alto/view", **ENTRY})
@websocket_api.async_response
async def ws_view(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """The caller's view of one entry."""
    entry = loaded_entry(hass, msg.get(ATTR_ENTRY_ID))
    connection.send_result(msg["id"], await async_view(hass, entry, _viewer(connection)))


@websocket_api.websocket_command({probatio.Required("type"): "alto/subscribe", **ENTRY})
@websocket_api.async_response
async def ws_subscribe(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """Send the caller's view now and whenever it changes for them (until unsubscribed)."""
    entry = loaded_entry(hass, msg.get(ATTR_ENTRY_ID))
    viewer = _viewer(connection)
    sent: dict[str, Any] | None = None
    dirty = asyncio.Event()

    async def _send_changes() -> None:
        nonlocal sent
        while True:
            await dirty.wait()
            dirty.clear()  # changes during the build mark it dirty again: one more round
            try:
                view = await async_view(hass, entry, viewer)
            except Exception:  # noqa: BLE001 - the panel stays subscribed; the next change retries
                LOGGER.exception("The Alto panel's view could not be built")
                continue
            if view != sent:  # someone else's private change shows this viewer nothing
                sent = view
                connection.send_event(msg["id"], view)

    @callback
    def _changed() -> None:
        dirty.set()

    task = hass.async_create_background_task(_send_changes(), "alto_panel_subscription")
    stops = [
        async_dispatcher_connect(hass, signal, _changed)
        for signal in (
            signal_memory_changed(entry.entry_id),
            signal_recent(entry.entry_id),
            signal_reflection(entry.entry_id),
        )
    ]

    @callback
    def _unsubscribe() -> None:
        task.cancel()
        for stop in stops:
            stop()

    connection.subscriptions[msg["id"]] = _unsubscribe
    connection.send_result(msg["id"])
    dirty.set()


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
            result = await answer(hass, entry, _viewer(connection), result)
        connection.send_result(msg["id"], result)

    return handler


async def _recalled(
    hass: HomeAssistant, entry: AltoConfigEntry, viewer: Viewer, result: dict[str, Any]
) -> dict[str, Any]:
    """The recalled memories as the panel shows them, best first."""
    memory = entry.runtime_data.memory
    if memory is None:
        return {"memories": []}
    rows = await hass.async_add_executor_job(
        partial(memory.store.rows, viewer.user_id, current_only=False)
    )
    shown = {m["id"]: m for m in memories_view(rows, await _names(hass))}
    return {"memories": [shown[m["id"]] for m in result["memories"] if m["id"] in shown]}


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
