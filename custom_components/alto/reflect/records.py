"""Value types of the reflect organ and their journal (JSON) forms.

A scope is ``"household"`` or one HA user id (32 lowercase hex): the owner of a private turn log.
Turns are numbered per scope from 1 (`Turn.n`); a number is never reused, not after forget nor
after retention, so cursors and citations are plain integers. Observations and ledger entries
share one per-scope id counter. Times are whole POSIX seconds.

`to_json`/`from_json` give the exact journal form of each type (see ``state`` for the entries);
`from_json` trusts its input, which the journal's hash chain has already checked.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from ..act.model import STATE_QUERY_TOOL
from ..memory.records import HOUSEHOLD

_USER_ID: Final = re.compile(r"[0-9a-f]{32}")
# Longest utterance or reply kept per turn, in characters; longer text is cut at this length.
MAX_TURN_TEXT: Final = 1500
# The action organ's verdicts that mean an effector ran (a read aside, see `Outcome.acted`).
SUCCESS_VERDICTS: Final = frozenset({"executed", "confirmed"})


def valid_scope(scope: object) -> bool:
    """Whether `scope` names a turn log: the household or one HA user id."""
    return scope == HOUSEHOLD or (isinstance(scope, str) and bool(_USER_ID.fullmatch(scope)))


def minute(at: int) -> str:
    """``YYYY-MM-DD HH:MM`` (UTC) of a POSIX time: the ledgers' timestamp."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M")


def conversation_digest(conversation_id: str) -> str:
    """The 32-hex digest a turn stores instead of its conversation id (any length or text)."""
    return hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Urgency(StrEnum):
    """How soon an observation deserves attention; high and critical interrupt."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def intrusive(self) -> bool:
        """High and critical observations go to the intrusive box, the others wait."""
        return self in (Urgency.HIGH, Urgency.CRITICAL)

    @property
    def rank(self) -> int:
        """0 (low) to 3 (critical)."""
        return list(Urgency).index(self)


class Mandate(StrEnum):
    """The N+1 mandate an observation answers."""

    COMPLETE = "complete"
    VERIFY = "verify"
    PERSIST = "persist"
    SURFACE = "surface"


class Box(StrEnum):
    """The inbox box an observation is in."""

    INTRUSIVE = "intrusive"
    PENDING = "pending"
    SENT = "sent"


class Ledger(StrEnum):
    """The per-scope ledgers reflection appends to."""

    COMMITMENTS = "commitments"
    PREFERENCES_PATTERNS = "preferences_patterns"
    RELATIONSHIPS = "relationships"
    HOME = "home"
    DRIFT = "drift"
    ASSUMPTIONS = "assumptions"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the effector recorded for one action span (never what the model said)."""

    verdict: str
    entity_id: str | None = None
    service: str | None = None

    @property
    def acted(self) -> bool:
        """Whether an effector changed something: a validated read is not an action."""
        return self.verdict in SUCCESS_VERDICTS and self.service != STATE_QUERY_TOOL

    def to_json(self) -> dict[str, Any]:
        """The record as the journal stores it (JSON types only)."""
        return {"verdict": self.verdict, "entity_id": self.entity_id, "service": self.service}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        """The record read back from its `to_json` form."""
        return cls(data["verdict"], data["entity_id"], data["service"])


@dataclass(frozen=True, slots=True)
class Turn:
    """One exchange of a scope: what the person said, what Alto said, what the effector did."""

    n: int
    at: int
    utterance: str
    reply: str
    outcomes: tuple[Outcome, ...]
    conversation: str  # `conversation_digest` of the conversation id

    def to_json(self) -> dict[str, Any]:
        """The record as the journal stores it (JSON types only)."""
        return {
            "n": self.n,
            "at": self.at,
            "utterance": self.utterance,
            "reply": self.reply,
            "outcomes": [o.to_json() for o in self.outcomes],
            "conversation": self.conversation,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Turn:
        """The record read back from its `to_json` form."""
        outcomes = tuple(Outcome.from_json(o) for o in data["outcomes"])
        return cls(
            data["n"], data["at"], data["utterance"], data["reply"], outcomes, data["conversation"]
        )


@dataclass(frozen=True, slots=True)
class Observation:
    """An N+1 observation in the inbox: what it cites, says, and how urgent it is."""

    id: int
    turns: tuple[int, ...]
    content: str
    urgency: Urgency
    mandate: Mandate
    box: Box
    at: int
    source: str  # "model" or "heuristic"

    def to_json(self) -> dict[str, Any]:
        """The record as the journal stores it (JSON types only)."""
        return {
            "id": self.id,
            "turns": list(self.turns),
            "content": self.content,
            "urgency": self.urgency.value,
            "mandate": self.mandate.value,
            "box": self.box.value,
            "at": self.at,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observation:
        """The record read back from its `to_json` form."""
        return cls(
            data["id"],
            tuple(data["turns"]),
            data["content"],
            Urgency(data["urgency"]),
            Mandate(data["mandate"]),
            Box(data["box"]),
            data["at"],
            data["source"],
        )


@dataclass(frozen=True, slots=True)
class Nomination:
    """A durable fact for memory intake: the person's own words, exactly, from one turn."""

    turn: int
    quote: str

    def to_json(self) -> dict[str, Any]:
        """The record as the journal stores it (JSON types only)."""
        return {"turn": self.turn, "quote": self.quote}


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One appended ledger line. `resolves` names the entry it closes (0 for none)."""

    id: int
    ledger: Ledger
    at: int
    content: str
    turns: tuple[int, ...]
    kind: str
    resolves: int = 0

    def line(self) -> str:
        """``L<id> [YYYY-MM-DD HH:MM] content`` (UTC), the form prompts and reports show."""
        return f"L{self.id} [{minute(self.at)}] {self.content}"

    def to_json(self) -> dict[str, Any]:
        """The record as the journal stores it (JSON types only)."""
        return {
            "id": self.id,
            "ledger": self.ledger.value,
            "at": self.at,
            "content": self.content,
            "turns": list(self.turns),
            "kind": self.kind,
            "resolves": self.resolves,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LedgerEntry:
        """The record read back from its `to_json` form."""
        return cls(
            data["id"],
            Ledger(data["ledger"]),
            data["at"],
            data["content"],
            tuple(data["turns"]),
            data["kind"],
            data["resolves"],
        )


@dataclass(frozen=True, slots=True)
class Element:
    """One synthesized impression and the turns (``T<n>``) or ledger lines (``L<id>``) it cites."""

    text: str
    cites: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The record as the journal stores it (JSON types only)."""
        return {"text": self.text, "cites": list(self.cites)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Element:
        """The record read back from its `to_json` form."""
        return cls(data["text"], tuple(data["cites"]))


SYNTHESIS_FIELDS: Final = ("themes", "emotions", "tensions", "anchors", "evolution", "patterns")


@dataclass(frozen=True, slots=True)
class Synthesis:
    """One N+100 synthesis: the turns it covers, the ledger lines it saw, its elements."""

    covers: tuple[int, int]  # turns first..last covered (first > last: no new turn)
    ledger_through: int  # the highest ledger id it saw
    at: int
    trigger: str  # "interval", "pressure" or "demand"
    elements: dict[str, tuple[Element, ...]]

    def to_json(self) -> dict[str, Any]:
        """The record as the journal stores it (JSON types only)."""
        return {
            "covers": list(self.covers),
            "ledger_through": self.ledger_through,
            "at": self.at,
            "trigger": self.trigger,
            "elements": {
                name: [e.to_json() for e in self.elements.get(name, ())]
                for name in SYNTHESIS_FIELDS
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Synthesis:
        """The record read back from its `to_json` form."""
        elements = {
            name: tuple(Element.from_json(e) for e in data["elements"][name])
            for name in SYNTHESIS_FIELDS
        }
        first, last = data["covers"]
        return cls((first, last), data["ledger_through"], data["at"], data["trigger"], elements)
