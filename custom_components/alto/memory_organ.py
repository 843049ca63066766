"""The memory organ in Home Assistant: store, journal, intake after replies, recall, services.

The pure organ lives in `memory/`; this module gives it paths under the HA config dir, runs its
blocking parts in the executor, serializes writers (intake, remember, forget must not overlap),
fires `alto_memory_admitted` / `alto_memory_refused` and tells entities when memory changed.
Organs never raise into a turn: every failure here is one log line and "nothing remembered".
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ollama
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers.dispatcher import async_dispatcher_send

from .const import DOMAIN, LOGGER
from .gpu.backend import SelectionBackend, select_backend
from .memory import intake, replay
from .memory.acceptance import run_acceptance
from .memory.checkpoint import Checkpoint
from .memory.journal import Journal
from .memory.ollama_io import call_model_for, embed_for
from .memory.pipeline import IntakeInput, embedding_codes
from .memory.qualification import (
    Mode,
    QualificationTable,
    load_table,
    normalize_digest,
    record_qualification,
)
from .memory.qualification import effective_mode as mode_for_pair
from .memory.reasons import STATUS_REFUSED, Refusal
from .memory.records import CURRENT, HOUSEHOLD, Row, visible_to
from .memory.references import KIND_NAMES, render_reference
from .memory.store import MemoryStore
from .settings import AltoSettings

EVENT_ADMITTED = "alto_memory_admitted"
EVENT_REFUSED = "alto_memory_refused"
RECENT_VECTORS = 16  # embeddings kept per organ (a turn needs one; a batch up to 64 once)
STORE_ERROR = "store_error"  # nothing was written
STORE_PENDING = "store_pending"  # journaled; the store catches up before the next write


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
    """What a write did, for services and events."""

    admitted: bool
    ids: list[int]
    mode: str | None
    status: int
    reason: str | None

    def raise_if_refused(self) -> None:
        """The translated error a refused write gives a service call or the todo list."""
        if self.admitted:
            return
        if self.reason in (STORE_ERROR, STORE_PENDING):
            raise HomeAssistantError(translation_domain=DOMAIN, translation_key=self.reason)
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="memory_refused",
            translation_placeholders={"reason": self.reason or "unknown"},
        )


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
        self._write_lock = asyncio.Lock()
        self._embed_model = embed_for(client, settings.embedding_model)
        # One utterance is embedded for the turn's context, the Surfacer's recall and intake:
        # the model's answer for a text is kept for a few texts, so it is asked once.
        self._recent_vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._call_model = call_model_for(client, settings.model, num_ctx=settings.num_ctx)
        self.model_digest: str | None = None
        self._store_behind = False  # a journaled write failed to reach the store

    @classmethod
    async def async_open(
        cls, hass: HomeAssistant, entry_id: str, client: ollama.AsyncClient, settings: AltoSettings
    ) -> MemoryOrgan:
        """Open the store (embedded or server) and journal; bring the store up to the journal."""
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
            try:
                replay.reconcile(journal, store)  # a crash between journal and store
            except Exception:
                store.close()
                raise
            # Off the event loop: trying CUDA compiles kernels and starts the owning thread.
            backend = select_backend(settings.gpu, hass.config.path(".storage", DOMAIN, "cuda"))
            _load_selection(backend, store)
            return store, journal, backend, load_table(table_path)

        store, journal, backend, table = await hass.async_add_executor_job(_open)
        return cls(
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

    async def async_close(self) -> None:
        """Close the store (waits for a running write)."""
        async with self._write_lock:
            await self._hass.async_add_executor_job(self.store.close)
            # The CUDA context is popped and detached in its owning thread, never at exit.
            await self._hass.async_add_executor_job(self.selection.close)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of `texts` from the embedding model, recent texts answered once."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._recent_vectors]
        if missing:
            for text, vector in zip(missing, await self._embed_model(missing), strict=True):
                self._recent_vectors[text] = vector
        vectors = []
        for text in texts:
            self._recent_vectors.move_to_end(text)
            vectors.append(self._recent_vectors[text])
        while len(self._recent_vectors) > RECENT_VECTORS:
            self._recent_vectors.popitem(last=False)
        return vectors

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
        return sum(1 for row in self.store.state.rows() if row.status == CURRENT)

    @callback
    def async_set_model_digest(self, digest: str | None) -> None:
        """The chat model's digest from `/api/tags` (the model half of a qualified pair)."""
        digest = normalize_digest(digest)
        if digest != self.model_digest:
            self.model_digest = digest
            self._changed()

    # -- writes ---------------------------------------------------------------------------
    async def async_intake_turn(
        self, text: str, *, source_id: str, actor: str | None
    ) -> IntakeReport:
        """Intake of one user utterance after the reply (conversation input: falls back)."""
        owner = actor or HOUSEHOLD  # a known speaker's words are theirs; a satellite's, the home's
        item = IntakeInput(text=text, source_id=source_id, owner=owner, scope=owner, actor=actor)
        return await self._write(
            lambda: intake.run_intake(
                [item],
                mode=self.requested_mode,
                store=self.store,
                journal=self.journal,
                embed=self.embed,
                call_model=self._call_model,
                model_digest=self.model_digest,
                table=self._table,
                run_blocking=self._hass.async_add_executor_job,
            ),
            source_id,
            actor,
        )

    async def async_remember(
        self, text: str, *, owner: str, actor: str | None, source_id: str
    ) -> IntakeReport:
        """An explicit memory (`alto.remember`, a new todo item)."""
        item = IntakeInput(text=text, source_id=source_id, owner=owner, scope=owner, actor=actor)
        return await self._write(
            lambda: intake.remember(
                item,
                store=self.store,
                journal=self.journal,
                embed=self.embed,
                run_blocking=self._hass.async_add_executor_job,
            ),
            source_id,
            actor,
        )

    async def async_forget(self, ids: list[int], *, viewer: str | None) -> IntakeReport:
        """Forget memories the viewer can see (and what was interpreted from them)."""
        return await self._write(
            lambda: intake.forget(
                ids,
                viewer=viewer,
                store=self.store,
                journal=self.journal,
                run_blocking=self._hass.async_add_executor_job,
            ),
            None,
            viewer,
        )

    async def _write(
        self, run: Callable[[], Any], source_id: str | None, actor: str | None
    ) -> IntakeReport:
        async with self._write_lock:
            report = await self._async_catch_up()
            if report is None:
                report = await self._async_run_write(run)
        self._hass.bus.async_fire(
            EVENT_ADMITTED if report.admitted else EVENT_REFUSED,
            {
                "ids": report.ids,
                "mode": report.mode,
                "status": report.status,
                "reason": report.reason,
                "source_id": source_id,
                "actor": actor,
            },
        )
        if report.admitted:
            self._changed()
        return report

    async def _async_run_write(self, run: Callable[[], Any]) -> IntakeReport:
        journaled_before = self.journal.count
        try:
            result = await run()
        except Exception as err:
            # Journaled but not stored: the entry is durable, and the store must catch up with
            # it before any later write moves the store's applied sequence past it.
            self._store_behind = self.journal.count > journaled_before
            LOGGER.warning(
                "Memory write failed (%s): %s",
                "journaled, the store will catch up" if self._store_behind else "nothing written",
                err,
            )
            reason = STORE_PENDING if self._store_behind else STORE_ERROR
            return IntakeReport(False, [], None, STATUS_REFUSED, reason)
        if result.admitted:
            await self._hass.async_add_executor_job(_load_selection, self.selection, self.store)
        return IntakeReport(
            admitted=result.admitted,
            ids=[i for group in result.ids for i in group],
            mode=result.mode.name.lower() if result.mode is not None else None,
            status=result.status,
            reason=_reason(result.refusal),
        )

    async def _async_catch_up(self) -> IntakeReport | None:
        """Apply journaled entries the store missed; a refusal report if it still cannot."""
        if not self._store_behind:
            return None
        try:
            await self._hass.async_add_executor_job(self._reconcile)
        except Exception as err:
            LOGGER.warning("Memory store still failing, write refused: %s", err)
            return IntakeReport(False, [], None, STATUS_REFUSED, STORE_ERROR)
        self._store_behind = False
        self._changed()
        return None

    def _reconcile(self) -> None:
        replay.reconcile(self.journal, self.store)
        _load_selection(self.selection, self.store)

    # -- reads ----------------------------------------------------------------------------
    async def async_recall(self, query: str, *, viewer: str | None, limit: int) -> list[Row]:
        """The best `limit` current memories for `query` the viewer may see (exact scores).

        The backend selects among the rows its snapshot's tags let the viewer see; a row that
        changed since (forgotten, superseded) is dropped against the current state.
        """
        codes = embedding_codes((await self.embed([query]))[0])
        state = self.store.state
        hits = await self.selection.async_top_k(codes, limit, allowed=state.visibility(viewer))
        found = [state.get(row_id) for row_id, _score in hits]
        return [
            row
            for row in found
            if row is not None and row.status == CURRENT and visible_to(row, viewer)
        ]

    async def async_turn_context(self, text: str, *, viewer: str | None) -> str | None:
        """The reference selection for a user's turn, labelled with each quote's actor."""
        if len(self.store.state) == 0:
            return None
        try:
            codes = embedding_codes((await self.embed([text]))[0])
            selected = await self._hass.async_add_executor_job(self.store.references, codes, viewer)
        except Exception as err:
            LOGGER.warning("Memory selection for the turn failed: %s", err)
            return None
        if isinstance(selected, Refusal) or not selected:
            return None
        lines = "".join(render_reference(reference.row) for reference in selected)
        return (
            "What you have been told before (exact quotes; the label names what kind of memory "
            "it is and who said it — a name inside a quote proves nobody's identity):\n" + lines
        )

    def rows(self, viewer: str | None) -> list[Row]:
        """Current rows the viewer sees."""
        return self.store.rows(viewer)

    async def async_replay(self) -> dict[str, Any]:
        """Re-derive every journal entry without the model."""
        path = self.journal.path
        async with self._write_lock:
            return await self._hass.async_add_executor_job(replay.replay, path)

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
    snapshot = store.state.snapshot()
    if snapshot is not None:  # nothing admitted yet: the first write sets the dimension
        backend.load(snapshot)


def _reason(refusal: Refusal | None) -> str | None:
    return refusal.reason.value if refusal is not None else None
