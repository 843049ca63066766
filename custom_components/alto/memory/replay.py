"""Offline replay of the journal, and reconciliation of a store with it.

`replay(path)` walks every entry from an empty `MemoryState` without calling a model, an
embedding service or the store. For each entry it checks, in order: the entry's own hash, the
chain link to the previous entry, its sequence; then it re-derives the entry's mutation with the
same `pipeline` stages intake ran, from the recorded request, raw model outputs and vectors:

- both processor identities (the entry's and every call record's processor digest must be this
  processor's; the profile digest must match) and one model digest across the entry, its call
  records and its inferred rows (which carry it in the mutation);
- admission of every input against the state reconstructed so far;
- call 1: prompt capacity and the complete parse of the recorded response, its span and item
  counts; call 2: the pre-write selection and the correction table rebuilt from the state at
  that point and compared with the recorded ones, the executed flag (an empty accepted list must
  be a skipped call recorded as ``[]``), the complete parse;
- the canonical mutation, compared with the recorded one.

An ``accept`` entry is checked for admission (against the state and the sources still pending)
and an empty mutation; a ``refuse`` entry for a final reason and an empty mutation; a
``remember`` entry re-derives one explicit row per input (`pipeline.explicit_rows`); a
``reembed`` entry re-derives its rows as held, with the recorded vectors of the state's
dimension, or of another one for every stored row at once (`pipeline.reembedded`). Replay
keeps the pending sources (`pending.Pending`) entry by entry: an ``intake`` or ``refuse`` entry
must resolve sources pending exactly as accepted, and every entry's ``pending_from`` must be the
one this set gives (reason ``pending``).

The historical decision is checked as recorded: today's qualification table plays no part.
The result is ``{"entries": n, "ok": bool, "first_mismatch": 0-based entry index | None,
"reason": str | None}``; the reason names the failed check (``entry_hash``, ``chain``,
``processor_digest``, ``model_digest``, ``selection``, ``table``, ``mutation``, or
``refused:<reason code>`` when the recorded outputs no longer pass the parser).

`reconcile(journal, store)` applies the recorded mutation of every entry after the store's last
applied sequence, in order, checking each entry's hash and chain link first: after a crash
between the journal write and the store write, the store catches up to the journal. It reads
the journal from that entry on (`journal_tail`), not the whole file.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ..model.digest import normalize_digest
from .corrections import eligible
from .journal import (
    GENESIS,
    REEMBED,
    Authorizations,
    Journal,
    authorizations,
    is_tombstone,
    mutation_of,
    parse_line,
    read_lines,
    sound,
)
from .journal_tail import entries_from
from .parse import Statements, parse_statements
from .pending import ACCEPT, REFUSE, Pending, PendingError
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
    query_codes,
    quotes,
    reembedded,
    source_row,
)
from .profile import processor_digest, profile_digest
from .qualification import Mode
from .reasons import TRANSIENT, Reason, Refusal, Status
from .records import KIND_SOURCE, MemoryState, Mutation, Row, TableEntry, visible_to
from .references import Reference
from .selection import scores

# Reasons a `refuse` entry may record: transient ones keep a source pending instead.
_FINAL = frozenset(reason.value for reason in Reason) - {reason.value for reason in TRANSIENT}


class Mismatch(Exception):
    """A replay check failed; its message is the reported reason."""


class ReconcileError(ValueError):
    """The store cannot be brought up to the journal.

    The entry (1-based sequence) where the journal fails its hash or link, or the store's own
    when the store is ahead of the journal (``store_ahead``).
    """

    def __init__(self, sequence: int, reason: str) -> None:
        """The failing entry's ``sequence`` and why it fails."""
        super().__init__(f"journal entry {sequence}: {reason}")
        self.sequence = sequence
        self.reason = reason


def _check(condition: bool, reason: str) -> None:
    if not condition:
        raise Mismatch(reason)


def _ok[T](value: T | Refusal) -> T:
    if isinstance(value, Refusal):
        raise Mismatch(f"refused:{value.reason.value}")
    return value


def _classification(
    item: IntakeInput,
    plan: StatementPlan,
    statements: Statements,
    state: MemoryState,
    vector: bytes,
    *,
    record: dict[str, Any],
    erased: frozenset[int],
) -> ClassificationPlan | None:
    """Call 2's plan re-derived and checked against the record (selection, table).

    None when it differs while a forgotten row it may have been made with is gone (`erased`).
    """
    try:
        made = _ok(plan_classification(item, plan, statements, state, vector))
        _check(record["selection"] == [ref.to_json() for ref in made.selection], "selection")
        _check(record["table"] == [entry.to_json() for entry in made.table], "table")
    except Mismatch:
        if erased:
            return None
        raise
    return made


def _as_recorded(
    record: dict[str, Any],
    item: IntakeInput,
    state: MemoryState,
    vector: bytes,
    *,
    erased: frozenset[int],
) -> tuple[tuple[Reference, ...], tuple[TableEntry, ...]]:
    """The recorded selection and table, every row they name that is not forgotten checked.

    A selected row must be visible to the input and carry its exact score; a table row must be
    eligible and quoted as stored.
    """
    query = query_codes(vector)
    refs: list[Reference] = []
    for row_id, score in record["selection"]:
        if row_id in erased:
            continue
        row = state.get(row_id)
        _check(row is not None and visible_to(row, item.viewer), "selection")
        assert row is not None
        _check(int(scores(state.codes([row]), query).tolist()[0]) == score, "selection")
        refs.append(Reference(row, score, row_id in item.required))
    table: list[TableEntry] = []
    for data in record["table"]:
        entry = TableEntry(**data)
        row = state.get(entry.row_id)
        _check(eligible(row, item.owner, item.scope), "table")
        assert row is not None
        stored = (row.source_id, row.source_version, row.actor, row.document)
        _check(stored == (entry.source_id, entry.source_version, entry.actor, entry.quote), "table")
        table.append(entry)
    return tuple(refs), tuple(table)


def _intake_rows(
    entry: dict[str, Any],
    batch: list[IntakeInput],
    state: MemoryState,
    vectors: list[bytes],
    *,
    erased: frozenset[int],
    taken: list[int],
) -> list[list[Row]]:
    mode = Mode(entry["mode"])
    request = entry["request"]
    model = entry["model_digest"]
    sequence = entry["sequence"]
    if mode is Mode.AUTOMATIC:
        _check(request["mode"] == Mode.AUTOMATIC and entry["status"] == Status.OK, "mode")
        _check(normalize_digest(model) == model, "model_digest")
        _check(len(entry["calls"]) == len(batch), "calls")
    else:
        fallback = request["mode"] == Mode.AUTOMATIC and not request["direct"]
        _check(mode is Mode.SOURCE, "mode")
        _check(entry["status"] == (Status.UNQUALIFIED if fallback else Status.OK), "mode")
        _check(fallback or request["mode"] == Mode.SOURCE, "mode")
        _check(model == "" and entry["calls"] == [], "calls")
    provenance = Provenance(sequence, model, processor_digest() if model else "")
    rows: list[list[Row]] = []
    cursor = 0
    for position, item in enumerate(batch):
        _check(cursor < len(vectors), "vectors")
        item_rows = [source_row(item, KIND_SOURCE, provenance, cursor, vectors[cursor])]
        if mode is Mode.AUTOMATIC:
            record = entry["calls"][position]
            first, second = record["statement"], record["classification"]
            for call in (first, second):
                _check(call["model_digest"] == model, "model_digest")
                _check(call["processor_digest"] == processor_digest(), "processor_digest")
            plan = _ok(plan_statements(item))
            statements: Statements = _ok(parse_statements(first["response"], plan.texts))
            _check(first["spans"] == len(plan.spans), "spans")
            _check((first["executed"], first["items"]) == (1, len(statements.accepted)), "items")
            plan2 = _classification(
                item, plan, statements, state, vectors[cursor], record=record, erased=erased
            )
            if plan2 is None:  # made with a forgotten row: taken as recorded, its rows checked
                given = _as_recorded(record, item, state, vectors[cursor], erased=erased)
                plan2 = _ok(
                    plan_classification(item, plan, statements, state, vectors[cursor], given=given)
                )
                taken.append(sequence)
            _check(second["executed"] == int(plan2.messages is not None), "executed")
            result = _ok(classify(item, plan2, second["response"]))
            _check(second["items"] == len(result.required) + len(result.mentions), "items")
            count = len(quotes(plan2, result))
            item_rows += inferred_rows(
                item,
                plan2,
                result,
                provenance,
                first_index=cursor + 1,
                vectors=vectors[cursor + 1 : cursor + 1 + count],
            )
        cursor += len(item_rows)
        rows.append(item_rows)
    _check(cursor == len(vectors), "vectors")
    return rows


def derive(
    entry: dict[str, Any],
    state: MemoryState,
    pending: Pending,
    *,
    erased: frozenset[int] = frozenset(),
    taken: list[int] | None = None,
) -> Mutation:
    """Re-derive an entry's mutation from its recorded inputs and outputs, or raise Mismatch.

    `pending` is the set of pending sources before the entry (an accept may not repeat one).
    `erased`: forgotten rows that existed when the entry was written and are gone now (see
    ``redaction``); a call-2 selection or table that no longer re-derives without them is taken
    as recorded (the rows it names checked), and the entry's sequence appended to `taken`.
    """
    sequence = entry["sequence"]
    vectors = [base64.b64decode(v, validate=True) for v in entry["vectors"]]
    request = entry["request"]
    op = entry["op"]
    if op == "forget":
        _check(vectors == [], "vectors")
        return Mutation(
            sequence, delete=_ok(forget_ids(request["ids"], request["viewer"] or None, state))
        )
    if op == REEMBED:
        ids = request["ids"]
        held = [row_id for row_id in ids if state.get(row_id) is not None]
        _check(bool(ids) and held == ids and len(set(ids)) == len(ids), "reembed")
        _check(len(vectors) == len(ids) and len({len(v) for v in vectors}) == 1, "vectors")
        if len(vectors[0]) == 4 * (state.dim or 0):
            _check(len(ids) <= MAX_BATCH, "reembed")
        else:  # another size: every stored memory at once
            _check(len(ids) == len(state), "reembed")
        return Mutation(sequence, reembedded(state, ids, vectors))
    batch = [IntakeInput.from_json(item) for item in request["inputs"]]
    if op == REFUSE:
        _check(vectors == [] and entry["reason"] in _FINAL, "refusal")
        return Mutation(sequence)
    if (refusal := check_batch(batch, state)) is not None:
        raise Mismatch(f"refused:{refusal.reason.value}")
    if op == ACCEPT:
        _check(vectors == [] and request["mode"] in (Mode.SOURCE, Mode.AUTOMATIC), "mode")
        _check(not any(item.source_key in pending for item in batch), "pending")
        return Mutation(sequence)
    if op == "remember":
        texts = {(item.text, item.owner, item.scope) for item in batch}
        _check(len(texts) == len(batch) and len(vectors) == len(batch), "vectors")
        return Mutation(sequence, explicit_rows(batch, state, sequence, vectors))
    _check(op == "intake", "op")
    _check(entry["processor_digest"] == processor_digest(), "processor_digest")
    _check(entry["profile_digest"] == profile_digest(), "profile_digest")
    rows = _intake_rows(
        entry, batch, state, vectors, erased=erased, taken=[] if taken is None else taken
    )
    return _ok(assemble(batch, rows, state, sequence))


def _link(entry: dict[str, Any], index: int, prev: str, authorized: Authorizations) -> None:
    _check(sound(entry, authorized), "entry_hash")
    _check(entry["prev"] == prev, "chain")
    _check(entry["sequence"] == index + 1, "sequence")


def replay(journal_path: Path | str) -> dict[str, Any]:
    """Re-derive every journal entry without the model; report the first mismatch."""
    return replay_state(journal_path)[0]


def replay_state(journal_path: Path | str) -> tuple[dict[str, Any], MemoryState]:
    """`replay`'s report and the state it reached (all of it when the report is ok).

    A tombstone (``redaction``) is checked against its authorization and its recorded mutation
    applied without the erased rows. An intact entry written while an erased row existed may
    have selected it (or been shaped by it: the selection's rounds, the table's budget): when its
    call-2 selection and table no longer re-derive, they are taken as recorded, every row they
    name that still exists checked (visible, its exact score, eligible, quoted as stored), and
    everything else is re-derived; such an entry is counted ``unverified``. A forget whose rows
    its tombstones erased re-derives over the rows still held. With tombstones the report adds
    ``redacted`` and ``unverified`` (counts).
    """
    lines = read_lines(Path(journal_path))
    parsed = [parse_line(line) for line in lines]
    authorized = authorizations(entry for entry in parsed if entry is not None)
    # The forget that deleted each row: an erased row lived until then.
    deleted_by = {
        row_id: forget["sequence"]
        for forget in parsed
        if forget is not None and forget.get("op") == "forget"
        for row_id in forget.get("mutation", {}).get("delete", [])
    }
    state = MemoryState()
    pending = Pending()
    prev = GENESIS
    erased: dict[int, int] = {}  # erased row id -> the forget that deleted it
    redacted = 0
    taken: list[int] = []  # entries whose call-2 plan was taken as recorded
    for index, entry in enumerate(parsed):
        try:
            if entry is None:
                raise ValueError("not an entry")
            _link(entry, index, prev, authorized)
            if is_tombstone(entry):
                mutation = mutation_of(entry)
                redacted += 1
                kept = {row.id for row in mutation.upsert}
                for row in entry["mutation"]["upsert"]:
                    if row["id"] not in kept:
                        erased[row["id"]] = deleted_by.get(row["id"], 0)
            else:
                recorded = Mutation.from_json(entry["mutation"], entry["vectors"])
                if entry["op"] == "forget":
                    mutation = _forget(entry, state, erased, recorded)
                else:
                    alive = frozenset(i for i, until in erased.items() if until > index + 1)
                    mutation = derive(entry, state, pending, erased=alive, taken=taken)
                _check(mutation == recorded, "mutation")
            try:
                pending = pending.after(entry)
            except PendingError:
                raise Mismatch("pending") from None
            _check(entry.get("pending_from", 0) == pending.low_water, "pending")
        except Mismatch as mismatch:
            return _report(len(lines), index, str(mismatch)), state
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            return _report(len(lines), index, f"malformed_entry:{type(err).__name__}"), state
        state.apply(mutation)
        prev = entry["hash"]
    report = _report(len(lines), None, None)
    if redacted:
        report |= {"redacted": redacted, "unverified": len(taken)}
    return report, state


def _forget(
    entry: dict[str, Any], state: MemoryState, erased: dict[int, int], recorded: Mutation
) -> Mutation:
    """A forget re-derived over the rows replay holds.

    The rows that its own tombstones erased are not held: their deletion is what the forget
    authorized.
    """
    sequence = entry["sequence"]
    mine = {row_id for row_id, until in erased.items() if until == sequence}
    if not mine:
        return derive(entry, state, Pending())
    request = entry["request"]
    _check(entry["vectors"] == [], "vectors")
    present = [row_id for row_id in request["ids"] if row_id not in mine]
    derived = set(_ok(forget_ids(present, request["viewer"] or None, state))) if present else set()
    return Mutation(sequence, delete=tuple(sorted(derived | (mine & set(recorded.delete)))))


def _report(entries: int, index: int | None, reason: str | None) -> dict[str, Any]:
    return {"entries": entries, "ok": index is None, "first_mismatch": index, "reason": reason}


def reconcile(journal: Journal | Path | str, store: Any) -> int:
    """Apply every journaled mutation the store lacks, in order; returns how many were applied.

    Reads the journal from the store's last applied entry on. Entries that change no row
    (accept, refuse) are checked and passed over: the store's applied sequence stays at the last
    entry that wrote. Raises `ReconcileError` when the store is ahead of the journal (or the
    journal's last entry does not parse) or an entry fails its hash or link.
    """
    path = journal.path if isinstance(journal, Journal) else Path(journal)
    found = entries_from(path, max(store.applied, 1))
    if found is None:
        if store.applied or (path.exists() and path.stat().st_size):
            raise ReconcileError(store.applied, "store_ahead")
        return 0
    listed = list(found)  # read whole: a tombstone's authorization comes after it
    authorized = authorizations(listed)
    entries = iter(listed)
    prev = next(entries)["hash"] if store.applied else GENESIS
    applied = 0
    for index, entry in enumerate(entries, start=store.applied):
        try:
            _link(entry, index, prev, authorized)
        except Mismatch as mismatch:
            raise ReconcileError(index + 1, str(mismatch)) from None
        mutation = mutation_of(entry)
        if mutation.upsert or mutation.supersede or mutation.delete:
            store.apply(mutation)
            applied += 1
        prev = entry["hash"]
    return applied
