"""Privacy between scopes: no pass of one scope reads or writes another scope's text."""

from __future__ import annotations

from custom_components.alto.reflect import Ledger, Reflector

from .conftest import (
    USER_A,
    USER_B,
    ScriptedModel,
    item,
    n1_answer,
    reflected,
    say,
    synthesized,
)

SECRET = "my diagnosis is private"


async def test_passes_of_one_scope_never_see_another(
    organ: Reflector, model: ScriptedModel
) -> None:
    """A's turns, observations, ledger lines and synthesis reach no pass of B or the household."""
    await say(organ, USER_A, f"Remember: {SECRET}. I'll call the clinic.", "Noted.")
    intrusive = {"mandate": "surface", "turns": [1], "content": "A-note", "urgency": "high"}
    model.script += [
        n1_answer([intrusive]),
        reflected(item("A-line", [1])),
        synthesized(patterns=[("A-pattern", ["T1"])]),
    ]
    await organ.run_n1(USER_A)
    await organ.reflect(USER_A)
    await organ.synthesize(USER_A)
    seen_by_a = len(model.calls)

    for scope in (USER_B, "household"):
        await say(organ, scope, "What is the weather?", "Sunny.")
        model.script += [
            n1_answer(),
            reflected(item(f"{scope}-line", [1])),
            synthesized(patterns=[(f"{scope}-pattern", ["T1"])]),
        ]
        await organ.run_n1(scope)
        await organ.reflect(scope)
        await organ.synthesize(scope)
        inbox = await organ.inbox(scope)
        assert inbox.intrusive == inbox.pending == inbox.sent == ()
        assert await organ.take_intrusive(scope) == ()
        assert [e.content for e in (await organ.ledgers(scope))[Ledger.HOME]] == [f"{scope}-line"]
        assert "A-pattern" not in await organ.impressions(scope)
        assert f"{scope}-pattern" in await organ.impressions(scope)

    shown = "\n".join(m["content"] for messages, _ in model.calls[seen_by_a:] for m in messages)
    for text in (SECRET, "clinic", "A-note", "A-line", "A-pattern"):
        assert text not in shown
    assert [o.content for o in await organ.take_intrusive(USER_A)] == ["A-note"]
