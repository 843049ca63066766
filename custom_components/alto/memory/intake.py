"""Intake, the only writers of memory: accept, run_intake, refuse, remember, forget, reembed.

All follow one order: decide everything in memory, append the journal entry (fsync'd), then
apply the mutation to the store. Any refusal happens before the journal append, so a refused
request leaves the journal file and the Chroma collections byte-identical. If the store write
fails after the append, the entry is durable: reopen the store and `replay.reconcile` it.

A conversational turn is written in two steps (see `pending`): `accept` journals its source
before the reply returns (no model call), and `run_intake(..., accepted=True)` interprets it
later, after a restart if need be. A refusal of that interpretation is either `TRANSIENT` (the
embedding model or the chat model failed: the source stays pending and is tried again) or
final, which `refuse` journals so the source is not tried again.

`run_intake(batch, ...)` admits 1..64 `IntakeInput`s whole or refuses them whole:

1. `qualification.effective_mode` (status 12 before any model call: a direct request refuses,
   conversation input falls back to mode 1); mode 0 retains nothing automatically;
2. admission of every input (`pipeline.check_batch`); in mode 2 every call-1 prompt and output
   reservation is checked before the first call;
3. one `embed` call for the source texts, each after its speaker's name (`pipeline.said_by`):
   the source rows' vectors and the selection queries;
4. mode 2: call 1 per input, strict parse; then the pre-write selection, correction table and
   call 2 per input with accepted statements, strict parse; one `embed` call for every quote;
5. `pipeline.assemble` (duplicate/stale targets, stale required references), journal, store.

Callables (the HA layer adapts Ollama to them, see `model.ollama_io`):
``call_model(messages, schema) -> str`` returns the complete raw response of one chat call
(temperature 0, `format=schema`); ``embed(texts) -> list[list[float]]`` one vector per text.
Both may raise; that refuses the batch. ``run_blocking(fn) -> awaitable`` runs blocking work:
source segmentation, the journal append and the store write (HA: ``hass.async_add_executor_job``);
by default it runs inline.
Callers serialize writers (one intake, remember or forget at a time per store).

Journal entry of an intake (see `journal` for the chain fields)::

    {"op": "intake", "request": {"mode", "direct", "inputs": [IntakeInput.to_json()]},
     "mode": effective mode, "status": 0 | 12, "model_digest", "processor_digest",
     "profile_digest", "calls": [per input in mode 2: {"statement": call record,
     "classification": call record, "selection": [[id, score]], "table": [TableEntry]}],
     "mutation": Mutation.to_json(), "vectors": base64 float32 per upserted row}

A call record is {"response": exact raw text, "model_digest", "processor_digest", "executed":
0 | 1, "items": parsed item count, "spans": source span count (statement call only)}.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..model.calls import CallModel, Embed, Message
from ..model.digest import normalize_digest
from ..model.schemas import Schema
from . import redaction
from .journal import REDACT, REEMBED, Journal
from .parse import Classification, parse_statements
from .pending import ACCEPT, REFUSE
from .pipeline import (
    MAX_BATCH,
    ClassificationPlan,
    IntakeInput,
    Provenance,
    StatementPlan,
    assemble,
    check_batch,
    classify,
    explicit_rows,
    forget_ids,
    inferred_rows,
    plan_classification,
    plan_statements,
    quotes,
    reembedded,
    repeat_of,
    said_by,
    source_row,
)
from .profile import processor_digest, profile_digest
from .qualification import Mode, QualificationTable, effective_mode
from .reasons import TRANSIENT, Reason, Refusal, Status
from .records import KIND_SOURCE, Mutation, Row
from .store import MemoryStore

RunBlocking = Callable[[Callable[[], Any]], Awaitable[Any]]

NO_PAIRS = QualificationTable(frozenset())


@dataclass(frozen=True, slots=True)
class IntakeResult:
    """The outcome: admitted or refused (`refusal` says why; nothing was written).

    `mode` is the effective mode (None when refused before one was chosen, and for forget),
    `status` 0, 12 (unqualified pair: refused, or fallen back to mode 1) or 1 (other refusal).
    `sequence` is the journal sequence written (0 when nothing was). `ids` holds, per input, the
    object ids written (source row first, then inferred rows in order); for forget, one tuple of
    every deleted id. `superseded` lists the assertions that corrections replaced.
    """

    admitted: bool
    mode: Mode | None
    status: Status
    refusal: Refusal | None = None
    sequence: int = 0
    ids: tuple[tuple[int, ...], ...] = ()
    superseded: tuple[int, ...] = ()


def _refused(refusal: Refusal, mode: Mode | None = None) -> IntakeResult:
    return IntakeResult(False, mode, refusal.status, refusal)


async def _inline(function: Callable[[], Any]) -> Any:
    return function()


async def _embed(embed: Embed, texts: list[str], dim: int | None) -> list[bytes] | Refusal:
    """Validated float32 vectors, one per text, all of the store's dimension."""
    if not texts:
        return []
    try:
        vectors = await embed(texts)
    except Exception as err:  # noqa: BLE001 - any substrate failure refuses the batch
        return Refusal(Reason.EMBEDDING_FAILED, detail=type(err).__name__)
    return _checked(vectors, len(texts), dim)


def _checked(vectors: object, count: int, dim: int | None) -> list[bytes] | Refusal:
    """`count` float32 vectors as stored, all of the store's dimension, or why they are not."""
    if not isinstance(vectors, list) or len(vectors) != count:
        return Refusal(Reason.EMBEDDING_FAILED, detail="wrong vector count")
    result: list[bytes] = []
    for vector in vectors:
        try:
            array = np.asarray(vector, dtype="<f4")
        except (TypeError, ValueError):
            return Refusal(Reason.EMBEDDING_FAILED, detail="not a vector")
        size = dim or (len(result[0]) // 4 if result else array.size)
        # Checked in float32, the stored form: a value can overflow or underflow on conversion.
        if array.shape != (size,) or not np.isfinite(array).all() or not array.any():
            return Refusal(Reason.EMBEDDING_FAILED, detail="bad dimension or values")
        result.append(array.tobytes())
    return result


async def _call(
    call_model: CallModel, messages: list[Message], schema: Schema, gate: asyncio.Semaphore
) -> str | Refusal:
    async with gate:
        try:
            return await call_model(messages, schema)
        except Exception as err:  # noqa: BLE001 - any substrate failure refuses the batch
            return Refusal(Reason.MODEL_CALL_FAILED, detail=type(err).__name__)


def _record(response: str, model: str, *, executed: int, items: int) -> dict[str, Any]:
    return {
        "response": response,
        "model_digest": model,
        "processor_digest": processor_digest(),
        "executed": executed,
        "items": items,
    }


def _all[T](values: Sequence[T | Refusal]) -> list[T] | Refusal:
    """The values, or the first refusal among them attributed to its input."""
    for index, value in enumerate(values):
        if isinstance(value, Refusal):
            return value if value.input_index is not None else value.at(index)
    return cast(list[T], list(values))


@dataclass(frozen=True, slots=True)
class _Interpretation:
    """Mode-2 results for one input, ready to record and to turn into rows."""

    plan: ClassificationPlan
    classification: Classification
    record: dict[str, Any]


async def _interpret(
    batch: list[IntakeInput],
    plans: list[StatementPlan],
    vectors: list[bytes],
    store: MemoryStore,
    *,
    call_model: CallModel,
    model: str,
    parallel: int,
) -> list[_Interpretation] | Refusal:
    """Both calls for every input, each response parsed completely before anything is kept."""
    gate = asyncio.Semaphore(parallel)
    first = _all(
        await asyncio.gather(*(_call(call_model, p.messages, p.schema, gate) for p in plans))
    )
    if isinstance(first, Refusal):
        return first
    found = _all(
        [parse_statements(raw, plan.texts) for raw, plan in zip(first, plans, strict=True)]
    )
    if isinstance(found, Refusal):
        return found
    seconds = _all(
        [
            plan_classification(item, plan, statements, store.state, vector)
            for item, plan, statements, vector in zip(batch, plans, found, vectors, strict=True)
        ]
    )
    if isinstance(seconds, Refusal):
        return seconds

    async def second(plan: ClassificationPlan) -> str | Refusal:
        if plan.messages is None or plan.schema is None:
            return "[]"
        return await _call(call_model, plan.messages, plan.schema, gate)

    second_raw = _all(await asyncio.gather(*(second(plan) for plan in seconds)))
    if isinstance(second_raw, Refusal):
        return second_raw
    results = _all(
        [classify(i, p, raw) for i, p, raw in zip(batch, seconds, second_raw, strict=True)]
    )
    if isinstance(results, Refusal):
        return results
    out = []
    for n, result in enumerate(results):
        record = {
            "statement": {
                **_record(first[n], model, executed=1, items=len(found[n].accepted)),
                "spans": len(plans[n].spans),
            },
            "classification": _record(
                second_raw[n],
                model,
                executed=int(seconds[n].messages is not None),
                items=len(result.required) + len(result.mentions),
            ),
            "selection": [ref.to_json() for ref in seconds[n].selection],
            "table": [entry.to_json() for entry in seconds[n].table],
        }
        out.append(_Interpretation(seconds[n], result, record))
    return out


def _rows(
    batch: list[IntakeInput],
    vectors: list[bytes],
    interpretations: list[_Interpretation],
    quote_vectors: list[bytes],
    provenance: Provenance,
) -> list[list[Row]]:
    """Per input: its source row, then its inferred rows; ids numbered across the batch."""
    rows: list[list[Row]] = []
    index = 0
    for position, item in enumerate(batch):
        item_rows = [source_row(item, KIND_SOURCE, provenance, index, vectors[position])]
        if interpretations:
            done = interpretations[position]
            count = len(quotes(done.plan, done.classification))
            item_rows += inferred_rows(
                item,
                done.plan,
                done.classification,
                provenance,
                first_index=index + 1,
                vectors=quote_vectors[:count],
            )
            quote_vectors = quote_vectors[count:]
        index += len(item_rows)
        rows.append(item_rows)
    return rows


async def run_intake(
    batch: Sequence[IntakeInput],
    *,
    mode: int,
    store: MemoryStore,
    journal: Journal,
    embed: Embed,
    call_model: CallModel | None = None,
    model_digest: str | None = None,
    table: QualificationTable = NO_PAIRS,
    direct: bool = False,
    accepted: bool = False,
    run_blocking: RunBlocking = _inline,
    parallel: int = 4,
    names: Mapping[str, str] = {},
) -> IntakeResult:
    """Admit a batch of 1..64 inputs whole, or refuse it whole (see the module docstring).

    `accepted`: the inputs are pending sources (`accept`), accepted with this `mode`; the entry
    resolves them. `names` maps user ids to names: each text is embedded after its speaker's
    name (`pipeline.said_by`).
    """
    batch = list(batch)
    if mode not in tuple(Mode):
        return _refused(Refusal(Reason.MODE_DISABLED, detail=f"unknown mode {mode!r}"))
    effective, status = effective_mode(mode, model_digest, table, direct=direct)
    if effective is None:
        return _refused(Refusal(Reason.UNQUALIFIED, detail="model/processor pair"))
    refusal = check_batch(batch, store.state)
    if refusal is not None:
        return _refused(refusal, effective)
    if effective is Mode.EXPLICIT:
        return IntakeResult(True, effective, status)
    automatic = effective is Mode.AUTOMATIC
    model = (normalize_digest(model_digest) or "") if automatic else ""
    plans: list[StatementPlan] = []
    if automatic:
        if call_model is None:
            return _refused(Refusal(Reason.MODE_DISABLED, detail="no model"), effective)
        # Segmentation is pure Python (about 0.1 ms per character): keep it off the event loop.
        planned = _all(await run_blocking(lambda: [plan_statements(item) for item in batch]))
        if isinstance(planned, Refusal):
            return _refused(planned, effective)
        plans = planned
    said = [said_by(item.text, item.actor, names) for item in batch]
    vectors = await _embed(embed, said, store.state.dim)
    if isinstance(vectors, Refusal):
        return _refused(vectors, effective)
    interpretations: list[_Interpretation] = []
    if automatic and call_model is not None:
        done = await _interpret(
            batch, plans, vectors, store, call_model=call_model, model=model, parallel=parallel
        )
        if isinstance(done, Refusal):
            return _refused(done, effective)
        interpretations = done
    texts = (
        [
            said_by(quote, item.actor, names)
            for item, done in zip(batch, interpretations, strict=True)
            for quote in quotes(done.plan, done.classification)
        ]
        if interpretations  # mode 2: one per input
        else []
    )
    quote_vectors = await _embed(embed, texts, len(vectors[0]) // 4)
    if isinstance(quote_vectors, Refusal):
        return _refused(quote_vectors, effective)

    def build(sequence: int) -> Built[list[list[Row]]] | Refusal:
        provenance = Provenance(sequence, model, processor_digest() if automatic else "")
        rows = _rows(batch, vectors, interpretations, quote_vectors, provenance)
        mutation = assemble(batch, rows, store.state, sequence)
        if isinstance(mutation, Refusal):
            return mutation
        body = {
            "op": "intake",
            "request": {
                "mode": int(mode),
                "direct": direct,
                "inputs": [item.to_json() for item in batch],
                **({"accepted": True} if accepted else {}),
            },
            "mode": int(effective),
            "status": status,
            "model_digest": model,
            "processor_digest": processor_digest(),
            "profile_digest": profile_digest(),
            "calls": [i.record for i in interpretations],
            "mutation": mutation.to_json(),
            "vectors": mutation.vectors_json(),
        }
        return body, mutation, rows

    published = await _publish(journal, store, run_blocking, build)
    if isinstance(published, Refusal):
        return _refused(published, effective)
    mutation, rows = published
    ids = tuple(tuple(row.id for row in item_rows) for item_rows in rows)
    return IntakeResult(True, effective, status, None, mutation.sequence, ids, mutation.supersede)


class StoreBehind(Exception):
    """The entry is journaled, but the store write after it failed.

    The entry is durable, and `replay.reconcile` brings the store up to the journal before the
    next write.
    """


type Built[T] = tuple[dict[str, Any], Mutation, T]


async def _publish[T](
    journal: Journal,
    store: MemoryStore,
    run_blocking: RunBlocking,
    build: Callable[[int], Built[T] | Refusal],
) -> tuple[Mutation, T] | Refusal:
    """Journal first (fsync'd), then the store: the only two writes of every admitted request.

    `build(sequence)` makes the entry's body and mutation for the sequence it will have, or
    refuses. Building, the append and the store write run in one blocking call under
    `Journal.lock`: the sequence is the one appended, entries reach the store in sequence order
    whichever writer (an accept, say, which changes no row) appends meanwhile, and a caller
    cancelled meanwhile cannot split them. An entry that changes no row (accept, refuse) is not
    applied to the store (`replay.reconcile` passes over it too).
    """

    def write() -> tuple[Mutation, T] | Refusal:
        with journal.lock:
            built = build(journal.next_sequence)
            if isinstance(built, Refusal):
                return built
            body, mutation, value = built
            journal.append(body)
            if mutation.upsert or mutation.supersede or mutation.delete:
                try:
                    store.apply(mutation)
                except Exception as err:
                    raise StoreBehind(f"{type(err).__name__}: {err}") from err
            return mutation, value

    result: tuple[Mutation, T] | Refusal = await run_blocking(write)
    return result


async def accept(
    batch: Sequence[IntakeInput],
    *,
    mode: int,
    store: MemoryStore,
    journal: Journal,
    run_blocking: RunBlocking = _inline,
) -> IntakeResult:
    """Make 1..64 turn sources durable before their interpretation (see `pending`).

    Admission as `run_intake` checks it (a source already stored or already pending is a
    duplicate), then one ``accept`` entry: no model call, one fsync. Mode 0 retains nothing and
    writes nothing. `run_intake(..., accepted=True)` or `refuse` resolves the inputs later.
    Admission runs with the append, under `Journal.lock`: an accept needs no other writer to
    wait, and the state it checks is not being written meanwhile.
    """
    batch = list(batch)
    if mode not in tuple(Mode):
        return _refused(Refusal(Reason.MODE_DISABLED, detail=f"unknown mode {mode!r}"))

    def build(sequence: int) -> Built[None] | Refusal:
        refusal = check_batch(batch, store.state)
        for index, item in enumerate(batch):
            if refusal is None and item.source_key in journal.pending:
                refusal = Refusal(Reason.DUPLICATE_SOURCE, index)
        if refusal is not None:
            return refusal
        body = {
            "op": ACCEPT,
            "request": {"mode": int(mode), "inputs": [item.to_json() for item in batch]},
            "mutation": Mutation(sequence).to_json(),
            "vectors": [],
        }
        return body, Mutation(sequence), None

    if mode == Mode.EXPLICIT:  # nothing is retained, so there is nothing to admit
        return IntakeResult(True, Mode.EXPLICIT, Status.OK)
    published = await _publish(journal, store, run_blocking, build)
    if isinstance(published, Refusal):
        return _refused(published, Mode(mode))
    return IntakeResult(True, Mode(mode), Status.OK, None, published[0].sequence)


async def refuse(
    batch: Sequence[IntakeInput],
    refusal: Refusal,
    *,
    store: MemoryStore,
    journal: Journal,
    run_blocking: RunBlocking = _inline,
) -> int:
    """Resolve accepted sources with a final refusal; return the entry's sequence.

    A ``refuse`` entry: nothing is stored, and the sources are not interpreted again.
    """
    if refusal.reason in TRANSIENT:
        raise ValueError(f"{refusal.reason.value} is retried, not a final refusal")

    def build(sequence: int) -> Built[None]:
        body = {
            "op": REFUSE,
            "request": {"inputs": [item.to_json() for item in batch]},
            "reason": refusal.reason.value,
            "mutation": Mutation(sequence).to_json(),
            "vectors": [],
        }
        return body, Mutation(sequence), None

    published = await _publish(journal, store, run_blocking, build)
    assert not isinstance(published, Refusal)  # build never refuses
    return published[0].sequence


async def remember(
    batch: Sequence[IntakeInput],
    *,
    store: MemoryStore,
    journal: Journal,
    embed: Embed,
    run_blocking: RunBlocking = _inline,
    names: Mapping[str, str] = {},
) -> IntakeResult:
    """Explicit retention (mode 0 path, `alto.remember`).

    1..64 inputs, admitted whole or refused whole, one protected, authored memory per text,
    owner and scope, each embedded after the name of who asked (`names`, as `run_intake`).

    An input whose source is stored with the same text (a request retried with its idempotency
    key) is answered with that memory's id and writes nothing; a later input of the batch with
    the same source and text, or with the same text, owner and scope, answers as that one
    (`pipeline.explicit_rows` re-records a stored equal memory with the later source). The
    entry journals only the inputs that write.
    """
    batch = list(batch)
    if not 1 <= len(batch) <= MAX_BATCH:
        return _refused(Refusal(Reason.BATCH_SIZE, detail=f"{len(batch)} inputs"), Mode.EXPLICIT)
    stored = [repeat_of(item, store.state) for item in batch]
    # Per input: the batch position whose row answers it (itself when it writes).
    answer = list(range(len(batch)))
    by_source: dict[tuple[str, int], int] = {}
    for index, item in enumerate(batch):
        earlier = by_source.setdefault(item.source_key, index)
        if stored[index] is None and earlier != index and batch[earlier] == item:
            answer[index] = earlier
    by_text: dict[tuple[str, str, str], int] = {}
    for index in reversed(range(len(batch))):
        item = batch[index]
        if stored[index] is None and answer[index] == index:
            later = by_text.setdefault((item.text, item.owner, item.scope), index)
            answer[index] = later
    writes = [i for i in range(len(batch)) if stored[i] is None and answer[i] == i]
    # Aliases of an alias: the later input's own answer.
    answer = [answer[answer[i]] for i in range(len(batch))]
    refusal = check_batch([batch[i] for i in writes], store.state) if writes else None
    if refusal is not None:
        at = writes[refusal.input_index] if refusal.input_index is not None else None
        return _refused(Refusal(refusal.reason, at, refusal.detail), Mode.EXPLICIT)
    said = [said_by(batch[i].text, batch[i].actor, names) for i in writes]
    vectors = await _embed(embed, said, store.state.dim)
    if isinstance(vectors, Refusal):
        return _refused(vectors, Mode.EXPLICIT)
    rows: tuple[Row, ...] = ()
    sequence = 0
    if writes:
        inputs = [batch[i] for i in writes]

        def build(sequence: int) -> Built[tuple[Row, ...]]:
            rows = explicit_rows(inputs, store.state, sequence, vectors)
            mutation = Mutation(sequence, rows)
            body = {
                "op": "remember",
                "request": {"inputs": [item.to_json() for item in inputs]},
                "mutation": mutation.to_json(),
                "vectors": mutation.vectors_json(),
            }
            return body, mutation, rows

        published = await _publish(journal, store, run_blocking, build)
        assert not isinstance(published, Refusal)  # build never refuses
        sequence, rows = published[0].sequence, published[1]
    row_of = dict(zip(writes, (row.id for row in rows), strict=True))
    ids = tuple(
        (found,) if (found := stored[i]) is not None else (row_of[answer[i]],)
        for i in range(len(batch))
    )
    return IntakeResult(True, Mode.EXPLICIT, Status.OK, None, sequence, ids)


async def reembed(
    rows: Sequence[Row],
    vectors: Sequence[Sequence[float]],
    *,
    model: str,
    store: MemoryStore,
    journal: Journal,
    run_blocking: RunBlocking = _inline,
) -> IntakeResult:
    """Give 1..64 stored memories (or all, to another size) new vectors; nothing else changes.

    `rows` are the memories as they were read, `vectors` the embeddings of their texts as
    intake embeds a text now (the caller asks the model), all of the store's dimension; `model`
    names the embedding model, for the record. A memory forgotten or written again (a repeated
    `remember`, by someone else perhaps) since it was read is passed over. Vectors of another
    size move the store to it: then `rows` must be every stored memory, each as stored now (any
    number of them, in one entry), since a store holds vectors of one size. One ``reembed``
    entry::

        {"op": "reembed", "request": {"ids", "model"}, "mutation", "vectors"}

    whose mutation upserts each row as stored with its new vector: `replay` checks every row
    against the state (`pipeline.reembedded`), and a later forget erases the row's text and
    vector from this entry as from the one that wrote it (`redaction.plan`).
    """
    if not rows or len(vectors) != len(rows):
        return _refused(Refusal(Reason.BATCH_SIZE, detail=f"{len(rows)} memories"))
    checked = _checked(list(vectors), len(rows), None)
    if isinstance(checked, Refusal):
        return _refused(checked)
    read = {row.id: (row.sequence, vector) for row, vector in zip(rows, checked, strict=True)}

    def build(sequence: int) -> Built[None] | Refusal:
        resize = store.state.dim not in (None, len(checked[0]) // 4)
        if not resize and len(rows) > MAX_BATCH:
            return Refusal(Reason.BATCH_SIZE, detail=f"{len(rows)} memories")
        kept = [
            row_id
            for row_id, (written, _vector) in read.items()
            if (held := store.state.get(row_id)) is not None and held.sequence == written
        ]
        if resize and (len(kept) != len(read) or len(kept) != len(store.state)):
            return Refusal(Reason.BATCH_SIZE, detail="another size re-embeds every memory")
        if not kept:
            return Refusal(Reason.UNKNOWN_ID, detail="every memory was forgotten or rewritten")
        mutation = Mutation(sequence, reembedded(store.state, kept, [read[i][1] for i in kept]))
        body = {
            "op": REEMBED,
            "request": {"ids": kept, "model": model},
            "mutation": mutation.to_json(),
            "vectors": mutation.vectors_json(),
        }
        return body, mutation, None

    published = await _publish(journal, store, run_blocking, build)
    if isinstance(published, Refusal):
        return _refused(published)
    mutation = published[0]
    written = tuple(row.id for row in mutation.upsert)
    return IntakeResult(True, None, Status.OK, None, mutation.sequence, (written,))


async def forget(
    ids: Sequence[int],
    *,
    viewer: str | None,
    store: MemoryStore,
    journal: Journal,
    run_blocking: RunBlocking = _inline,
) -> IntakeResult:
    """Delete rows the viewer can see (`alto.forget`, todo item removal).

    Forgetting a source or an explicit memory also deletes every row interpreted from it, and
    erases the forgotten texts (`redaction`): the entry lists the earlier lines that hold them,
    and once it is written and applied those lines are rewritten as tombstones; then the store
    erases its copies (`MemoryStore.erase`, outside the journal's lock: it rewrites every kept
    record). A crash in between is finished at the next open (`redaction.finish`, `erase`).
    """
    chosen = forget_ids(list(ids), viewer, store.state)
    if isinstance(chosen, Refusal):
        return _refused(chosen)

    def build(sequence: int) -> Built[list[redaction.Tombstone]]:
        mutation = Mutation(sequence, delete=chosen)
        deleted = store.state.rows_of(chosen)
        gone = set(chosen)
        kept = (row for row in store.state.rows() if row.id not in gone)
        forgotten = redaction.Forgotten.of(deleted, kept, journal.pending)
        wrote = {row.sequence for row in deleted}
        tombstones = redaction.plan(journal.path, forgotten, wrote, sequence)
        body: dict[str, Any] = {
            "op": "forget",
            "request": {"ids": list(ids), "viewer": viewer or ""},
            "mutation": mutation.to_json(),
            "vectors": [],
        }
        if tombstones:
            body[REDACT] = [tomb.authorization() for tomb in tombstones]
        return body, mutation, tombstones

    published = await _publish(journal, store, run_blocking, build)
    assert not isinstance(published, Refusal)  # build never refuses
    mutation, tombstones = published

    def erase() -> None:
        with journal.lock:
            redaction.rewrite(journal.path, tombstones)
        try:
            store.erase()  # outside the lock: it rewrites every kept record
        except Exception as err:
            raise StoreBehind(f"{type(err).__name__}: {err}") from err

    await run_blocking(erase)
    return IntakeResult(True, None, Status.OK, None, mutation.sequence, (chosen,))
