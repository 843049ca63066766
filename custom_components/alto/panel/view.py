"""What the Alto panel shows one viewer besides their memories: one entry per section.

The view holds the entry and the entries to choose from, who is viewing, the viewer's recent
thoughts and captured intents, the reflect organ's inbox items and latest synthesis of the
household's scope and of the viewer's own, and for an administrator the qualification state and
each user's private-memory count. Memories come from a `memories.Snapshot`: the thoughts
section checks the memories each thought quotes against it, the administrator's counts are its
own. A later section is one more entry in `SECTIONS` and one more renderer in the panel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from homeassistant.auth.models import User
from homeassistant.core import HomeAssistant

from ..const import DOMAIN, LOGGER, MODE_STATES
from ..coordinator import AltoConfigEntry
from ..memory.profile import processor_digest
from ..memory.records import HOUSEHOLD, Row, visible_to
from ..memory_organ.organ import MemoryOrgan
from ..reflect import Box, Observation, Synthesis
from ..reflect.records import SYNTHESIS_FIELDS, valid_scope
from ..reflect_organ.organ import ReflectOrgan, scope_of
from .memories import Snapshot
from .recent import IntentRecord, RecentActivity, ThoughtRecord, recent_activity


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


async def async_users(hass: HomeAssistant) -> list[User]:
    """The household's users (HA's own system users are nobody's speaker)."""
    return [user for user in await hass.auth.async_get_users() if not user.system_generated]


async def async_names(hass: HomeAssistant) -> dict[str, str]:
    """Display names by user id."""
    return {user.id: user.name or "" for user in await async_users(hass)}


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


@dataclass(frozen=True, slots=True)
class SectionInput:
    """What every section of the view is built from (read once per view)."""

    entry: AltoConfigEntry
    viewer: Viewer
    names: Mapping[str, str]
    memories: Snapshot
    recent: RecentActivity
    memory: MemoryOrgan | None
    reflections: Reflections


def _admin_section(data: SectionInput) -> dict[str, Any] | None:
    """Qualification state and per-user private counts: administrators only."""
    memory = data.memory
    if not data.viewer.is_admin or memory is None:
        return None
    counts = data.memories.private_counts
    return {
        "model": data.entry.runtime_data.settings.model,
        "model_digest": memory.model_digest,
        "processor_digest": processor_digest(),
        "qualified": memory.automatic_available,
        "requested_mode": MODE_STATES[memory.requested_mode],
        "effective_mode": MODE_STATES[memory.effective_mode],
        # Every user, and every owner whose user is gone (name None): purge is for them too.
        "users": [
            {"id": owner, "name": data.names.get(owner), "private_memories": counts.get(owner, 0)}
            for owner in [*data.names, *sorted(counts.keys() - data.names.keys())]
        ],
    }


# Name and builder of each section, in the order the panel shows them (the memories come first,
# from `memories`).
SECTIONS: tuple[tuple[str, Callable[[SectionInput], Any]], ...] = (
    (
        "thoughts",
        lambda data: thoughts_view(data.recent.thoughts, data.memories.rows, data.viewer.user_id),
    ),
    (
        "intents",
        lambda data: intents_view(data.recent.intents_for(data.viewer.user_id), data.names),
    ),
    ("inbox", lambda data: inbox_view(data.reflections.inbox)),
    ("synthesis", lambda data: syntheses_view(data.reflections.syntheses)),
    ("admin", _admin_section),
)


async def async_sections(
    hass: HomeAssistant, entry: AltoConfigEntry, viewer: Viewer, memories: Snapshot
) -> dict[str, Any]:
    """Every key of `viewer`'s view of one entry but their memories."""
    names = await async_names(hass)
    memory = entry.runtime_data.memory
    view: dict[str, Any] = {
        "entry": {"id": entry.entry_id, "title": entry.title},
        "entries": [
            {"id": e.entry_id, "title": e.title} for e in hass.config_entries.async_entries(DOMAIN)
        ],
        "viewer": {"name": viewer.name, "is_admin": viewer.is_admin},
        "memory_available": memory is not None,
    }
    reflections = await _read_reflections(entry.runtime_data.reflection, viewer.user_id)
    recent = recent_activity(hass, entry.entry_id)
    data = SectionInput(entry, viewer, names, memories, recent, memory, reflections)
    for name, section in SECTIONS:
        view[name] = section(data)
    return view
