"""Offline replay of one scope's journal: every check `log.load` makes, and each pass re-derived.

`replay(root, scope)` reads the scope's file without a model. For each entry it checks the line
parses, its sequence, its hash and its link (as `log.load` does), then re-derives what the pass
recorded from the state folded so far and the entry's recorded inputs, and compares:

- ``n1``: the turns read (the state still holds them at that point); the recorded raw answer
  parsed again when the entry says the model's answer was used, else the heuristic fallback;
  the inbox items and the kept nominations;
- ``reflection``: the recorded answer parsed against the turns ``from``..``through`` and the
  open ledger lines shown, then review with the recorded stale age;
- ``synthesis``: the recorded answer parsed, its citations resolved against the covered range.

The result is ``{"entries": n, "ok": bool, "first_mismatch": 0-based index | None,
"reason": str | None}``; the reason names the failed check (``entry``, ``fold``, ``n1``,
``reflection``, ``synthesis``) or is ``refused:<reason>`` when a recorded answer that was used
no longer parses (another parser version). A missing file replays as 0 entries, ok. Limitation:
a turn the retention limit dropped while a reflection of it was in flight cannot be shown
again, so that reflection reports a mismatch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..memory.journal import GENESIS, entry_hash, read_lines
from . import n1, reflection, synthesis
from .state import ScopeState
from .strict import Malformed


class _Mismatch(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _n1(state: ScopeState, entry: dict[str, Any]) -> None:
    turns = [state.turns[n] for n in entry["turns"]]
    answer = n1.parse_n1(entry["response"], turns) if entry["source"] == "model" else None
    drafts = n1.drafts(turns, answer)
    items = [o.to_json() for o in n1.inbox_items(state, drafts, entry["at"])]
    nominations = [x.to_json() for x in (answer.nominations if answer else ())]
    kept = [x for x in nominations if x["turn"] in state.turns]
    if items != entry["observations"] or kept != entry["nominations"]:
        raise _Mismatch("n1")


def _reflection(state: ScopeState, entry: dict[str, Any]) -> None:
    turns = [t for n, t in sorted(state.turns.items()) if entry["from"] <= n <= entry["through"]]
    open_ids = [e.id for e in reflection.shown_ledger(state)]
    answer = reflection.parse_reflection(entry["response"], turns, open_ids)
    reviewed = reflection.review(
        state, answer.items, at=entry["at"], stale_after=entry["stale_after"]
    )
    nominations = [x.to_json() for x in answer.nominations if x.turn in state.turns]
    if (
        [e.to_json() for e in reviewed.entries] != entry["entries"]
        or [list(d) for d in reviewed.dropped] != entry["dropped"]
        or nominations != entry["nominations"]
    ):
        raise _Mismatch("reflection")


def _synthesis(state: ScopeState, entry: dict[str, Any]) -> None:
    recorded = entry["synthesis"]
    first, last = recorded["covers"]
    kept, dropped = synthesis.resolve(
        state, synthesis.parse_synthesis(entry["response"]), (first, last)
    )
    elements = {name: [e.to_json() for e in found] for name, found in kept.items()}
    if elements != recorded["elements"] or dropped != entry["dropped"]:
        raise _Mismatch("synthesis")


_CHECKS = {"n1": _n1, "reflection": _reflection, "synthesis": _synthesis}


def replay(root: Path | str, scope: str) -> dict[str, Any]:
    """Replay ``<root>/<scope>.jsonl`` (see the module docstring)."""
    lines = read_lines(Path(root) / f"{scope}.jsonl")
    state = ScopeState(scope)
    head = GENESIS
    for index, line in enumerate(lines):
        try:
            try:
                entry = json.loads(line)
                sound = entry["sequence"] == index + 1 and entry_hash(entry) == entry["hash"]
                first_snapshot = index == 0 and entry["op"] == "snapshot"
                if not sound or (not first_snapshot and entry["prev"] != head):
                    raise _Mismatch("entry")
            except (ValueError, KeyError, TypeError) as err:
                raise _Mismatch("entry") from err
            if first_snapshot:
                state = ScopeState.restored(entry, scope)
            else:
                if (check := _CHECKS.get(entry["op"])) is not None:
                    check(state, entry)
                state.apply(entry)
        except Malformed as malformed:
            return _result(len(lines), index, f"refused:{malformed.refusal.reason.value}")
        except _Mismatch as mismatch:
            return _result(len(lines), index, mismatch.reason)
        except (ValueError, KeyError, TypeError):
            return _result(len(lines), index, "fold")
        head = entry["hash"]
    return _result(len(lines), None, None)


def _result(entries: int, index: int | None, reason: str | None) -> dict[str, Any]:
    return {"entries": entries, "ok": index is None, "first_mismatch": index, "reason": reason}
