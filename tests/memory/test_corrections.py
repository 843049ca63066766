"""Corrections: only a current inferred assertion of the same owner and scope can be replaced."""

from __future__ import annotations

from typing import Any

from custom_components.alto.memory.intake import forget, remember
from custom_components.alto.memory.journal import Journal
from custom_components.alto.memory.pipeline import IntakeInput, query_codes
from custom_components.alto.memory.reasons import Reason
from custom_components.alto.memory.records import Mutation, vector_bytes
from custom_components.alto.memory.replay import replay
from custom_components.alto.memory.store import MemoryStore

from .conftest import USER_A, USER_B, FakeModel, fake_embed, journal_bytes
from .test_intake import intake

BINS = "The bins go out on Tuesday."
FIX = "Actually the bins go out on Wednesday."


async def codes_for(text: str) -> Any:
    """The query codes of `text`'s fake embedding."""
    return query_codes(vector_bytes((await fake_embed([text]))[0]))


def force_target(target: int) -> Any:
    """Make call 2 answer every statement as a correction of table entry `target`."""

    def override(messages: list[dict[str, str]], answer: str) -> str | None:
        if FakeModel.is_first(messages):
            return None
        return answer.replace("[3, ", "[4, ").replace('."]', f'.", {target}]')

    return override


async def test_correction_supersedes_the_right_row(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Correction supersedes the right row."""
    first = await intake(
        [IntakeInput(f"{BINS} Ben does not eat meat.", "t/1")], store, journal, model
    )
    source, bins, meat = first.ids[0]
    second = await intake([IntakeInput(FIX, "t/2")], store, journal, model)
    assert second.admitted
    assert second.superseded == (bins,)
    old = store.get([bins])[0]
    new = store.get([second.ids[0][1]])[0]
    assert old.status == "superseded"
    assert old.document == BINS  # kept as the dependency
    assert (new.kind, new.target, new.document) == (4, bins, FIX)
    assert store.get([meat])[0].status == "current"
    assert store.get([source])[0].status == "current"
    recalled = {row.id for row, _ in store.recall(await codes_for(BINS), None, 16)}
    assert bins not in recalled
    assert new.id in recalled
    assert meat in recalled
    assert bins in {row.id for row in store.rows(None, current_only=False)}
    third = await intake(
        [IntakeInput("Actually the bins go out on Friday.", "t/3")], store, journal, model
    )
    assert third.superseded == (new.id,)  # a current correction can itself be corrected
    assert replay(journal.path)["ok"]


async def test_foreign_rows_never_enter_the_table_and_cannot_be_targeted(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Foreign rows never enter the table and cannot be targeted."""
    private_b = IntakeInput(BINS, "b/1", owner=USER_B, scope=USER_B, actor=USER_B)
    shared_b = IntakeInput("The bins are green.", "b/2", owner=USER_B, actor=USER_B)
    shared_a = IntakeInput("The bins are collected early.", "a/0", owner=USER_A, actor=USER_A)
    await intake([private_b, shared_b, shared_a], store, journal, model)
    explicit = IntakeInput("The bins are heavy.", "a/x", owner=USER_A, scope=USER_A)
    await remember([explicit], store=store, journal=journal, embed=fake_embed)
    before = (store.snapshot(), journal_bytes(journal))
    model.override = force_target(1)
    result = await intake(
        [IntakeInput(FIX, "a/1", owner=USER_A, scope=USER_A, actor=USER_A)], store, journal, model
    )
    assert result.refusal is not None
    assert result.refusal.reason is Reason.INVALID_TARGET
    table_prompt = model.calls[-1][0][1]["content"]
    assert "<corrections>\n</corrections>" in table_prompt  # B's rows, A's household row, explicit
    assert (store.snapshot(), journal_bytes(journal)) == before


async def test_same_owner_other_scope_is_not_replaceable(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Same owner other scope is not replaceable."""
    await intake([IntakeInput(BINS, "s/1", owner=USER_A, actor=USER_A)], store, journal, model)
    result = await intake(
        [IntakeInput(FIX, "s/2", owner=USER_A, scope=USER_A, actor=USER_A)], store, journal, model
    )
    assert result.admitted
    assert result.superseded == ()
    assert store.get([result.ids[0][1]])[0].kind == 3


async def test_explicit_memories_are_protected(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Explicit memories are protected."""
    kept = await remember(
        [IntakeInput(BINS, "r/1")], store=store, journal=journal, embed=fake_embed
    )
    result = await intake([IntakeInput(FIX, "r/2")], store, journal, model)
    assert result.admitted
    assert result.superseded == ()
    assert store.get(list(kept.ids[0]))[0].status == "current"


async def test_target_gone_during_the_calls_is_stale(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Target gone during the calls is stale."""
    first = await intake([IntakeInput(BINS, "g/1")], store, journal, model)
    snapshots: list[Any] = []

    def concurrent_forget(messages: list[dict[str, str]], answer: str) -> str | None:
        if not FakeModel.is_first(messages):
            # Another writer removes the target after the table was built.
            store.apply(Mutation(0, delete=(first.ids[0][1],)))
            snapshots.append((store.snapshot(), journal_bytes(journal)))
        return None

    model.override = concurrent_forget
    result = await intake([IntakeInput(FIX, "g/2")], store, journal, model)
    assert result.refusal is not None
    assert result.refusal.reason is Reason.STALE_TARGET
    assert (store.snapshot(), journal_bytes(journal)) == snapshots[0]


async def test_two_corrections_of_one_target_in_a_batch_refuse(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Two corrections of one target in a batch refuse."""
    await intake([IntakeInput(BINS, "d/1")], store, journal, model)
    before = (store.snapshot(), journal_bytes(journal))
    batch = [IntakeInput(FIX, "d/2"), IntakeInput("Actually the bins go out on Monday.", "d/3")]
    result = await intake(batch, store, journal, model)
    assert result.refusal is not None
    assert result.refusal.reason is Reason.DUPLICATE_TARGET
    assert result.refusal.input_index == 1
    assert (store.snapshot(), journal_bytes(journal)) == before


async def test_a_required_reference_that_would_go_stale_refuses(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """A required reference that would go stale refuses."""
    first = await intake([IntakeInput(BINS, "q/1")], store, journal, model)
    target = first.ids[0][1]
    result = await intake([IntakeInput(FIX, "q/2", required=(target,))], store, journal, model)
    assert result.refusal is not None
    assert result.refusal.reason is Reason.STALE_REFERENCE
    missing = await intake([IntakeInput(FIX, "q/3", required=(999,))], store, journal, model)
    assert missing.refusal is not None
    assert missing.refusal.reason is Reason.UNKNOWN_ID


async def test_forgetting_a_superseded_dependency_keeps_replay_valid(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Forgetting a superseded dependency keeps replay valid."""
    first = await intake([IntakeInput(BINS, "f/1")], store, journal, model)
    await intake([IntakeInput(FIX, "f/2")], store, journal, model)
    done = await forget([first.ids[0][0]], viewer=None, store=store, journal=journal)
    assert done.admitted
    assert store.get(list(first.ids[0])) == []
    assert replay(journal.path)["ok"]
