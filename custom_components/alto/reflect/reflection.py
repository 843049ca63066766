"""N+25 reflection: Investigate, Extract, Update, Review, Commit over the turns after a cursor.

- Investigate: the scope's open ledger lines (the newest `MAX_LEDGER_SHOWN`), shown to the model.
- Extract: one constrained call (Ollama `format` = `reflection_schema`) over the turns after the
  reflection cursor that fit the organ's prompt budget (at most its batch; the rest wait for the
  next reflection, which starts where this one stopped)::

      {"items": [{"kind": "preference", "ledger": "preferences_patterns",
                  "content": "Ana likes the hall light dimmed after 22:00",
                  "turns": [31, 33], "resolves": 0}],
       "nominations": [{"turn": 33, "quote": "I always dim the hall light after ten"}]}

  `parse_reflection` refuses the whole answer on any departure (the rules of `n1.parse_n1`, plus:
  kind and ledger enums, ``resolves`` 0 or a shown open line).
- Update and Review (`review`, deterministic, against the state at commit time, which may have
  changed during the call): an item is dropped when a turn it cites no longer exists
  (``unknown_turn``), when its ledger already holds the same open line or the batch already
  has it (``duplicate``; content compared casefolded, spaces collapsed, final punctuation
  ignored), or when what it resolves is not an open line of the same ledger or is resolved
  twice (``bad_resolution``). An item that resolves a line of preferences_patterns,
  relationships or home also appends a drift line recording the change. An open commitment
  older than the stale age is resolved as stale (the resolving line cites the same turns).
- Commit: the organ journals the result as one ``reflection`` entry and moves the cursor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..model.calls import Message
from . import strict
from .n1 import parse_nominations
from .prompting import fitting, ledger_block, messages, turn_block
from .records import Ledger, LedgerEntry, Nomination, Turn, minute
from .state import ScopeState

KINDS: Final = ("mistake", "preference", "fact", "contradiction", "other")
MAX_ITEMS: Final = 12
MAX_NOMINATIONS: Final = 6
MAX_CITED: Final = 6
MAX_CONTENT: Final = 200
MAX_ANSWER_BYTES: Final = 12288
MAX_LEDGER_SHOWN: Final = 40
_CHANGES: Final = (Ledger.PREFERENCES_PATTERNS, Ledger.RELATIONSHIPS, Ledger.HOME)
_SPACES: Final = re.compile(r"\s+")

INSTRUCTION: Final = """\
You are Alto's witness: every few dozen messages you review the conversation since the last \
reflection, not to judge but to notice. Answer with one JSON object.
The ledgers below are what is already known (L<n> numbers their lines). In the turns (T<n>), \
find mistakes Alto made, preferences and routines, durable facts (people, pets, the home) and \
contradictions with the ledgers. Route each item to one ledger:
- commitments: what someone will do; - preferences_patterns: likes, dislikes, routines;
- relationships: people and pets; - home: devices and facts about the house;
- drift: what changed; - assumptions: what Alto assumed, and its mistakes.
Each item cites the T numbers it comes from. An item that replaces or closes an open ledger \
line gives that line's number (without the L) in resolves, otherwise 0. Never repeat what a \
ledger line already says. nominations: durable facts quoted EXACTLY, as a contiguous part of \
what "person" said in one turn.
"""


@dataclass(frozen=True, slots=True)
class Item:
    """One extracted finding, routed to a ledger."""

    kind: str
    ledger: Ledger
    content: str
    turns: tuple[int, ...]
    resolves: int


@dataclass(frozen=True, slots=True)
class ReflectionAnswer:
    """A parsed reflection answer."""

    items: tuple[Item, ...]
    nominations: tuple[Nomination, ...]


@dataclass(frozen=True, slots=True)
class Reviewed:
    """What review keeps (ledger lines with ids) and what it drops (item index, reason)."""

    entries: tuple[LedgerEntry, ...]
    dropped: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class ReflectionReport:
    """What one reflection did.

    `exited_cleanly`: every phase ran and the result is committed (or there was nothing to
    reflect on).
    """

    scope: str
    covered: tuple[int, int]  # turns first..last read; first > last when none
    investigated: dict[str, int] = field(default_factory=dict)  # open lines per ledger
    extracted: int = 0
    appended: tuple[LedgerEntry, ...] = ()
    dropped: tuple[tuple[int, str], ...] = ()
    nominations: tuple[Nomination, ...] = ()
    refusal: str | None = None  # why the model's answer was not used
    exited_cleanly: bool = False


def shown_ledger(state: ScopeState) -> list[LedgerEntry]:
    """Investigate: the open ledger lines the model sees, newest last."""
    return state.open_entries()[-MAX_LEDGER_SHOWN:]


def batch(state: ScopeState, limit: int, budget: int) -> list[Turn]:
    """The turns after the cursor this reflection reads.

    At most `limit`, in `budget` bytes of turn blocks (at least one turn, however long, so the
    cursor always moves).
    """
    turns = state.turns_after(state.reflection_cursor)[:limit]
    return turns[: max(1, fitting([turn_block(t) for t in turns], budget))]


def reflection_messages(turns: Sequence[Turn], ledger: Sequence[LedgerEntry]) -> list[Message]:
    """The call's messages: the open ledger lines, then the turns."""
    parts = ["<ledgers>", *(ledger_block(e) for e in ledger), "</ledgers>", "<turns>"]
    parts += [*(turn_block(t) for t in turns), "</turns>"]
    return messages(INSTRUCTION, "\n".join(parts))


def reflection_schema(numbers: Sequence[int], open_ids: Sequence[int]) -> dict[str, Any]:
    """The answer's JSON schema for the turns and open ledger lines shown."""
    turn = {"enum": list(numbers)}
    item = {
        "type": "object",
        "properties": {
            "kind": {"enum": list(KINDS)},
            "ledger": {"enum": [ledger.value for ledger in Ledger]},
            "content": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT},
            "turns": {"type": "array", "items": turn, "minItems": 1, "maxItems": MAX_CITED},
            "resolves": {"enum": [0, *open_ids]},
        },
        "required": ["kind", "ledger", "content", "turns", "resolves"],
    }
    nomination = {
        "type": "object",
        "properties": {"turn": turn, "quote": {"type": "string", "minLength": 1}},
        "required": ["turn", "quote"],
    }
    return {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": item, "maxItems": MAX_ITEMS},
            "nominations": {"type": "array", "items": nomination, "maxItems": MAX_NOMINATIONS},
        },
        "required": ["items", "nominations"],
    }


def parse_reflection(
    raw: object, turns: Sequence[Turn], open_ids: Sequence[int]
) -> ReflectionAnswer:
    """The answer for `turns` and the open lines shown, or `strict.Malformed` for all of it."""
    shown = {t.n: t for t in turns}
    answer = strict.obj(
        strict.load_object(raw, MAX_ANSWER_BYTES), ("items", "nominations"), "answer"
    )
    found = []
    for i, value in enumerate(strict.items(answer["items"], "items", high=MAX_ITEMS)):
        where = f"items[{i}]"
        fields = strict.obj(value, ("kind", "ledger", "content", "turns", "resolves"), where)
        found.append(
            Item(
                strict.choice(fields["kind"], KINDS, f"{where}.kind"),
                strict.choice(fields["ledger"], list(Ledger), f"{where}.ledger"),
                strict.text(fields["content"], f"{where}.content", high=MAX_CONTENT).strip(),
                strict.citations(fields["turns"], shown, f"{where}.turns", high=MAX_CITED),
                strict.integer(fields["resolves"], {0, *open_ids}, f"{where}.resolves"),
            )
        )
    nominations = parse_nominations(answer["nominations"], shown, high=MAX_NOMINATIONS)
    return ReflectionAnswer(tuple(found), tuple(nominations))


def _key(ledger: Ledger, content: str) -> tuple[Ledger, str]:
    return ledger, _SPACES.sub(" ", content.casefold()).strip().rstrip(".!?…").strip()


def review(state: ScopeState, items: Sequence[Item], *, at: int, stale_after: int) -> Reviewed:
    """Update and Review: the ledger lines to append, with ids from `state.next_id` on."""
    open_lines = {e.id: e for e in state.open_entries()}
    known = {_key(e.ledger, e.content) for e in open_lines.values()}
    resolved: set[int] = set()
    entries: list[LedgerEntry] = []
    dropped: list[tuple[int, str]] = []
    next_id = state.next_id

    def append(
        ledger: Ledger, content: str, turns: tuple[int, ...], kind: str, resolves: int
    ) -> None:
        nonlocal next_id
        entries.append(LedgerEntry(next_id, ledger, at, content, turns, kind, resolves))
        next_id += 1

    for index, item in enumerate(items):
        key = _key(item.ledger, item.content)
        target = open_lines.get(item.resolves)
        if not all(n in state.turns for n in item.turns):
            dropped.append((index, "unknown_turn"))
        elif key in known:
            dropped.append((index, "duplicate"))
        elif item.resolves and (
            target is None or target.ledger is not item.ledger or item.resolves in resolved
        ):
            dropped.append((index, "bad_resolution"))
        else:
            known.add(key)
            append(item.ledger, item.content, item.turns, item.kind, item.resolves)
            if target is not None:
                resolved.add(target.id)
                if target.ledger in _CHANGES:
                    change = f"Changed: {target.content} -> {item.content}"
                    append(Ledger.DRIFT, change, item.turns, "change", 0)
    for old in open_lines.values():
        if (
            old.ledger is Ledger.COMMITMENTS
            and old.id not in resolved
            and at - old.at > stale_after
        ):
            stale = f"Stale: no follow-up since {minute(old.at)}."
            append(Ledger.COMMITMENTS, stale, old.turns, "stale", old.id)
    return Reviewed(tuple(entries), tuple(dropped))
