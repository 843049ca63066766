"""The memory organ's writes: accepts, remembers, forgets and re-embedding, in order, batched.

Accepts need no lock of this module (`memory.intake` appends under `Journal.lock`, and an
accept changes no row); remember, forget and interpretation (`memory_interpretation`) change
rows and run one at a time (`rows_lock`). Embeddings are fetched before taking that lock, so a
slow embedding model holds up no other write. Accepts and remembers that arrive while one of
their kind is being written are written together, as one entry of up to 64 inputs
(`memory_batching.Coalescer`): one fsync and one store write for all. A remember that no room
can be made for within the limits (`memory.retention.refusals`) is refused under `rows_lock`,
so remembers written together cannot pass a limit between them.

A write that reached the journal but not the store leaves the store behind: the next write
first brings it up to the journal (`replay.reconcile`), or is refused while it cannot. Nothing
is written once the organ is closed or while the journal is damaged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from homeassistant.core import HomeAssistant

from ..const import LOGGER
from ..gpu.backend import SelectionBackend
from ..memory import intake, redaction, replay
from ..memory.journal import Journal
from ..memory.pipeline import MAX_BATCH, IntakeInput, said_by
from ..memory.qualification import Mode
from ..memory.reasons import Reason
from ..memory.records import Row
from ..memory.retention import Shares
from ..memory.spans import admit_source
from ..memory.store import MemoryStore
from .batching import Coalescer
from .embedding import Embedder, async_user_names
from .reports import (
    EMBEDDING_DIMENSION,
    EMBEDDING_FAILED,
    JOURNAL_DAMAGED,
    REEMBED_RUNNING,
    STORE_ERROR,
    STORE_PENDING,
    IntakeReport,
    ReembedReport,
    failed,
    report_of,
)

type Write = Callable[[list[IntakeInput]], Awaitable[intake.IntakeResult]]


def load_selection(backend: SelectionBackend, store: MemoryStore) -> None:
    """Give the backend the store's codes as they are now (the CPU shares them, no copy)."""
    snapshot = store.codes_snapshot()
    if snapshot is not None:  # nothing admitted yet: the first write sets the dimension
        backend.load(snapshot)


class MemoryWriter:
    """The only writer of one entry's store and journal (the organ's `closed` flag too)."""

    def __init__(
        self,
        hass: HomeAssistant,
        *,
        store: MemoryStore,
        journal: Journal,
        selection: SelectionBackend,
        embedder: Embedder,
        shares: Shares,
        requested_mode: Callable[[], Mode],
        changed: Callable[[], None],
    ) -> None:
        """Write to `store` and `journal` within `shares`; `changed` tells that memory changed."""
        self._hass = hass
        self.store = store
        self.shares = shares
        self.journal = journal
        self.selection = selection
        self._embedder = embedder
        self._requested_mode = requested_mode
        self._changed = changed
        self.rows_lock = asyncio.Lock()
        self.closed = False
        self._reembedding = False
        self._store_behind = False  # a journaled write failed to reach the store
        self._accepts: Coalescer[IntakeInput, IntakeReport] = Coalescer(
            hass, "alto_memory_accept", self._async_commit_accepts
        )
        self._remembers: Coalescer[IntakeInput, IntakeReport] = Coalescer(
            hass, "alto_memory_remember", self._async_commit_remembers
        )

    async def async_accept(self, item: IntakeInput) -> IntakeReport:
        """Journal a turn's source, with the accepts that arrive meanwhile."""
        return await self._accepts.submit(item)

    async def async_remember(self, item: IntakeInput) -> IntakeReport:
        """Write an explicit memory, with the remembers that arrive meanwhile."""
        return await self._remembers.submit(item)

    async def async_forget(self, ids: list[int], *, viewer: str | None) -> IntakeReport:
        """Forget memories the viewer can see (and what was interpreted from them).

        An id the viewer may not see is refused as one that does not exist (`unknown_id`), by
        the same path: a forget must not tell whether someone else's private memory exists.
        """
        async with self.rows_lock:
            report = self.unwritable("forget") or await self.async_catch_up("forget")
            if report is None:
                try:
                    result = await intake.forget(
                        ids,
                        viewer=viewer,
                        store=self.store,
                        journal=self.journal,
                        run_blocking=self._hass.async_add_executor_job,
                    )
                    report = report_of(result, op="forget")
                except Exception as err:  # noqa: BLE001 - a store failure is one report
                    report = self.write_failed(err, "forget")
        if report.reason == Reason.NOT_VISIBLE:
            report.reason = Reason.UNKNOWN_ID.value
        return report

    async def async_reembed(self, model: str) -> ReembedReport:
        """Embed every stored memory again as intake embeds one now (`alto.reembed`).

        For a store written before the embedding model's role prefixes or the speakers' names
        were embedded, or with another model: recall compares a question with memories embedded
        one way. It goes 64 memories at a time, each batch embedded before `rows_lock` and
        written as one ``reembed`` entry, so turns go on writing in between; a memory written
        meanwhile is already embedded this way. A failure stops it where it is: what was done
        stays done, and calling it again does it all again. A model of another size moves the
        whole store at once instead (`_async_resize`).
        """
        if self._reembedding:
            return ReembedReport(0, 0, REEMBED_RUNNING)
        self._reembedding = True
        try:
            return await self._async_reembed(model)
        finally:
            self._reembedding = False

    async def _async_reembed(self, model: str) -> ReembedReport:
        ids = await self._hass.async_add_executor_job(self.store.ids)
        names = await async_user_names(self._hass)
        done = 0
        try:
            for start in range(0, len(ids), MAX_BATCH):
                rows = await self._hass.async_add_executor_job(
                    self.store.get, ids[start : start + MAX_BATCH]
                )
                if not rows:
                    continue
                vectors = await self._embed_again(rows, names)
                if vectors is None:
                    return ReembedReport(done, len(ids), EMBEDDING_FAILED)
                dim = self.store.state.dim
                if dim is not None and any(len(vector) != dim for vector in vectors):
                    if done or len({len(vector) for vector in vectors}) != 1:
                        return ReembedReport(done, len(ids), EMBEDDING_DIMENSION)
                    first = list(zip(rows, vectors, strict=True))
                    return await self._async_resize(model, names, first)
                async with self.rows_lock:
                    report = self.unwritable("reembed") or await self.async_catch_up("reembed")
                    if report is not None:
                        return ReembedReport(done, len(ids), report.reason)
                    result = await self._write_reembed(rows, vectors, model)
                    if result.admitted:
                        done += len(result.ids[0])
                        await self._hass.async_add_executor_job(
                            load_selection, self.selection, self.store
                        )
                    elif result.refusal is not None and result.refusal.reason != Reason.UNKNOWN_ID:
                        return ReembedReport(done, len(ids), result.refusal.reason.value)
        except Exception as err:  # noqa: BLE001 - a store failure stops it here
            return ReembedReport(done, len(ids), self.write_failed(err, "reembed").reason)
        finally:
            if done:
                self._changed()
        return ReembedReport(done, len(ids), None)

    async def _async_resize(
        self, model: str, names: dict[str, str], first: list[tuple[Row, list[float]]]
    ) -> ReembedReport:
        """Every memory embedded by a model of another size, written as one ``reembed`` entry.

        A store holds vectors of one size, so no memory can move alone. Every memory is embedded
        first, 64 at a time, while turns go on; then, holding `rows_lock`, the memories written
        or written again since are embedded too and all are written at once. Until then the
        stored memories keep their old vectors (recall of the new model's questions finds none
        of them) and new ones wait as pending sources; a failure writes nothing. `first`: the
        rows already embedded (the batch that found the new size), not asked for again.
        """
        embedded = {row.id: (row.sequence, vector) for row, vector in first}

        async def embed(rows: list[Row]) -> bool:
            """Embed the rows not embedded as they are now; False when the model failed."""
            rows = [row for row in rows if embedded.get(row.id, (None,))[0] != row.sequence]
            for start in range(0, len(rows), MAX_BATCH):
                batch = rows[start : start + MAX_BATCH]
                vectors = await self._embed_again(batch, names)
                if vectors is None:
                    return False
                embedded.update(
                    (row.id, (row.sequence, vector))
                    for row, vector in zip(batch, vectors, strict=True)
                )
            return True

        def stored() -> list[Row]:
            return self.store.get(self.store.ids())

        rows = await self._hass.async_add_executor_job(stored)
        if not await embed(rows):
            return ReembedReport(0, len(rows), EMBEDDING_FAILED)
        async with self.rows_lock:
            report = self.unwritable("reembed") or await self.async_catch_up("reembed")
            if report is not None:
                return ReembedReport(0, len(rows), report.reason)
            rows = await self._hass.async_add_executor_job(stored)
            if not await embed(rows):
                return ReembedReport(0, len(rows), EMBEDDING_FAILED)
            vectors = [embedded[row.id][1] for row in rows]
            result = await self._write_reembed(rows, vectors, model)
            if not result.admitted:
                reason = result.refusal.reason.value if result.refusal else None
                return ReembedReport(0, len(rows), reason or EMBEDDING_DIMENSION)
            await self._hass.async_add_executor_job(load_selection, self.selection, self.store)
        self._changed()
        try:  # the old vectors' index files
            await self._hass.async_add_executor_job(self.store.erase)
        except Exception as err:  # noqa: BLE001 - tried again at the next start
            LOGGER.warning("The old memory index was not removed: %s", err)
        return ReembedReport(len(rows), len(rows), None)

    async def _embed_again(
        self, rows: list[Row], names: dict[str, str]
    ) -> list[list[float]] | None:
        """The rows embedded as a new memory is now (the model asked anew); None if it failed."""
        said = [said_by(row.document, row.actor, names) for row in rows]
        try:
            return await self._embedder.documents(said, anew=True)
        except Exception as err:  # noqa: BLE001 - any model failure stops re-embedding
            LOGGER.warning("Re-embedding stopped: the embedding model failed: %r", err)
            return None

    async def _write_reembed(
        self, rows: list[Row], vectors: list[list[float]], model: str
    ) -> intake.IntakeResult:
        """One ``reembed`` entry (`intake.reembed`); the caller holds `rows_lock`."""
        return await intake.reembed(
            rows,
            vectors,
            model=model,
            store=self.store,
            journal=self.journal,
            run_blocking=self._hass.async_add_executor_job,
        )

    def unwritable(self, op: str) -> IntakeReport | None:
        """Why nothing may be written now, if so: closed, or a damaged journal."""
        if self.closed:
            return failed(STORE_ERROR, op)
        if self.journal.damage is not None:
            return failed(JOURNAL_DAMAGED, op)
        return None

    def write_failed(self, err: Exception, op: str) -> IntakeReport:
        """A write raised: journaled but not stored (the store catches up), or nothing written."""
        behind = isinstance(err, intake.StoreBehind)
        self._store_behind |= behind
        LOGGER.warning(
            "Memory write failed (%s): %s",
            "journaled, the store will catch up" if behind else "nothing written",
            err,
        )
        return failed(STORE_PENDING if behind else STORE_ERROR, op)

    async def async_catch_up(self, op: str) -> IntakeReport | None:
        """Apply journaled entries the store missed; a refusal report if it still cannot.

        The caller holds `rows_lock`.
        """
        if not self._store_behind:
            return None
        try:
            await self._hass.async_add_executor_job(self._reconcile)
        except Exception as err:  # noqa: BLE001 - any store failure refuses the write
            LOGGER.warning("Memory store still failing, write refused: %s", err)
            return failed(STORE_ERROR, op)
        self._store_behind = False
        self._changed()
        return None

    def _reconcile(self) -> None:
        replay.reconcile(self.journal, self.store)
        with self.journal.lock:  # a forget that failed in the store left its lines unwritten
            redaction.finish(self.journal, self.store.state)
        self.store.erase()  # ... and its records in Chroma
        load_selection(self.selection, self.store)

    async def async_changed_rows(self) -> None:
        """Rows changed: the selection backend reloads its codes, entities are told."""
        await self._hass.async_add_executor_job(load_selection, self.selection, self.store)
        self._changed()

    async def _async_commit_accepts(self, items: list[IntakeInput]) -> list[IntakeReport]:
        """One ``accept`` entry for every admissible source among `items`."""
        if refused := self.unwritable("intake"):
            return [refused] * len(items)
        mode = self._requested_mode()

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
        if refused := self.unwritable("remember"):
            return [refused] * len(items)
        # Embedded before the lock (texts that admission would refuse are not sent), each after
        # the name of who asked, as intake embeds it.
        names = await async_user_names(self._hass)
        fetched = await self._embedder.prefetch(
            [
                said_by(item.text, item.actor, names)
                for item in items
                if admit_source(item.text) is None
            ]
        )
        async with self.rows_lock:
            if refused := self.unwritable("remember") or await self.async_catch_up("remember"):
                return [refused] * len(items)
            no_room = await self._refused_for_room(items)
            roomy = [item for item, report in zip(items, no_room, strict=True) if report is None]

            async def remember(batch: list[IntakeInput]) -> intake.IntakeResult:
                return await intake.remember(
                    batch,
                    store=self.store,
                    journal=self.journal,
                    embed=fetched,
                    run_blocking=self._hass.async_add_executor_job,
                    names=names,
                )

            written = iter(await self._each(roomy, remember, "remember"))
        reports = [next(written) if report is None else report for report in no_room]
        if any(report.admitted for report in reports):
            await self.async_changed_rows()
        return reports

    async def _refused_for_room(self, items: list[IntakeInput]) -> list[IntakeReport | None]:
        """Per remember, its refusal when the limits leave it no room; None when there is.

        The caller holds `rows_lock`: no row changes between this and the write.
        """
        reasons = await self._hass.async_add_executor_job(self.store.refusals, items, self.shares)
        for reason in set(reasons) - {None}:
            LOGGER.warning(
                "Memory refused (%s): one person may keep %d memories, everyone %d "
                "(user_memory_share, max_memories); nothing was forgotten for it",
                reason,
                self.shares.user,
                self.shares.total,
            )
        return [None if reason is None else failed(reason.value, "remember") for reason in reasons]

    async def _each(self, items: list[IntakeInput], write: Write, op: str) -> list[IntakeReport]:
        """`write` the items as one batch.

        An input the batch is refused for gets that refusal and the rest is written again
        without it (admission refusals come before any model call, so that costs nothing). A
        refusal of no one input is every input's.
        """
        reports: dict[int, IntakeReport] = {}
        remaining = list(range(len(items)))
        while remaining:
            try:
                result = await write([items[i] for i in remaining])
            except Exception as err:  # noqa: BLE001 - a store failure is every input's report
                reports.update(dict.fromkeys(remaining, self.write_failed(err, op)))
                break
            at = result.refusal.input_index if result.refusal is not None else None
            if result.admitted or at is None:
                reports.update(
                    (index, report_of(result, position, op=op))
                    for position, index in enumerate(remaining)
                )
                break
            reports[remaining.pop(at)] = report_of(result, op=op)
        return [reports[index] for index in range(len(items))]
