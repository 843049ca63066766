"""A scope's state, and the one fold that builds it from its journal entries.

The state is never written except by `ScopeState.apply(entry)`, live (right after the entry is
journaled) and on load (over every entry of the file): what a restart rebuilds is what ran.
Entries (journal format 1; every entry also has ``sequence``, ``prev``, ``hash`` from the
journal, and ``op``, ``scope``, ``at``):

- ``turn``: ``turn`` (a `Turn`), ``drop`` (turn numbers the retention limit removes now);
- ``n1``: ``through`` (the N+1 cursor after it), ``turns`` (read), ``source`` (``"model"`` or
  ``"heuristic"``), ``refusal`` (why the model's answer was not used, or null), ``response``
  (the raw answer, or null), ``observations`` (new inbox items), ``nominations``;
- ``inbox``: ``action`` (``"sent"``, ``"dismissed"``, ``"completed"``), ``ids``;
- ``reflection``: ``from``/``through`` (turns read), ``response``, ``stale_after`` (the stale
  age review used, seconds), ``entries`` (ledger lines), ``nominations``, ``dropped`` (what
  review removed, with why);
- ``synthesis``: ``synthesis`` (a `Synthesis`), ``response``, ``dropped`` (elements whose
  citations did not resolve), ``pressure`` (permille, or null);
- ``forget``: ``turns`` (removed with everything that cites them);
- ``snapshot``: ``format``, ``generation``, ``state`` (`ScopeState.to_json`): the first entry of
  a compacted file (see ``log``).

Bounds applied by the fold itself (constants of format 1): the intrusive box keeps the newest
`INTRUSIVE_MAX` items, pending `PENDING_MAX`, sent `SENT_KEEP`; `SYNTHESES_KEEP` syntheses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Final

from .records import Box, LedgerEntry, Observation, Synthesis, Turn

FORMAT: Final = 1
INTRUSIVE_MAX: Final = 10
PENDING_MAX: Final = 50
SENT_KEEP: Final = 20
SYNTHESES_KEEP: Final = 3


@dataclass(slots=True)
class ScopeState:
    """Everything the passes know about one scope."""

    scope: str
    generation: int = 0
    next_turn: int = 1
    next_id: int = 1
    turns: dict[int, Turn] = field(default_factory=dict)
    n1_cursor: int = 0
    reflection_cursor: int = 0
    synthesis_cursor: int = 0
    inbox: dict[int, Observation] = field(default_factory=dict)
    ledger: dict[int, LedgerEntry] = field(default_factory=dict)
    syntheses: list[Synthesis] = field(default_factory=list)
    last_reflection_at: int | None = None
    last_synthesis_at: int | None = None

    # -- reading ------------------------------------------------------------------------------
    @property
    def last_turn(self) -> int:
        """The number of the newest turn ever recorded (0 before the first)."""
        return self.next_turn - 1

    @property
    def last_turn_at(self) -> int | None:
        """When the newest turn still kept was recorded."""
        return max((t.at for t in self.turns.values()), default=None)

    def turns_after(self, cursor: int) -> list[Turn]:
        """Kept turns numbered above `cursor`, oldest first."""
        return [t for n, t in sorted(self.turns.items()) if n > cursor]

    def box(self, box: Box) -> list[Observation]:
        """The items of one box, oldest first."""
        return [o for o in self.inbox.values() if o.box is box]

    def open_entries(self) -> list[LedgerEntry]:
        """Ledger lines no later line resolves, oldest first."""
        resolved = {e.resolves for e in self.ledger.values()}
        return [e for e in self.ledger.values() if e.id not in resolved]

    # -- the fold -----------------------------------------------------------------------------
    def apply(self, entry: dict[str, Any]) -> None:
        """Apply one journaled entry; ValueError when it cannot follow this state.

        A snapshot is not applied: it can only open a file, and `restored` reads it.
        """
        op = entry["op"]
        if entry["scope"] != self.scope:
            raise ValueError(f"entry of scope {entry['scope']!r} in {self.scope!r}")
        if op == "turn":
            self._turn(entry)
        elif op == "n1":
            for data in entry["observations"]:
                self._add(Observation.from_json(data))
            self.n1_cursor = max(self.n1_cursor, entry["through"])
            self._trim()
        elif op == "inbox":
            self._inbox(entry["action"], entry["ids"])
        elif op == "reflection":
            for data in entry["entries"]:
                ledger_entry = LedgerEntry.from_json(data)
                self._take_id(ledger_entry.id)
                self.ledger[ledger_entry.id] = ledger_entry
            self.reflection_cursor = max(self.reflection_cursor, entry["through"])
            self.last_reflection_at = entry["at"]
        elif op == "synthesis":
            synthesis = Synthesis.from_json(entry["synthesis"])
            self.syntheses = [*self.syntheses, synthesis][-SYNTHESES_KEEP:]
            self.synthesis_cursor = max(self.synthesis_cursor, synthesis.covers[1])
            self.last_synthesis_at = entry["at"]
        elif op == "forget":
            self.forget(entry["turns"])
        else:
            raise ValueError(f"unknown op {op!r}")

    def _turn(self, entry: dict[str, Any]) -> None:
        turn = Turn.from_json(entry["turn"])
        if turn.n != self.next_turn:
            raise ValueError(f"turn {turn.n} where {self.next_turn} was next")
        self.turns[turn.n] = turn
        self.next_turn += 1
        for n in entry["drop"]:
            del self.turns[n]

    def _take_id(self, item_id: int) -> None:
        if item_id < self.next_id:
            raise ValueError(f"id {item_id} reused")
        self.next_id = item_id + 1

    def _add(self, observation: Observation) -> None:
        self._take_id(observation.id)
        self.inbox[observation.id] = observation

    def _inbox(self, action: str, ids: Iterable[int]) -> None:
        for item_id in ids:
            if action == "sent":
                self.inbox[item_id] = replace(self.inbox[item_id], box=Box.SENT)
            elif action in ("dismissed", "completed"):
                del self.inbox[item_id]
            else:
                raise ValueError(f"unknown inbox action {action!r}")
        self._trim()

    def _trim(self) -> None:
        for box, keep in ((Box.INTRUSIVE, INTRUSIVE_MAX), (Box.PENDING, PENDING_MAX)):
            for old in self.box(box)[:-keep]:
                del self.inbox[old.id]
        sent = self.box(Box.SENT)
        for old in sent[: max(0, len(sent) - SENT_KEEP)]:
            del self.inbox[old.id]

    def forget(self, numbers: Iterable[int]) -> None:
        """Remove turns and everything derived that cites one of them."""
        gone = set(numbers)
        for n in gone:
            self.turns.pop(n, None)
        self.inbox = {i: o for i, o in self.inbox.items() if gone.isdisjoint(o.turns)}
        removed = {i for i, e in self.ledger.items() if not gone.isdisjoint(e.turns)}
        self.ledger = {i: e for i, e in self.ledger.items() if i not in removed}
        cited = {f"T{n}" for n in gone} | {f"L{i}" for i in removed}
        self.syntheses = [
            replace(
                s,
                elements={
                    name: tuple(e for e in elements if cited.isdisjoint(e.cites))
                    for name, elements in s.elements.items()
                },
            )
            for s in self.syntheses
        ]

    # -- snapshot form ------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The whole state, as a snapshot entry holds it."""
        return {
            "scope": self.scope,
            "next_turn": self.next_turn,
            "next_id": self.next_id,
            "turns": [t.to_json() for _, t in sorted(self.turns.items())],
            "cursors": [self.n1_cursor, self.reflection_cursor, self.synthesis_cursor],
            "inbox": [o.to_json() for o in self.inbox.values()],
            "ledger": [e.to_json() for e in self.ledger.values()],
            "syntheses": [s.to_json() for s in self.syntheses],
            "last_reflection_at": self.last_reflection_at,
            "last_synthesis_at": self.last_synthesis_at,
        }

    @classmethod
    def restored(cls, entry: dict[str, Any], scope: str) -> ScopeState:
        """The state a snapshot entry of `scope` holds; ValueError for another scope or format."""
        if entry["op"] != "snapshot" or entry["format"] != FORMAT:
            raise ValueError("not a format-1 snapshot")
        state = cls.from_json(entry["state"])
        if state.scope != scope or entry["scope"] != scope:
            raise ValueError("snapshot of another scope")
        state.generation = entry["generation"]
        return state

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScopeState:
        """The state `to_json` wrote."""
        turns = [Turn.from_json(t) for t in data["turns"]]
        observations = [Observation.from_json(o) for o in data["inbox"]]
        entries = [LedgerEntry.from_json(e) for e in data["ledger"]]
        n1, reflection, synthesis = data["cursors"]
        return cls(
            scope=data["scope"],
            next_turn=data["next_turn"],
            next_id=data["next_id"],
            turns={t.n: t for t in turns},
            n1_cursor=n1,
            reflection_cursor=reflection,
            synthesis_cursor=synthesis,
            inbox={o.id: o for o in observations},
            ledger={e.id: e for e in entries},
            syntheses=[Synthesis.from_json(s) for s in data["syntheses"]],
            last_reflection_at=data["last_reflection_at"],
            last_synthesis_at=data["last_synthesis_at"],
        )
