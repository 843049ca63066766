"""What the organ's calls return besides the pass reports of ``reflection`` and ``synthesis``."""

from __future__ import annotations

from dataclasses import dataclass

from .records import Nomination, Observation
from .synthesis import Pressure


@dataclass(frozen=True, slots=True)
class Due:
    """Which background passes a scope is due for now.

    `unreflected`: a turn after the reflection cursor gives a pass work (the idle check
    reflects on the scope only then).
    """

    n1: bool
    reflection: bool
    synthesis: str | None  # "interval", "pressure" or None
    unreflected: bool = False


@dataclass(frozen=True, slots=True)
class TurnReceipt:
    """The recorded turn's number, and what is due after it."""

    n: int
    due: Due


@dataclass(frozen=True, slots=True)
class N1Report:
    """What one N+1 pass did. `source`: "model", "heuristic", or "none" (no unread turn)."""

    scope: str
    turns: tuple[int, ...]
    observations: tuple[Observation, ...]
    nominations: tuple[Nomination, ...]
    source: str
    refusal: str | None = None

    @property
    def heartbeat(self) -> bool:
        """Turns were read and nothing was noted: the pass's entry is the heartbeat."""
        return bool(self.turns) and not self.observations


@dataclass(frozen=True, slots=True)
class InboxView:
    """A scope's three boxes, most urgent first in the intrusive box, else oldest first."""

    intrusive: tuple[Observation, ...]
    pending: tuple[Observation, ...]
    sent: tuple[Observation, ...]


@dataclass(frozen=True, slots=True)
class ScopeStatus:
    """Counts and times for sensors and diagnostics: no text of the scope."""

    turns: int
    last_turn: int
    intrusive: int
    pending: int
    sent: int
    ledger_lines: int
    last_reflection_at: int | None
    last_synthesis_at: int | None
    pressure: Pressure | None
