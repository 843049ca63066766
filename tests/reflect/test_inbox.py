"""The three-box inbox: delivery to the next turn of the scope, dismiss, complete, bounds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from custom_components.alto.reflect import Box, N1Report, Reflector
from custom_components.alto.reflect.state import INTRUSIVE_MAX, PENDING_MAX, SENT_KEEP

from .conftest import USER_A, USER_B, ScriptedModel, entries, n1_answer, say


def observation(content: str, urgency: str = "high", turn: int = 1) -> dict[str, object]:
    """One N+1 observation of `turn`."""
    return {"mandate": "surface", "turns": [turn], "content": content, "urgency": urgency}


async def noted(
    organ: Reflector, model: ScriptedModel, scope: str, *items: dict[str, object]
) -> N1Report:
    """Record a turn in `scope` and run N+1 with `items` as the model's observations."""
    n = await say(organ, scope, "hello")
    model.script.append(n1_answer([{**item, "turns": [n]} for item in items]))
    return await organ.run_n1(scope)


async def test_take_intrusive_delivers_once_then_sent(
    organ: Reflector, model: ScriptedModel, tmp_path: Path
) -> None:
    """The most urgent item is taken for the next turn, journaled as sent, not taken again."""
    await noted(
        organ,
        model,
        USER_A,
        observation("high one"),
        observation("critical one", "critical"),
        observation("later", "low"),
    )
    (first,) = await organ.take_intrusive(USER_A)
    assert first.content == "critical one"
    (second,) = await organ.take_intrusive(USER_A)
    assert second.content == "high one"
    assert await organ.take_intrusive(USER_A) == ()
    inbox = await organ.inbox(USER_A)
    assert [o.content for o in inbox.sent] == ["high one", "critical one"]
    assert {o.box for o in inbox.sent} == {Box.SENT}
    assert [o.content for o in inbox.pending] == ["later"]
    sent = [e for e in entries(tmp_path / f"{USER_A}.jsonl") if e["op"] == "inbox"]
    assert [(e["action"], e["ids"]) for e in sent] == [
        ("sent", [second.id + 1]),
        ("sent", [second.id]),
    ]


async def test_peek_then_mark_sent(organ: Reflector, model: ScriptedModel) -> None:
    """Peeking moves nothing; marking sent moves only the named items of the scope."""
    report = await noted(organ, model, USER_A, observation("one"), observation("two"))
    assert [o.content for o in await organ.peek_intrusive(USER_A, limit=5)] == ["one", "two"]
    assert len((await organ.inbox(USER_A)).intrusive) == 2
    first = report.observations[0].id
    assert await organ.mark_sent(USER_A, [first, 999]) == (first,)
    assert await organ.mark_sent(USER_A, [first]) == ()
    assert [o.content for o in (await organ.inbox(USER_A)).intrusive] == ["two"]


async def test_dismiss_and_complete_remove_items(organ: Reflector, model: ScriptedModel) -> None:
    """Both remove; an id of another scope is not found in this one."""
    mine = await noted(organ, model, USER_A, observation("a", "low"), observation("b", "low"))
    theirs = await noted(organ, model, USER_B, observation("c", "low"))
    a, b = (o.id for o in mine.observations)
    (c,) = (o.id for o in theirs.observations)
    assert a == c  # ids are per scope: only the scope argument tells them apart
    assert await organ.dismiss(USER_B, [b]) == ()
    assert await organ.complete(USER_A, [a]) == (a,)
    assert await organ.dismiss(USER_A, [b]) == (b,)
    assert (await organ.inbox(USER_A)).pending == ()
    assert [o.content for o in (await organ.inbox(USER_B)).pending] == ["c"]


async def test_delivery_is_per_scope(organ: Reflector, model: ScriptedModel) -> None:
    """A private scope's intrusive item never reaches another scope's turn."""
    await noted(organ, model, USER_A, observation("for A only"))
    assert await organ.take_intrusive(USER_B) == ()
    assert await organ.take_intrusive("household") == ()
    assert [o.content for o in await organ.take_intrusive(USER_A)] == ["for A only"]


async def test_boxes_are_bounded(make: Callable[..., Reflector]) -> None:
    """The oldest items leave a full box; sent keeps the newest few."""
    model = ScriptedModel()
    organ = make(model)
    for i in range(INTRUSIVE_MAX + 2):
        await noted(organ, model, USER_A, observation(f"urgent {i}"))
    for i in range(PENDING_MAX + 1):
        await noted(organ, model, USER_A, observation(f"later {i}", "low"))
    inbox = await organ.inbox(USER_A)
    assert len(inbox.intrusive) == INTRUSIVE_MAX
    assert "urgent 0" not in {o.content for o in inbox.intrusive}
    assert len(inbox.pending) == PENDING_MAX
    assert inbox.pending[0].content == "later 1"
    await organ.take_intrusive(USER_A, limit=INTRUSIVE_MAX)
    assert (
        len((await organ.inbox(USER_A)).sent) == SENT_KEEP
        if SENT_KEEP < INTRUSIVE_MAX
        else INTRUSIVE_MAX
    )
