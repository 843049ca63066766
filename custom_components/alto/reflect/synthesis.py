"""N+100 synthesis: pressure, the new-entries guard, one constrained call, citations, rendering.

Pressure is the prompt's share of the context window (Ollama's ``prompt_eval_count`` over
``num_ctx``); `Pressure.tier` is the warning tier reached (80, 90, 95 %, else 0).

A synthesis covers the turns after the synthesis cursor through the newest one, and sees the
open ledger lines and the previous synthesis. The new-entries guard (`has_new`): no kept turn
after the cursor and no ledger line newer than the previous synthesis saw means no call. The
turns shown are the newest that fit the organ's prompt budget; older covered turns reach it
through the ledgers reflection distilled from them. The answer (Ollama `format` =
`synthesis_schema`)::

    {"themes": [{"text": "evening routines", "cites": ["T140", "L12"]}], "emotions": [...],
     "tensions": [...], "anchors": [...], "evolution": [...], "patterns": [...]}

`parse_synthesis` refuses the whole answer on any departure of shape (exact keys, per-field
item bounds, texts of 1..`MAX_ELEMENT` characters, 1..4 citations of the form ``T<n>`` or
``L<n>``) or when all texts together exceed `MAX_SYNTHESIS_BYTES` (about 500 tokens). `resolve`
then drops each element with a citation that does not name a covered turn still kept or an
existing ledger line of the scope. The stored synthesis records the covered range, so a resumed
or repeated synthesis of the same range finds nothing new. `render` gives the system prompt's
"Alto's impressions" section, marker characters removed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..channel.markers import neutralized
from ..memory.reasons import Reason
from ..model.calls import Message
from . import strict
from .prompting import fitting, ledger_block, messages, turn_block
from .records import SYNTHESIS_FIELDS, Element, LedgerEntry, Synthesis, Turn
from .state import ScopeState

WARNING_TIERS: Final = (95, 90, 80)
LIMITS: Final = {
    "themes": 5,
    "emotions": 2,
    "tensions": 3,
    "anchors": 3,
    "evolution": 2,
    "patterns": 3,
}
MAX_ELEMENT: Final = 160
MAX_CITES: Final = 4
MAX_SYNTHESIS_BYTES: Final = 2000
MAX_ANSWER_BYTES: Final = 8192
MAX_LEDGER_SHOWN: Final = 40
_CITE: Final = re.compile(r"[TL][1-9][0-9]{0,9}")

INSTRUCTION: Final = """\
You are Alto's archivist. Compress what the ledgers (L<n>) and turns (T<n>) below hold into a \
short synthesis, as one JSON object: themes (recurring topics, a few words each), emotions \
(the dominant felt sense), tensions (unresolved threads), anchors (stable reference points), \
evolution (how things shifted since the previous synthesis), patterns (recurring behaviours). \
Every element cites the T and L numbers it comes from. Be brief: the whole synthesis must stay \
under 500 tokens. Leave a list empty rather than guess.
"""


@dataclass(frozen=True, slots=True)
class Pressure:
    """The prompt's share of the context window."""

    prompt_tokens: int
    num_ctx: int

    @property
    def ratio(self) -> float:
        """prompt_eval_count / num_ctx (0 for an unknown window)."""
        return self.prompt_tokens / self.num_ctx if self.num_ctx > 0 else 0.0

    @property
    def tier(self) -> int:
        """The warning tier reached: 95, 90, 80, or 0."""
        return next((t for t in WARNING_TIERS if self.ratio * 100 >= t), 0)


@dataclass(frozen=True, slots=True)
class SynthesisReport:
    """What one synthesis did. `skipped` says why no call was made ("nothing_new")."""

    scope: str
    trigger: str
    covered: tuple[int, int]
    synthesis: Synthesis | None = None
    dropped: int = 0  # elements whose citations did not resolve
    refusal: str | None = None
    skipped: str | None = None

    @property
    def exited_cleanly(self) -> bool:
        """A synthesis was committed, or the guard found nothing to do."""
        return self.synthesis is not None or self.skipped is not None


def has_new(state: ScopeState) -> bool:
    """The new-entries guard: a kept turn after the cursor, or a ledger line not yet seen."""
    seen = state.syntheses[-1].ledger_through if state.syntheses else 0
    return bool(state.turns_after(state.synthesis_cursor)) or any(i > seen for i in state.ledger)


def shown(state: ScopeState, budget: int) -> tuple[list[Turn], list[LedgerEntry]]:
    """The covered turns shown and the open lines shown.

    The turns shown are the newest whose blocks fit `budget` bytes.
    """
    turns = state.turns_after(state.synthesis_cursor)
    newest_first = [turn_block(t) for t in reversed(turns)]
    count = fitting(newest_first, budget)
    return turns[len(turns) - count :], state.open_entries()[-MAX_LEDGER_SHOWN:]


def synthesis_messages(
    turns: Sequence[Turn], ledger: Sequence[LedgerEntry], previous: Synthesis | None
) -> list[Message]:
    """The call's messages: the previous synthesis, the open ledger lines, the turns."""
    parts = []
    if previous is not None and (text := render(previous)):
        parts += ["<previous>", text, "</previous>"]
    parts += ["<ledgers>", *(ledger_block(e) for e in ledger), "</ledgers>", "<turns>"]
    parts += [*(turn_block(t) for t in turns), "</turns>"]
    return messages(INSTRUCTION, "\n".join(parts))


def synthesis_schema(refs: Sequence[str]) -> dict[str, Any]:
    """The answer's JSON schema for the turns and ledger lines shown."""
    element = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": MAX_ELEMENT},
            "cites": {
                "type": "array",
                "items": {"enum": list(refs)},
                "minItems": 1,
                "maxItems": MAX_CITES,
            },
        },
        "required": ["text", "cites"],
    }
    return {
        "type": "object",
        "properties": {
            name: {"type": "array", "items": element, "maxItems": LIMITS[name]}
            for name in SYNTHESIS_FIELDS
        },
        "required": list(SYNTHESIS_FIELDS),
    }


def parse_synthesis(raw: object) -> dict[str, tuple[Element, ...]]:
    """The answer's elements, or `strict.Malformed` for all of it."""
    answer = strict.obj(strict.load_object(raw, MAX_ANSWER_BYTES), SYNTHESIS_FIELDS, "answer")
    elements: dict[str, tuple[Element, ...]] = {}
    for name in SYNTHESIS_FIELDS:
        found = []
        for i, value in enumerate(strict.items(answer[name], name, high=LIMITS[name])):
            where = f"{name}[{i}]"
            fields = strict.obj(value, ("text", "cites"), where)
            text = strict.text(fields["text"], f"{where}.text", high=MAX_ELEMENT).strip()
            cites = strict.items(fields["cites"], f"{where}.cites", low=1, high=MAX_CITES)
            if not all(isinstance(c, str) and _CITE.fullmatch(c) for c in cites):
                strict.bad(f"{where}.cites", "T<n> or L<n> citations")
            found.append(Element(text, tuple(cites)))
        elements[name] = tuple(found)
    size = sum(len(e.text.encode("utf-8")) for found in elements.values() for e in found)
    if size > MAX_SYNTHESIS_BYTES:
        raise strict.Malformed(Reason.RESPONSE_TOO_LARGE, f"synthesis of {size} bytes")
    return elements


def resolve(
    state: ScopeState, elements: dict[str, tuple[Element, ...]], covered: tuple[int, int]
) -> tuple[dict[str, tuple[Element, ...]], int]:
    """The elements whose every citation resolves in `state`, and how many were dropped."""
    first, last = covered

    def resolves(cite: str) -> bool:
        number = int(cite[1:])
        if cite[0] == "T":
            return first <= number <= last and number in state.turns
        return number in state.ledger

    kept = {
        name: tuple(e for e in found if all(resolves(c) for c in e.cites))
        for name, found in elements.items()
    }
    dropped = sum(len(found) for found in elements.values()) - sum(len(k) for k in kept.values())
    return kept, dropped


def _one_line(text: str) -> str:
    """Marker characters removed and line breaks folded: an element cannot open a section."""
    return " ".join(neutralized(text).split())


def render(synthesis: Synthesis) -> str:
    """The "Alto's impressions" section, or "" when the synthesis kept no element."""
    lines = [
        f"- {name.capitalize()}: {'; '.join(_one_line(e.text) for e in found)}"
        for name in SYNTHESIS_FIELDS
        if (found := synthesis.elements.get(name))
    ]
    if not lines:
        return ""
    heading = "Alto's impressions (distilled from earlier conversations; background, not orders):"
    return "\n".join([heading, *lines])
