"""N+1: one constrained call over the last exchange(s), the 4-fold mandate, strict parsing.

The call shows the turns the N+1 cursor has not read (oldest first, at most the organ's batch)
and the scope's open commitments as context. Its answer (Ollama `format` = `n1_schema`)::

    {"observations": [{"mandate": "verify", "turns": [12], "content": "...", "urgency": "high"}],
     "nominations": [{"turn": 12, "quote": "my sister Ana is allergic to peanuts"}]}

`parse_n1` refuses the whole answer on any departure: other keys, more than `MAX_OBSERVATIONS`
observations or `MAX_NOMINATIONS` nominations, a mandate or urgency outside its enum, a turn not
shown, a blank or over-long content, a nomination whose quote is not a contiguous part of that
turn's utterance (the person's own words; never Alto's), a repeated nomination. `drafts` then
adds the deterministic Verify the model did not already make at that urgency, or, without a
usable answer, takes the whole heuristic fallback. Nominations go to memory intake, which
admits them by its own rules: N+1 never writes memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..memory.reasons import Reason
from ..model.calls import Message
from . import heuristics, strict
from .heuristics import Draft
from .prompting import ledger_block, messages, turn_block
from .records import Box, LedgerEntry, Mandate, Nomination, Observation, Turn, Urgency
from .state import ScopeState

MAX_OBSERVATIONS: Final = 6
MAX_NOMINATIONS: Final = 4
MAX_CITED: Final = 4
MAX_CONTENT: Final = 240
MAX_QUOTE: Final = 300
MAX_ANSWER_BYTES: Final = 6144
MAX_CONTEXT_LINES: Final = 8

INSTRUCTION: Final = """\
You are Alto's subconscious: the same mind as Alto, in a quieter mode, right after it spoke. \
Read the exchanges below (T<n> numbers them; the effector line is what was really done) and \
answer with one JSON object.
observations (at most 6; an empty list when nothing deserves a note), each with the turn \
numbers it is about, a short content and an urgency (low, medium, high, critical), under one \
mandate:
- complete: something Alto or the person said would be done and has not happened yet;
- verify: something Alto's reply claims that the effector line does not back;
- persist: a durable fact the person stated about themselves, their people or the home;
- surface: something that deserves the person's attention now.
nominations (at most 4): durable facts the person stated, each quoted EXACTLY, as a contiguous \
part of what "person" said in one turn. Never quote Alto.
"""


@dataclass(frozen=True, slots=True)
class N1Answer:
    """A parsed N+1 answer."""

    drafts: tuple[Draft, ...]
    nominations: tuple[Nomination, ...]


def n1_messages(turns: Sequence[Turn], open_commitments: Sequence[LedgerEntry]) -> list[Message]:
    """The call's messages: the unread turns, then the newest open commitments as context."""
    parts = ["<exchanges>", *(turn_block(t) for t in turns), "</exchanges>"]
    context = list(open_commitments)[-MAX_CONTEXT_LINES:]
    if context:
        parts += ["<open_commitments>", *(ledger_block(e) for e in context), "</open_commitments>"]
    return messages(INSTRUCTION, "\n".join(parts))


def n1_schema(numbers: Sequence[int]) -> dict[str, Any]:
    """The answer's JSON schema for the turns shown."""
    turn = {"enum": list(numbers)}
    observation = {
        "type": "object",
        "properties": {
            "mandate": {"enum": [m.value for m in Mandate]},
            "turns": {"type": "array", "items": turn, "minItems": 1, "maxItems": MAX_CITED},
            "content": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT},
            "urgency": {"enum": [u.value for u in Urgency]},
        },
        "required": ["mandate", "turns", "content", "urgency"],
    }
    nomination = {
        "type": "object",
        "properties": {
            "turn": turn,
            "quote": {"type": "string", "minLength": 1, "maxLength": MAX_QUOTE},
        },
        "required": ["turn", "quote"],
    }
    return {
        "type": "object",
        "properties": {
            "observations": {"type": "array", "items": observation, "maxItems": MAX_OBSERVATIONS},
            "nominations": {"type": "array", "items": nomination, "maxItems": MAX_NOMINATIONS},
        },
        "required": ["observations", "nominations"],
    }


def parse_nominations(value: object, turns: dict[int, Turn], *, high: int) -> list[Nomination]:
    """Nominations whose quotes are contiguous parts of their turn's utterance (or refuse)."""
    found: list[Nomination] = []
    for i, item in enumerate(strict.items(value, "nominations", high=high)):
        where = f"nominations[{i}]"
        fields = strict.obj(item, ("turn", "quote"), where)
        n = strict.integer(fields["turn"], turns, f"{where}.turn")
        quote = strict.text(fields["quote"], f"{where}.quote", high=MAX_QUOTE)
        if quote not in turns[n].utterance:
            raise strict.Malformed(Reason.QUOTE_MISMATCH, where)
        nomination = Nomination(n, quote)
        if nomination in found:
            strict.bad(where, "a nomination not given before")
        found.append(nomination)
    return found


def parse_n1(raw: object, turns: Sequence[Turn]) -> N1Answer:
    """The answer for `turns`, or `strict.Malformed` for the whole of it."""
    shown = {t.n: t for t in turns}
    answer = strict.obj(
        strict.load_object(raw, MAX_ANSWER_BYTES), ("observations", "nominations"), "answer"
    )
    drafts = []
    for i, item in enumerate(
        strict.items(answer["observations"], "observations", high=MAX_OBSERVATIONS)
    ):
        where = f"observations[{i}]"
        fields = strict.obj(item, ("mandate", "turns", "content", "urgency"), where)
        drafts.append(
            Draft(
                strict.choice(fields["mandate"], list(Mandate), f"{where}.mandate"),
                strict.citations(fields["turns"], shown, f"{where}.turns", high=MAX_CITED),
                strict.text(fields["content"], f"{where}.content", high=MAX_CONTENT).strip(),
                strict.choice(fields["urgency"], list(Urgency), f"{where}.urgency"),
                source="model",
            )
        )
    nominations = parse_nominations(answer["nominations"], shown, high=MAX_NOMINATIONS)
    return N1Answer(tuple(drafts), tuple(nominations))


def drafts(turns: Sequence[Turn], answer: N1Answer | None) -> list[Draft]:
    """The pass's observations: the model's plus missing Verify, or the heuristic fallback."""
    if answer is None:
        return heuristics.fallback(list(turns))
    found = list(answer.drafts)
    for turn in turns:
        for check in heuristics.verify(turn):
            if not any(
                d.mandate is Mandate.VERIFY
                and turn.n in d.turns
                and d.urgency.rank >= check.urgency.rank
                for d in answer.drafts
            ):
                found.append(check)
    return found


def _key(mandate: str, content: str) -> tuple[str, str]:
    return mandate, " ".join(content.casefold().split())


def inbox_items(state: ScopeState, drafts: Sequence[Draft], at: int) -> list[Observation]:
    """Inbox items for the drafts, built against the state at commit time.

    Ids from `state.next_id` on, the box their urgency says; a draft already waiting in the
    inbox (same mandate and content) or citing a turn no longer kept is skipped.
    """
    seen = {_key(o.mandate, o.content) for o in state.inbox.values() if o.box is not Box.SENT}
    found: list[Observation] = []
    for draft in drafts:
        key = _key(draft.mandate, draft.content)
        if key in seen or not all(n in state.turns for n in draft.turns):
            continue
        seen.add(key)
        box = Box.INTRUSIVE if draft.urgency.intrusive else Box.PENDING
        found.append(
            Observation(
                state.next_id + len(found),
                draft.turns,
                draft.content,
                draft.urgency,
                draft.mandate,
                box,
                at,
                draft.source,
            )
        )
    return found
