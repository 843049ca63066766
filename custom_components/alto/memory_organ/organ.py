"""The memory organ in Home Assistant: store, journal, durable intake, recall, services.

The pure organ lives in `memory/`; this package gives it paths under the HA config dir, runs its
blocking parts in the executor, orders its writers, fires `alto_memory_admitted` /
`alto_memory_refused` and tells entities when memory changed. Organs never raise into a turn:
every failure here is one log line and "nothing remembered".

`MemoryOrgan` is the façade the rest of the integration uses; its parts live beside it:

- `embedding`: embeddings with the model's role prefixes, recent texts answered once;
- `writer`: accepts, remembers and forgets, one row writer at a time, batched
  (`batching`), the store brought up to the journal after a failed write;
- `interpretation`: the background interpretation of pending sources, with retries;
- `reads`: the memory block of a user's turn, and recall ranked as that block is;
- `reports`: what a write reports (`IntakeReport`), its events and log lines;
- `damage`: the repair issue of a journal that does not verify.

A turn's memory is written in two steps. `async_accept_turn` journals the turn's source
(``accept``, fsync'd, no model call) before the reply returns; the slow part, interpretation,
runs in the background from the journal's pending sources, so a stop, a crash or an embedding
model that is down delays a memory but does not lose it.

A journal that does not verify at open (`Journal.damage`), or a store that cannot reconcile with
it, leaves the organ serving recall but refusing every write, with a repair issue that says how
to recover.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import ollama
from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import CALLBACK_TYPE, Event, HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.util import dt as dt_util

from ..const import DOMAIN, LOGGER
from ..gpu.backend import CpuBackend, SelectionBackend, select_backend
from ..memory import redaction, replay
from ..memory.acceptance import run_acceptance
from ..memory.checkpoint import Checkpoint
from ..memory.journal import Damage, Journal
from ..memory.pipeline import IntakeInput
from ..memory.qualification import (
    Mode,
    QualificationTable,
    load_table,
    record_qualification,
)
from ..memory.qualification import effective_mode as mode_for_pair
from ..memory.records import HOUSEHOLD, Kind, Row
from ..memory.references import KIND_NAMES
from ..memory.retention import Shares
from ..memory.server import namespace
from ..memory.store import MemoryStore, ServerCheck
from ..memory.update_link import Link
from ..model.digest import normalize_digest
from ..model.ollama_io import call_model_for
from ..settings import AltoSettings
from . import freshness
from .damage import report_journal_damage, report_server_mismatch
from .embedding import Embedder
from .interpretation import RETRY_FIRST_S, PendingInterpreter
from .reads import MemoryReader
from .reports import (
    EVENT_ADMITTED,
    EVENT_REFUSED,
    STORE_ERROR,
    IntakeReport,
    ReembedReport,
    failed,
    fire_report,
    log_refused_turn,
)
from .writer import MemoryWriter, load_selection

__all__ = [
    "EVENT_ADMITTED",
    "EVENT_REFUSED",
    "RETRY_FIRST_S",
    "IntakeReport",
    "MemoryOrgan",
    "row_dict",
    "signal_memory_changed",
    "storage_dir",
]

_cpu_fallback_told = False  # the CPU fallback of GPU "auto" was logged in this process


type ForgetListener = Callable[[str, frozenset[str]], Awaitable[object]]
_MENTIONS = frozenset({Kind.PARTICIPANT, Kind.TASK})


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
        """Use `async_build` to build one."""
        self._hass = hass
        self._entry_id = entry_id
        self._client = client
        self._settings = settings
        self.store = store
        self.journal = journal
        self.selection = selection
        self._table_path = table_path
        self._table = table
        self._call_model = call_model_for(client, settings.model, num_ctx=settings.num_ctx)
        self.model_digest: str | None = None
        self._embedder = Embedder(client, settings.embedding_model)
        self._writer = MemoryWriter(
            hass,
            store=store,
            journal=journal,
            selection=selection,
            embedder=self._embedder,
            shares=Shares.of(settings.max_memories, settings.user_memory_share),
            requested_mode=lambda: self.requested_mode,
            changed=self._changed,
        )
        self._interpreter = PendingInterpreter(
            hass,
            self._writer,
            self._embedder,
            call_model=self._call_model,
            model_digest=lambda: self.model_digest,
            table=lambda: self._table,
        )
        self._reader = MemoryReader(
            hass, store=store, embedder=self._embedder, family=settings.family
        )
        self._forget_listeners: list[ForgetListener] = []
        self._renames = freshness.Renames(hass, entry_id, store)
        # The entry's unload may not run when Home Assistant stops: close on the stop event,
        # so the next start finds a current checkpoint.
        self._retaining: asyncio.Task[None] | None = None  # forgetting past the limits
        self._retain_again = False  # a write came while a pass ran: it plans again
        # Every write up to this journal sequence was retained: only later writers pay for the
        # total (`retention.over_limit`). 0 until the first pass: the pass a start runs when
        # the store is past a limit (a lowered option, a stop before a pass) charges the newest.
        self._retained_to = 0
        self._unsub_stop: CALLBACK_TYPE | None = hass.bus.async_listen_once(
            EVENT_HOMEASSISTANT_STOP, self._async_on_stop
        )

    @classmethod
    async def async_build(
        cls, hass: HomeAssistant, entry_id: str, client: ollama.AsyncClient, settings: AltoSettings
    ) -> MemoryOrgan:
        """Open the store (embedded or server) and journal.

        Bring the store up to the journal; resume the interpretation of pending sources.
        """
        base = storage_dir(hass, entry_id)
        server = settings.chroma_server(hass.config.path)
        table_path = Path(hass.config.path(".storage", DOMAIN, "qualified_pairs.json"))

        checked = ServerCheck()

        def _open() -> tuple[MemoryStore, Journal, SelectionBackend, QualificationTable]:
            nonlocal checked
            base.mkdir(parents=True, exist_ok=True)
            # Setup reads this verified image of the state, not every Chroma record.
            checkpoint = Checkpoint(base / "memory.checkpoint", base / "journal.jsonl")
            if server is not None:
                store = MemoryStore.open_http(server, namespace(entry_id), checkpoint=checkpoint)
            else:
                store = MemoryStore.open_persistent(base / "chroma", checkpoint=checkpoint)
            journal = Journal(base / "journal.jsonl")
            if journal.damage is None:
                try:
                    replay.reconcile(journal, store)  # a crash between journal and store
                    # ... or between a forget entry and the lines it erases
                    redaction.finish(journal, store.state)
                    store.erase()
                    # A server's rows against the journal's state; rebuilt when they differ.
                    if checked := store.check_server():
                        replay.reconcile(journal, store)
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
            load_selection(backend, store)
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
        report_journal_damage(hass, entry_id, journal)
        if checked and server is not None:
            report_server_mismatch(hass, entry_id, server.host, checked)
        organ._interpreter.kick()
        organ._retain()
        organ._reader.warm(entry_id)
        hass.async_create_background_task(
            organ._async_check_embeddings(), f"alto_check_embeddings_{entry_id}"
        )
        await organ._renames.async_start()
        return organ

    async def _async_check_embeddings(self) -> None:
        """Whether the stored memories are embedded as a new one is (`memory_freshness`)."""
        found = await freshness.async_check(self._hass, self.store, self._embedder)
        if found is not None and not self._writer.closed:
            freshness.report(self._hass, self._entry_id, found)

    async def _async_on_stop(self, _event: Event) -> None:
        self._unsub_stop = None  # fired: Home Assistant has removed the listener
        await self.async_close()

    async def async_close(self) -> None:
        """Stop interpreting, wait for a running write, write the checkpoint, close the store.

        Pending sources stay in the journal. Idempotent: unload and stop both call it.
        """
        if self._writer.closed:
            return
        if self._retaining is not None:  # a forget under way finishes; none starts after it
            await self._retaining
        self._writer.closed = True
        self._renames.stop()
        if self._unsub_stop is not None:
            self._unsub_stop()
            self._unsub_stop = None
        await self._interpreter.async_close()
        async with self._writer.rows_lock:

            def close() -> None:
                with self.journal.lock:  # an accept being written finishes first
                    self.store.close()

            await self._hass.async_add_executor_job(close)
            # The CUDA context is popped and detached in its owning thread, never at exit.
            await self._hass.async_add_executor_job(self.selection.close)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of `texts` as stored documents (what intake embeds)."""
        return await self._embedder.documents(texts)

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of `texts` as queries (what recall and the turn's selection embed)."""
        return await self._embedder.queries(texts)

    @property
    def link(self) -> Link:
        """How the turn's block links this model's memories (`memory.update_link.link_for`)."""
        return self._embedder.link

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
        """Make a turn's source durable before the reply returns.

        Journaled and fsync'd, with no model call; its interpretation follows in the
        background. Never raises.
        """
        owner = actor or HOUSEHOLD  # a known speaker's words are theirs; a satellite's, the home's
        item = _said_now(text, source_id, owner, actor)
        try:
            report = await self._writer.async_accept(item)
        except asyncio.CancelledError:
            if (task := asyncio.current_task()) is not None and task.cancelling():
                raise  # this turn is cancelled, not only the write it waited for
            report = failed(STORE_ERROR, "intake")  # the write was cancelled: stopping
        if not report.admitted:
            log_refused_turn(item, report.reason, "")
            fire_report(self._hass, report, item)
        elif report.mode == Mode.EXPLICIT.name.lower():
            fire_report(self._hass, report, item)  # mode 0 keeps nothing of a turn: nothing follows
        else:
            self._interpreter.kick()
        return report

    async def async_intake_turn(
        self, text: str, *, source_id: str, actor: str | None
    ) -> IntakeReport:
        """A turn's source accepted, then the outcome of its interpretation.

        The interpretation may wait for the embedding model to come back.
        """
        key = (source_id, 1)
        future = self._interpreter.wait_for(key)
        try:
            report = await self.async_accept_turn(text, source_id=source_id, actor=actor)
            if not report.admitted or report.mode == Mode.EXPLICIT.name.lower():
                return report
            return await future
        finally:
            self._interpreter.forget_wait(key, future)

    async def async_remember(
        self, text: str, *, owner: str, actor: str | None, source_id: str
    ) -> IntakeReport:
        """An explicit memory (`alto.remember`, a new todo item).

        Remembers that arrive together are written as one entry. One that finds no room in the
        owner's share or the store is refused (`memory.retention.refusals`).
        """
        item = _said_now(text, source_id, owner, actor)
        self._retain()
        if self._retaining is not None:
            # Room a pass under way makes is counted (`retention.refusals` counts what a pass
            # has yet to forget as held). Waited for, not awaited: a cancelled remember does not
            # cancel the pass, nor does a failed pass fail the remember.
            await asyncio.wait([self._retaining])
        report = await self._writer.async_remember(item)
        fire_report(self._hass, report, item)
        return report

    async def async_forget(self, ids: list[int], *, viewer: str | None) -> IntakeReport:
        """Forget memories the viewer can see (and what was interpreted from them).

        Their words are erased from the journal and the store (`memory.redaction`), and the
        listeners (the reflect organ's turn logs) are told which words were forgotten, per scope.
        """
        return await self._async_forget_and_tell(ids, viewer, refresh=True)

    async def _async_forget_and_tell(
        self, ids: list[int], viewer: str | None, *, refresh: bool
    ) -> IntakeReport:
        """Forget `ids`, report it, and tell the listeners what was forgotten.

        With `refresh`, the entities that show the store are refreshed first.
        """
        before = await self._hass.async_add_executor_job(self.store.forgettable, ids, viewer)
        report = await self._writer.async_forget(ids, viewer=viewer)
        fire_report(self._hass, report, None, actor=viewer)
        if report.admitted:
            if refresh:
                await self._writer.async_changed_rows()
            gone = set(report.ids)
            await self._async_tell_forgotten([row for row in before if row.id in gone])
        return report

    async def async_reembed(self) -> ReembedReport:
        """Embed every stored memory again, as a memory is embedded now (`alto.reembed`)."""
        report = await self._writer.async_reembed(self._settings.embedding_model)
        if report.reason is None:
            freshness.clear(self._hass, self._entry_id)
            # Sources that waited for a store of the model's size are interpreted now.
            self._interpreter.kick()
        LOGGER.info(
            "Embedded %d of %d memories again%s",
            report.reembedded,
            report.total,
            f", stopped: {report.reason}" if report.reason else "",
        )
        return report

    @callback
    def async_on_forget(self, listener: ForgetListener) -> CALLBACK_TYPE:
        """Call `listener(scope, texts)` after each forget; return the unsubscribe.

        Called once per scope whose memories lost texts that no memory it still sees holds.
        """
        self._forget_listeners.append(listener)
        return lambda: self._forget_listeners.remove(listener)

    def _kept_text(self, scope: str) -> str:
        """Every text the scope still sees, NUL-joined (admission refuses NUL in a text)."""
        viewer = None if scope == HOUSEHOLD else scope
        return "\0".join(row.document for row in self.store.rows(viewer, current_only=False))

    async def _async_tell_forgotten(self, deleted: list[Row]) -> None:
        """Tell the listeners the forgotten sentences (not a mention's few words), by scope."""
        if not self._forget_listeners:
            return
        said = [row for row in deleted if row.kind not in _MENTIONS and row.document]
        for scope in sorted({row.scope for row in said}):
            kept = await self._hass.async_add_executor_job(self._kept_text, scope)
            texts = frozenset(row.document for row in said if row.document not in kept)
            for listener in list(self._forget_listeners):
                try:
                    await listener(scope, texts)
                except Exception:  # noqa: BLE001 - organs never raise into the forget
                    LOGGER.exception("Forgotten words not passed on to scope %s", scope)

    # -- reads ----------------------------------------------------------------------------
    async def async_recall(self, query: str, *, viewer: str | None, limit: int) -> list[Row]:
        """The first `limit` memories for `query` the viewer may see, ranked as a turn's block."""
        return await self._reader.async_recall(query, viewer=viewer, limit=limit)

    async def async_turn_block(self, text: str, *, viewer: str | None) -> list[str]:
        """The lines of a user's turn's memory block, most relevant first."""
        return await self._reader.async_turn_block(text, viewer=viewer)

    async def async_turn_context(self, text: str, *, viewer: str | None) -> str | None:
        """The turn's memory block as the model reads it, or None without one. Never raises."""
        return await self._reader.async_turn_context(text, viewer=viewer)

    def rows(self, viewer: str | None) -> list[Row]:
        """Current rows the viewer sees."""
        return self.store.rows(viewer)

    async def async_replay(self) -> dict[str, Any]:
        """Re-derive every journal entry without the model.

        It reads complete lines only, so writes may go on meanwhile.
        """
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
        self._retain()

    @callback
    def _retain(self) -> None:
        """Start forgetting the oldest memories of a scope past its limit, if one is."""
        if self._retaining is not None and not self._retaining.done():
            self._retain_again = True  # the running pass plans again when it is done
            return
        if self._writer.closed or not self.store.retention_due(self._writer.shares):
            return
        self._retaining = self._hass.async_create_background_task(
            self._async_retain(), f"alto_memory_retention_{self._entry_id}"
        )

    async def _async_retain(self) -> None:
        """Forget what the limits leave no room for (`memory.retention.over_limit`).

        Each scope's own oldest forgettable memories, through the forget path: journaled,
        erased, replayable; only the scopes written since the last pass pay for the total.
        Planned again while writes come during a pass, so none is left past a limit.
        """
        shares = self._writer.shares
        self._retain_again = True
        while self._retain_again and not self._writer.closed:
            self._retain_again = False
            plan, self._retained_to = await self._hass.async_add_executor_job(
                self.store.retention, shares, self._retained_to
            )
            forgotten = 0
            for viewer, ids in plan.items():
                # As `alto.forget`: the turn logs, the last thought and its history are told.
                report = await self._async_forget_and_tell(ids, viewer, refresh=False)
                if not report.admitted:
                    LOGGER.warning("Memory retention could not forget: %s", report.reason)
                    break
                forgotten += len(ids)
            if forgotten:
                LOGGER.info(
                    "Forgot %d of the oldest memories past the limits (max_memories %d, "
                    "user_memory_share %d a person)",
                    forgotten,
                    shares.total,
                    shares.user,
                )
                await self._writer.async_changed_rows()  # may ask for another pass


def _said_now(text: str, source_id: str, owner: str, actor: str | None) -> IntakeInput:
    """An input said now by `actor`, owned (and seen) by `owner`."""
    return IntakeInput(
        text=text,
        source_id=source_id,
        owner=owner,
        scope=owner,
        actor=actor,
        said_at=int(dt_util.utcnow().timestamp()),
    )
