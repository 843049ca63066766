"""The Surfacer in Home Assistant: one verified thought per turn, or none.

A thought ready within `surfacer_wait` joins the in-flight model call (it is appended to the turn
buffer before the call is built); a later one lands in the buffer for the next turn. The reply
never waits longer than `surfacer_wait`. Every outcome but "nothing" fires `alto_thought` and
shows on `sensor.alto_last_thought`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_send

from .const import (
    CONF_MODEL,
    CONF_REQUEST_TIMEOUT,
    CONF_SURFACER_ENABLED,
    CONF_SURFACER_MODEL,
    CONF_SURFACER_RECALL,
    CONF_SURFACER_WAIT,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SURFACER_ENABLED,
    DEFAULT_SURFACER_RECALL,
    DEFAULT_SURFACER_WAIT,
    DOMAIN,
    LOGGER,
)
from .history import BufferEntry, TurnBuffer
from .memory.records import HOUSEHOLD
from .memory_organ import MemoryOrgan
from .model_client import keep_alive
from .surface.render import render_for
from .surface.store_view import StoreMemoryView
from .surface.surfacer import (
    Heard,
    NoopSurfacer,
    SurfaceOutcome,
    Surfacer,
    SurfacerOptions,
    build_surfacer,
)

EVENT_THOUGHT = "alto_thought"


def signal_thought(entry_id: str) -> str:
    """Dispatcher signal: a new surfacing outcome."""
    return f"{DOMAIN}_{entry_id}_thought"


@dataclass(slots=True)
class ThoughtOrgan:
    """Builds the Surfacer for an entry and delivers what it verifies."""

    hass: HomeAssistant
    entry_id: str
    surfacer: Surfacer | NoopSurfacer
    wait_s: float
    memory: MemoryOrgan | None = None
    last: SurfaceOutcome | None = None
    last_surfaced: SurfaceOutcome | None = None
    _pending: set[asyncio.Task[Any]] = field(default_factory=set)

    @classmethod
    def build(
        cls,
        hass: HomeAssistant,
        entry_id: str,
        client: Any,
        memory: MemoryOrgan | None,
        settings: dict[str, Any],
    ) -> ThoughtOrgan:
        """A no-op Surfacer when disabled or when the memory store is unavailable."""
        surfacer: Surfacer | NoopSurfacer = NoopSurfacer()
        if memory is not None and settings.get(CONF_SURFACER_ENABLED, DEFAULT_SURFACER_ENABLED):
            view = StoreMemoryView(
                memory.store, memory.embed, run_blocking=hass.async_add_executor_job
            )
            render = render_for(
                client,
                settings.get(CONF_SURFACER_MODEL) or settings[CONF_MODEL],
                keep_alive=keep_alive(settings),
                timeout=float(settings.get(CONF_REQUEST_TIMEOUT, DEFAULT_REQUEST_TIMEOUT)),
            )
            surfacer = build_surfacer(
                view,
                render,
                SurfacerOptions(
                    recall=bool(settings.get(CONF_SURFACER_RECALL, DEFAULT_SURFACER_RECALL))
                ),
            )
        return cls(
            hass,
            entry_id,
            surfacer,
            float(settings.get(CONF_SURFACER_WAIT, DEFAULT_SURFACER_WAIT)),
            memory,
        )

    async def async_surface(self, text: str, actor: str | None, buffer: TurnBuffer) -> None:
        """Start surfacing for a turn; a thought ready within the wait joins this turn's call.

        Delivery goes to `buffer.pending`; the turn flushes it after this returns, and a late
        thought waits there for the next turn's flush.
        """
        buffer.flush_pending()
        if isinstance(self.surfacer, NoopSurfacer):
            return
        episode = [e.content for e in buffer.entries if e.kind in ("user", "reply")]
        task = self.hass.async_create_background_task(
            self.surfacer.surface_from_heard(Heard(text, actor, episode)), "alto_surfacer"
        )
        self._pending.add(task)
        task.add_done_callback(lambda done: self._deliver(done, buffer))
        # The reply waits at most `wait_s`; a later thought still lands, for the next turn.
        await asyncio.wait({task}, timeout=self.wait_s)
        buffer.flush_pending()

    @callback
    def async_shutdown(self) -> None:
        """Cancel surfacing still running (entry unload)."""
        for task in self._pending:
            task.cancel()

    def _private_scope(self, outcome: SurfaceOutcome) -> str | None:
        """The user whose private memory the outcome drew on, if any."""
        if self.memory is None:
            return None
        ids = [int(i) for i in outcome.source_ids if str(i).isdigit()]
        scopes = {row.scope for row in self.memory.store.get(ids)} - {HOUSEHOLD}
        return next(iter(sorted(scopes)), None)

    @callback
    def _deliver(self, task: asyncio.Task[SurfaceOutcome], buffer: TurnBuffer) -> None:
        self._pending.discard(task)
        if task.cancelled():
            return
        if (error := task.exception()) is not None:  # the Surfacer never raises; be sure
            LOGGER.warning("Surfacer failed: %s", error)
            return
        outcome = task.result()
        if outcome.verdict == "nothing":
            return
        private_to = self._private_scope(outcome)
        if outcome.verdict == "surfaced" and outcome.thought:
            buffer.pending.append(
                BufferEntry("assistant", outcome.thought, "thought", private_to=private_to)
            )
            self.last_surfaced = outcome if private_to is None else None
        self.last = outcome
        # Dashboards and automations are for everyone: a private thought's words stay out.
        shown = outcome.thought if outcome.verdict == "surfaced" and private_to is None else None
        self.hass.bus.async_fire(
            EVENT_THOUGHT,
            {
                "verdict": outcome.verdict,
                "thought": shown,
                "private": private_to is not None,
                "source_ids": list(outcome.source_ids),
                "failure_modes": list(outcome.failure_modes),
                "attempts": outcome.attempts,
            },
        )
        async_dispatcher_send(self.hass, signal_thought(self.entry_id))
