"""The per-scope turn log: journal format, verified reload, retention, forget, purge."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.memory.journal import GENESIS, entry_hash
from custom_components.alto.reflect import JournalDamaged, Reflector
from custom_components.alto.reflect.records import MAX_TURN_TEXT, conversation_digest

from .conftest import (
    LIGHT_OFF,
    T0,
    USER_A,
    USER_B,
    Clock,
    Gate,
    ScriptedModel,
    entries,
    n1_answer,
    say,
)


async def test_a_turn_is_one_chained_entry_with_the_effector_record(
    organ: Reflector, tmp_path: Path
) -> None:
    """The entry holds the texts, the outcomes, the time and the conversation digest only."""
    assert (
        await say(
            organ, USER_A, "Lights off", "Done.", outcomes=(LIGHT_OFF,), conversation="conv-9"
        )
        == 1
    )
    assert await say(organ, USER_A, "Thanks") == 2
    first, second = entries(tmp_path / f"{USER_A}.jsonl")
    assert first["op"] == "turn"
    assert first["prev"] == GENESIS
    assert first["sequence"] == 1
    assert second["prev"] == first["hash"] == entry_hash(first)
    assert first["turn"] == {
        "n": 1,
        "at": T0,
        "utterance": "Lights off",
        "reply": "Done.",
        "outcomes": [{"verdict": "executed", "entity_id": "light.kitchen", "service": "turn_off"}],
        "conversation": conversation_digest("conv-9"),
    }
    assert "conv-9" not in (tmp_path / f"{USER_A}.jsonl").read_text()


async def test_reload_rebuilds_the_same_state(
    make: Callable[..., Reflector], model: ScriptedModel
) -> None:
    """A fresh organ over the same directory reads back turns, inbox and cursor."""
    model.script.append(
        n1_answer([{"mandate": "surface", "turns": [1], "content": "Note", "urgency": "high"}])
    )
    organ = make(model)
    await say(organ, USER_A, "Hello")
    await organ.run_n1(USER_A)
    again = make(ScriptedModel())
    assert await again.turns(USER_A) == await organ.turns(USER_A)
    assert await again.inbox(USER_A) == await organ.inbox(USER_A)
    assert (await again.due(USER_A)).n1 is False


async def test_long_texts_are_cut(organ: Reflector) -> None:
    """Utterance and reply keep at most MAX_TURN_TEXT characters."""
    await say(organ, USER_A, "x" * (MAX_TURN_TEXT + 10), "y" * (MAX_TURN_TEXT + 1))
    (turn,) = await organ.turns(USER_A)
    assert len(turn.utterance) == len(turn.reply) == MAX_TURN_TEXT


@pytest.mark.parametrize("scope", ["", "A" * 32, "a" * 31, "../x", "Household"])
async def test_a_scope_is_the_household_or_a_user_id(organ: Reflector, scope: str) -> None:
    """Anything else is refused before any file is touched."""
    with pytest.raises(ValueError, match="not a scope"):
        await say(organ, scope, "Hi")
    with pytest.raises(ValueError, match="not a scope"):
        organ.note_pressure(scope, 1, 2)


async def test_each_scope_has_its_own_file(organ: Reflector, tmp_path: Path) -> None:
    """Household and user turns never share a file."""
    await say(organ, USER_A, "alpha secret")
    await say(organ, "household", "shared thing")
    assert "alpha secret" not in (tmp_path / "household.jsonl").read_text()
    assert "shared thing" not in (tmp_path / f"{USER_A}.jsonl").read_text()
    assert [t.n for t in await organ.turns("household")] == [1]


async def test_retention_drops_the_oldest_and_compaction_erases_it(
    make: Callable[..., Reflector], tmp_path: Path
) -> None:
    """Past N turns the oldest goes; its text leaves the disk when the file compacts."""
    organ = make(ScriptedModel(), retention=5, compact_every=8)
    for i in range(1, 6):
        await say(organ, USER_A, f"utterance number {i}")
    assert [t.n for t in await organ.turns(USER_A)] == [1, 2, 3, 4, 5]  # up to N, nothing goes
    for i in range(6, 8):
        await say(organ, USER_A, f"utterance number {i}")
    assert [t.n for t in await organ.turns(USER_A)] == [3, 4, 5, 6, 7]
    path = tmp_path / f"{USER_A}.jsonl"
    assert "utterance number 1" in path.read_text()  # dropped, not yet compacted
    await say(organ, USER_A, "utterance number 8")
    text = path.read_text()
    assert "utterance number 1" not in text
    assert "utterance number 3" not in text
    (snapshot,) = entries(path)
    assert snapshot["op"] == "snapshot"
    assert snapshot["generation"] == 1
    assert [t.n for t in await make(ScriptedModel()).turns(USER_A)] == [4, 5, 6, 7, 8]
    assert await say(organ, USER_A, "nine") == 9  # numbers are never reused


async def test_compaction_continues_the_chain(
    make: Callable[..., Reflector], tmp_path: Path
) -> None:
    """The snapshot links to the last hash of the replaced file, later entries to it."""
    organ = make(ScriptedModel(), compact_every=3)
    await say(organ, USER_A, "one")
    await say(organ, USER_A, "two")
    head = entries(tmp_path / f"{USER_A}.jsonl")[-1]["hash"]
    await say(organ, USER_A, "three")
    await say(organ, USER_A, "four")
    snapshot, after = entries(tmp_path / f"{USER_A}.jsonl")
    assert snapshot["sequence"] == 1
    assert after["sequence"] == 2
    assert after["prev"] == snapshot["hash"] == entry_hash(snapshot)
    third = {
        "sequence": 3,
        "prev": head,
        "op": "turn",
        "turn": {
            "n": 3,
            "at": T0,
            "utterance": "three",
            "reply": "Okay.",
            "outcomes": [],
            "conversation": conversation_digest("conv-1"),
        },
        "drop": [],
        "scope": USER_A,
        "at": T0,
    }
    assert snapshot["prev"] == entry_hash(third)  # the third turn, appended before compacting
    assert [t.utterance for t in await make(ScriptedModel()).turns(USER_A)] == [
        "one",
        "two",
        "three",
        "four",
    ]


async def test_forget_a_turn_erases_it_and_what_cites_it(
    make: Callable[..., Reflector], tmp_path: Path
) -> None:
    """The turn, the observation citing it and the raw answer are gone from disk at once."""
    model = ScriptedModel(
        n1_answer(
            [
                {"mandate": "surface", "turns": [1], "content": "About T1", "urgency": "low"},
                {"mandate": "surface", "turns": [2], "content": "About T2", "urgency": "low"},
            ]
        )
    )
    organ = make(model, n1_batch=2)
    await say(organ, USER_A, "my pin is 4711")
    await say(organ, USER_A, "nice weather")
    await organ.run_n1(USER_A)
    assert await organ.forget_turns(USER_A, [1, 99]) == (1,)
    text = (tmp_path / f"{USER_A}.jsonl").read_text()
    assert "4711" not in text
    assert "About T1" not in text
    assert [o.content for o in (await organ.inbox(USER_A)).pending] == ["About T2"]
    assert await organ.forget_turns(USER_A, [1]) == ()


async def test_forget_a_conversation(organ: Reflector) -> None:
    """Only that conversation's turns of that scope go."""
    await say(organ, USER_A, "one", conversation="c1")
    await say(organ, USER_A, "two", conversation="c2")
    await say(organ, USER_B, "three", conversation="c1")
    assert await organ.forget_conversation(USER_A, "c1") == (1,)
    assert [t.n for t in await organ.turns(USER_A)] == [2]
    assert [t.n for t in await organ.turns(USER_B)] == [1]


async def test_purge_deletes_the_scope(organ: Reflector, tmp_path: Path) -> None:
    """The file is deleted and the scope starts again empty; other scopes are untouched."""
    await say(organ, USER_A, "private")
    await say(organ, USER_B, "other")
    await organ.purge(USER_A)
    assert not (tmp_path / f"{USER_A}.jsonl").exists()
    assert await organ.turns(USER_A) == ()
    assert await say(organ, USER_A, "again") == 1
    assert [t.utterance for t in await organ.turns(USER_B)] == ["other"]


async def test_purge_works_on_a_damaged_file(organ: Reflector, tmp_path: Path) -> None:
    """A scope whose journal does not verify can still be purged."""
    (tmp_path / f"{USER_A}.jsonl").write_text('{"not": "an entry"}\n')
    with pytest.raises(JournalDamaged):
        await organ.turns(USER_A)
    await organ.purge(USER_A)
    assert await organ.turns(USER_A) == ()


@pytest.mark.parametrize(
    "damage",
    [
        lambda lines: [lines[0].replace("hello", "HELLO"), lines[1]],  # hash
        lambda lines: [lines[1]],  # chain link and sequence
        lambda lines: [lines[0], "{broken\n"],  # not JSON
    ],
)
async def test_a_damaged_journal_is_refused(
    make: Callable[..., Reflector], tmp_path: Path, damage: Callable[[list[str]], list[str]]
) -> None:
    """Any failed check makes the scope unreadable rather than silently wrong."""
    organ = make(ScriptedModel())
    await say(organ, USER_A, "hello")
    await say(organ, USER_A, "again")
    path = tmp_path / f"{USER_A}.jsonl"
    path.write_text("".join(damage(path.read_text().splitlines(keepends=True))))
    with pytest.raises(JournalDamaged):
        await make(ScriptedModel()).turns(USER_A)


async def test_a_torn_last_line_is_cut(make: Callable[..., Reflector], tmp_path: Path) -> None:
    """A crash mid-append loses only the unacknowledged entry."""
    organ = make(ScriptedModel())
    await say(organ, USER_A, "kept")
    path = tmp_path / f"{USER_A}.jsonl"
    path.write_bytes(path.read_bytes() + b'{"sequence": 2, "op": "tu')
    again = make(ScriptedModel())
    assert [t.utterance for t in await again.turns(USER_A)] == ["kept"]
    assert await say(again, USER_A, "next") == 2


async def test_a_write_cancelled_in_flight_completes_whole(tmp_path: Path, clock: Clock) -> None:
    """Cancelled during its blocking append, a write still lands whole in journal and state."""
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(function: Callable[[], Any]) -> Any:
        started.set()
        await release.wait()
        return await asyncio.to_thread(function)

    organ = Reflector(tmp_path, call_model=ScriptedModel(), clock=clock, run_blocking=slow)
    release.set()
    await say(organ, USER_A, "first")  # loads the scope and writes through `slow`
    release.clear()
    started.clear()
    task = asyncio.create_task(say(organ, USER_A, "second"))
    await started.wait()
    task.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if len(await organ.turns(USER_A)) == 2:
            break
        await asyncio.sleep(0.01)
    assert [t.utterance for t in await organ.turns(USER_A)] == ["first", "second"]
    assert [e["turn"]["utterance"] for e in entries(tmp_path / f"{USER_A}.jsonl")] == [
        "first",
        "second",
    ]


async def test_a_pass_in_flight_during_a_purge_writes_nothing(
    make: Callable[..., Reflector], tmp_path: Path
) -> None:
    """The purged scope does not come back from a pass that started before the purge."""
    gate = Gate(n1_answer([{"mandate": "surface", "turns": [1], "content": "x", "urgency": "low"}]))
    organ = make(gate)
    await say(organ, USER_A, "private")
    task = asyncio.create_task(organ.run_n1(USER_A))
    await gate.entered.wait()
    await organ.purge(USER_A)
    gate.opened.set()
    report = await task
    assert report.observations == ()
    assert not (tmp_path / f"{USER_A}.jsonl").exists()


async def test_a_lone_surrogate_cannot_break_the_journal(
    make: Callable[..., Reflector], tmp_path: Path
) -> None:
    """Text that is not valid UTF-8 is stored with "?" in its place, and reloads."""
    organ = make(ScriptedModel())
    await say(organ, USER_A, "bad \ud800 text", "reply \udfff")
    (turn,) = await make(ScriptedModel()).turns(USER_A)
    assert (turn.utterance, turn.reply) == ("bad ? text", "reply ?")
