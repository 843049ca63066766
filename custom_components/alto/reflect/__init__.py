"""Alto reflects between turns: N+1 observations and an inbox, N+25 reflection, N+100 synthesis.

Plain Python, no Home Assistant import; one HA adapter wires it. The model holds no tools here
either: each pass makes constrained calls (an Ollama `format` JSON schema), parses the complete
answer strictly (a malformed answer is refused whole) and deterministic code applies it.
Module map (each module's docstring carries its own contract):

- `records`: scopes, turns, effector outcomes, observations, nominations, ledger lines,
  synthesis elements, and their journal forms.
- `state`, `log`: a scope's state, the fold that builds it from its journal entries, and the
  per-scope hash-chained journal file (memory's `Journal`), compacted to forget.
- `strict`, `prompting`: strict reading of a model's answer; how turns and ledger lines are shown.
- `heuristics`, `n1`: N+1's deterministic Verify and fallback; its call, schema and parser.
- `reflection`: N+25's phases, call, schema, parser and review.
- `synthesis`: N+100's pressure, guard, call, schema, parser, citation check and rendering.
- `frame`: frame of mind from the time since the last message.
- `replay`: offline replay of a scope's journal, every pass re-derived without a model.
- `organ`: `Reflector`, the one object the integration holds, with its `config` and the
  `reports` its calls return; `runner`: `PassRunner`, the background queue that conversational
  turns preempt.
"""

from .config import ReflectConfig
from .frame import Frame, frame_for, frame_line
from .log import JournalDamaged
from .organ import Reflector
from .records import (
    Box,
    Element,
    Ledger,
    LedgerEntry,
    Mandate,
    Nomination,
    Observation,
    Outcome,
    Synthesis,
    Turn,
    Urgency,
)
from .reflection import ReflectionReport
from .replay import replay
from .reports import Due, InboxView, N1Report, ScopeStatus, TurnReceipt
from .runner import PassRunner
from .synthesis import Pressure, SynthesisReport

__all__ = [
    "Box",
    "Due",
    "Element",
    "Frame",
    "InboxView",
    "JournalDamaged",
    "Ledger",
    "LedgerEntry",
    "Mandate",
    "N1Report",
    "Nomination",
    "Observation",
    "Outcome",
    "PassRunner",
    "Pressure",
    "ReflectConfig",
    "ReflectionReport",
    "Reflector",
    "ScopeStatus",
    "Synthesis",
    "SynthesisReport",
    "Turn",
    "TurnReceipt",
    "Urgency",
    "frame_for",
    "frame_line",
    "replay",
]
