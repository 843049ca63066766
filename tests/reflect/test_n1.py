"""N+1: the scripted answer's observations and nominations, strict refusal, fallback, cursor."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from custom_components.alto.reflect import Box, Mandate, Nomination, Reflector, Urgency

from .conftest import (
    LIGHT_OFF,
    USER_A,
    Gate,
    ScriptedModel,
    entries,
    n1_answer,
    say,
)

OBSERVATION = {"mandate": "complete", "turns": [1], "content": "Call back", "urgency": "medium"}


async def test_observations_go_to_the_box_their_urgency_says(
    organ: Reflector, model: ScriptedModel
) -> None:
    """High and critical are intrusive, low and medium pending; the entry is journaled."""
    model.script.append(
        n1_answer(
            [
                {**OBSERVATION, "urgency": "low", "content": "a"},
                {**OBSERVATION, "urgency": "medium", "content": "b"},
                {**OBSERVATION, "urgency": "high", "content": "c"},
                {**OBSERVATION, "urgency": "critical", "content": "d", "mandate": "surface"},
            ]
        )
    )
    await say(organ, USER_A, "Hi")
    report = await organ.run_n1(USER_A)
    assert report.source == "model"
    assert report.refusal is None
    assert not report.heartbeat
    inbox = await organ.inbox(USER_A)
    assert [o.content for o in inbox.intrusive] == ["d", "c"]  # most urgent first
    assert [o.content for o in inbox.pending] == ["a", "b"]
    assert {o.source for o in report.observations} == {"model"}
    assert inbox.intrusive[0].mandate is Mandate.SURFACE


async def test_the_prompt_shows_the_turn_and_the_effector_record(
    organ: Reflector, model: ScriptedModel
) -> None:
    """The exchange, the effector line and the schema's turn enum."""
    model.script.append(n1_answer())
    await say(organ, USER_A, "Lights off ¦please¦", "Done.", outcomes=(LIGHT_OFF,))
    await organ.run_n1(USER_A)
    (messages, schema) = model.calls[0]
    user = messages[1]["content"]
    assert 'person: "Lights off please"' in user  # markers neutralized
    assert "effector: executed turn_off light.kitchen" in user
    item = schema["properties"]["observations"]["items"]
    assert item["properties"]["turns"]["items"] == {"enum": [1]}


async def test_a_nomination_quotes_the_person_exactly(
    organ: Reflector, model: ScriptedModel, tmp_path: Path
) -> None:
    """Nominations come back in the report and the entry; memory is not touched."""
    quote = "my sister Ana is allergic to peanuts"
    model.script.append(n1_answer(nominations=[{"turn": 1, "quote": quote}]))
    await say(organ, USER_A, f"By the way, {quote}.")
    report = await organ.run_n1(USER_A)
    assert report.nominations == (Nomination(1, quote),)
    assert entries(tmp_path / f"{USER_A}.jsonl")[-1]["nominations"] == [{"turn": 1, "quote": quote}]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (n1_answer([OBSERVATION]) + " and more", "malformed_json"),
        ('{"observations": [], "nominations": [], "observations": []}', "malformed_json"),
        ('{"observations": [], "nominations": [], "extra": 1}', "bad_item"),
        ('{"observations": []}', "bad_item"),
        ("[]", "bad_item"),
        (n1_answer([{**OBSERVATION, "turns": [2]}]), "invalid_target"),
        (n1_answer([{**OBSERVATION, "turns": [True]}]), "invalid_target"),
        (n1_answer([{**OBSERVATION, "turns": [1, 1]}]), "bad_item"),
        (n1_answer([{**OBSERVATION, "turns": []}]), "too_many_items"),
        (n1_answer([{**OBSERVATION, "urgency": "urgent"}]), "bad_item"),
        (n1_answer([{**OBSERVATION, "mandate": "Verify"}]), "bad_item"),
        (n1_answer([{**OBSERVATION, "content": "  "}]), "bad_item"),
        (n1_answer([{**OBSERVATION, "content": "x" * 241}]), "bad_item"),
        (n1_answer([{**OBSERVATION, "note": "x"}]), "bad_item"),
        (n1_answer([OBSERVATION] * 7), "too_many_items"),
        (n1_answer(nominations=[{"turn": 1, "quote": "peanut"}]), "quote_mismatch"),
        (n1_answer(nominations=[{"turn": 1, "quote": "Sure."}]), "quote_mismatch"),
        (n1_answer(nominations=[{"turn": 1, "quote": "call"}] * 2), "bad_item"),
        ('{"observations": [], "nominations": [], "n": NaN}', "malformed_json"),
        ('{"observations": [], "nominations": [{"turn": 1.0, "quote": "call"}]}', "bad_item"),
        (
            '{"observations": [], "nominations": [{"turn": 1, "quote": "\\ud800"}]}',
            "malformed_json",
        ),
        (n1_answer([{**OBSERVATION, "content": "y" * 200}] * 6) + " " * 5000, "response_too_large"),
        ("", "malformed_json"),
    ],
)
async def test_a_malformed_answer_is_refused_whole(
    organ: Reflector, model: ScriptedModel, raw: str, reason: str
) -> None:
    """Nothing of it is used: the heuristic fallback runs instead, and the reason is kept."""
    model.script.append(raw)
    await say(organ, USER_A, "I'll call the plumber", "Sure.")
    report = await organ.run_n1(USER_A)
    assert report.refusal == reason
    assert report.source == "heuristic"
    assert report.nominations == ()
    assert [o.content for o in report.observations] == ['The person said: "I\'ll call the plumber"']


@pytest.mark.parametrize("failure", [ConnectionError("down"), RuntimeError("500")])
async def test_a_failed_call_falls_back(
    organ: Reflector, model: ScriptedModel, failure: Exception
) -> None:
    """The call's failure is a refusal with its type, and the heuristics run."""
    model.script.append(failure)
    await say(organ, USER_A, "Remind me to water the plants")
    report = await organ.run_n1(USER_A)
    assert report.refusal == "model_call_failed"
    assert report.source == "heuristic"
    assert report.observations[0].urgency is Urgency.MEDIUM


async def test_a_call_past_its_timeout_falls_back(make: Callable[..., Reflector]) -> None:
    """A model that never answers is given up on after call_timeout_s."""
    gate = Gate(n1_answer())
    organ = make(gate, call_timeout_s=0.01)
    await say(organ, USER_A, "Tomorrow I paint the fence")
    report = await organ.run_n1(USER_A)
    assert report.refusal == "model_call_failed"
    assert [o.content for o in report.observations] == [
        'The person said: "Tomorrow I paint the fence"'
    ]


async def test_nothing_to_note_is_a_heartbeat(
    organ: Reflector, model: ScriptedModel, tmp_path: Path
) -> None:
    """An empty answer still journals the pass and moves the cursor."""
    model.script.append(n1_answer())
    await say(organ, USER_A, "What time is it?", "It is noon.")
    report = await organ.run_n1(USER_A)
    assert report.heartbeat
    last = entries(tmp_path / f"{USER_A}.jsonl")[-1]
    assert last["op"] == "n1"
    assert last["observations"] == []
    assert last["through"] == 1
    assert (await organ.due(USER_A)).n1 is False


async def test_an_unbacked_done_is_added_when_the_model_misses_it(
    organ: Reflector, model: ScriptedModel
) -> None:
    """Verify is deterministic too: "Done" with no effector success is high urgency."""
    model.script.append(n1_answer())
    await say(organ, USER_A, "Lock the door", "Done, I've locked the front door.")
    report = await organ.run_n1(USER_A)
    (observation,) = report.observations
    assert observation.mandate is Mandate.VERIFY
    assert observation.urgency is Urgency.HIGH
    assert observation.box is Box.INTRUSIVE
    assert observation.source == "heuristic"
    assert observation.turns == (1,)


async def test_the_models_own_verify_is_not_doubled(organ: Reflector, model: ScriptedModel) -> None:
    """A model verify at the same or higher urgency for the turn stands alone."""
    verify = {"mandate": "verify", "turns": [1], "content": "Door not locked", "urgency": "high"}
    model.script.append(n1_answer([verify]))
    await say(organ, USER_A, "Lock the door", "I've locked the door.")
    report = await organ.run_n1(USER_A)
    assert [o.content for o in report.observations] == ["Door not locked"]


async def test_a_backed_done_is_not_an_observation(organ: Reflector, model: ScriptedModel) -> None:
    """An effector success backs the claim."""
    model.script.append(n1_answer())
    await say(organ, USER_A, "Lights off", "I've turned off the light.", outcomes=(LIGHT_OFF,))
    assert (await organ.run_n1(USER_A)).heartbeat


async def test_the_cursor_reads_each_turn_once_in_batches(
    make: Callable[..., Reflector],
) -> None:
    """Unread turns are read oldest first, at most n1_batch a pass, never twice."""
    model = ScriptedModel(n1_answer(), n1_answer(), n1_answer())
    organ = make(model, n1_batch=2)
    for i in range(3):
        await say(organ, USER_A, f"turn {i + 1}")
    assert (await organ.run_n1(USER_A)).turns == (1, 2)
    assert (await organ.run_n1(USER_A)).turns == (3,)
    idle = await organ.run_n1(USER_A)
    assert idle.source == "none"
    assert idle.heartbeat is False  # nothing read, nothing journaled
    await say(organ, USER_A, "turn 4")
    assert (await organ.run_n1(USER_A)).turns == (4,)
    shown = [json.dumps(schema["properties"]["nominations"]) for _, schema in model.calls]
    assert ['"enum": [1, 2]' in s for s in shown] == [True, False, False]


async def test_an_open_observation_is_not_queued_twice(
    organ: Reflector, model: ScriptedModel
) -> None:
    """The same mandate and content already waiting in the inbox is skipped."""
    model.script += [n1_answer([OBSERVATION]), n1_answer([{**OBSERVATION, "turns": [2]}])]
    await say(organ, USER_A, "one")
    await organ.run_n1(USER_A)
    await say(organ, USER_A, "two")
    assert (await organ.run_n1(USER_A)).observations == ()
    assert len((await organ.inbox(USER_A)).pending) == 1


async def test_a_cancelled_pass_writes_nothing_and_resumes(
    make: Callable[..., Reflector], tmp_path: Path
) -> None:
    """Cancelled in its call, the pass writes nothing; run again, it commits the turn once."""
    gate = Gate(n1_answer([OBSERVATION]))
    organ = make(gate)
    await say(organ, USER_A, "hello")
    path = tmp_path / f"{USER_A}.jsonl"
    before = path.read_bytes()
    task = asyncio.create_task(organ.run_n1(USER_A))
    await gate.entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert path.read_bytes() == before
    gate.opened.set()
    assert (await organ.run_n1(USER_A)).turns == (1,)
    assert (await organ.run_n1(USER_A)).source == "none"
    assert [e["op"] for e in entries(path)] == ["turn", "n1"]


async def test_a_turn_forgotten_during_the_call_is_not_cited(
    make: Callable[..., Reflector],
) -> None:
    """The commit re-checks the state: observations and nominations of the gone turn drop."""
    answer = n1_answer([OBSERVATION], [{"turn": 1, "quote": "hello"}])
    gate = Gate(answer)
    organ = make(gate)
    await say(organ, USER_A, "hello")
    task = asyncio.create_task(organ.run_n1(USER_A))
    await gate.entered.wait()
    await organ.forget_turns(USER_A, [1])
    gate.opened.set()
    report = await task
    assert report.observations == ()
    assert report.nominations == ()


async def test_concurrent_passes_of_a_scope_do_not_overlap(
    organ: Reflector, model: ScriptedModel
) -> None:
    """Two passes at once: the second waits and finds nothing unread."""
    model.script.append(n1_answer())
    await say(organ, USER_A, "hello")
    first, second = await asyncio.gather(organ.run_n1(USER_A), organ.run_n1(USER_A))
    assert first.turns == (1,)
    assert second.source == "none"
    assert len(model.calls) == 1


@pytest.mark.parametrize(
    ("raw", "reason"),
    [("\ud800", "malformed_json"), (n1_answer() + " " * 7000, "response_too_large")],
)
async def test_an_unrecordable_answer_is_refused_and_not_journaled(
    organ: Reflector, model: ScriptedModel, tmp_path: Path, raw: str, reason: str
) -> None:
    """Not UTF-8, or over the bound: the entry keeps no response, the pass still commits."""
    model.script.append(raw)
    await say(organ, USER_A, "hello")
    assert (await organ.run_n1(USER_A)).refusal == reason
    last = entries(tmp_path / f"{USER_A}.jsonl")[-1]
    assert last["op"] == "n1"
    assert last["response"] is None
    assert last["refusal"] == reason
