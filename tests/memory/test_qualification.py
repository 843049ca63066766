"""Modes, the processor digest, qualified pairs and the acceptance matrix."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.memory import profile
from custom_components.alto.memory.acceptance import CASES, run_acceptance
from custom_components.alto.memory.parse import parse_statements
from custom_components.alto.memory.profile import processor_digest
from custom_components.alto.memory.qualification import (
    SHIPPED_TABLE,
    Mode,
    QualificationTable,
    effective_mode,
    load_table,
    record_qualification,
)
from custom_components.alto.memory.spans import SEGMENTATION_PROFILE

from .conftest import _LINE, MODEL_DIGEST, FakeModel, _section

PAIR = QualificationTable(frozenset({(MODEL_DIGEST, processor_digest())}))
NONE = QualificationTable(frozenset())


@pytest.mark.parametrize(
    ("requested", "table", "direct", "expected"),
    [
        (0, NONE, False, (Mode.EXPLICIT, 0)),
        (1, NONE, True, (Mode.SOURCE, 0)),
        (2, PAIR, True, (Mode.AUTOMATIC, 0)),
        (2, PAIR, False, (Mode.AUTOMATIC, 0)),
        (2, NONE, True, (None, 12)),
        (2, NONE, False, (Mode.SOURCE, 12)),
    ],
)
def test_effective_mode(
    requested: int, table: QualificationTable, direct: bool, expected: tuple[Mode | None, int]
) -> None:
    """Effective mode."""
    assert effective_mode(requested, MODEL_DIGEST, table, direct=direct) == expected


def test_only_the_exact_pair_qualifies() -> None:
    """Only the exact pair qualifies."""
    assert PAIR.qualified(MODEL_DIGEST)
    assert PAIR.qualified(f"sha256:{MODEL_DIGEST}")
    assert not PAIR.qualified(MODEL_DIGEST[:-1] + "0")
    assert not PAIR.qualified(None)
    assert not PAIR.qualified("llama3.2")
    assert not PAIR.qualified(MODEL_DIGEST, "f" * 64)  # another processor
    assert effective_mode(2, None, PAIR, direct=True) == (None, 12)


def test_processor_digest_covers_contract_instructions_and_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Processor digest covers contract instructions and profile."""
    data = (
        profile.PROCESSOR_CONTRACT
        + profile.STATEMENT_INSTRUCTION
        + profile.CLASSIFICATION_INSTRUCTION
        + SEGMENTATION_PROFILE
    )
    assert processor_digest() == hashlib.sha256(data.encode()).hexdigest()
    original = processor_digest()
    for name in ("PROCESSOR_CONTRACT", "STATEMENT_INSTRUCTION", "CLASSIFICATION_INSTRUCTION"):
        with monkeypatch.context() as patch:
            patch.setattr(profile, name, getattr(profile, name) + " ")
            processor_digest.cache_clear()
            assert processor_digest() != original
        processor_digest.cache_clear()
    assert processor_digest() == original


def test_shipped_table_qualifies_nothing() -> None:
    """Shipped table qualifies nothing."""
    assert json.loads(SHIPPED_TABLE.read_text()) == []
    assert load_table(None).pairs == frozenset()


def test_recorded_rows_are_the_only_other_source(tmp_path: Path) -> None:
    """Recorded rows are the only other source."""
    path = tmp_path / "alto" / "qualified.json"
    assert not load_table(path).qualified(MODEL_DIGEST)
    answers = [{"index": 0, "statement_response": "[]"}]
    record_qualification(path, MODEL_DIGEST, "llama3.2:latest", answers)
    record_qualification(path, MODEL_DIGEST, "llama3.2:latest", answers)
    rows = json.loads(path.read_text())
    assert len(rows) == 1
    assert rows[0]["answers"] == answers
    assert rows[0]["processor_digest"] == processor_digest()
    assert load_table(path).qualified(MODEL_DIGEST)
    path.write_text(json.dumps([{"model_digest": "nope"}, 3, *rows]))
    assert load_table(path).pairs == {(MODEL_DIGEST, processor_digest())}
    with pytest.raises(ValueError, match="model digest must be 64 hex digits"):
        record_qualification(path, "not-a-digest", "x", [])


def test_matrix_covers_the_required_topics() -> None:
    """Matrix covers the required topics."""
    topics = " ".join(case.topic for case in CASES)
    assert len(CASES) >= 23
    for topic in ("question", "direct", "conditional", "quoted", "statement", "correction"):
        assert topic in topics
    for topic in ("uncertainty", "negation", "negated command"):
        assert topic in topics
    assert len({case.text for case in CASES}) == len(CASES)


class OracleModel:
    """Answers every acceptance case exactly as expected."""

    def __init__(self) -> None:
        """No call yet."""
        self.calls = 0

    async def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        """The expected answer of the case the call asks about."""
        self.calls += 1
        user = messages[1]["content"]
        if FakeModel.is_first(messages):
            for case in CASES:
                spans = [item["prefixItems"][0]["const"] for item in schema["prefixItems"]]
                if "".join(spans).replace(" ", "") == case.text.replace(" ", ""):
                    return json.dumps(
                        [[s, label] for s, label in zip(spans, case.labels, strict=True)]
                    )
        statements = [json.loads(_LINE.match(line)[1]) for line in _section(user, "statements")]
        for case in CASES:
            texts = [
                s
                for s, label in zip(_spans(case.text), case.labels, strict=True)
                if label == "statement"
            ]
            if texts == statements:
                items = [
                    [k, t, g] if k == 4 else [k, t]
                    for (k, g), t in zip(case.required, texts, strict=True)
                ]
                return json.dumps(items)
        return "[]"


def _spans(text: str) -> list[str]:
    from custom_components.alto.memory.spans import source_spans, span_texts

    return span_texts(text, source_spans(text))


async def test_acceptance_passes_an_exact_model_and_records_every_answer() -> None:
    """Acceptance passes an exact model and records every answer."""
    oracle = OracleModel()
    result = await run_acceptance(oracle)
    assert result.passed, [c.reason for c in result.cases if not c.passed]
    assert result.processor_digest == processor_digest()
    answers = result.answers()
    assert len(answers) == len(CASES)
    assert all(a["statement_response"] for a in answers)
    statements = sum(1 for case in CASES if "statement" in case.labels)
    assert oracle.calls == len(CASES) + statements
    assert all(
        a["classification_response"] is None
        for a, c in zip(answers, CASES, strict=True)
        if "statement" not in c.labels
    )


async def test_acceptance_fails_a_model_that_misses_cases() -> None:
    """Acceptance fails a model that misses cases."""
    result = await run_acceptance(FakeModel())  # rule of thumb: misses the negated correction
    assert not result.passed
    failed = [case for case in result.cases if not case.passed]
    assert any(case.case.topic == "correction, negated" for case in failed)
    assert all(case.statement_response is not None for case in result.cases)


async def test_acceptance_survives_a_failing_model() -> None:
    """Acceptance survives a failing model."""

    async def broken(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        raise ConnectionError

    result = await run_acceptance(broken)
    assert not result.passed
    assert all(case.reason.startswith("call1:") for case in result.cases)
    assert all(case.statement_response == "<call failed: ConnectionError>" for case in result.cases)


def test_acceptance_statement_schema_is_what_parse_expects() -> None:
    """The expected labels of every case are a valid complete call-1 answer for its spans."""
    for case in CASES:
        spans = _spans(case.text)
        raw = json.dumps([[s, label] for s, label in zip(spans, case.labels, strict=True)])
        assert not hasattr(parse_statements(raw, spans), "reason"), case.text
