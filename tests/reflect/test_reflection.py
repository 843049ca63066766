"""N+25: due every 25 messages, phases from the cursor, review, strict refusal, resume."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from custom_components.alto.reflect import Ledger, Nomination, Reflector

from .conftest import USER_A, Clock, Gate, ScriptedModel, entries, item, reflected, say

DAY = 86400


async def talk(organ: Reflector, count: int, scope: str = USER_A) -> None:
    """Record `count` turns numbered in their text, each telling something."""
    for _ in range(count):
        n = len(await organ.turns(scope)) + 1
        await say(organ, scope, f"Note {n}: the boiler is in the cellar")


async def test_due_every_25_user_messages(organ: Reflector) -> None:
    """The 25th message of a scope makes reflection due, not the 24th."""
    for n in range(1, 26):
        receipt = await organ.record_turn(
            USER_A, utterance=f"m{n}", reply="ok", outcomes=(), conversation_id="c"
        )
        assert receipt.due.reflection is (n == 25)
    assert (await organ.due("household")).reflection is False


async def test_a_reflection_appends_ledger_lines_and_moves_the_cursor(
    organ: Reflector, model: ScriptedModel, tmp_path: Path
) -> None:
    """Extract, Update, Commit: lines with ids, times, citations; nominations reported."""
    await talk(organ, 3)
    quote = "the boiler is in the cellar"
    model.script.append(
        reflected(
            item("The boiler is in the cellar", [1, 3]),
            item("Likes short answers", [2], "preferences_patterns"),
            nominations=({"turn": 1, "quote": quote},),
        )
    )
    report = await organ.reflect(USER_A)
    assert report.exited_cleanly
    assert report.covered == (1, 3)
    assert report.extracted == 2
    assert report.nominations == (Nomination(1, quote),)
    assert [(e.id, e.ledger, e.turns) for e in report.appended] == [
        (1, Ledger.HOME, (1, 3)),
        (2, Ledger.PREFERENCES_PATTERNS, (2,)),
    ]
    assert report.appended[0].line() == "L1 [2025-06-15 15:06] The boiler is in the cellar"
    ledgers = await organ.ledgers(USER_A)
    assert [e.content for e in ledgers[Ledger.HOME]] == ["The boiler is in the cellar"]
    last = entries(tmp_path / f"{USER_A}.jsonl")[-1]
    assert (last["op"], last["from"], last["through"]) == ("reflection", 1, 3)
    assert (await organ.reflect(USER_A)).covered == (4, 3)  # nothing new: no call
    assert len(model.calls) == 1


async def test_investigate_shows_open_ledger_lines_and_only_new_turns(
    organ: Reflector, model: ScriptedModel
) -> None:
    """The second reflection sees the first one's lines, and the turns after the cursor only."""
    await talk(organ, 2)
    model.script += [reflected(item("Boiler in cellar", [1])), reflected()]
    await organ.reflect(USER_A)
    await talk(organ, 2)
    report = await organ.reflect(USER_A)
    assert report.investigated == {"home": 1}
    user = model.calls[1][0][1]["content"]
    assert 'L1 home [2025-06-15 15:06] "Boiler in cellar" (T1)' in user
    assert "T3 (" in user
    assert "T4 (" in user
    assert "T1 (" not in user
    assert "Note 2" not in user
    schema = model.calls[1][1]["properties"]["items"]["items"]["properties"]
    assert schema["turns"]["items"] == {"enum": [3, 4]}
    assert schema["resolves"] == {"enum": [0, 1]}


async def test_review_drops_duplicates_and_bad_resolutions(
    organ: Reflector, model: ScriptedModel
) -> None:
    """A line already open, a repeat in the batch, a resolution across ledgers: dropped."""
    await talk(organ, 2)
    model.script.append(reflected(item("The boiler is in the cellar.", [1])))
    await organ.reflect(USER_A)
    await talk(organ, 1)
    model.script.append(
        reflected(
            item("the  boiler is in the CELLAR", [3]),
            item("Ana walks the dog", [3], "relationships"),
            item("ana walks the dog.", [3], "relationships"),
            item("Wrong ledger", [3], "commitments", resolves=1),
        )
    )
    report = await organ.reflect(USER_A)
    assert report.exited_cleanly
    assert report.dropped == ((0, "duplicate"), (2, "duplicate"), (3, "bad_resolution"))
    assert [e.content for e in report.appended] == ["Ana walks the dog"]


async def test_a_resolution_closes_a_line_and_records_drift(
    organ: Reflector, model: ScriptedModel
) -> None:
    """Replacing a home fact resolves the old line and appends the change to drift."""
    await talk(organ, 1)
    model.script.append(reflected(item("Boiler in the cellar", [1])))
    await organ.reflect(USER_A)
    await talk(organ, 1)
    model.script.append(reflected(item("Boiler moved to the attic", [2], resolves=1)))
    report = await organ.reflect(USER_A)
    assert [(e.ledger, e.content, e.resolves) for e in report.appended] == [
        (Ledger.HOME, "Boiler moved to the attic", 1),
        (Ledger.DRIFT, "Changed: Boiler in the cellar -> Boiler moved to the attic", 0),
    ]
    await talk(organ, 1)
    model.script.append(reflected())
    assert (await organ.reflect(USER_A)).investigated == {"home": 1, "drift": 1}


async def test_an_old_open_commitment_is_resolved_as_stale(
    organ: Reflector, model: ScriptedModel, clock: Clock
) -> None:
    """Review closes a commitment with no follow-up past stale_after_s; it cites its turns."""
    await talk(organ, 1)
    model.script.append(reflected(item("Call the plumber", [1], "commitments")))
    await organ.reflect(USER_A)
    clock.now += 31 * DAY
    await talk(organ, 1)
    model.script.append(reflected())
    report = await organ.reflect(USER_A)
    (stale,) = report.appended
    assert (stale.ledger, stale.resolves, stale.turns) == (Ledger.COMMITMENTS, 1, (1,))
    assert stale.content == "Stale: no follow-up since 2025-06-15 15:06."


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (reflected(item("x", [9])), "invalid_target"),
        (reflected(item("x", [1], resolves=5)), "invalid_target"),
        (reflected({**item("x", [1]), "kind": "guess"}), "bad_item"),
        (reflected({**item("x", [1]), "ledger": "diary"}), "bad_item"),
        (
            reflected(item("x", [1]), nominations=({"turn": 1, "quote": "not said"},)),
            "quote_mismatch",
        ),
        (reflected(*[item(f"x{i}", [1]) for i in range(13)]), "too_many_items"),
        ('{"items": []}', "bad_item"),
        ("not json", "malformed_json"),
    ],
)
async def test_a_malformed_answer_commits_nothing(
    organ: Reflector, model: ScriptedModel, tmp_path: Path, raw: str, reason: str
) -> None:
    """Refused whole: no entry, the cursor stays, the report says why and not clean."""
    await talk(organ, 2)
    before = (tmp_path / f"{USER_A}.jsonl").read_bytes()
    model.script.append(raw)
    report = await organ.reflect(USER_A)
    assert report.exited_cleanly is False
    assert report.refusal == reason
    assert report.appended == ()
    assert (tmp_path / f"{USER_A}.jsonl").read_bytes() == before


async def test_a_failed_reflection_is_not_due_again_at_once(
    organ: Reflector, model: ScriptedModel
) -> None:
    """After a failure the next due point is one more interval of messages away."""
    await talk(organ, 25)
    model.script.append(ConnectionError())
    assert (await organ.reflect(USER_A)).refusal == "model_call_failed"
    await talk(organ, 24)
    assert (await organ.due(USER_A)).reflection is False
    await talk(organ, 1)
    assert (await organ.due(USER_A)).reflection is True


async def test_the_batch_and_budget_bound_what_one_reflection_reads(
    make: Callable[..., Reflector],
) -> None:
    """At most reflection_batch turns, within prompt_budget; the next one goes on from there."""
    model = ScriptedModel(reflected(), reflected())
    organ = make(model, reflection_batch=4)
    await talk(organ, 6)
    assert (await organ.reflect(USER_A)).covered == (1, 4)
    assert (await organ.reflect(USER_A)).covered == (5, 6)
    tight = make(ScriptedModel(reflected()), prompt_budget=250)
    await talk(tight, 3)
    assert (await tight.reflect(USER_A)).covered == (7, 8)  # two blocks of ~105 bytes fit


async def test_cancelled_during_extract_it_resumes_from_the_cursor(
    make: Callable[..., Reflector], tmp_path: Path
) -> None:
    """Preempted mid-call: nothing written; run again: the same range, committed once."""
    gate = Gate(reflected(item("Boiler in the cellar", [1])))
    organ = make(gate)
    await talk(organ, 2)
    path = tmp_path / f"{USER_A}.jsonl"
    before = path.read_bytes()
    task = asyncio.create_task(organ.reflect(USER_A))
    await gate.entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert path.read_bytes() == before
    gate.opened.set()
    assert (await organ.reflect(USER_A)).covered == (1, 2)
    assert (await organ.reflect(USER_A)).covered == (3, 2)
    assert [e["op"] for e in entries(path)].count("reflection") == 1


async def test_a_turn_forgotten_during_extract_is_not_cited(
    make: Callable[..., Reflector],
) -> None:
    """Review runs at commit: an item citing a turn forgotten meanwhile is dropped."""
    gate = Gate(reflected(item("From turn one", [1]), item("From turn two", [2])))
    organ = make(gate)
    await talk(organ, 2)
    task = asyncio.create_task(organ.reflect(USER_A))
    await gate.entered.wait()
    await organ.forget_turns(USER_A, [1])
    gate.opened.set()
    report = await task
    assert report.dropped == ((0, "unknown_turn"),)
    assert [e.content for e in report.appended] == ["From turn two"]


async def test_forgetting_a_turn_removes_the_ledger_lines_citing_it(
    organ: Reflector, model: ScriptedModel
) -> None:
    """Derived lines go with their source."""
    await talk(organ, 2)
    model.script.append(reflected(item("one", [1]), item("both", [1, 2]), item("two", [2])))
    await organ.reflect(USER_A)
    await organ.forget_turns(USER_A, [1])
    assert [e.content for e in (await organ.ledgers(USER_A))[Ledger.HOME]] == ["two"]
