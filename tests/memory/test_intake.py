"""Intake end to end with a fake model and real Chroma: admission, modes and atomic refusal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from custom_components.alto.memory.intake import IntakeResult, forget, remember, run_intake
from custom_components.alto.memory.journal import Journal
from custom_components.alto.memory.pipeline import IntakeInput
from custom_components.alto.memory.profile import processor_digest
from custom_components.alto.memory.qualification import Mode, QualificationTable
from custom_components.alto.memory.reasons import Reason
from custom_components.alto.memory.replay import replay
from custom_components.alto.memory.store import MemoryStore

from .conftest import MODEL_DIGEST, USER_A, USER_B, FakeModel, fake_embed, journal_bytes

QUALIFIED = QualificationTable(frozenset({(MODEL_DIGEST, processor_digest())}))

SENTENCES = [
    "The bins go out on Tuesday.",
    "My sister Anna is allergic to peanuts.",
    "Turn on the porch light.",
    "Ben does not eat meat.",
    "Is the oven still on?",
    "I think the plumber is coming on Friday.",
    "The wifi password is on the fridge.",
    "We never use the front door in winter.",
]


def many(count: int, prefix: str = "in") -> list[IntakeInput]:
    """`count` distinct inputs mixing statements and requests."""
    return [
        IntakeInput(
            f"{SENTENCES[n % 8]} Note {n} is here. {SENTENCES[(n * 3 + 1) % 8]}",
            f"{prefix}/{n}",
            actor=USER_A if n % 2 else None,
        )
        for n in range(count)
    ]


async def intake(
    batch: list[IntakeInput],
    store: MemoryStore,
    journal: Journal,
    model: FakeModel,
    **overrides: Any,
) -> IntakeResult:
    """Take in `batch` in mode 2 with the fake model and embedding, unless overridden."""
    options: dict[str, Any] = {
        "mode": 2,
        "store": store,
        "journal": journal,
        "embed": fake_embed,
        "call_model": model,
        "model_digest": MODEL_DIGEST,
        "table": QUALIFIED,
    } | overrides
    return await run_intake(batch, **options)


async def test_single_input_admits_source_assertions_and_mentions(
    store: MemoryStore, journal: Journal
) -> None:
    """Single input admits source assertions and mentions."""
    model = FakeModel(mentions=("Anna",))
    text = "My sister Anna is allergic to peanuts.  Turn on the lights.\nThe caf\u00e9 opens at 8."
    result = await intake([IntakeInput(text, "conv/1", actor=USER_A)], store, journal, model)
    assert result.admitted
    assert result.mode is Mode.AUTOMATIC
    assert result.status == 0
    assert result.sequence == 1
    assert journal.count == 1
    rows = store.get(list(result.ids[0]))
    assert [row.kind for row in rows] == ["source", 3, 3, 1]
    data = text.encode()
    for row in rows:
        assert data[row.offset : row.offset + row.length] == row.document.encode()
        assert (row.actor, row.owner, row.scope) == (USER_A, "household", "household")
    assert rows[2].document == "The caf\u00e9 opens at 8."
    assert rows[1].model_digest == MODEL_DIGEST
    assert rows[1].processor_digest == processor_digest()
    assert rows[0].model_digest == ""
    assert rows[3].document == "Anna"
    assert len(model.calls) == 2
    assert replay(journal.path)["ok"]


@pytest.mark.parametrize("count", [1, 64])
async def test_batches_of_one_and_sixty_four(
    count: int, store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Batches of one and sixty four."""
    result = await intake(many(count), store, journal, model)
    assert result.admitted
    assert len(result.ids) == count
    assert journal.count == 1
    assert len(model.calls) == 2 * count  # every input has a statement
    assert store.count() == sum(len(ids) for ids in result.ids)
    assert len({row_id for ids in result.ids for row_id in ids}) == store.count()
    assert replay(journal.path) == {
        "entries": 1,
        "ok": True,
        "first_mismatch": None,
        "reason": None,
    }


async def test_mode_one_keeps_sources_without_interpretation(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Mode one keeps sources without interpretation."""
    result = await intake(many(3), store, journal, model, mode=1)
    assert result.admitted
    assert result.mode is Mode.SOURCE
    assert result.status == 0
    assert model.calls == []
    assert [row.kind for row in store.rows(None)] == ["source"] * 3
    assert replay(journal.path)["ok"]


async def test_mode_zero_retains_nothing(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Mode zero retains nothing."""
    result = await intake(many(2), store, journal, model, mode=0)
    assert result.admitted
    assert result.mode is Mode.EXPLICIT
    assert result.ids == ()
    assert store.count() == 0
    assert journal_bytes(journal) is None
    assert model.calls == []


async def test_conversation_input_falls_back_to_mode_one(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Conversation input falls back to mode one."""
    other = QualificationTable(frozenset({("0" * 64, processor_digest())}))
    result = await intake(many(2), store, journal, model, table=other)
    assert result.admitted
    assert result.mode is Mode.SOURCE
    assert result.status == 12
    assert model.calls == []
    entry = next(journal.entries())
    assert (entry["mode"], entry["status"], entry["request"]["mode"]) == (1, 12, 2)
    assert replay(journal.path)["ok"]


async def test_whitespace_source_still_calls_once_and_skips_call_two(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Whitespace source still calls once and skips call two."""
    result = await intake([IntakeInput(" \n\t ", "ws")], store, journal, model)
    assert result.admitted
    assert len(model.calls) == 1
    assert model.calls[0][1] == {"type": "array", "prefixItems": []}
    record = next(journal.entries())["calls"][0]
    assert record["classification"]["executed"] == 0
    assert record["classification"]["response"] == "[]"
    assert record["table"] == []


async def test_requests_only_skip_call_two(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Requests only skip call two."""
    result = await intake(
        [IntakeInput("Turn on the lights. Is it late?", "r")], store, journal, model
    )
    assert result.admitted
    assert len(model.calls) == 1
    assert [row.kind for row in store.rows(None)] == ["source"]


def bad_first(raw: str) -> Callable[[list[dict[str, str]], str], str | None]:
    """Replace call 1 of the input containing BAD with `raw`."""
    return lambda messages, _: (
        raw if FakeModel.is_first(messages) and "BAD" in messages[1]["content"] else None
    )


def bad_second(raw: str) -> Callable[[list[dict[str, str]], str], str | None]:
    """Replace call 2 of the input containing BAD with `raw`."""

    def override(messages: list[dict[str, str]], answer: str) -> str | None:
        if FakeModel.is_first(messages) or "BAD" not in messages[1]["content"]:
            return None
        return raw.replace("ANSWER", answer[1:-1])

    return override


def raising(messages: list[dict[str, str]], _: str) -> str | None:
    """A model override that fails on a span containing BAD."""
    if "BAD" in messages[1]["content"]:
        raise ConnectionError("model went away")
    return None


B1, B2 = "BAD input is here.", "It has two statements."
BAD_TEXT = f"{B1} {B2}"


def pairs(*items: list[Any]) -> str:
    """The items as a raw JSON response."""
    return json.dumps(list(items))


NO_PAIR = QualificationTable(frozenset())
GOOD = pairs([B1, "statement"], [B2, "statement"])
REFUSALS: list[tuple[str, Any, dict[str, Any], Reason]] = [
    ("prose before", bad_first("Sure: " + GOOD), {}, Reason.MALFORMED_JSON),
    ("prose after", bad_first(GOOD + " ok"), {}, Reason.TRAILING_DATA),
    ("wrong count", bad_first(pairs([B1, "statement"])), {}, Reason.ITEM_COUNT),
    ("wrong quote", bad_first(GOOD.replace("here.", "here")), {}, Reason.QUOTE_MISMATCH),
    ("bad label", bad_first(pairs([B1, "fact"], [B2, "statement"])), {}, Reason.BAD_LABEL),
    ("model raises", raising, {}, Reason.MODEL_CALL_FAILED),
    ("extra field", bad_second(pairs([3, B1, 1], [3, B2])), {}, Reason.BAD_ITEM),
    ("invalid target", bad_second(pairs([4, B1, 9], [3, B2])), {}, Reason.INVALID_TARGET),
    ("mention not unique", bad_second('[ANSWER,[1,"s"]]'), {}, Reason.QUOTE_NOT_UNIQUE),
    ("duplicate mention", bad_second('[ANSWER,[1,"BAD"],[1,"BAD"]]'), {}, Reason.DUPLICATE_MENTION),
    ("embedding fails", None, {"embed": "raise"}, Reason.EMBEDDING_FAILED),
    ("embedding dimension", None, {"embed": "short"}, Reason.EMBEDDING_FAILED),
    ("unqualified direct", None, {"table": NO_PAIR, "direct": True}, Reason.UNQUALIFIED),
    ("no model digest", None, {"model_digest": None, "direct": True}, Reason.UNQUALIFIED),
]  # fmt: skip


async def embed_raise(texts: list[str]) -> list[list[float]]:
    """The fake embedding, failing on a text containing BAD."""
    if any("BAD" in text for text in texts):
        raise TimeoutError
    return await fake_embed(texts)


async def embed_short(texts: list[str]) -> list[list[float]]:
    """The fake embedding, too short for a text containing BAD."""
    vectors = await fake_embed(texts)
    return [v[:8] if "BAD" in t else v for v, t in zip(vectors, texts, strict=True)]


@pytest.mark.parametrize("count", [1, 64])
@pytest.mark.parametrize("case", REFUSALS, ids=[r[0] for r in REFUSALS])
async def test_refusals_leave_store_and_journal_byte_identical(
    count: int,
    case: tuple[str, Any, dict[str, Any], Reason],
    *,
    store: MemoryStore,
    journal: Journal,
    model: FakeModel,
    tmp_path: Path,
) -> None:
    """Refusals leave store and journal byte identical."""
    _, override, options, reason = case
    await intake(many(3, "before"), store, journal, model)  # a non-empty store and journal
    before = (store.snapshot(), journal_bytes(journal), store.applied, journal.count)
    calls_before = len(model.calls)
    model.override = override
    options = dict(options)  # parametrized dicts are shared between the two counts
    embed = {"raise": embed_raise, "short": embed_short}.get(options.pop("embed", ""), fake_embed)
    batch = [*many(count - 1), IntakeInput(BAD_TEXT, "bad/1")]
    result = await intake(batch, store, journal, model, embed=embed, **options)
    assert not result.admitted
    assert result.refusal is not None
    assert result.refusal.reason is reason
    if reason is Reason.UNQUALIFIED:
        assert result.status == 12
        assert len(model.calls) == calls_before
    elif reason is not Reason.EMBEDDING_FAILED:  # one embed call serves the whole batch
        assert result.refusal.input_index == count - 1
    assert (store.snapshot(), journal_bytes(journal), store.applied, journal.count) == before
    reopened = MemoryStore.open_persistent(tmp_path / "chroma")
    assert reopened.snapshot() == before[0]
    reopened.close()


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        (IntakeInput("Carriage\rreturn.", "x"), Reason.INVALID_TEXT),
        (IntakeInput("Fine.", "x", actor="Bob"), Reason.INVALID_ACTOR),
        (IntakeInput("Fine.", "x", owner=USER_A, scope=USER_B), Reason.INVALID_SCOPE),
        (IntakeInput("Fine.", "x", owner="someone"), Reason.INVALID_SCOPE),
        (IntakeInput("Fine.", ""), Reason.INVALID_SOURCE_ID),
        (IntakeInput("Fine.", "x", source_version=0), Reason.INVALID_SOURCE_ID),
        (IntakeInput("Fine.", "before/0"), Reason.DUPLICATE_SOURCE),
        (IntakeInput(("Ab. " * 500).strip(), "x"), Reason.PROMPT_TOO_LARGE),
        (IntakeInput(("Ab. " * 300).strip(), "x"), Reason.RESERVATION_EXCEEDED),
    ],
)
async def test_admission_refusals_make_no_call(
    item: IntakeInput, reason: Reason, store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Admission refusals make no call."""
    await intake(many(1, "before"), store, journal, model)
    before = (store.snapshot(), journal_bytes(journal))
    calls = len(model.calls)
    result = await intake([*many(5), item], store, journal, model)
    assert result.refusal is not None
    assert result.refusal.reason is reason
    assert result.refusal.input_index == 5
    assert len(model.calls) == calls
    assert (store.snapshot(), journal_bytes(journal)) == before


async def test_unknown_mode_refuses(store: MemoryStore, journal: Journal, model: FakeModel) -> None:
    """An unknown mode is refused before any model call or journal write."""
    result = await intake(many(1), store, journal, model, mode=3)
    assert result.refusal is not None
    assert result.refusal.reason is Reason.MODE_DISABLED
    assert model.calls == []
    assert journal_bytes(journal) is None


async def test_duplicate_source_within_a_batch_refuses(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Duplicate source within a batch refuses."""
    result = await intake(
        [IntakeInput("A.", "same"), IntakeInput("B.", "same")], store, journal, model
    )
    assert result.refusal is not None
    assert result.refusal.reason is Reason.DUPLICATE_SOURCE
    assert store.count() == 0
    assert journal_bytes(journal) is None


async def test_batch_of_sixty_five_refuses(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Batch of sixty five refuses."""
    result = await intake(many(65), store, journal, model)
    assert result.refusal is not None
    assert result.refusal.reason is Reason.BATCH_SIZE
    assert model.calls == []
    assert journal_bytes(journal) is None


async def test_texts_are_embedded_after_their_speakers_name(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Sources, quotes and authored memories are embedded after and in the name of their speaker."""
    asked: list[str] = []

    async def recording(texts: list[str]) -> list[list[float]]:
        asked.extend(texts)
        return await fake_embed(texts)

    names = {USER_A: "Anna"}
    batch = [
        IntakeInput("I am allergic to peanuts.", "conv/1", actor=USER_A),
        IntakeInput("Ben does not eat meat.", "conv/2", actor=USER_B),  # a user without a name
    ]
    result = await intake(batch, store, journal, model, embed=recording, names=names)
    assert result.admitted
    assert asked == [
        "Anna said: Anna am allergic to peanuts.",  # the sources
        "Ben does not eat meat.",
        "Anna said: Anna am allergic to peanuts.",  # their quotes
        "Ben does not eat meat.",
    ]
    sources = [row.document for row in store.rows(None) if row.kind == "source"]
    assert sources == [item.text for item in batch]  # what is kept is what was said
    asked.clear()
    mine = IntakeInput("My locker code is 4711.", "svc/1", owner=USER_A, scope=USER_A, actor=USER_A)
    remembered = await remember([mine], store=store, journal=journal, embed=recording, names=names)
    assert remembered.admitted
    assert asked == ["Anna said: Anna's locker code is 4711."]
    assert replay(journal.path)["ok"]  # the journal keeps the vectors, not the names


async def test_remember_and_forget(store: MemoryStore, journal: Journal, model: FakeModel) -> None:
    """Forgetting takes only what the viewer may see, and a source with all its rows."""
    mine = await remember(
        [IntakeInput("My locker code is 4711.", "svc/1", owner=USER_A, scope=USER_A, actor=USER_A)],
        store=store,
        journal=journal,
        embed=fake_embed,
    )
    assert mine.admitted
    assert store.get(list(mine.ids[0]))[0].kind == "explicit"
    shared = await intake(many(1), store, journal, model)
    source_id = shared.ids[0][0]
    before = (store.snapshot(), journal_bytes(journal))
    refused = await forget([mine.ids[0][0]], viewer=USER_B, store=store, journal=journal)
    assert refused.refusal is not None
    assert refused.refusal.reason is Reason.NOT_VISIBLE
    unknown = await forget([123], viewer=USER_A, store=store, journal=journal)
    assert unknown.refusal is not None
    assert unknown.refusal.reason is Reason.UNKNOWN_ID
    assert (store.snapshot(), journal_bytes(journal)) == before
    gone = await forget([source_id], viewer=None, store=store, journal=journal)
    assert gone.admitted
    assert set(gone.ids[0]) == set(shared.ids[0])  # the source and its rows
    assert store.get(list(shared.ids[0])) == []
    assert store.count(USER_A) == 1
    assert replay(journal.path)["ok"]


async def test_journal_records_raw_outputs_digests_tables_and_selection(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Journal records raw outputs digests tables and selection."""
    await intake([IntakeInput("The bins go out on Tuesday.", "a")], store, journal, model)
    await intake(
        [IntakeInput("Actually the bins go out on Wednesday.", "b")], store, journal, model
    )
    entry = list(journal.entries())[1]
    record = entry["calls"][0]
    assert json.loads(record["statement"]["response"]) == [
        ["Actually the bins go out on Wednesday.", "statement"]
    ]
    assert record["classification"]["model_digest"] == MODEL_DIGEST == entry["model_digest"]
    assert record["statement"]["processor_digest"] == processor_digest()
    assert record["table"][0]["quote"] == "The bins go out on Tuesday."
    assert [ref[0] for ref in record["selection"]] == sorted(
        [ref[0] for ref in record["selection"]],
        key=lambda i: -dict(map(tuple, record["selection"]))[i],
    )
    assert entry["mutation"]["supersede"] == [record["table"][0]["row_id"]]
