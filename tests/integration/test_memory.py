"""The memory organ end to end: real HA, the fake Ollama over HTTP, the real embedded Chroma store.

Covers the effective mode (mode-1 fallback for an unqualified pair, mode 2 for a qualified one),
intake after a turn, atomic refusal, replay of the journal, restart, a crash between journal and
store, the memory context of a turn and an embedding failure during intake (the turn waits in
the journal until the model is back). Service-level tests (remember, forget, the todo list,
scopes) are in `test_memory_services.py`; durability, damage, duplicates and coalesced writes in
`test_durability.py`.

HA's test harness points `hass.config.config_dir` at one shared directory inside the installed
package, so the integration conftest gives every test its own config dir: the store, the journal
and the qualification table never leak between tests.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_capture_events,
    async_fire_time_changed,
)

from custom_components.alto.memory.journal import entry_hash
from custom_components.alto.memory.records import canonical_json
from custom_components.alto.memory.store import MemoryStore
from custom_components.alto.memory_organ.organ import (
    EVENT_ADMITTED,
    EVENT_REFUSED,
    RETRY_FIRST_S,
    row_dict,
)

from ..fake_ollama import CHAT_MODEL, FakeOllama, digest_of, wants_reply_object
from .helpers import (
    COUNT,
    MARIA,
    alto_service,
    converse_and_wait_for_background,
    is_call_1,
    is_call_2,
    journal_bytes,
    journal_file,
    memory,
    quotes,
    recall,
    remember,
    spoken,
    state,
    store_contents,
)

MODE = "sensor.alto_memory_mode"
AUTOMATIC = "binary_sensor.alto_automatic_memory"

MARIA_CALL_1 = json.dumps([[MARIA, "statement"]])
MARIA_CALL_2 = json.dumps([[3, MARIA], [1, "Maria"], [2, "walks the dog"]])


def memory_calls(fake: FakeOllama) -> list[dict[str, Any]]:
    """Every /api/chat request with a `format` schema other than the reply's (memory calls)."""
    return [b for b in fake.chat_requests if "format" in b and not wants_reply_object(b)]


def script_maria(fake: FakeOllama, call_2: str = MARIA_CALL_2) -> None:
    """Scripted answers to both intake calls for MARIA."""
    fake.when(is_call_1, MARIA_CALL_1)
    fake.when(is_call_2, call_2)


# -- 1. mode-1 fallback -------------------------------------------------------------------------
@pytest.mark.usefixtures("setup_alto")
async def test_unqualified_pair_falls_back_to_source_text(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """An unqualified model keeps a turn verbatim as one household source row (mode 1)."""
    assert state(hass, MODE) == "source_text"
    attributes = hass.states.get(MODE).attributes
    assert attributes["requested"] == "automatic"
    assert attributes["model_digest"] == digest_of(CHAT_MODEL)
    assert state(hass, AUTOMATIC) == "off"
    assert state(hass, COUNT) == "0"
    admitted = async_capture_events(hass, EVENT_ADMITTED)
    refused = async_capture_events(hass, EVENT_REFUSED)

    text = "The bins go out on Thursday.  Really!"
    fake_ollama.reply("¦Noted.¦")
    result = await converse_and_wait_for_background(hass, text)
    assert spoken(result) == "Noted."

    assert refused == []
    assert len(admitted) == 1
    event = admitted[0].data
    assert (event["mode"], event["status"], event["actor"]) == ("source", 12, None)
    digest = hashlib.sha256(result.conversation_id.encode()).hexdigest()[:32]
    assert event["source_id"].startswith(f"conversation/{digest}/")
    assert len(event["ids"]) == 1
    found = await recall(hass, "bins Thursday")
    assert found == [
        {
            "id": event["ids"][0],
            "quote": text,  # verbatim, double space included
            "kind": "source",
            "actor": "unknown",
            "owner": "household",
            "source_id": event["source_id"],
        }
    ]
    assert state(hass, COUNT) == "1"
    assert memory_calls(fake_ollama) == []
    assert len(fake_ollama.chat_requests) == 1  # only the conversational call


# -- 2. mode 2 with a qualified pair --------------------------------------------------------------
@pytest.mark.usefixtures("qualified", "setup_alto")
async def test_qualified_pair_interprets_a_turn(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """A qualified model's two intake calls admit source, assertion and mentions (mode 2)."""
    assert state(hass, MODE) == "automatic"
    assert state(hass, AUTOMATIC) == "on"
    await remember(hass, "The spare key is under the blue pot.")
    assert state(hass, COUNT) == "1"
    admitted = async_capture_events(hass, EVENT_ADMITTED)
    script_maria(fake_ollama)

    result = await converse_and_wait_for_background(hass, MARIA)
    assert spoken(result) == "Hello from the fake model."

    first, second = memory_calls(fake_ollama)
    assert is_call_1(first)
    assert is_call_2(second)
    assert first["stream"] is False
    assert first["options"]["temperature"] == 0
    assert first["format"] == {
        "type": "array",
        "prefixItems": [
            {"type": "array", "prefixItems": [{"const": MARIA}, {"enum": ["statement", "request"]}]}
        ],
    }
    assert (
        'actor: unknown\n<source>\n1: "Maria walks the dog every morning."\n'
        in (first["messages"][1]["content"])
    )
    assert "<statements>\n1: " + json.dumps(MARIA) in second["messages"][1]["content"]

    assert [e.data["mode"] for e in admitted] == ["automatic"]
    assert admitted[0].data["status"] == 0
    ids = admitted[0].data["ids"]
    assert len(ids) == 4
    assert state(hass, COUNT) == "5"
    rows = memory(hass).store.get(ids)
    assert [(row_dict(row)["kind"], row.document) for row in rows] == [
        ("source", MARIA),
        ("assertion", MARIA),
        ("participant mention", "Maria"),
        ("task mention", "walks the dog"),
    ]
    # Recall reads as the turn's block: a text the turn and its statement both say, once.
    assert quotes(await recall(hass, "Maria walks the dog")).count(MARIA) == 1
    assert {row.model_digest for row in rows[1:]} == {digest_of(CHAT_MODEL)}
    assert rows[0].model_digest == ""


# -- 3. a refused batch stores nothing -----------------------------------------------------------
@pytest.mark.usefixtures("qualified")
async def test_malformed_call_two_refuses_and_stores_nothing(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A malformed second call refuses the turn's memory: journaled as refused, nothing stored."""
    await remember(hass, "The spare key is under the blue pot.")
    before = await store_contents(hass)
    journal_before = journal_bytes(hass, setup_alto)
    assert journal_before is not None
    assert journal_before.count(b"\n") == 1
    admitted = async_capture_events(hass, EVENT_ADMITTED)
    refused = async_capture_events(hass, EVENT_REFUSED)
    script_maria(fake_ollama, call_2=MARIA_CALL_2[:-1])  # the closing bracket is missing

    result = await converse_and_wait_for_background(hass, MARIA)
    assert spoken(result) == "Hello from the fake model."

    assert admitted == []
    assert len(refused) == 1
    assert refused[0].data["reason"] == "malformed_json"
    assert (refused[0].data["mode"], refused[0].data["status"]) == ("automatic", 1)
    assert refused[0].data["ids"] == []
    assert len(memory_calls(fake_ollama)) == 2  # both calls ran; the parse refused
    assert await store_contents(hass) == before
    journal = journal_bytes(hass, setup_alto)
    assert journal is not None
    assert journal.startswith(journal_before)
    added = [json.loads(line) for line in journal[len(journal_before) :].splitlines()]
    assert [(e["op"], e["mutation"]["upsert"]) for e in added] == [("accept", []), ("refuse", [])]
    assert added[1]["reason"] == "malformed_json"
    assert (await alto_service(hass, "replay", {}))["ok"] is True
    assert state(hass, COUNT) == "1"
    assert "Maria" not in str(await recall(hass, MARIA))


# -- 6. replay -------------------------------------------------------------------------------------
def _rewrite(path: Path, index: int, edit: Any) -> None:
    """Edit entry `index` with `edit(entry)` and re-chain every hash from it on (a forgery)."""
    entries = [json.loads(line) for line in path.read_bytes().splitlines()]
    edit(entries[index])
    for position in range(index, len(entries)):
        if position:
            entries[position]["prev"] = entries[position - 1]["hash"]
        entries[position]["hash"] = entry_hash(entries[position])
    path.write_bytes(b"".join(canonical_json(e).encode() + b"\n" for e in entries))


@pytest.mark.usefixtures("qualified")
async def test_replay_detects_an_edited_model_output(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """Replay finds a one-byte edit of the journal, and a forgery that re-hashes the chain."""
    key = await remember(hass, "The spare key is under the blue pot.")
    script_maria(fake_ollama)
    await converse_and_wait_for_background(hass, MARIA)
    fake_ollama.reply("¦Sure.¦")
    # Call 1 gets MARIA_CALL_1: refused, not journaled.
    await converse_and_wait_for_background(hass, "Is the oven on?")
    await alto_service(hass, "forget", {"id": key})
    entries = journal_file(hass, setup_alto).read_bytes().splitlines()
    ops = ["remember", "accept", "intake", "accept", "refuse", "forget"]
    assert [json.loads(e)["op"] for e in entries] == ops

    # The forgotten memory's entry is a tombstone; Maria's turn selected it as a reference (its
    # recorded selection names it): its selection is taken as recorded, the rest re-derived.
    clean = {
        "entries": 6,
        "ok": True,
        "first_mismatch": None,
        "reason": None,
        "redacted": 1,
        "unverified": 1,
    }
    assert await alto_service(hass, "replay", {}) == clean

    path = journal_file(hass, setup_alto)
    original = path.read_bytes()
    raw = b'\\"statement\\"]]'  # inside entry 2's recorded call-1 response
    assert original.count(raw) == 1
    edited = original.replace(raw, b'\\"Statement\\"]]')
    assert len(edited) == len(original)
    assert sum(a != b for a, b in zip(edited, original, strict=True)) == 1
    path.write_bytes(edited)
    assert await alto_service(hass, "replay", {}) == {
        "entries": 6,
        "ok": False,
        "first_mismatch": 2,
        "reason": "entry_hash",
    }

    # A forger who re-hashes the chain is still caught: replay re-derives from the raw output.
    path.write_bytes(original)
    assert await alto_service(hass, "replay", {}) == clean

    def relabel(entry: dict[str, Any]) -> None:
        record = entry["calls"][0]["statement"]
        record["response"] = record["response"].replace('"statement"', '"request"')

    _rewrite(path, 2, relabel)
    result = await alto_service(hass, "replay", {})
    assert (result["ok"], result["first_mismatch"]) == (False, 2)
    assert result["reason"] == "items"

    # A one-byte edit of a recorded digest, re-hashed, is caught as that digest.
    path.write_bytes(original)

    def digest(entry: dict[str, Any]) -> None:
        value = entry["calls"][0]["classification"]["processor_digest"]
        entry["calls"][0]["classification"]["processor_digest"] = value[:-1] + (
            "0" if value[-1] != "0" else "1"
        )

    _rewrite(path, 2, digest)
    assert await alto_service(hass, "replay", {}) == {
        "entries": 6,
        "ok": False,
        "first_mismatch": 2,
        "reason": "processor_digest",
    }


# -- 7. restart ------------------------------------------------------------------------------------
async def test_reload_keeps_every_memory(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A reload keeps every memory, and the journal continues its sequence."""
    await remember(hass, "The spare key is under the blue pot.")
    await remember(hass, "Grandma visits on the first Sunday of the month.")
    await converse_and_wait_for_background(hass, "The boiler was serviced in March.")
    before = sorted(quotes(await recall(hass, "key grandma boiler")))
    assert len(before) == 3
    assert state(hass, COUNT) == "3"
    old = memory(hass)

    assert await hass.config_entries.async_reload(setup_alto.entry_id)
    await hass.async_block_till_done()

    assert memory(hass) is not old
    assert sorted(quotes(await recall(hass, "key grandma boiler"))) == before
    assert state(hass, COUNT) == "3"
    assert (await alto_service(hass, "replay", {}))["ok"] is True
    # The journal continues where it was (the turn is two entries: accepted, then interpreted).
    await remember(hass, "The recycling goes out on Fridays.")
    assert state(hass, COUNT) == "4"
    assert (await alto_service(hass, "replay", {}))["entries"] == 5


# -- 8. crash between journal and store ------------------------------------------------------------
def _apply_fails_once(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the next `MemoryStore.apply` raise before writing; returns the failed sequences."""
    original = MemoryStore.apply
    failed: list[int] = []

    def apply(self: MemoryStore, mutation: Any) -> None:
        if not failed:
            failed.append(mutation.sequence)
            raise OSError("the disk went away")
        original(self, mutation)

    monkeypatch.setattr(MemoryStore, "apply", apply)
    return failed


async def test_reconcile_applies_a_journaled_write_after_a_crash(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write journaled but not applied before a crash is applied at the next setup."""
    await remember(hass, "The spare key is under the blue pot.")
    failed = _apply_fails_once(monkeypatch)
    with pytest.raises(HomeAssistantError, match="kept in the journal"):
        await remember(hass, "The plumber comes on Friday.")
    assert failed == [2]
    assert journal_file(hass, setup_alto).read_bytes().count(b"\n") == 2  # journaled
    assert memory(hass).store.applied == 1  # but not in the store
    assert quotes(await recall(hass, "plumber Friday")) == ["The spare key is under the blue pot."]

    assert await hass.config_entries.async_reload(setup_alto.entry_id)
    await hass.async_block_till_done()

    assert memory(hass).store.applied == 2
    assert sorted(quotes(await recall(hass, "plumber Friday"))) == [
        "The plumber comes on Friday.",
        "The spare key is under the blue pot.",
    ]
    assert state(hass, COUNT) == "2"
    assert (await alto_service(hass, "replay", {}))["ok"] is True


async def test_a_write_after_a_failed_apply_does_not_lose_the_journaled_memory(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The next write first catches the store up with the journal."""
    _apply_fails_once(monkeypatch)
    with pytest.raises(HomeAssistantError, match="kept in the journal"):
        await remember(hass, "The plumber comes on Friday.")
    await remember(hass, "The spare key is under the blue pot.")  # the store works again
    # The store caught up with the journal before that write: nothing waits for a restart.
    assert sorted(quotes(await recall(hass, "plumber Friday"))) == [
        "The plumber comes on Friday.",
        "The spare key is under the blue pot.",
    ]

    assert await hass.config_entries.async_reload(setup_alto.entry_id)
    await hass.async_block_till_done()

    assert sorted(quotes(await recall(hass, "plumber Friday"))) == [
        "The plumber comes on Friday.",
        "The spare key is under the blue pot.",
    ]


# -- 9. the memory context of a turn ---------------------------------------------------------------
def memory_context(body: dict[str, Any]) -> str | None:
    """The system message carrying recalled memories in a conversational request, if any."""
    found = [
        m["content"]
        for m in body["messages"][1:]
        if m["role"] == "system" and m["content"].startswith("What you have been told before")
    ]
    assert len(found) <= 1
    return found[0] if found else None


def conversational(fake: FakeOllama) -> list[dict[str, Any]]:
    """The conversational requests (no schema, or the reply's), in order."""
    return [b for b in fake.chat_requests if "format" not in b or wants_reply_object(b)]


async def test_turn_context_quotes_memories_with_who_and_when(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
    hass_read_only_user: Any,
) -> None:
    """A turn's memory context: what the speaker may see, kind, name and age, never a user id.

    Questions and greetings stay out.
    """
    await hass.auth.async_update_user(hass_admin_user, name="Alice")
    await hass.auth.async_update_user(hass_read_only_user, name="Bob")
    alice, bob = hass_admin_user.id, hass_read_only_user.id
    # An empty store adds no context.
    await converse_and_wait_for_background(hass, "Hello there.", context=Context(user_id=bob))
    assert memory_context(conversational(fake_ollama)[-1]) is None
    bob_turn = "I parked the car on Elm Street."  # kept in mode 1 as Bob's private source row
    await converse_and_wait_for_background(hass, bob_turn, context=Context(user_id=bob))

    await remember(hass, "The bins go out on Thursday", Context(user_id=alice), owner="household")
    await remember(hass, "My bank PIN is 4821.", Context(user_id=alice))  # private to Alice

    await converse_and_wait_for_background(
        hass, "When do the bins go out?", context=Context(user_id=bob)
    )
    body = conversational(fake_ollama)[-1]
    assert body["messages"][-1] == {"role": "user", "content": "When do the bins go out?"}
    assert body["messages"][-2]["role"] == "system"
    context = memory_context(body)
    assert context is not None
    assert "[asked to remember; Alice, today] The bins go out on Thursday\n" in context
    assert f"[said; Bob, today] {bob_turn}\n" in context
    assert "Hello there" not in context  # a greeting tells nothing
    assert "4821" not in str(body["messages"])
    assert alice not in context
    assert bob not in context

    await converse_and_wait_for_background(hass, "What is my PIN?", context=Context(user_id=alice))
    context = memory_context(conversational(fake_ollama)[-1])
    assert context is not None
    assert "[asked to remember; Alice, today] My bank PIN is 4821.\n" in context
    assert "[asked to remember; Alice, today] The bins go out on Thursday\n" in context
    assert bob_turn not in context  # Bob's turn is his own
    assert "When do the bins go out?" not in context  # a question is no memory

    # An anonymous turn (a satellite) sees household memories only.
    await converse_and_wait_for_background(hass, "Anything about bins?")
    context = memory_context(conversational(fake_ollama)[-1])
    assert context is not None
    assert "Thursday" in context
    assert "4821" not in context
    assert bob_turn not in context


async def test_memories_are_embedded_as_documents_and_utterances_as_queries(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """nomic-embed-text reads its role prefixes: stored texts as documents, the turn as a query.

    The query's form (`memory.question_form`) is embedded in the same request.
    """
    await remember(hass, "The bins go out on Thursday")
    await converse_and_wait_for_background(hass, "When do the bins go out?")
    assert fake_ollama.embedded_texts == [
        "search_document: The bins go out on Thursday",
        "search_query: When do the bins go out?",  # the turn's memory block
        "search_query: When do the",  # its form, taken out of its embedding
        "search_document: When do the bins go out?",  # mode 1 keeps the turn's text
    ]
    assert sum(path == "/api/embed" for path, _ in fake_ollama.requests) == 3
    rows = memory(hass).rows(None)
    assert all(row.said_at > 0 for row in rows)


async def test_memories_are_embedded_after_the_name_of_who_said_them(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
) -> None:
    """A named user's memory and turn are embedded after their name, and in it; not their asking."""
    await hass.auth.async_update_user(hass_admin_user, name="Alice")
    alice = Context(user_id=hass_admin_user.id)
    await remember(hass, "I take my pill with breakfast", alice)
    await converse_and_wait_for_background(hass, "My dentist is on Friday.", context=alice)
    assert fake_ollama.embedded_texts == [
        "search_document: Alice said: Alice take Alice's pill with breakfast",
        "search_query: My dentist is on Friday.",
        "search_query: My is on",
        "search_document: Alice said: Alice's dentist is on Friday.",
    ]
    documents = sorted(row.document for row in memory(hass).rows(hass_admin_user.id))
    assert documents == ["I take my pill with breakfast", "My dentist is on Friday."]


# -- 10. an embedding failure during intake --------------------------------------------------------
async def test_embed_failure_keeps_the_turn_pending_until_the_model_is_back(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An embedding failure keeps the turn in the journal (one warning) until the model is back."""
    await remember(hass, "The spare key is under the blue pot.")
    before = await store_contents(hass)
    refused = async_capture_events(hass, EVENT_REFUSED)
    admitted = async_capture_events(hass, EVENT_ADMITTED)
    fake_ollama.fail_embed = 10  # the turn's memory context and the intake both fail
    fake_ollama.reply("¦Still here.¦")

    result = await converse_and_wait_for_background(hass, "The boiler was serviced in March.")
    assert spoken(result) == "Still here."

    assert fake_ollama.fail_embed == 8  # context selection, then intake: one request each
    assert (admitted, refused) == ([], [])
    assert await store_contents(hass) == before
    entries = journal_file(hass, setup_alto).read_bytes().splitlines()
    assert [json.loads(entry)["op"] for entry in entries] == ["remember", "accept"]
    [warning] = [r for r in caplog.records if "not yet interpreted" in r.getMessage()]
    assert warning.levelname == "WARNING"
    assert "boiler" not in warning.getMessage()
    assert state(hass, COUNT) == "1"

    fake_ollama.fail_embed = 0
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=RETRY_FIRST_S + 1))
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [(e.data["mode"], e.data["ids"] != []) for e in admitted] == [("source", True)]
    assert refused == []
    assert "The boiler was serviced in March." in quotes(await recall(hass, "boiler serviced"))
    assert state(hass, COUNT) == "2"
    assert any("Memory caught up" in r.getMessage() for r in caplog.records)


async def test_a_store_failure_during_turn_intake_is_contained_and_reconciled(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store failure in a turn's interpretation does not escape its task, and is reconciled."""
    tasks: list[Any] = []
    create = hass.async_create_background_task

    def capture(target: Any, name: str, eager_start: bool = True) -> Any:
        tasks.append(create(target, name, eager_start))
        return tasks[-1]

    monkeypatch.setattr(hass, "async_create_background_task", capture)
    failed = _apply_fails_once(monkeypatch)
    fake_ollama.reply("¦Noted.¦")
    result = await converse_and_wait_for_background(hass, "The boiler was serviced in March.")
    assert spoken(result) == "Noted."
    assert failed == [2]  # entry 1 accepted the turn; entry 2, its interpretation, failed
    intake = [task for task in tasks if task.get_name() == "alto_memory_intake"]
    assert len(intake) == 1
    assert intake[0].done()
    escaped = intake[0].exception()  # retrieved here, so HA's loop handler never sees it

    assert await hass.config_entries.async_reload(setup_alto.entry_id)
    await hass.async_block_till_done()
    assert quotes(await recall(hass, "boiler")) == ["The boiler was serviced in March."]
    assert escaped is None
