"""Prompt formats, byte limits, output reservations, schemas and the correction-table bounds."""

from __future__ import annotations

import json
import random

import pytest

from custom_components.alto.memory.corrections import build_table
from custom_components.alto.memory.parse import parse_classification, parse_statements
from custom_components.alto.memory.pipeline import (
    IntakeInput,
    check_batch,
    plan_statements,
)
from custom_components.alto.memory.profile import (
    CLASSIFICATION_INSTRUCTION,
    STATEMENT_INSTRUCTION,
)
from custom_components.alto.memory.prompts import (
    MAX_PROMPT_BYTES,
    classification_messages,
    classification_reservation,
    prompt_bytes,
    render_table_entry,
    statement_messages,
    statement_reservation,
    table_bytes,
    table_capacity,
)
from custom_components.alto.memory.reasons import Reason, Refusal
from custom_components.alto.memory.records import (
    MemoryState,
    Mutation,
    Row,
    TableEntry,
    object_id,
    vector_bytes,
)
from custom_components.alto.memory.references import Reference
from custom_components.alto.memory.spans import source_spans, span_texts
from custom_components.alto.model.schemas import (
    SCHEMA_MENTIONS,
    classification_schema,
    statement_schema,
)

from .conftest import USER_A

WORDS = ["tea", "caf\u00e9", 'say "hi"', "tab\there", "line\nbreak", "back\\slash", "\U0001f600"]


def random_spans(rng: random.Random, count: int) -> list[str]:
    """`count` spans of one to four random words."""
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(count)]


def test_reservations_equal_the_longest_compact_response() -> None:
    """1+E+17K is exactly the compact all-"statement" answer; 1+E+10K the [4,q,16] answer."""
    rng = random.Random(7)
    for count in range(6):
        spans = random_spans(rng, count)
        first = [[span, "statement"] for span in spans]
        second = [[4, span, 16] for span in spans]
        compact = {"separators": (",", ":"), "ensure_ascii": False}
        assert len(json.dumps(first, **compact).encode()) == statement_reservation(spans)
        assert len(json.dumps(second, **compact).encode()) == classification_reservation(spans)
    assert statement_reservation([]) == classification_reservation([]) == 2


def test_statement_prompt_format() -> None:
    """The statement prompt quotes every span as JSON under the actor line."""
    messages = statement_messages(STATEMENT_INSTRUCTION, USER_A, ['a "b"', "c\td"])
    assert messages[0] == {"role": "system", "content": STATEMENT_INSTRUCTION}
    assert messages[1]["content"] == (
        f'actor: {USER_A}\n<source>\n1: "a \\"b\\""\n2: "c\\td"\n</source>\n'
    )
    assert prompt_bytes(messages) == len(STATEMENT_INSTRUCTION) + len(messages[1]["content"])


def test_classification_prompt_format() -> None:
    """The classification prompt lists the correction table, then the statements."""
    entry = TableEntry(1, 65536, "conv/1", 2, "unknown", "Bins on Tuesday.")
    messages = classification_messages(CLASSIFICATION_INSTRUCTION, "unknown", ["X y."], [entry])
    assert messages[1]["content"] == (
        "actor: unknown\n<corrections>\n"
        '1. source="conv/1" version=2 actor=unknown quote="Bins on Tuesday."\n'
        '</corrections>\n<statements>\n1: "X y."\n</statements>\n'
    )


@pytest.mark.parametrize(
    ("repeats", "expected"),
    [(200, None), (225, Reason.RESERVATION_EXCEEDED), (500, Reason.PROMPT_TOO_LARGE)],
)
def test_call_one_capacity(repeats: int, expected: Reason | None) -> None:
    """Checked before any call: prompt bytes against 6,144, then the 1+E+17K reservation."""
    plan = plan_statements(IntakeInput(("Ab. " * repeats).strip(), "s"))
    assert (plan.reason if isinstance(plan, Refusal) else None) is expected
    if expected is None:
        assert prompt_bytes(plan.messages) <= MAX_PROMPT_BYTES


def test_table_capacity_subtracts_fixed_bytes() -> None:
    """Table capacity subtracts fixed bytes."""
    statements = ["x" * 100] * 10
    fixed = prompt_bytes(
        classification_messages(CLASSIFICATION_INSTRUCTION, "unknown", statements, [])
    )
    assert table_capacity(CLASSIFICATION_INSTRUCTION, "unknown", statements) == min(
        4096, MAX_PROMPT_BYTES - fixed
    )
    assert table_capacity(CLASSIFICATION_INSTRUCTION, "unknown", ["y" * 6000]) < 0


def test_statement_schema_is_an_exact_tuple() -> None:
    """Statement schema is an exact tuple."""
    schema = statement_schema(["a.", "b?"])
    assert "items" not in json.dumps(schema).replace("prefixItems", "")
    assert schema == {
        "type": "array",
        "prefixItems": [
            {
                "type": "array",
                "prefixItems": [{"const": span}, {"enum": ["statement", "request"]}],
            }
            for span in ["a.", "b?"]
        ],
    }
    assert statement_schema([]) == {"type": "array", "prefixItems": []}


def test_classification_schema_shapes() -> None:
    """The classification schema allows each mention count and only listed statements."""
    schema = classification_schema(["a.", "b."], 3)
    assert len(schema["anyOf"]) == SCHEMA_MENTIONS + 1
    for count, shape in enumerate(schema["anyOf"]):
        assert shape["prefixItems"][:2] == [{"$ref": "#/$defs/s1"}, {"$ref": "#/$defs/s2"}]
        assert len(shape["prefixItems"]) == 2 + count
    choices = schema["$defs"]["s1"]["anyOf"]
    assert choices[0]["prefixItems"] == [{"const": 3}, {"const": "a."}]
    assert choices[1]["prefixItems"][2] == {"type": "integer", "minimum": 1, "maximum": 3}
    assert len(classification_schema(["a."], 0)["$defs"]["s1"]["anyOf"]) == 1


def _state_with_assertions(count: int, sources: int, quote: str) -> MemoryState:
    state = MemoryState()
    rows = [
        Row(
            id=object_id(1, n),
            document=f"{quote} {n}.",
            kind=3,
            owner="household",
            scope="household",
            actor="unknown",
            source_id=f"src-{n % sources}",
            source_version=1,
            offset=0,
            length=len(quote) + 3,
            sequence=1,
            vector=vector_bytes([1.0, float(n)]),
        )
        for n in range(count)
    ]
    state.apply(Mutation(1, tuple(rows)))
    return state


def _selection(state: MemoryState) -> tuple[Reference, ...]:
    return tuple(Reference(row, 0, False) for row in state.rows())


def test_table_is_source_diverse_and_capped_at_16() -> None:
    """Table is source diverse and capped at 16."""
    state = _state_with_assertions(40, 4, "Fact")
    table = build_table(
        _selection(state), state, owner="household", scope="household", capacity=4096
    )
    assert len(table) == 16
    assert [entry.index for entry in table] == list(range(1, 17))
    assert [entry.source_id for entry in table[:4]] == ["src-0", "src-1", "src-2", "src-3"]
    first_round = [entry.row_id for entry in table[:4]]
    assert first_round == sorted(first_round)


def test_table_respects_byte_capacity_and_never_cuts_entries() -> None:
    """Table respects byte capacity and never cuts entries."""
    state = _state_with_assertions(16, 16, "x" * 300)
    table = build_table(
        _selection(state), state, owner="household", scope="household", capacity=1000
    )
    assert 0 < len(table) < 16
    assert table_bytes(table) <= 1000
    assert all(entry.quote == state.get(entry.row_id).document for entry in table)
    assert all(render_table_entry(entry).endswith('."\n') for entry in table)


def test_batch_size_bounds() -> None:
    """A batch holds 1 to 64 inputs."""
    state = MemoryState()
    items = [IntakeInput(f"Fact {n}.", f"s{n}") for n in range(65)]
    assert check_batch([], state) == Refusal(Reason.BATCH_SIZE, detail="0 inputs")
    assert check_batch(items, state) == Refusal(Reason.BATCH_SIZE, detail="65 inputs")
    assert check_batch(items[:64], state) is None
    assert check_batch(items[:1], state) is None


def test_parsers_accept_what_the_prompts_promise() -> None:
    """A model that follows the prompt exactly passes both parsers."""
    text = 'Anna said "hi".\tThe cat\U0001f600 sleeps. Is it late?'
    spans = source_spans(text)
    texts = span_texts(text, spans)
    first = json.dumps([[t, "request" if t.endswith("?") else "statement"] for t in texts])
    statements = parse_statements(first, texts)
    assert statements.kinds == (3, 3, 0)
    accepted = [spans[i] for i in statements.accepted]
    second = json.dumps([[3, texts[0]], [3, texts[1]], [1, "Anna"]], ensure_ascii=False)
    assert not isinstance(parse_classification(second, text, accepted, 0), Refusal)
