"""Offline replay: the chain and every pass re-derived from the recorded answers, no model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.memory.journal import entry_hash
from custom_components.alto.memory.records import canonical_json
from custom_components.alto.reflect import Reflector, replay

from .conftest import USER_A, Clock, ScriptedModel, answer, entries, n1_answer, say

DAY = 86400
HOME = {"kind": "fact", "ledger": "home", "content": "Boiler in the cellar", "resolves": 0}
PLUMBER = {"kind": "other", "ledger": "commitments", "content": "Call the plumber", "resolves": 0}


async def history(organ: Reflector, model: ScriptedModel, clock: Clock) -> None:
    """Every kind of entry: turns, both N+1 sources, inbox moves, reflections, a synthesis.

    Observations take ids 1 and 2, so the first reflection's lines are L3 (home) and L4.
    """
    await say(organ, USER_A, "The boiler is in the cellar. I'll call the plumber.", "Done.")
    model.script.append(
        n1_answer(
            [{"mandate": "complete", "turns": [1], "content": "Plumber", "urgency": "high"}],
            [{"turn": 1, "quote": "The boiler is in the cellar"}],
        )
    )
    await organ.run_n1(USER_A)
    await organ.take_intrusive(USER_A)
    await say(organ, USER_A, "Maybe it is fine, I think, probably.", "Perhaps.")
    model.script.append(ConnectionError())
    await organ.run_n1(USER_A)
    pending = (await organ.inbox(USER_A)).pending
    await organ.dismiss(USER_A, [o.id for o in pending])
    model.script.append(
        answer(
            items=[{**HOME, "turns": [1]}, {**PLUMBER, "turns": [1]}, {**HOME, "turns": [2]}],
            nominations=[{"turn": 1, "quote": "I'll call the plumber."}],
        )
    )
    await organ.reflect(USER_A)
    clock.now += 40 * DAY
    await say(organ, USER_A, "Actually the boiler is in the attic now.")
    model.script.append(
        answer(
            items=[{**HOME, "content": "Boiler in the attic", "turns": [3], "resolves": 3}],
            nominations=[],
        )
    )
    await organ.reflect(USER_A)
    model.script.append(
        answer(
            themes=[
                {"text": "the boiler", "cites": ["T3", "L3"]},
                {"text": "gone", "cites": ["T9"]},
            ],
            emotions=[],
            tensions=[],
            anchors=[],
            evolution=[],
            patterns=[],
        )
    )
    await organ.synthesize(USER_A)


def rewrite(path: Path, index: int, change: Callable[[dict[str, Any]], None]) -> None:
    """Change entry `index` and re-chain every entry from it, so only replay can tell."""
    found = entries(path)
    change(found[index])
    for position in range(index, len(found)):
        if position:
            found[position]["prev"] = found[position - 1]["hash"]
        found[position]["hash"] = entry_hash(found[position])
    path.write_text("".join(canonical_json(e) + "\n" for e in found), encoding="utf-8")


def position(path: Path, op: str, nth: int = 0) -> int:
    """The index of the `nth` entry of `op`."""
    return [i for i, e in enumerate(entries(path)) if e["op"] == op][nth]


@pytest.fixture
async def journal(organ: Reflector, model: ScriptedModel, clock: Clock, tmp_path: Path) -> Path:
    """The file of a scope with a full history."""
    await history(organ, model, clock)
    return tmp_path / f"{USER_A}.jsonl"


async def test_a_whole_history_replays(journal: Path) -> None:
    """Every entry re-derives exactly, the stale commitment and the drift line included."""
    ops = [e["op"] for e in entries(journal)]
    assert ops.count("reflection") == 2
    assert replay(journal.parent, USER_A) == {
        "entries": len(ops),
        "ok": True,
        "first_mismatch": None,
        "reason": None,
    }
    last_reflection = entries(journal)[position(journal, "reflection", 1)]
    kinds = [e["kind"] for e in last_reflection["entries"]]
    assert kinds == ["fact", "change", "stale"]


async def test_a_compacted_history_replays(
    journal: Path, organ: Reflector, model: ScriptedModel
) -> None:
    """After a forget the file starts from a snapshot, and what follows still re-derives."""
    await organ.forget_turns(USER_A, [2])
    await say(organ, USER_A, "Lock the door", "I've locked it.")
    model.script.append(n1_answer())
    await organ.run_n1(USER_A)
    assert entries(journal)[0]["op"] == "snapshot"
    assert replay(journal.parent, USER_A)["ok"] is True


@pytest.mark.parametrize(
    ("op", "change", "reason"),
    [
        ("n1", lambda e: e["observations"][0].update(content="Invented"), "n1"),
        ("n1", lambda e: e.update(nominations=[]), "n1"),
        ("n1", lambda e: e.update(response='{"observations": []}'), "refused:bad_item"),
        ("reflection", lambda e: e["entries"][0].update(ledger="drift"), "reflection"),
        ("reflection", lambda e: e.update(dropped=[]), "reflection"),
        ("synthesis", lambda e: e.update(dropped=0), "synthesis"),
        ("turn", lambda e: e["turn"].update(n=7), "fold"),
    ],
)
async def test_a_rechained_forgery_is_caught(
    journal: Path, op: str, change: Callable[[dict[str, Any]], None], reason: str
) -> None:
    """A changed result with a valid chain still fails at the entry that no longer re-derives."""
    index = position(journal, op)
    rewrite(journal, index, change)
    result = replay(journal.parent, USER_A)
    assert (result["ok"], result["first_mismatch"], result["reason"]) == (False, index, reason)


def test_a_broken_chain_is_an_entry_failure(journal: Path) -> None:
    """An edited line without re-chaining fails its hash."""
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].replace('"ids":[1]', '"ids":[2]', 1)
    journal.write_text("".join(lines), encoding="utf-8")
    edited = json.loads(lines[2])
    assert edited["hash"] != entry_hash(edited)
    assert replay(journal.parent, USER_A)["first_mismatch"] == 2
    assert replay(journal.parent, USER_A)["reason"] == "entry"


def test_no_file_replays_empty(tmp_path: Path) -> None:
    """A scope never written is zero entries, ok."""
    assert replay(tmp_path, USER_A) == {
        "entries": 0,
        "ok": True,
        "first_mismatch": None,
        "reason": None,
    }
