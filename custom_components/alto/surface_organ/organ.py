"""The Surfacer in Home Assistant: one verified thought per turn, or none.

`async_surface` returns the thoughts a turn's model call sees: one verified within
`surfacer_wait` joins this turn, a later one the conversation's next turn. The reply never waits
longer than `surfacer_wait`. Every outcome but "nothing" fires `alto_thought` (its verdict, ids
and counts: the words are the sensor's) and shows on `sensor.alto_last_thought`: its verdict
always, its thought only when everyone may read it (a household turn, household memories).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_send

from ..channel.markers import neutralized
from ..const import DOMAIN, LOGGER
from ..history import MAX_CONVERSATIONS, BufferEntry
from ..memory.records import HOUSEHOLD
from ..memory_organ.organ import MemoryOrgan
from ..memory_organ.recorded import HistoryEraser
from ..settings import AltoSettings
from ..surface.render import render_for
from ..surface.store_view import StoreMemoryView
from ..surface.surfacer import (
    Heard,
    NoopSurfacer,
    SurfaceOutcome,
    Surfacer,
    SurfacerOptions,
    build_surfacer,
)

EVENT_THOUGHT = "alto_thought"
KEY_LAST_THOUGHT = "last_thought"  # the last thought sensor's key


def signal_thought(entry_id: str) -> str:
    """Dispatcher signal: a new surfacing outcome."""
    return f"{DOMAIN}_{entry_id}_thought"


@dataclass(slots=True)
class SurfaceOrgan:
    """Builds the Surfacer for an entry and delivers what it verifies."""

    hass: HomeAssistant
    entry_id: str
    surfacer: Surfacer | NoopSurfacer
    wait_s: float
    memory: MemoryOrgan | None = None
    last: SurfaceOutcome | None = None
    last_surfaced: SurfaceOutcome | None = None  # the sensor's thought: a household one only
    recorded: HistoryEraser | None = None  # the recorder's history of the last thought sensor
    _pending: set[asyncio.Task[Any]] = field(default_factory=set)
    # Thoughts verified after their turn had answered, by conversation, for its next turn.
    _late: OrderedDict[Hashable, list[BufferEntry]] = field(default_factory=OrderedDict)

    @classmethod
    def build(
        cls,
        hass: HomeAssistant,
        entry_id: str,
        client: Any,
        settings: AltoSettings,
        memory: MemoryOrgan | None,
    ) -> SurfaceOrgan:
        """A no-op Surfacer when disabled or when the memory store is unavailable."""
        surfacer: Surfacer | NoopSurfacer = NoopSurfacer()
        if memory is not None and settings.surfacer_enabled:
            view = StoreMemoryView(
                memory.store, memory.embed_queries, run_blocking=hass.async_add_executor_job
            )
            render = render_for(
                client,
                settings.surfacer_model,
                keep_alive=settings.keep_alive,
                timeout=settings.request_timeout,
                num_ctx=settings.num_ctx,
            )
            surfacer = build_surfacer(
                view,
                render,
                SurfacerOptions(recall=settings.surfacer_recall),
                run_blocking=hass.async_add_executor_job,
            )
        organ = cls(hass, entry_id, surfacer, settings.surfacer_wait, memory)
        organ.recorded = HistoryEraser(hass, f"{entry_id}_{KEY_LAST_THOUGHT}")
        if memory is not None:  # the entry's organs live and go together
            memory.async_on_forget(organ.async_forgotten)
        return organ

    async def async_forgotten(self, scope: str, texts: frozenset[str]) -> None:
        """Drop a kept thought that drew on a memory a forget just removed.

        The last thought sensor then no longer shows a forgotten memory's words; when household
        words were forgotten (the sensor shows no other thought), the recorder's history of the
        sensor is purged too (`recorded`).
        """
        if self.memory is None:
            return
        changed = False
        for outcome in {id(o): o for o in (self.last_surfaced, self.last) if o}.values():
            ids = [int(i) for i in outcome.source_ids if str(i).isdigit()]
            stored = await self.hass.async_add_executor_job(self.memory.store.get, ids)
            if len(stored) < len(ids):
                if self.last_surfaced is outcome:
                    self.last_surfaced = None
                if self.last is outcome:
                    self.last = None
                changed = True
        if changed:  # the sensor's new state reaches the recorder before the purge
            async_dispatcher_send(self.hass, signal_thought(self.entry_id))
        if scope == HOUSEHOLD and texts and self.recorded is not None:
            self.recorded.async_erase()

    async def async_surface(
        self, text: str, actor: str | None, listener: Hashable, episode: list[str]
    ) -> list[BufferEntry]:
        """The thoughts this turn's model call sees, oldest first.

        First any thought that was verified too late for an earlier turn of this `listener` (a
        conversation and speaker), then this turn's own if it is verified within `wait_s`; one
        verified later is kept for the listener's next turn. The reply never waits longer than
        `wait_s`.
        """
        late = self._late.pop(listener, [])
        if isinstance(self.surfacer, NoopSurfacer):
            return late
        task = self.hass.async_create_background_task(
            self._surface(Heard(text, actor, episode)), "alto_surfacer"
        )
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        done, _ = await asyncio.wait({task}, timeout=self.wait_s)
        if task in done:
            return [*late, *_thought_of(task)]
        task.add_done_callback(lambda finished: self._keep_late(finished, listener))
        return late

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
    def _keep_late(self, task: asyncio.Task[BufferEntry | None], listener: Hashable) -> None:
        if thought := _thought_of(task):
            self._late.setdefault(listener, []).extend(thought)
            self._late.move_to_end(listener)
            while len(self._late) > MAX_CONVERSATIONS:
                self._late.popitem(last=False)

    async def _surface(self, heard: Heard) -> BufferEntry | None:
        """Run the Surfacer, publish its outcome, and return the thought the model may see."""
        outcome = await self.surfacer.surface_from_heard(heard)
        if outcome.verdict == "nothing":
            return None
        private_to = self._private_scope(outcome)
        thought = None
        if outcome.verdict == "surfaced" and outcome.thought:
            # Verified against quotes anyone may have said: no marker may ride along.
            text = neutralized(outcome.thought)
            thought = BufferEntry("assistant", text, "thought", private_to=private_to)
            # A household memory brought up by someone's private turn tells what they talked
            # about: it stays with the turn, off the shared sensor.
            shared = private_to is None and heard.actor is None
            self.last_surfaced = outcome if shared else None
        self.last = outcome
        # Ids and counts only: the recorder keeps events, and a forget cannot take words back
        # from them; the household's thought is on the sensor, whose history a forget purges.
        self.hass.bus.async_fire(
            EVENT_THOUGHT,
            {
                "verdict": outcome.verdict,
                "private": private_to is not None,
                "source_ids": list(outcome.source_ids),
                "failure_modes": list(outcome.failure_modes),
                "attempts": outcome.attempts,
            },
        )
        async_dispatcher_send(self.hass, signal_thought(self.entry_id))
        return thought


def _thought_of(task: asyncio.Task[BufferEntry | None]) -> list[BufferEntry]:
    """The task's thought as a list (empty when it has none, was cancelled or failed)."""
    if task.cancelled():
        return []
    if (error := task.exception()) is not None:  # the Surfacer never raises; be sure
        LOGGER.warning("Surfacer failed: %s", error)
        return []
    thought = task.result()
    return [thought] if thought is not None else []
