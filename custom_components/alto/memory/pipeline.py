"""Pure intake stages, run live by `intake` (with a model) and from the journal by `replay`.

Per input, in order: `check_input` (admission) → `plan_statements` (spans, call-1 prompt and
schema, capacity) → `parse.parse_statements` on the call-1 response → `plan_classification`
(pre-write reference selection, correction table, call-2 prompt and schema, capacity; skipped
when no statement was accepted) → `classify` on the call-2 response → `input_rows`. Then
`assemble` checks the whole batch (duplicate or stale targets, required references that would go
stale) and returns the canonical `Mutation`. Every stage returns a `Refusal` instead of raising,
and none of them writes anything: a refusal anywhere leaves the store and journal untouched.

Nothing here calls a model or an embedding service, so replay re-derives exactly what intake
derived from the same recorded responses and vectors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from ..model.calls import Message
from ..model.schemas import Schema, classification_schema, statement_schema
from .corrections import build_table, stale_targets
from .languages import Language
from .lexical import WORD, language
from .parse import Classification, Statements, parse_classification
from .profile import CLASSIFICATION_INSTRUCTION, STATEMENT_INSTRUCTION
from .prompts import (
    MAX_PROMPT_BYTES,
    MAX_RESPONSE_BYTES,
    classification_messages,
    classification_reservation,
    prompt_bytes,
    statement_messages,
    statement_reservation,
    table_capacity,
)
from .reasons import Reason, Refusal
from .records import (
    HOUSEHOLD,
    KIND_EXPLICIT,
    KIND_SOURCE,
    UNKNOWN_ACTOR,
    Kind,
    MemoryState,
    Mutation,
    Row,
    TableEntry,
    object_id,
    vector_array,
    vector_bytes,
    visible_to,
)
from .references import Reference, select_references
from .selection import quantize
from .spans import admit_source, source_spans, span_texts

MAX_BATCH = 64
MAX_SOURCE_ID_BYTES = 256
_USER_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class IntakeInput:
    """One source to admit.

    `text`: the exact source. `source_id`/`source_version`: the source event (the HA layer
    passes e.g. the conversation id plus turn number; equal text from distinct events stays
    distinct, a repeated (id, version) is refused). `owner`: ``"household"`` or the HA user id
    (32 lowercase hex) the memory belongs to. `scope`: ``"household"`` or the owner's id
    (private). `actor`: the authenticated HA user who supplied the text, None when unknown.
    `required`: object ids of the turn's required references, which must stay current.
    `said_at`: when the text was said or written (Unix seconds; 0: not known), kept on its rows.
    """

    text: str
    source_id: str
    owner: str = HOUSEHOLD
    scope: str = HOUSEHOLD
    actor: str | None = None
    source_version: int = 1
    required: tuple[int, ...] = ()
    said_at: int = 0

    @property
    def source_key(self) -> tuple[str, int]:
        """The source group this input forms."""
        return (self.source_id, self.source_version)

    @property
    def actor_label(self) -> str:
        """The actor as prompts and rows name it: the user id, or ``"unknown"``."""
        return self.actor or UNKNOWN_ACTOR

    @property
    def viewer(self) -> str | None:
        """Whose visibility the pre-write selection uses: the owner (None for the household)."""
        return None if self.owner == HOUSEHOLD else self.owner

    def to_json(self) -> dict[str, object]:
        """Canonical journal form."""
        data = asdict(self)
        data["required"] = list(self.required)
        if not self.said_at:  # as journals written before the field recorded it, byte for byte
            del data["said_at"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> IntakeInput:
        """Inverse of `to_json`."""
        return cls(**{**data, "required": tuple(data["required"])})  # type: ignore[arg-type]


def check_input(item: object, state: MemoryState, seen: set[tuple[str, int]]) -> Reason | None:
    """Admission of one input against the state and the batch's earlier sources.

    The input may be any object: a batch comes from callers the intake does not trust.
    """
    if not isinstance(item, IntakeInput):
        return Reason.INVALID_TEXT
    reason = admit_source(item.text)
    if reason is not None:
        return reason
    if item.actor is not None and not (
        isinstance(item.actor, str) and _USER_ID.fullmatch(item.actor)
    ):
        return Reason.INVALID_ACTOR
    owner_ok = item.owner == HOUSEHOLD or (
        isinstance(item.owner, str) and _USER_ID.fullmatch(item.owner)
    )
    if not owner_ok or item.scope not in (HOUSEHOLD, item.owner):
        return Reason.INVALID_SCOPE
    if not (
        isinstance(item.source_id, str)
        and 0 < len(item.source_id.encode("utf-8", "replace")) <= MAX_SOURCE_ID_BYTES
        and item.source_id.isprintable()
        and type(item.source_version) is int
        and item.source_version >= 1
        and all(type(ref) is int for ref in item.required)
        and type(item.said_at) is int
        and item.said_at >= 0
    ):
        return Reason.INVALID_SOURCE_ID
    if item.source_key in seen or state.has_source(item.source_key):
        return Reason.DUPLICATE_SOURCE
    return None


def check_batch(batch: Sequence[IntakeInput], state: MemoryState) -> Refusal | None:
    """Size and admission of a whole batch (1..64 inputs)."""
    if not 1 <= len(batch) <= MAX_BATCH:
        return Refusal(Reason.BATCH_SIZE, detail=f"{len(batch)} inputs")
    seen: set[tuple[str, int]] = set()
    for index, item in enumerate(batch):
        reason = check_input(item, state, seen)
        if reason is not None:
            return Refusal(reason, index)
        seen.add(item.source_key)
    return None


def _capacity(messages: list[Message], reservation: int) -> Refusal | None:
    size = prompt_bytes(messages)
    if size > MAX_PROMPT_BYTES:
        return Refusal(Reason.PROMPT_TOO_LARGE, detail=f"{size} bytes")
    if reservation > MAX_RESPONSE_BYTES:
        return Refusal(Reason.RESERVATION_EXCEEDED, detail=f"{reservation} bytes")
    return None


@dataclass(frozen=True, slots=True)
class StatementPlan:
    """Call 1 for one input: spans (UTF-8 byte pairs), their texts, messages and schema."""

    spans: tuple[tuple[int, int], ...]
    texts: tuple[str, ...]
    messages: list[Message]
    schema: Schema


def plan_statements(item: IntakeInput) -> StatementPlan | Refusal:
    """Build call 1 and check its prompt bytes and output reservation."""
    spans = tuple(source_spans(item.text))
    texts = tuple(span_texts(item.text, list(spans)))
    messages = statement_messages(STATEMENT_INSTRUCTION, item.actor_label, texts)
    refusal = _capacity(messages, statement_reservation(texts))
    return refusal or StatementPlan(spans, texts, messages, statement_schema(texts))


@dataclass(frozen=True, slots=True)
class ClassificationPlan:
    """Call 2 for one input; `messages` is None when no statement was accepted (call skipped)."""

    statements: tuple[tuple[int, int], ...]
    texts: tuple[str, ...]
    selection: tuple[Reference, ...]
    table: tuple[TableEntry, ...]
    messages: list[Message] | None
    schema: Schema | None


def said_by(text: str, actor: str | None, names: Mapping[str, str]) -> str:
    """What is embedded of a memory: its text, after the name of who said it, if known.

    `names` maps user ids to names. "I take my pill with breakfast" is about Walt when Walt
    says it: "Walt said: Walt take Walt's pill with breakfast" is what a question about Walt
    ("When does Walt take his pills?") finds, as the lexical score reads a memory beside its
    speaker's name (`in_their_name`). The name is the one they had when it was embedded.
    """
    name = names.get(actor) if actor else None
    return f"{name} said: {in_their_name(text, name)}" if name else text


def in_their_name(text: str, name: str) -> str:
    """`text` with each word its speaker calls themselves by replaced by `name`.

    In the text's own language (`lexical.language`; its `first_person` forms): "ich", "mir"
    and "mich" become the name, "mein" and "meine" its genitive ("Helgas", "Ines'"). The
    grammar breaks ("Helga werde achtzig"); an embedding model reads whom it is about.
    """
    lang = language(text)
    if not lang.first_person:
        return text
    genitive = _genitive(name, lang)

    def named(word: re.Match[str]) -> str:
        form = lang.first_person.get(word[0].casefold().replace("’", "'"))
        return word[0] if form is None else form.format(name=name, genitive=genitive)

    return WORD.sub(named, text)


def _genitive(name: str, lang: Language) -> str:
    """A name's genitive: "Ellie's", or a bare "s" where the language has it ("Helgas", "Ines'")."""
    if not lang.genitive:
        return f"{name}'s"
    return f"{name}'" if name[-1:].casefold() in "sßxz" else f"{name}s"


def query_codes(vector: bytes) -> np.ndarray:
    """The int8 query codes of a float32 source vector."""
    return quantize(vector_array(vector))


def embedding_codes(values: Sequence[float]) -> np.ndarray:
    """The int8 query codes of an embedding as the model returned it.

    Through float32, exactly as intake stores and quantizes vectors, so every query path scores
    the same.
    """
    return query_codes(vector_bytes(values))


def plan_classification(
    item: IntakeInput,
    plan: StatementPlan,
    statements: Statements,
    state: MemoryState,
    source_vector: bytes,
    *,
    given: tuple[tuple[Reference, ...], tuple[TableEntry, ...]] | None = None,
) -> ClassificationPlan | Refusal:
    """Select references, build the correction table and call 2, and check capacity.

    `given`: the selection and table to use instead (replay, when a forgotten row that they
    were made with is gone: see ``redaction``).
    """
    accepted = tuple(plan.spans[i] for i in statements.accepted)
    texts = tuple(plan.texts[i] for i in statements.accepted)
    if not accepted:
        return ClassificationPlan((), (), (), (), None, None)
    selection: tuple[Reference, ...]
    table: tuple[TableEntry, ...] | None = None
    if given is None:
        rows = state.visible(item.viewer)
        found = select_references(
            rows, state.codes(rows), query_codes(source_vector), required=item.required
        )
        if isinstance(found, Refusal):
            return found
        selection = found
    else:
        selection, table = given
    capacity = table_capacity(CLASSIFICATION_INSTRUCTION, item.actor_label, texts)
    if capacity < 0:
        return Refusal(Reason.PROMPT_TOO_LARGE, detail="fixed call-2 bytes")
    if table is None:
        table = build_table(selection, state, owner=item.owner, scope=item.scope, capacity=capacity)
    messages = classification_messages(CLASSIFICATION_INSTRUCTION, item.actor_label, texts, table)
    refusal = _capacity(messages, classification_reservation(texts))
    if refusal is not None:
        return refusal
    schema = classification_schema(texts, len(table))
    return ClassificationPlan(accepted, texts, selection, table, messages, schema)


def classify(
    item: IntakeInput, plan: ClassificationPlan, response: str
) -> Classification | Refusal:
    """Parse call 2; a skipped call must be recorded as exactly ``[]``."""
    if plan.messages is None:
        ok = response == "[]"
        return Classification((), ()) if ok else Refusal(Reason.ITEM_COUNT, detail="skipped")
    return parse_classification(response, item.text, plan.statements, len(plan.table))


def quotes(plan: ClassificationPlan, classification: Classification) -> list[str]:
    """The quotes of an input's inferred rows, in row order (they need embeddings)."""
    return list(plan.texts) + [mention.quote for mention in classification.mentions]


@dataclass(frozen=True, slots=True)
class Provenance:
    """What every row of one mutation records about how it was made."""

    sequence: int
    model_digest: str = ""
    processor_digest: str = ""


def source_row(
    item: IntakeInput, kind: str, provenance: Provenance, index: int, vector: bytes
) -> Row:
    """The row retaining an input's whole text (kind ``"source"`` or ``"explicit"``)."""
    return Row(
        id=object_id(provenance.sequence, index),
        document=item.text,
        kind=kind,
        owner=item.owner,
        scope=item.scope,
        actor=item.actor_label,
        source_id=item.source_id,
        source_version=item.source_version,
        offset=0,
        length=len(item.text.encode("utf-8")),
        sequence=provenance.sequence,
        said_at=item.said_at,
        vector=vector,
    )


def explicit_rows(
    batch: Sequence[IntakeInput], state: MemoryState, sequence: int, vectors: Sequence[bytes]
) -> tuple[Row, ...]:
    """The rows of remembered inputs (`remember`), one per input.

    The inputs must differ by text, owner or scope (`remember` answers a repeat within a batch
    as its later input).

    One memory per text, owner and scope: an input equal to a current explicit memory
    re-records that memory, same id, with its own (later) source, actor, sequence and vector;
    any other input is a new row, object id (sequence, its position).
    """
    rows = []
    for index, (item, vector) in enumerate(zip(batch, vectors, strict=True)):
        held = state.explicit(item.text, item.owner, item.scope)
        if held is None:
            rows.append(source_row(item, KIND_EXPLICIT, Provenance(sequence), index, vector))
        else:
            rows.append(
                replace(
                    held,
                    actor=item.actor_label,
                    source_id=item.source_id,
                    source_version=item.source_version,
                    sequence=sequence,
                    said_at=item.said_at,
                    vector=vector,
                )
            )
    return tuple(rows)


def reembedded(state: MemoryState, ids: Sequence[int], vectors: Sequence[bytes]) -> tuple[Row, ...]:
    """Stored rows `ids` with new vectors and nothing else changed (`intake.reembed`).

    Their id, text, provenance, status and sequence stay: a memory embedded again is the same
    memory, found by a new embedding. KeyError for an id not stored.
    """
    rows = state.rows_of(ids)
    return tuple(replace(row, vector=vector) for row, vector in zip(rows, vectors, strict=True))


def repeat_of(item: IntakeInput, state: MemoryState) -> int | None:
    """The id of the stored explicit memory `item` repeats, or None.

    A repeat has its source stored with this very text, owner and scope: a request retried with
    the same idempotency key.
    """
    return next(
        (
            row.id
            for row in state.source_rows(item.source_key)
            if row.kind == KIND_EXPLICIT
            and (row.document, row.owner, row.scope) == (item.text, item.owner, item.scope)
        ),
        None,
    )


def inferred_rows(
    item: IntakeInput,
    plan: ClassificationPlan,
    classification: Classification,
    provenance: Provenance,
    *,
    first_index: int,
    vectors: Sequence[bytes],
) -> list[Row]:
    """Rows for the required items (kinds 3/4) and mentions (kinds 1/2) of one input."""
    data = item.text.encode("utf-8")
    located = [
        (kind, data[start:end].decode("utf-8"), start, end - start, target)
        for (kind, target), (start, end) in zip(
            classification.required, plan.statements, strict=True
        )
    ] + [(m.kind, m.quote, m.offset, m.length, 0) for m in classification.mentions]
    return [
        Row(
            id=object_id(provenance.sequence, first_index + n),
            document=quote,
            kind=kind,
            owner=item.owner,
            scope=item.scope,
            actor=item.actor_label,
            source_id=item.source_id,
            source_version=item.source_version,
            offset=offset,
            length=length,
            sequence=provenance.sequence,
            target=plan.table[target - 1].row_id if kind == Kind.CORRECTION else 0,
            model_digest=provenance.model_digest,
            processor_digest=provenance.processor_digest,
            said_at=item.said_at,
            vector=vector,
        )
        for n, ((kind, quote, offset, length, target), vector) in enumerate(
            zip(located, vectors, strict=True)
        )
    ]


def assemble(
    batch: Sequence[IntakeInput], rows: Sequence[Sequence[Row]], state: MemoryState, sequence: int
) -> Mutation | Refusal:
    """The batch's mutation, after the publication checks on corrections.

    Refuses a target named twice in the batch, a target no longer eligible in `state` (stale
    table), and a required reference of any input that this batch would supersede.
    """
    supersede: list[int] = []
    for index, (item, item_rows) in enumerate(zip(batch, rows, strict=True)):
        targets = [row.target for row in item_rows if row.kind == Kind.CORRECTION]
        for target in targets:
            if target in supersede:
                return Refusal(Reason.DUPLICATE_TARGET, index, f"target {target}")
            supersede.append(target)
        stale = stale_targets(targets, state, item.owner, item.scope)
        if stale:
            return Refusal(Reason.STALE_TARGET, index, f"target {stale[0]}")
    for index, item in enumerate(batch):
        if set(item.required) & set(supersede):
            return Refusal(Reason.STALE_REFERENCE, index)
    upsert = tuple(row for item_rows in rows for row in item_rows)
    return Mutation(sequence, upsert, tuple(supersede))


def forget_ids(
    ids: Sequence[int], viewer: str | None, state: MemoryState
) -> tuple[int, ...] | Refusal:
    """Every id `forget` deletes: the given rows plus all rows of a forgotten source."""
    if not ids:
        return Refusal(Reason.UNKNOWN_ID, detail="nothing to forget")
    chosen: set[int] = set()
    for row_id in ids:
        row = state.get(row_id) if type(row_id) is int else None
        if row is None:
            return Refusal(Reason.UNKNOWN_ID, detail=str(row_id))
        if not visible_to(row, viewer):
            return Refusal(Reason.NOT_VISIBLE, detail=str(row_id))
        chosen.add(row.id)
        if row.kind in (KIND_SOURCE, KIND_EXPLICIT):
            chosen.update(r.id for r in state.source_rows(row.source_key))
    return tuple(sorted(chosen))
