"""The acceptance matrix `alto.qualify` runs against the user's model before mode 2 is allowed.

Each case is an input text with the exact call-1 label of every source span and, for its
statements, the exact call-2 kind (3 assertion, or 4 with the correction-table index it must
correct, against the case's own synthetic table). The cases cover questions, direct, polite,
conditional and quoted requests, negated commands, plain, negated, uncertain and reported
statements, mixed messages, corrections and unrelated claims next to a correction table.

`run_acceptance(call_model)` runs both calls of the real processor (same prompts, schemas and
parser as intake) for every case, records every raw answer, and passes only if every case
matches exactly. A passing result is what `qualification.record_qualification` stores.
Mentions (kinds 1 and 2) are optional and not scored. Passing proves the model follows this
processor on these cases; it does not prove any future label correct.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.calls import CallModel, Message
from ..model.schemas import Schema, classification_schema
from .parse import Classification, parse_classification, parse_statements
from .pipeline import IntakeInput, plan_statements
from .profile import CLASSIFICATION_INSTRUCTION, processor_digest
from .prompts import classification_messages
from .reasons import Refusal
from .records import UNKNOWN_ACTOR, Kind, TableEntry

S, R = "statement", "request"
ASSERT = (3, 0)


@dataclass(frozen=True, slots=True)
class Case:
    """Input text, expected span labels, expected (kind, target) per statement, prior table."""

    topic: str
    text: str
    labels: tuple[str, ...]
    required: tuple[tuple[int, int], ...] = ()
    table: tuple[str, ...] = ()


BINS = "The bins go out on Tuesday."
ALLERGY = "My sister Anna is allergic to peanuts."
PLUMBER = "I think the plumber is coming on Friday."

CASES: tuple[Case, ...] = (
    Case("question", "What time is it?", (R,)),
    Case("question", "Is the oven still on?", (R,)),
    Case("question, indirect", "Can you tell me whether the back door is locked?", (R,)),
    Case("direct request", "Turn on the kitchen lights.", (R,)),
    Case("polite request", "Please remind me to call Mum tomorrow.", (R,)),
    Case("negated command", "Don't open the blinds in the nursery.", (R,)),
    Case("conditional request", "If it gets cold tonight, close the garage door.", (R,)),
    Case("conditional request", "When Anna arrives, unlock the front door.", (R,)),
    Case("quoted command", 'Tell Ben "dinner is ready".', (R,)),
    Case("quoted command", 'Say "good night" to everyone upstairs.', (R,)),
    Case("statement", ALLERGY, (S,), (ASSERT,)),
    Case("statement", BINS, (S,), (ASSERT,)),
    Case("negation", "Ben does not eat meat.", (S,), (ASSERT,)),
    Case("negation", "We never use the front door in winter.", (S,), (ASSERT,)),
    Case("uncertainty", PLUMBER, (S,), (ASSERT,)),
    Case(
        "uncertainty", "I'm not sure whether the dentist appointment is on Monday.", (S,), (ASSERT,)
    ),
    Case("reported statement", 'Ben said "the car needs new tyres."', (S,), (ASSERT,)),
    Case(
        "two statements",
        "The dog's name is Pepper. She is three years old.",
        (S, S),
        (ASSERT, ASSERT),
    ),
    Case(
        "statement then question",
        "The wifi password is on the fridge. Can you read it to me?",
        (S, R),
        (ASSERT,),
    ),
    Case("request then statement", "Dim the lights. The baby is sleeping.", (R, S), (ASSERT,)),
    Case("correction", "Actually, the bins go out on Wednesday.", (S,), ((4, 1),), (BINS,)),
    Case(
        "correction, negated",
        "Anna is not allergic to peanuts after all.",
        (S,),
        ((4, 2),),
        (BINS, ALLERGY),
    ),
    Case(
        "correction, uncertainty resolved",
        "The plumber is coming on Thursday, not Friday.",
        (S,),
        ((4, 1),),
        (PLUMBER,),
    ),
    Case(
        "unrelated claim beside a table",
        "Our anniversary is on the twelfth of June.",
        (S,),
        (ASSERT,),
        (BINS,),
    ),
    Case("unrelated question beside a table", "Where did I leave my keys?", (R,), (), (BINS,)),
)


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One case: both raw answers (classification None when not run) and the verdict."""

    index: int
    case: Case
    statement_response: str | None
    classification_response: str | None
    passed: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        """The recorded answer, as `record_qualification` stores it."""
        return {
            "index": self.index,
            "topic": self.case.topic,
            "text": self.case.text,
            "statement_response": self.statement_response,
            "classification_response": self.classification_response,
            "passed": self.passed,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class AcceptanceResult:
    """Every case result, and whether all passed, for this processor digest."""

    processor_digest: str
    cases: tuple[CaseResult, ...]

    @property
    def passed(self) -> bool:
        """True only if every case matched exactly."""
        return all(case.passed for case in self.cases)

    def answers(self) -> list[dict[str, Any]]:
        """Every raw answer with its verdict."""
        return [case.to_json() for case in self.cases]


async def _ask(call_model: CallModel, messages: list[Message], schema: Schema) -> str:
    try:
        answer = await call_model(messages, schema)
    except Exception as err:  # noqa: BLE001 - a failing call fails the case, not the run
        return f"<call failed: {type(err).__name__}>"
    return answer if isinstance(answer, str) else f"<not text: {type(answer).__name__}>"


async def _run_case(call_model: CallModel, index: int, case: Case) -> CaseResult:
    plan = plan_statements(IntakeInput(case.text, f"acceptance/{index}"))
    if isinstance(plan, Refusal):
        return CaseResult(index, case, None, None, False, f"plan:{plan.reason.value}")
    first = await _ask(call_model, plan.messages, plan.schema)
    statements = parse_statements(first, plan.texts)
    if isinstance(statements, Refusal):
        return CaseResult(index, case, first, None, False, f"call1:{statements.reason.value}")
    labels = tuple(
        "statement" if kind == Kind.ASSERTION else "request" for kind in statements.kinds
    )
    if labels != case.labels:
        return CaseResult(index, case, first, None, False, f"labels {labels}")
    if not statements.accepted:
        return CaseResult(index, case, first, None, True, "ok")
    table = tuple(
        TableEntry(n, n, f"acceptance/prior-{n}", 1, UNKNOWN_ACTOR, quote)
        for n, quote in enumerate(case.table, 1)
    )
    accepted = [plan.spans[i] for i in statements.accepted]
    texts = [plan.texts[i] for i in statements.accepted]
    messages = classification_messages(CLASSIFICATION_INSTRUCTION, UNKNOWN_ACTOR, texts, table)
    second = await _ask(call_model, messages, classification_schema(texts, len(table)))
    found = parse_classification(second, case.text, accepted, len(table))
    if isinstance(found, Refusal):
        return CaseResult(index, case, first, second, False, f"call2:{found.reason.value}")
    return _verdict(index, case, first, second, found)


def _verdict(index: int, case: Case, first: str, second: str, found: Classification) -> CaseResult:
    if found.required != case.required:
        return CaseResult(index, case, first, second, False, f"kinds {found.required}")
    return CaseResult(index, case, first, second, True, "ok")


async def run_acceptance(call_model: CallModel) -> AcceptanceResult:
    """Run every case in order against `call_model`; never raises for a model failure."""
    results = [await _run_case(call_model, n, case) for n, case in enumerate(CASES)]
    return AcceptanceResult(processor_digest(), tuple(results))
