"""Recent activity an entry keeps for the panel: the last thoughts and captured intents.

Nothing here is durable: the records live in memory (they survive an entry reload, not a
restart) and hold only what the bus already carried. Whose they are is decided when they are
read (`websocket`): an intent belongs to the user of its turn (`user_id`, None for a voice
satellite), a thought to the scope of the memories it quotes, so a thought whose memories were
forgotten since is no longer shown.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_connect, async_dispatcher_send
from homeassistant.util import dt as dt_util
from homeassistant.util.hass_dict import HassKey

from ..act_organ.organ import signal_intent
from ..const import DOMAIN
from ..coordinator import AltoConfigEntry
from ..surface_organ.organ import signal_thought

INTENTS_PER_USER = 20  # intents kept per user (and for turns without one)
THOUGHTS_KEPT = 100  # thoughts kept per entry, across every scope (filtered when read)
DATA_RECENT: HassKey[dict[str, RecentActivity]] = HassKey(f"{DOMAIN}_recent")


def signal_recent(entry_id: str) -> str:
    """Dispatcher signal: a thought or an intent was recorded."""
    return f"{DOMAIN}_{entry_id}_recent"


@dataclass(frozen=True, slots=True)
class ThoughtRecord:
    """One surfacing outcome.

    `thought` is only the verified text of a surfaced one: a dropped render was never a thought
    and is not kept.
    """

    when: float  # POSIX seconds
    verdict: str
    thought: str | None
    source_ids: tuple[int, ...]
    failure_modes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class IntentRecord:
    """One `alto_intent_captured` event of a user's turn (`user_id` None: no user)."""

    when: float  # POSIX seconds
    verdict: str
    span: str
    entity_id: str | None
    service: str | None
    tier: str | None
    reason: str | None
    user_id: str | None


class RecentActivity:
    """The bounded recent records of one entry."""

    def __init__(self) -> None:
        """Empty records."""
        self.thoughts: deque[ThoughtRecord] = deque(maxlen=THOUGHTS_KEPT)
        self._intents: dict[str | None, deque[IntentRecord]] = {}

    def add_intent(self, data: dict[str, Any]) -> None:
        """Keep one intent event's data (the action organ's `_fire` payload)."""
        user_id = data.get("user_id")
        kept = self._intents.setdefault(user_id, deque(maxlen=INTENTS_PER_USER))
        kept.append(
            IntentRecord(
                when=dt_util.utcnow().timestamp(),
                verdict=str(data["verdict"]),
                span=str(data.get("span") or ""),
                entity_id=data.get("entity_id"),
                service=data.get("service"),
                tier=data.get("tier"),
                reason=data.get("reason"),
                user_id=user_id,
            )
        )

    def intents_for(self, user_id: str | None) -> list[IntentRecord]:
        """The intents of `user_id`'s turns and of turns without a user, newest first."""
        mine = list(self._intents.get(user_id, ()))
        if user_id is not None:
            mine += self._intents.get(None, ())
        return sorted(mine, key=lambda record: record.when, reverse=True)


@callback
def async_track_recent(hass: HomeAssistant, entry: AltoConfigEntry) -> CALLBACK_TYPE:
    """Record the entry's thoughts and intents from now on; returns the stop callback.

    The records outlive an unload, so a reload (every options change) keeps them.
    """
    recent = hass.data.setdefault(DATA_RECENT, {}).setdefault(entry.entry_id, RecentActivity())

    @callback
    def _thought() -> None:
        # The Surfacer sets `last` before it signals, and dispatcher callbacks run at once.
        outcome = entry.runtime_data.thoughts.last
        if outcome is None:
            return
        surfaced = outcome.verdict == "surfaced"
        recent.thoughts.append(
            ThoughtRecord(
                when=dt_util.utcnow().timestamp(),
                verdict=outcome.verdict,
                thought=outcome.thought if surfaced else None,
                source_ids=tuple(int(i) for i in outcome.source_ids if str(i).isdigit()),
                failure_modes=tuple(outcome.failure_modes),
            )
        )
        async_dispatcher_send(hass, signal_recent(entry.entry_id))

    @callback
    def _intent(data: dict[str, Any]) -> None:
        recent.add_intent(data)
        async_dispatcher_send(hass, signal_recent(entry.entry_id))

    stops = [
        async_dispatcher_connect(hass, signal_thought(entry.entry_id), _thought),
        async_dispatcher_connect(hass, signal_intent(entry.entry_id), _intent),
    ]

    @callback
    def _stop() -> None:
        for stop in stops:
            stop()

    return _stop


def recent_activity(hass: HomeAssistant, entry_id: str) -> RecentActivity:
    """The entry's records (empty ones before anything was recorded)."""
    return hass.data.get(DATA_RECENT, {}).get(entry_id) or RecentActivity()
