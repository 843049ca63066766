"""Interpretation of the journal's pending sources, in the background, with retries.

An accepted turn's source is journaled before the reply returns (`writer`); its
interpretation (embedding, and in mode 2 the two model calls) runs here, from the journal's
pending sources (`memory.pending`), so a stop, a crash or an embedding model that is down delays
a memory but does not lose it: pending sources are resumed at the next start and retried (with
a growing delay, and at every new turn) while the embedding or chat model fails. A final refusal
is journaled (``refuse``) and logged.

A mode-2 interpretation holds the writer's `rows_lock` through its model calls, because the
state it selects references from must be the state its entry is published on (replay
re-derives it there).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later

from ..const import LOGGER
from ..memory import intake
from ..memory.pending import Accepted
from ..memory.pipeline import MAX_BATCH, IntakeInput, said_by
from ..memory.qualification import QualificationTable
from ..memory.reasons import TRANSIENT
from ..model.calls import CallModel
from .embedding import Embedder, async_user_names
from .reports import IntakeReport, describe, fire_report, log_refused_turn, report_of
from .writer import MemoryWriter

# Pending sources whose interpretation failed for a transient reason are tried again after
# this delay, doubled after each failure up to the maximum (and at every new turn).
RETRY_FIRST_S = 15.0
RETRY_MAX_S = 600.0


class PendingInterpreter:
    """Interprets one entry's pending sources, one batch at a time, and tells who waits."""

    def __init__(
        self,
        hass: HomeAssistant,
        writer: MemoryWriter,
        embedder: Embedder,
        *,
        call_model: CallModel,
        model_digest: Callable[[], str | None],
        table: Callable[[], QualificationTable],
    ) -> None:
        """Interpret through `writer`; the model digest and qualified table are read per batch."""
        self._hass = hass
        self._writer = writer
        self._embedder = embedder
        self._call_model = call_model
        self._model_digest = model_digest
        self._table = table
        self._interpreting: asyncio.Task[None] | None = None
        self._retry: CALLBACK_TYPE | None = None
        self._retry_delay = RETRY_FIRST_S
        self._failing = False  # the last interpretation attempt failed for a transient reason
        # Callers of `MemoryOrgan.async_intake_turn` waiting for their source's interpretation.
        self._waiters: dict[tuple[str, int], list[asyncio.Future[IntakeReport]]] = {}

    def wait_for(self, key: tuple[str, int]) -> asyncio.Future[IntakeReport]:
        """A future for the outcome of the source `key`'s interpretation (see `forget_wait`)."""
        future: asyncio.Future[IntakeReport] = self._hass.loop.create_future()
        self._waiters.setdefault(key, []).append(future)
        return future

    def forget_wait(self, key: tuple[str, int], future: asyncio.Future[IntakeReport]) -> None:
        """The caller of `wait_for` no longer waits."""
        waiting = self._waiters.get(key, [])
        if future in waiting:
            waiting.remove(future)
        if not waiting:
            self._waiters.pop(key, None)

    async def async_close(self) -> None:
        """Stop interpreting (pending sources stay in the journal); waiters are cancelled.

        The writer is closed first, so nothing starts again.
        """
        if self._retry is not None:
            self._retry()
            self._retry = None
        if (task := self._interpreting) is not None:
            task.cancel()
            await asyncio.wait([task])
        for waiters in self._waiters.values():
            for future in waiters:
                future.cancel()
        self._waiters.clear()

    @callback
    def kick(self) -> None:
        """Interpret pending sources now, unless that runs already (it takes new ones too)."""
        journal = self._writer.journal
        if self._writer.closed or self._interpreting is not None or not len(journal.pending):
            return
        if self._retry is not None:
            self._retry()
            self._retry = None
        # Not started eagerly: `_interpreting` is set before the task can finish and clear it.
        self._interpreting = self._hass.async_create_background_task(
            self._async_interpret_pending(), "alto_memory_intake", eager_start=False
        )

    async def _async_interpret_pending(self) -> None:
        """Interpret pending sources, oldest first, up to 64 at a time.

        Runs until none is left or an attempt fails for a transient reason (then they are tried
        again later).
        """
        writer = self._writer
        try:
            while not writer.closed and writer.journal.damage is None:
                batch = writer.journal.pending.oldest(MAX_BATCH)
                if not batch:
                    break
                if not await self._async_interpret(batch):
                    self._schedule_retry()
                    return
            if self._failing:
                LOGGER.info("Memory caught up: the pending turns are interpreted")
            self._failing, self._retry_delay = False, RETRY_FIRST_S
        finally:
            self._interpreting = None

    @callback
    def _schedule_retry(self) -> None:
        if self._writer.closed or self._retry is not None:
            return
        delay, self._retry_delay = self._retry_delay, min(self._retry_delay * 2, RETRY_MAX_S)

        @callback
        def retry(_now: Any) -> None:
            self._retry = None
            self.kick()

        self._retry = async_call_later(self._hass, delay, retry)

    async def _async_interpret(self, batch: list[Accepted]) -> bool:
        """Interpret one batch of pending sources of one requested mode.

        False when a transient failure (embedding or chat model) leaves them pending.
        """
        writer = self._writer
        mode = batch[0].mode
        items = [accepted.item for accepted in batch]
        names = await async_user_names(self._hass)
        fetched = await self._embedder.prefetch(
            [said_by(item.text, item.actor, names) for item in items]
        )
        async with writer.rows_lock:
            if writer.closed or writer.unwritable("intake") is not None:
                return True  # closing, or no write is possible: nothing to retry for now
            if await writer.async_catch_up("intake") is not None:
                return False
            remaining, admitted = list(items), False
            while remaining:
                try:
                    result = await intake.run_intake(
                        remaining,
                        mode=mode,
                        store=writer.store,
                        journal=writer.journal,
                        embed=fetched,
                        call_model=self._call_model,
                        model_digest=self._model_digest(),
                        table=self._table(),
                        accepted=True,
                        run_blocking=self._hass.async_add_executor_job,
                        names=names,
                    )
                except intake.StoreBehind as err:
                    # Journaled, so resolved: the store catches up before the next write.
                    behind = writer.write_failed(err, "intake")
                    for item in remaining:
                        self._settled(behind, item)
                    return True
                except Exception as err:  # noqa: BLE001 - logged; the sources stay pending
                    self._interpretation_failed(len(remaining), f"{type(err).__name__}: {err}")
                    return False
                refusal = result.refusal
                if result.admitted:
                    for position, item in enumerate(remaining):
                        self._settled(report_of(result, position, op="intake"), item)
                    admitted = True
                    break
                assert refusal is not None  # a result is admitted or says why not
                if refusal.reason in TRANSIENT:
                    self._interpretation_failed(len(remaining), describe(refusal))
                    return False
                # Final: journaled as refused (one input, or all when no one input is to blame).
                index = refusal.input_index
                refused = [remaining.pop(index)] if index is not None else remaining
                try:
                    await intake.refuse(
                        refused,
                        refusal,
                        store=writer.store,
                        journal=writer.journal,
                        run_blocking=self._hass.async_add_executor_job,
                    )
                except Exception as err:  # noqa: BLE001 - logged; the sources stay pending
                    self._interpretation_failed(len(refused), f"{type(err).__name__}: {err}")
                    return False
                for item in refused:
                    log_refused_turn(item, refusal.reason.value, refusal.detail)
                    self._settled(report_of(result, op="intake"), item)
                if index is None:
                    break
        if admitted:
            await writer.async_changed_rows()
        return True

    def _interpretation_failed(self, count: int, why: str) -> None:
        """One warning when interpretation starts failing; quieter while it goes on."""
        level = logging.DEBUG if self._failing else logging.WARNING
        self._failing = True
        LOGGER.log(
            level,
            "Memory of %d turn(s) kept in the journal, not yet interpreted (%s); trying again "
            "within %d s and at the next turn",
            count,
            why,
            int(self._retry_delay),
        )

    @callback
    def _settled(self, report: IntakeReport, item: IntakeInput) -> None:
        """A pending source's outcome: its event, and anyone waiting for it."""
        fire_report(self._hass, report, item)
        for future in self._waiters.pop(item.source_key, []):
            if not future.done():
                future.set_result(report)
