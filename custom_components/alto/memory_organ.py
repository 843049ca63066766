"""The memory organ in Home Assistant: store, journal, durable intake, recall, services.

The pure organ lives in `memory/`; this module gives it paths under the HA config dir, runs its
blocking parts in the executor, orders its writers, fires `alto_memory_admitted` /
`alto_memory_refused` and tells entities when memory changed. Organs never raise into a turn:
every failure here is one log line and "nothing remembered".

A turn's memory is written in two steps. `async_accept_turn` journals the turn's source
(``accept``, fsync'd, no model call) before the reply returns; the slow part, interpretation
(embedding, and in mode 2 the two model calls), runs in the background from the journal's
pending sources (`memory.pending`), so a stop, a crash or an embedding model that is down
delays a memory but does not lose it: pending sources are resumed at the next start and retried
(with a growing delay, and at every new turn) while the embedding or chat model fails. A final
refusal is journaled (``refuse``) and logged.

Writers: accepts need no lock of this module (`memory.intake` appends under `Journal.lock`, and
an accept changes no row); remember, forget and interpretation change rows and run one at a time
(`_rows_lock`). Embeddings are fetched before taking that lock, so a slow embedding model holds
up no other write; a mode-2 interpretation holds it through its model calls, because the state
it selects references from must be the state its entry is published on (replay re-derives it
there). Accepts and remembers that arrive while one of their kind is being written are written
together, as one entry of up to 64 inputs (`_Coalescer`): one fsync and one store write for all.

A journal that does not verify at open (`Journal.damage`), or a store that cannot reconcile with
it, leaves the organ serving recall but refusing every write, with a repair issue that says how
to recover.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import ollama
from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import CALLBACK_TYPE, Event, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.helpers.event import async_call_later
from homeassistant.util import dt as dt_util

from .const import DOMAIN, LOGGER
from .gpu.backend import CpuBackend, SelectionBackend, select_backend
from .memory import intake, recall, replay
from .memory.acceptance import run_acceptance
from .memory.checkpoint import Checkpoint
from .memory.instructions import instructions_for
from .memory.journal import Damage, Journal
from .memory.ollama_io import call_model_for, embed_for
from .memory.pending import Accepted
from .memory.pipeline import MAX_BATCH, IntakeInput, embedding_codes
from .memory.qualification import (
    Mode,
    QualificationTable,
    load_table,
    normalize_digest,
    record_qualification,
)
from .memory.qualification import effective_mode as mode_for_pair
from .memory.reasons import TRANSIENT, Reason, Refusal, Status
from .memory.records import CURRENT, HOUSEHOLD, Row, visible_to
from .memory.references import KIND_NAMES
from .memory.spans import admit_source
from .memory.store import MemoryStore
from .prompt import memory_block
from .settings import AltoSettings

EVENT_ADMITTED = "alto_memory_admitted"
EVENT_REFUSED = "alto_memory_refused"
RECENT_VECTORS = 16  # embeddings kept per organ (a turn needs one; a batch up to 64 once)
STORE_ERROR = "store_error"  # nothing was written
STORE_PENDING = "store_pending"  # journaled; the store catches up before the next write
JOURNAL_DAMAGED = "journal_damaged"  # the journal does not verify: nothing is written
ISSUE_JOURNAL_DAMAGED = "journal_damaged"
# Pending sources whose interpretation failed for a transient reason are tried again after
# this delay, doubled after each failure up to the maximum (and at every new turn).
RETRY_FIRST_S = 15.0
RETRY_MAX_S = 600.0
_cpu_fallback_told = False  # the CPU fallback of GPU "auto" was logged in this process


def signal_memory_changed(entry_id: str) -> str:
    """Dispatcher signal: memory rows or the effective mode changed."""
    return f"{DOMAIN}_{entry_id}_memory"


def storage_dir(hass: HomeAssistant, entry_id: str) -> Path:
    """Where one entry's embedded Chroma store and journal live."""
    return Path(hass.config.path(".storage", DOMAIN, entry_id))


def row_dict(row: Row) -> dict[str, Any]:
    """A memory as services and the todo list show it."""
    return {
        "id": row.id,
        "quote": row.document,
        "kind": KIND_NAMES.get(row.kind, str(row.kind)),
        "actor": row.actor,
        "owner": row.owner,
        "source_id": row.source_id,
    }


@dataclass(slots=True)
class IntakeReport:
    """What a write did, for services and events; `op` is the write that was asked for."""

    admitted: bool
    ids: list[int]
    mode: str | None
    status: int
    reason: str | None
    op: str = "remember"

    def raise_if_refused(self) -> None:
        """The translated error a refused write gives a service call or the todo list."""
        if self.admitted:
            return
        if self.reason in (STORE_ERROR, STORE_PENDING, JOURNAL_DAMAGED):
            raise HomeAssistantError(translation_domain=DOMAIN, translation_key=self.reason)
        if self.op == "forget" and self.reason == Reason.UNKNOWN_ID:
            raise ServiceValidationError(translation_domain=DOMAIN, translation_key="not_found")
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="forget_refused" if self.op == "forget" else "memory_refused",
            translation_placeholders={"reason": self.reason or "unknown"},
        )


def _report(result: intake.IntakeResult, position: int = 0, *, op: str) -> IntakeReport:
    """One input's part of an intake result."""
    return IntakeReport(
        admitted=result.admitted,
        ids=list(result.ids[position]) if result.admitted and result.ids else [],
        mode=result.mode.name.lower() if result.mode is not None else None,
        status=int(result.status),  # events and services carry the bare number
        reason=_reason(result.refusal),
        op=op,
    )


def _failed(reason: str, op: str) -> IntakeReport:
    return IntakeReport(False, [], None, int(Status.REFUSED), reason, op)


class _Coalescer[T, R]:
    """Writes of one kind that arrive while one is being written are written together next.

    `submit` queues an item and waits for its result; one runner takes up to `MAX_BATCH`
    queued items at a time and gives them to `commit`, which returns one result per item. The
    first item is written at once (no added wait); whatever arrives meanwhile shares the next
    write. The runner is a task of its own, so a caller that gives up does not cut a write.
    """

    def __init__(
        self,
        hass: HomeAssistant,
        name: str,
        commit: Callable[[list[T]], Awaitable[list[R]]],
    ) -> None:
        self._hass = hass
        self._name = name
        self._commit = commit
        self._queue: list[tuple[T, asyncio.Future[R]]] = []
        self._runner: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        """Queue `item` for the next write and wait for its result."""
        future: asyncio.Future[R] = self._hass.loop.create_future()
        self._queue.append((item, future))
        if self._runner is None:
            # Not started eagerly: `_runner` is set before the runner can finish and clear it.
            self._runner = self._hass.async_create_background_task(
                self._run(), self._name, eager_start=False
            )
        return await future

    async def _run(self) -> None:
        taken: list[tuple[T, asyncio.Future[R]]] = []
        try:
            while self._queue:
                taken, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                try:
                    results = await self._commit([item for item, _future in taken])
                except Exception as err:  # every waiting caller gets the failure
                    for _item, future in taken:
                        if not future.done():
                            future.set_exception(err)
                else:
                    for (_item, future), result in zip(taken, results, strict=True):
                        if not future.done():
                            future.set_result(result)
                taken = []
        finally:
            # Cancelled (Home Assistant stopping): nobody waits for a write that will not come.
            for _item, future in [*taken, *self._queue]:
                future.cancel()
            self._runner, self._queue = None, []


class MemoryOrgan:
    """One entry's memory: the only writer of its store and journal."""

    def __init__(
        self,
        hass: HomeAssistant,
        *,
        entry_id: str,
        client: ollama.AsyncClient,
        settings: AltoSettings,
        store: MemoryStore,
        journal: Journal,
        table_path: Path,
        table: QualificationTable,
        selection: SelectionBackend,
    ) -> None:
        """Use `async_open` to build one."""
        self._hass = hass
        self._entry_id = entry_id
        self._client = client
        self._settings = settings
        self.store = store
        self.journal = journal
        self.selection = selection
        self._table_path = table_path
        self._table = table
        self._rows_lock = asyncio.Lock()
        self._accepts: _Coalescer[IntakeInput, IntakeReport] = _Coalescer(
            hass, "alto_memory_accept", self._async_commit_accepts
        )
        self._remembers: _Coalescer[IntakeInput, IntakeReport] = _Coalescer(
            hass, "alto_memory_remember", self._async_commit_remembers
        )
        self._embed_model = embed_for(client, settings.embedding_model)
        self._instructions = instructions_for(settings.embedding_model)
        # One utterance is embedded for the turn's context, the Surfacer's recall and intake:
        # the model's answer for a text is kept for a few texts, so it is asked once.
        self._recent_vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._call_model = call_model_for(client, settings.model, num_ctx=settings.num_ctx)
        self.model_digest: str | None = None
        self._store_behind = False  # a journaled write failed to reach the store
        self._closed = False
        self._interpreting: asyncio.Task[None] | None = None
        self._retry: CALLBACK_TYPE | None = None
        self._retry_delay = RETRY_FIRST_S
        self._failing = False  # the last interpretation attempt failed for a transient reason
        # Callers of `async_intake_turn` waiting for their source's interpretation.
        self._waiters: dict[tuple[str, int], list[asyncio.Future[IntakeReport]]] = {}
        # The entry's unload may not run when Home Assistant stops: close on the stop event,
        # so the next start finds a current checkpoint.
        self._unsub_stop: CALLBACK_TYPE | None = hass.bus.async_listen_once(
            EVENT_HOMEASSISTANT_STOP, self._async_on_stop
        )

    @classmethod
    async def async_open(
        cls, hass: HomeAssistant, entry_id: str, client: ollama.AsyncClient, settings: AltoSettings
    ) -> MemoryOrgan:
        """Open the store (embedded or server) and journal; bring the store up to the journal;
        resume the interpretation of pending sources."""
        base = storage_dir(hass, entry_id)
        host = settings.chroma_host
        table_path = Path(hass.config.path(".storage", DOMAIN, "qualified_pairs.json"))

        def _open() -> tuple[MemoryStore, Journal, SelectionBackend, QualificationTable]:
            base.mkdir(parents=True, exist_ok=True)
            # Setup reads this verified image of the state, not every Chroma record.
            checkpoint = Checkpoint(base / "memory.checkpoint", base / "journal.jsonl")
            if host:
                store = MemoryStore.open_http(host, settings.chroma_port, checkpoint=checkpoint)
            else:
                store = MemoryStore.open_persistent(base / "chroma", checkpoint=checkpoint)
            journal = Journal(base / "journal.jsonl")
            if journal.damage is None:
                try:
                    replay.reconcile(journal, store)  # a crash between journal and store
                except replay.ReconcileError as err:
                    journal.damage = Damage(err.sequence, err.reason)
                except Exception:
                    store.close()
                    raise
            # Off the event loop: trying CUDA compiles kernels and starts the owning thread.
            global _cpu_fallback_told  # noqa: PLW0603 - once per Home Assistant process
            backend = select_backend(
                settings.gpu,
                hass.config.path(".storage", DOMAIN, "cuda"),
                # Most homes have no GPU: the CPU is the expected path, said once, at INFO.
                fallback_level=logging.DEBUG if _cpu_fallback_told else logging.INFO,
            )
            _cpu_fallback_told |= settings.gpu == "auto" and isinstance(backend, CpuBackend)
            _load_selection(backend, store)
            return store, journal, backend, load_table(table_path)

        store, journal, backend, table = await hass.async_add_executor_job(_open)
        organ = cls(
            hass,
            entry_id=entry_id,
            client=client,
            settings=settings,
            store=store,
            journal=journal,
            table_path=table_path,
            table=table,
            selection=backend,
        )
        organ._report_damage()
        organ._kick()
        organ._warm_recall()
        return organ

    @callback
    def _warm_recall(self) -> None:
        """Read every memory once as a turn will, in the background after a start, so the first
        turn does not stem the whole store (about 0.15 s per 1,000 memories)."""

        async def warm() -> None:
            users = await self._hass.auth.async_get_users()
            names = {user.id: user.name for user in users if user.name}
            await self._hass.async_add_executor_job(self.store.warm_recall, names)

        self._hass.async_create_background_task(warm(), f"alto_warm_recall_{self._entry_id}")

    @callback
    def _report_damage(self) -> None:
        """A repair issue while the journal is damaged (one error line); none otherwise."""
        issue = f"{ISSUE_JOURNAL_DAMAGED}_{self._entry_id}"
        damage = self.journal.damage
        if damage is None:
            ir.async_delete_issue(self._hass, DOMAIN, issue)
            return
        LOGGER.error(
            "Memory journal %s is damaged at entry %d (%s): Alto recalls what it stored but "
            "writes no new memory until the journal is repaired",
            self.journal.path,
            damage.sequence,
            damage.reason,
        )
        ir.async_create_issue(
            self._hass,
            DOMAIN,
            issue,
            is_fixable=False,
            severity=ir.IssueSeverity.ERROR,
            translation_key=ISSUE_JOURNAL_DAMAGED,
            translation_placeholders={
                "entry": str(damage.sequence),
                "reason": damage.reason,
                "path": str(self.journal.path),
            },
        )

    async def _async_on_stop(self, _event: Event) -> None:
        self._unsub_stop = None  # fired: Home Assistant has removed the listener
        await self.async_close()

    async def async_close(self) -> None:
        """Stop interpreting (pending sources stay in the journal), wait for a running write,
        write the checkpoint and close the store. Idempotent: unload and stop both call it."""
        if self._closed:
            return
        self._closed = True
        if self._unsub_stop is not None:
            self._unsub_stop()
            self._unsub_stop = None
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
        async with self._rows_lock:

            def close() -> None:
                with self.journal.lock:  # an accept being written finishes first
                    self.store.close()

            await self._hass.async_add_executor_job(close)
            # The CUDA context is popped and detached in its owning thread, never at exit.
            await self._hass.async_add_executor_job(self.selection.close)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of `texts` as stored documents (what intake embeds)."""
        return await self._embed(self._instructions.document, texts)

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of `texts` as queries (what recall and the turn's selection embed)."""
        return await self._embed(self._instructions.query, texts)

    async def _embed(self, prefix: str, texts: list[str]) -> list[list[float]]:
        """Embeddings of `prefix` + each text, recent ones answered once."""
        texts = [prefix + text for text in texts]
        # Read before waiting: another caller may push these out of the recent texts meanwhile.
        known = {t: self._recent_vectors[t] for t in texts if t in self._recent_vectors}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            known.update(zip(missing, await self._embed_model(missing), strict=True))
        for text in texts:
            self._recent_vectors[text] = known[text]
            self._recent_vectors.move_to_end(text)
        while len(self._recent_vectors) > RECENT_VECTORS:
            self._recent_vectors.popitem(last=False)
        return [known[text] for text in texts]

    # -- state for entities -------------------------------------------------------------
    @property
    def requested_mode(self) -> Mode:
        """The mode the options ask for."""
        return Mode(self._settings.memory_mode)

    @property
    def effective_mode(self) -> Mode:
        """What conversation input gets: mode 2 only with a qualified model/processor pair."""
        mode, _status = mode_for_pair(self.requested_mode, self.model_digest, self._table)
        return mode if mode is not None else Mode.SOURCE

    @property
    def automatic_available(self) -> bool:
        """Whether the configured chat model is qualified for automatic memory."""
        return self._table.qualified(self.model_digest)

    def count(self) -> int:
        """Current memories across every scope (a number only, no content)."""
        return self.store.count_all()

    @callback
    def async_set_model_digest(self, digest: str | None) -> None:
        """The chat model's digest from `/api/tags` (the model half of a qualified pair)."""
        digest = normalize_digest(digest)
        if digest != self.model_digest:
            self.model_digest = digest
            self._changed()

    # -- writes ---------------------------------------------------------------------------
    async def async_accept_turn(
        self, text: str, *, source_id: str, actor: str | None
    ) -> IntakeReport:
        """Make a turn's source durable (journaled, fsync'd, no model call) before the reply
        returns; its interpretation follows in the background. Never raises."""
        owner = actor or HOUSEHOLD  # a known speaker's words are theirs; a satellite's, the home's
        item = IntakeInput(
            text=text,
            source_id=source_id,
            owner=owner,
            scope=owner,
            actor=actor,
            said_at=int(dt_util.utcnow().timestamp()),
        )
        try:
            report = await self._accepts.submit(item)
        except asyncio.CancelledError:
            if (task := asyncio.current_task()) is not None and task.cancelling():
                raise  # this turn is cancelled, not only the write it waited for
            report = _failed(STORE_ERROR, "intake")  # the write was cancelled: stopping
        if not report.admitted:
            self._refused_turn(item, report.reason, "")
            self._fire(report, item)
        elif report.mode == Mode.EXPLICIT.name.lower():
            self._fire(report, item)  # mode 0 keeps nothing of a turn: nothing follows
        else:
            self._kick()
        return report

    async def async_intake_turn(
        self, text: str, *, source_id: str, actor: str | None
    ) -> IntakeReport:
        """A turn's source accepted, then the outcome of its interpretation (which may wait
        for the embedding model to come back)."""
        key = (source_id, 1)
        future: asyncio.Future[IntakeReport] = self._hass.loop.create_future()
        self._waiters.setdefault(key, []).append(future)
        try:
            report = await self.async_accept_turn(text, source_id=source_id, actor=actor)
            if not report.admitted or report.mode == Mode.EXPLICIT.name.lower():
                return report
            return await future
        finally:
            waiting = self._waiters.get(key, [])
            if future in waiting:
                waiting.remove(future)
            if not waiting:
                self._waiters.pop(key, None)

    async def async_remember(
        self, text: str, *, owner: str, actor: str | None, source_id: str
    ) -> IntakeReport:
        """An explicit memory (`alto.remember`, a new todo item); remembers that arrive together
        are written as one entry."""
        item = IntakeInput(
            text=text,
            source_id=source_id,
            owner=owner,
            scope=owner,
            actor=actor,
            said_at=int(dt_util.utcnow().timestamp()),
        )
        report = await self._remembers.submit(item)
        self._fire(report, item)
        return report

    async def async_forget(self, ids: list[int], *, viewer: str | None) -> IntakeReport:
        """Forget memories the viewer can see (and what was interpreted from them)."""
        async with self._rows_lock:
            report = self._unwritable("forget") or await self._async_catch_up("forget")
            if report is None:
                try:
                    result = await intake.forget(
                        ids,
                        viewer=viewer,
                        store=self.store,
                        journal=self.journal,
                        run_blocking=self._hass.async_add_executor_job,
                    )
                    report = _report(result, op="forget")
                except Exception as err:  # a store failure is one report
                    report = self._write_failed(err, "forget")
        self._fire(report, None, actor=viewer)
        if report.admitted:
            await self._async_changed_rows()
        return report

    def _unwritable(self, op: str) -> IntakeReport | None:
        """Why nothing may be written now, if so: closed, or a damaged journal."""
        if self._closed:
            return _failed(STORE_ERROR, op)
        if self.journal.damage is not None:
            return _failed(JOURNAL_DAMAGED, op)
        return None

    def _write_failed(self, err: Exception, op: str) -> IntakeReport:
        """A write raised: journaled but not stored (the store catches up), or nothing written."""
        behind = isinstance(err, intake.StoreBehind)
        self._store_behind |= behind
        LOGGER.warning(
            "Memory write failed (%s): %s",
            "journaled, the store will catch up" if behind else "nothing written",
            err,
        )
        return _failed(STORE_PENDING if behind else STORE_ERROR, op)

    async def _async_catch_up(self, op: str) -> IntakeReport | None:
        """Apply journaled entries the store missed; a refusal report if it still cannot.
        The caller holds `_rows_lock`."""
        if not self._store_behind:
            return None
        try:
            await self._hass.async_add_executor_job(self._reconcile)
        except Exception as err:  # any store failure refuses the write
            LOGGER.warning("Memory store still failing, write refused: %s", err)
            return _failed(STORE_ERROR, op)
        self._store_behind = False
        self._changed()
        return None

    def _reconcile(self) -> None:
        replay.reconcile(self.journal, self.store)
        _load_selection(self.selection, self.store)

    async def _async_changed_rows(self) -> None:
        await self._hass.async_add_executor_job(_load_selection, self.selection, self.store)
        self._changed()

    async def _async_commit_accepts(self, items: list[IntakeInput]) -> list[IntakeReport]:
        """One ``accept`` entry for every admissible source among `items`."""
        if refused := self._unwritable("intake"):
            return [refused] * len(items)
        mode = self.requested_mode

        async def accept(batch: list[IntakeInput]) -> intake.IntakeResult:
            return await intake.accept(
                batch,
                mode=mode,
                store=self.store,
                journal=self.journal,
                run_blocking=self._hass.async_add_executor_job,
            )

        return await self._each(items, accept, "intake")

    async def _async_commit_remembers(self, items: list[IntakeInput]) -> list[IntakeReport]:
        """One ``remember`` entry for every admissible memory among `items`."""
        if refused := self._unwritable("remember"):
            return [refused] * len(items)
        # Embedded before the lock (texts that admission would refuse are not sent).
        fetched = await self._async_prefetch(
            [item.text for item in items if admit_source(item.text) is None]
        )
        async with self._rows_lock:
            if refused := self._unwritable("remember") or await self._async_catch_up("remember"):
                return [refused] * len(items)

            async def remember(batch: list[IntakeInput]) -> intake.IntakeResult:
                return await intake.remember(
                    batch,
                    store=self.store,
                    journal=self.journal,
                    embed=fetched,
                    run_blocking=self._hass.async_add_executor_job,
                )

            reports = await self._each(items, remember, "remember")
        if any(report.admitted for report in reports):
            await self._async_changed_rows()
        return reports

    async def _each(
        self,
        items: list[IntakeInput],
        write: Callable[[list[IntakeInput]], Awaitable[intake.IntakeResult]],
        op: str,
    ) -> list[IntakeReport]:
        """`write` the items as one batch; an input the batch is refused for gets that refusal
        and the rest is written again without it (admission refusals come before any model
        call, so that costs nothing). A refusal of no one input is every input's."""
        reports: dict[int, IntakeReport] = {}
        remaining = list(range(len(items)))
        while remaining:
            try:
                result = await write([items[i] for i in remaining])
            except Exception as err:  # a store failure is every input's report
                failed = self._write_failed(err, op)
                reports.update(dict.fromkeys(remaining, failed))
                break
            at = result.refusal.input_index if result.refusal is not None else None
            if result.admitted or at is None:
                reports.update(
                    (index, _report(result, position, op=op))
                    for position, index in enumerate(remaining)
                )
                break
            reports[remaining.pop(at)] = _report(result, op=op)
        return [reports[index] for index in range(len(items))]

    async def _async_prefetch(self, texts: Sequence[str]) -> intake.Embed:
        """Embed `texts` now; an `intake` embed function that answers them without a request
        (a failure now is its failure; a text not fetched is asked for then)."""
        found: dict[str, list[float]] = {}
        failure: Exception | None = None
        if texts:
            try:
                found = dict(zip(texts, await self.embed(list(texts)), strict=True))
            except Exception as err:  # intake turns it into its refusal
                failure = err

        async def fetched(wanted: list[str]) -> list[list[float]]:
            if failure is not None and any(text not in found for text in wanted):
                raise failure
            missing = [text for text in wanted if text not in found]
            if missing:
                found.update(zip(missing, await self.embed(missing), strict=True))
            return [found[text] for text in wanted]

        return fetched

    # -- interpretation of pending sources ----------------------------------------------------
    @callback
    def _kick(self) -> None:
        """Interpret pending sources now, unless that runs already (it takes new ones too)."""
        if self._closed or self._interpreting is not None or not len(self.journal.pending):
            return
        if self._retry is not None:
            self._retry()
            self._retry = None
        # Not started eagerly: `_interpreting` is set before the task can finish and clear it.
        self._interpreting = self._hass.async_create_background_task(
            self._async_interpret_pending(), "alto_memory_intake", eager_start=False
        )

    async def _async_interpret_pending(self) -> None:
        """Interpret pending sources, oldest first, up to 64 at a time, until none is left or
        an attempt fails for a transient reason (then they are tried again later)."""
        try:
            while not self._closed and self.journal.damage is None:
                batch = self.journal.pending.oldest(MAX_BATCH)
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
        if self._closed or self._retry is not None:
            return
        delay, self._retry_delay = self._retry_delay, min(self._retry_delay * 2, RETRY_MAX_S)

        @callback
        def retry(_now: Any) -> None:
            self._retry = None
            self._kick()

        self._retry = async_call_later(self._hass, delay, retry)

    async def _async_interpret(self, batch: list[Accepted]) -> bool:
        """Interpret one batch of pending sources of one requested mode; False when a transient
        failure (embedding or chat model) leaves them pending."""
        mode = batch[0].mode
        items = [accepted.item for accepted in batch]
        fetched = await self._async_prefetch([item.text for item in items])
        async with self._rows_lock:
            if self._closed or self._unwritable("intake") is not None:
                return True  # closing, or no write is possible: nothing to retry for now
            if await self._async_catch_up("intake") is not None:
                return False
            remaining, admitted = list(items), False
            while remaining:
                try:
                    result = await intake.run_intake(
                        remaining,
                        mode=mode,
                        store=self.store,
                        journal=self.journal,
                        embed=fetched,
                        call_model=self._call_model,
                        model_digest=self.model_digest,
                        table=self._table,
                        accepted=True,
                        run_blocking=self._hass.async_add_executor_job,
                    )
                except intake.StoreBehind as err:
                    # Journaled, so resolved: the store catches up before the next write.
                    behind = self._write_failed(err, "intake")
                    for item in remaining:
                        self._settled(behind, item)
                    return True
                except Exception as err:  # logged; the sources stay pending
                    self._interpretation_failed(len(remaining), f"{type(err).__name__}: {err}")
                    return False
                refusal = result.refusal
                if result.admitted:
                    for position, item in enumerate(remaining):
                        self._settled(_report(result, position, op="intake"), item)
                    admitted = True
                    break
                assert refusal is not None  # a result is admitted or says why not
                if refusal.reason in TRANSIENT:
                    self._interpretation_failed(len(remaining), _describe(refusal))
                    return False
                # Final: journaled as refused (one input, or all when no one input is to blame).
                index = refusal.input_index
                refused = [remaining.pop(index)] if index is not None else remaining
                try:
                    await intake.refuse(
                        refused,
                        refusal,
                        store=self.store,
                        journal=self.journal,
                        run_blocking=self._hass.async_add_executor_job,
                    )
                except Exception as err:  # logged; the sources stay pending
                    self._interpretation_failed(len(refused), f"{type(err).__name__}: {err}")
                    return False
                for item in refused:
                    self._refused_turn(item, refusal.reason.value, refusal.detail)
                    self._settled(_report(result, op="intake"), item)
                if index is None:
                    break
        if admitted:
            await self._async_changed_rows()
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

    def _refused_turn(self, item: IntakeInput, reason: str | None, detail: str) -> None:
        """One line for every turn whose memory is refused: never its text."""
        LOGGER.warning(
            "Memory of a turn refused (%s%s): source %s, %s scope",
            reason,
            f": {detail}" if detail else "",
            item.source_id,
            "household" if item.scope == HOUSEHOLD else "private",
        )

    @callback
    def _settled(self, report: IntakeReport, item: IntakeInput) -> None:
        """A pending source's outcome: its event, and anyone waiting for it."""
        self._fire(report, item)
        for future in self._waiters.pop(item.source_key, []):
            if not future.done():
                future.set_result(report)

    @callback
    def _fire(
        self, report: IntakeReport, item: IntakeInput | None, actor: str | None = None
    ) -> None:
        self._hass.bus.async_fire(
            EVENT_ADMITTED if report.admitted else EVENT_REFUSED,
            {
                "ids": report.ids,
                "mode": report.mode,
                "status": report.status,
                "reason": report.reason,
                "source_id": item.source_id if item is not None else None,
                "actor": item.actor if item is not None else actor,
            },
        )

    # -- reads ----------------------------------------------------------------------------
    async def async_recall(self, query: str, *, viewer: str | None, limit: int) -> list[Row]:
        """The best `limit` current memories for `query` the viewer may see (exact scores).

        The backend selects among the rows its snapshot's tags let the viewer see; a row that
        changed since (forgotten, superseded) is dropped against the current state.
        """
        codes = embedding_codes((await self.embed_queries([query]))[0])
        allowed = self.store.visibility(viewer)
        hits = await self.selection.async_top_k(codes, limit, allowed=allowed)
        found = self.store.get([row_id for row_id, _score in hits])
        return [row for row in found if row.status == CURRENT and visible_to(row, viewer)]

    async def async_turn_block(self, text: str, *, viewer: str | None) -> list[str]:
        """The lines of a user's turn's memory block, most relevant first
        (`memory.recall.turn_block`, each line a `memory.recall.memory_line`)."""
        if not self.store.has_rows():
            return []
        users = await self._hass.auth.async_get_users()
        names = {user.id: user.name for user in users if user.name}
        line = partial(recall.memory_line, now=int(dt_util.utcnow().timestamp()), names=names)
        codes = embedding_codes((await self.embed_queries([text]))[0])
        rows: list[Row] = await self._hass.async_add_executor_job(
            self.store.turn_block, codes, viewer, text, line, names
        )
        return [line(row) for row in rows]

    async def async_turn_context(self, text: str, *, viewer: str | None) -> str | None:
        """The turn's memory block as the model reads it, or None without one. Never raises."""
        try:
            lines = await self.async_turn_block(text, viewer=viewer)
        except Exception as err:
            LOGGER.warning("Memory selection for the turn failed: %s", err)
            return None
        return memory_block(lines) if lines else None

    def rows(self, viewer: str | None) -> list[Row]:
        """Current rows the viewer sees."""
        return self.store.rows(viewer)

    async def async_replay(self) -> dict[str, Any]:
        """Re-derive every journal entry without the model (it reads complete lines only, so
        writes may go on meanwhile)."""
        result: dict[str, Any] = await self._hass.async_add_executor_job(
            replay.replay, self.journal.path
        )
        return result

    async def async_qualify(self) -> dict[str, Any]:
        """Run the acceptance matrix against the chat model; record the pair only if all pass."""
        model = self._settings.model
        result = await run_acceptance(self._call_model)
        answers = result.answers()
        recorded = False
        if result.passed and self.model_digest:
            await self._hass.async_add_executor_job(
                record_qualification, self._table_path, self.model_digest, model, answers
            )
            self._table = await self._hass.async_add_executor_job(load_table, self._table_path)
            recorded = True
            self._changed()
        return {
            "model": model,
            "model_digest": self.model_digest,
            "processor_digest": result.processor_digest,
            "passed": result.passed,
            "recorded": recorded,
            "cases": len(answers),
            "failed": sum(1 for a in answers if not a.get("passed")),
            "answers": answers,
        }

    @callback
    def _changed(self) -> None:
        async_dispatcher_send(self._hass, signal_memory_changed(self._entry_id))


def _load_selection(backend: SelectionBackend, store: MemoryStore) -> None:
    """Give the backend the state's codes as they are now (the CPU shares them, no copy)."""
    snapshot = store.codes_snapshot()
    if snapshot is not None:  # nothing admitted yet: the first write sets the dimension
        backend.load(snapshot)


def _reason(refusal: Refusal | None) -> str | None:
    return refusal.reason.value if refusal is not None else None


def _describe(refusal: Refusal) -> str:
    return refusal.reason.value + (f": {refusal.detail}" if refusal.detail else "")
