"""Memory services end to end: remember, forget, recall scopes and the `todo.alto_memories` list.

Real HA, the fake Ollama over HTTP and the real embedded Chroma store, each test in its own
config dir (the integration conftest gives every test one).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from homeassistant.components.todo.const import DATA_COMPONENT
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import ServiceValidationError, Unauthorized
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events

from custom_components.alto import todo as todo_platform
from custom_components.alto.memory_organ.organ import EVENT_ADMITTED, EVENT_REFUSED

from ..fake_ollama import ChatReply, FakeOllama
from .helpers import (
    COUNT,
    TODO,
    alto_service,
    converse,
    converse_and_wait_for_background,
    is_call_1,
    is_call_2,
    journal_bytes,
    memory,
    quotes,
    recall,
    remember,
    state,
    store_contents,
)

KEY = "The spare key is under the blue pot."


async def listed(hass: HomeAssistant) -> list[dict[str, Any]]:
    """`todo.get_items` of the memories list, every field.

    After the change before it: the list is built again in an executor job after each change.
    """
    await hass.async_block_till_done()
    response = await hass.services.async_call(
        "todo",
        "get_items",
        {},
        target={"entity_id": TODO},
        blocking=True,
        return_response=True,
    )
    items: list[dict[str, Any]] = response[TODO]["items"]
    return items


async def todo_items(hass: HomeAssistant) -> list[dict[str, Any]]:
    """`todo.get_items` of the memories list, as (summary, uid, status) dicts."""
    return [
        {"summary": i["summary"], "uid": i["uid"], "status": i["status"]}
        for i in await listed(hass)
    ]


# -- 4. remember, the todo list, forget ------------------------------------------------------------
async def test_remember_lists_and_forget_removes(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """`alto.remember` stores and lists a memory; `alto.forget` removes it, once."""
    admitted = async_capture_events(hass, EVENT_ADMITTED)
    response = await alto_service(hass, "remember", {"text": KEY})
    assert list(response) == ["ids"]
    assert len(response["ids"]) == 1
    key_id = response["ids"][0]
    assert [e.data["mode"] for e in admitted] == ["explicit"]
    assert admitted[0].data["ids"] == [key_id]

    assert await todo_items(hass) == [
        {"summary": KEY, "uid": str(key_id), "status": "needs_action"}
    ]
    assert state(hass, TODO) == "1"
    assert state(hass, COUNT) == "1"
    found = await recall(hass, "where is the key")
    assert [(m["id"], m["quote"], m["kind"], m["owner"]) for m in found] == [
        (key_id, KEY, "remembered", "household")
    ]

    assert await alto_service(hass, "forget", {"id": key_id}) == {"forgotten": [key_id]}
    assert await todo_items(hass) == []
    assert state(hass, COUNT) == "0"
    assert await recall(hass, "where is the key") == []
    # Forgetting it again is refused as not found: the id is gone.
    with pytest.raises(ServiceValidationError) as raised:
        await alto_service(hass, "forget", {"id": key_id})
    assert raised.value.translation_key == "not_found"


async def test_todo_add_remembers_and_remove_forgets(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """Adding a to-do item remembers it; removing the item forgets it."""
    text = "Dinner is at seven on Sundays."
    await hass.services.async_call(
        "todo", "add_item", {"item": text}, target={"entity_id": TODO}, blocking=True
    )
    items = await todo_items(hass)
    assert [i["summary"] for i in items] == [text]
    found = await recall(hass, "dinner Sundays")
    assert [(m["quote"], m["kind"], m["owner"], m["actor"]) for m in found] == [
        (text, "remembered", "household", "unknown")
    ]
    assert items[0]["uid"] == str(found[0]["id"])
    assert found[0]["source_id"].startswith("todo/")
    assert state(hass, COUNT) == "1"

    await hass.services.async_call(
        "todo",
        "remove_item",
        {"item": [items[0]["uid"]]},
        target={"entity_id": TODO},
        blocking=True,
    )
    assert await todo_items(hass) == []
    assert await recall(hass, "dinner Sundays") == []
    assert state(hass, COUNT) == "0"


async def test_todo_lists_household_memories_only(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
) -> None:
    """The to-do list shows household memories only; the count covers every scope."""
    alice = hass_admin_user.id
    await remember(hass, "My bank PIN is 4821.", Context(user_id=alice))
    shared = await remember(hass, KEY, Context(user_id=alice), owner="household")
    assert await todo_items(hass) == [
        {"summary": KEY, "uid": str(shared), "status": "needs_action"}
    ]
    assert state(hass, COUNT) == "2"  # the count covers every scope


async def test_todo_lists_the_latest_household_memories_built_off_the_loop(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past its bound the list shows the latest memories; every change reads the store again."""
    monkeypatch.setattr(todo_platform, "MAX_TODO_ITEMS", 3)
    ids = [await remember(hass, f"The spare key number {n} is blue.") for n in range(5)]
    await hass.async_block_till_done()
    assert [item["uid"] for item in await todo_items(hass)] == [str(i) for i in ids[-3:]]
    assert state(hass, TODO) == "3"
    await alto_service(hass, "forget", {"id": ids[-1]})
    await hass.async_block_till_done()
    assert [item["uid"] for item in await todo_items(hass)] == [str(i) for i in ids[-4:-1]]


# -- the list: one item per thing said that is kept as a memory --------------------------------
TOLD = "My sister Carla visits every Sunday."
CORRECTED = "No, Carla visits every Saturday."
# What the household says in mode 1, each kept as said, and whether it is listed as a memory:
# questions, commands and acknowledgements are kept but are not memories, in any language.
SAID_AT_HOME = [
    ("en", "Is Carla coming round this weekend?", False),
    ("en", "Please turn on the kitchen light.", False),
    ("en", "Okay, thanks!", False),
    ("en", "The bins go out on Thursday.", True),
    ("de", "Kommt Carla am Wochenende vorbei?", False),
    ("de", "Mach bitte das Licht in der Küche an.", False),
    ("de", "Okay, danke!", False),
    ("de", "Meine Schwester Carla kommt jeden Sonntag.", True),
]


def _statements(body: dict[str, Any]) -> str:
    """Call 2's new statements (not its corrections table)."""
    content: str = body["messages"][1]["content"]
    return content.split("<statements>", 1)[1]


def _interpret(fake: FakeOllama, sentence: str, understood: Any) -> None:
    """Call 1 labels `sentence` a statement; call 2 answers `understood` (or its responder)."""
    fake.when(
        lambda body: is_call_1(body) and json.dumps(sentence) in body["messages"][1]["content"],
        json.dumps([[sentence, "statement"]]),
    )
    fake.when(
        lambda body: is_call_2(body) and json.dumps(sentence) in _statements(body),
        understood if callable(understood) else json.dumps(understood),
    )


def _correcting(earlier: str, sentence: str) -> Any:
    """Call 2's answer: `sentence` corrects the assertion `earlier` of the corrections table."""

    def answer(body: dict[str, Any]) -> ChatReply:
        table = body["messages"][1]["content"].split("</corrections>", 1)[0]
        (n,) = [
            int(line.split(".")[0]) for line in table.splitlines() if json.dumps(earlier) in line
        ]
        return ChatReply.text(json.dumps([[4, sentence, n], [1, "Carla"]]))

    return answer


async def test_todo_lists_each_memory_once_and_nothing_else(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
) -> None:
    """Every household turn is kept; the list shows the informative ones and explicit memories.

    Questions, commands and acknowledgements (English and German) stay out, and so does what a
    signed-in user said or remembered for themselves.
    """
    alice = Context(user_id=hass_admin_user.id)
    for language, text, _ in SAID_AT_HOME:
        await converse(hass, text, language=language)
        await hass.async_block_till_done(wait_background_tasks=True)
    await converse_and_wait_for_background(hass, "My bank PIN is 4821.", context=alice)
    await remember(hass, "The safe code is 9917.", alice)
    shared = await remember(hass, KEY)

    kept = {row.document: row.id for row in memory(hass).rows(None)}
    assert [text for _, text, _ in SAID_AT_HOME if text not in kept] == []  # all kept as said
    items = await listed(hass)
    expected = [text for _, text, shown in SAID_AT_HOME if shown]
    assert [(i["summary"], i["uid"]) for i in items] == [
        *((text, str(kept[text])) for text in expected),
        (KEY, str(shared)),
    ]
    assert [i.get("description") for i in items] == [None] * len(items)  # nothing understood
    private = {row.document for row in memory(hass).rows(hass_admin_user.id)} - set(kept)
    assert private == {"My bank PIN is 4821.", "The safe code is 9917."}
    assert state(hass, TODO) == str(len(items))


@pytest.mark.usefixtures("qualified")
async def test_todo_shows_a_statement_once_and_removing_it_forgets_all_of_it(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A turn, its assertion and its mentions are one item; removing it forgets every row."""
    _interpret(fake_ollama, TOLD, [[3, TOLD], [1, "Carla"], [2, "visits every Sunday"]])
    await converse_and_wait_for_background(hass, TOLD)
    rows = memory(hass).rows(None)
    assert [row.document for row in rows] == [TOLD, TOLD, "Carla", "visits every Sunday"]

    items = await listed(hass)
    assert [(i["summary"], i.get("description"), i["uid"]) for i in items] == [
        (TOLD, "Carla · visits every Sunday", str(rows[0].id))
    ]
    await hass.services.async_call(
        "todo", "remove_item", {"item": [TOLD]}, target={"entity_id": TODO}, blocking=True
    )
    assert await hass.async_add_executor_job(memory(hass).store.ids) == []
    assert await recall(hass, "Carla visits every Sunday") == []
    assert await listed(hass) == []

    # An item gone since the list was built: refused as not found, nothing else changes.
    await remember(hass, KEY)
    journal_before = journal_bytes(hass, setup_alto)
    todo = hass.data[DATA_COMPONENT].get_entity(TODO)
    assert todo is not None
    with pytest.raises(ServiceValidationError) as raised:
        await todo.async_delete_todo_items([items[0]["uid"]])
    assert raised.value.translation_key == "not_found"
    assert journal_bytes(hass, setup_alto) == journal_before
    assert [i["summary"] for i in await listed(hass)] == [KEY]


@pytest.mark.usefixtures("qualified")
async def test_todo_shows_a_corrected_memory_as_its_correction(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """Once a later turn corrects what a turn said, the list shows the correction instead."""
    _interpret(fake_ollama, TOLD, [[3, TOLD], [1, "Carla"]])
    await converse_and_wait_for_background(hass, TOLD)
    told = (await listed(hass))[0]["uid"]
    _interpret(fake_ollama, CORRECTED, _correcting(TOLD, CORRECTED))
    await converse_and_wait_for_background(hass, CORRECTED)

    rows = memory(hass).store.rows(None, current_only=False)
    assert [(row.document, row.status) for row in rows] == [
        (TOLD, "current"),
        (TOLD, "superseded"),
        ("Carla", "current"),
        (CORRECTED, "current"),
        (CORRECTED, "current"),
        ("Carla", "current"),
    ]
    items = await listed(hass)
    assert [(i["summary"], i.get("description"), i["uid"]) for i in items] == [
        (CORRECTED, "Carla", str(rows[3].id))
    ]
    assert told != items[0]["uid"]
    assert TOLD not in quotes(await recall(hass, "When does Carla visit?"))


@pytest.mark.usefixtures("qualified")
async def test_todo_shows_what_still_holds_of_a_turn_a_correction_replaced_part_of(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A turn of two statements, one of them corrected later: its item is the other one.

    What was said no longer holds as a whole, so it is not the summary; the statement that
    still holds is, under the turn's uid (removing it forgets the whole turn, as the panel does).
    """
    bins = "The bins go out on Monday."
    said = f"{TOLD} {bins}"
    fake_ollama.when(
        lambda body: is_call_1(body) and json.dumps(TOLD) in body["messages"][1]["content"],
        json.dumps([[TOLD, "statement"], [bins, "statement"]]),
    )
    fake_ollama.when(
        lambda body: is_call_2(body) and json.dumps(bins) in _statements(body),
        json.dumps([[3, TOLD], [3, bins], [1, "Carla"]]),
    )
    await converse_and_wait_for_background(hass, said)
    turn = (await listed(hass))[0]
    assert (turn["summary"], turn.get("description")) == (said, f"{TOLD} · {bins} · Carla")

    _interpret(fake_ollama, CORRECTED, _correcting(TOLD, CORRECTED))
    await converse_and_wait_for_background(hass, CORRECTED)
    items = await listed(hass)
    assert [(i["summary"], i.get("description"), i["uid"]) for i in items] == [
        (bins, None, turn["uid"]),
        (CORRECTED, "Carla", items[1]["uid"]),
    ]

    await hass.services.async_call(
        "todo", "remove_item", {"item": [bins]}, target={"entity_id": TODO}, blocking=True
    )
    assert [i["summary"] for i in await listed(hass)] == [CORRECTED]
    left = {row.document for row in memory(hass).store.rows(None, current_only=False)}
    assert left == {CORRECTED, "Carla"}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("bad\x00byte", "invalid_text"),
        ("carriage\rreturn", "invalid_text"),
        ("x" * 4097, "source_too_large"),
        ("é" * 2049, "source_too_large"),  # 2,049 characters, 4,098 bytes
    ],
)
async def test_invalid_remember_is_refused_and_stores_nothing(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    text: str,
    reason: str,
) -> None:
    """Invalid text is refused with its reason, embeds nothing and stores nothing."""
    await remember(hass, KEY)
    before = await store_contents(hass)
    journal_before = journal_bytes(hass, setup_alto)
    embeds = sum(path == "/api/embed" for path, _ in fake_ollama.requests)
    refused = async_capture_events(hass, EVENT_REFUSED)

    with pytest.raises(ServiceValidationError) as raised:
        await alto_service(hass, "remember", {"text": text})
    assert raised.value.translation_key == "memory_refused"
    assert raised.value.translation_placeholders == {"reason": reason}
    assert [e.data["reason"] for e in refused] == [reason]

    assert await store_contents(hass) == before
    assert journal_bytes(hass, setup_alto) == journal_before
    assert sum(path == "/api/embed" for path, _ in fake_ollama.requests) == embeds
    assert state(hass, COUNT) == "1"
    assert [i["summary"] for i in await todo_items(hass)] == [KEY]


async def test_remember_at_the_byte_limit_is_kept(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """Text of exactly the byte limit is kept."""
    text = "é" * 2048  # exactly 4,096 bytes
    memory_id = await remember(hass, text)
    assert [m["id"] for m in await recall(hass, text)] == [memory_id]


# -- 5. recall scopes between two HA users ---------------------------------------------------------
async def test_recall_is_scoped_to_the_caller(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
    hass_read_only_user: Any,
) -> None:
    """Recall, remember and forget keep each user's private memories to that user."""
    alice, bob = hass_admin_user.id, hass_read_only_user.id

    def as_alice() -> Context:  # every service call of a real caller has a context of its own
        return Context(user_id=alice)

    def as_bob() -> Context:
        return Context(user_id=bob)

    pin = await remember(hass, "My bank PIN is 4821.", as_alice(), owner=alice)
    shared = await remember(hass, "The bank is closed on Mondays.", as_alice(), owner="household")
    bobs = await remember(hass, "My bank card is in the drawer.", as_bob())

    def ids(memories: list[dict[str, Any]]) -> set[int]:
        return {m["id"] for m in memories}

    alice_view = await recall(hass, "bank PIN", as_alice())
    assert ids(alice_view) == {pin, shared}
    assert {m["id"]: m["owner"] for m in alice_view} == {pin: alice, shared: "household"}
    assert ids(await recall(hass, "bank PIN", as_bob())) == {shared, bobs}
    assert ids(await recall(hass, "bank PIN 4821", as_bob(), owner=bob)) == {shared, bobs}
    # Household only: no user, or a user asking for the household scope.
    assert ids(await recall(hass, "bank PIN")) == {shared}
    assert ids(await recall(hass, "bank PIN", as_bob(), owner="household")) == {shared}
    # An administrator may name another user; a non-admin may not.
    assert ids(await recall(hass, "bank", as_alice(), owner=bob)) == {shared, bobs}
    with pytest.raises(Unauthorized):
        await recall(hass, "bank PIN", as_bob(), owner=alice)
    with pytest.raises(ServiceValidationError) as raised:
        await recall(hass, "bank", as_alice(), owner="0" * 32)
    assert raised.value.translation_key == "unknown_owner"

    # Bob cannot forget Alice's private memory, and cannot write into her scope.
    journal_before = journal_bytes(hass, setup_alto)
    with pytest.raises(ServiceValidationError) as raised:
        await alto_service(hass, "forget", {"id": pin}, as_bob())
    assert raised.value.translation_key == "not_found"  # as if it did not exist
    with pytest.raises(Unauthorized):
        await alto_service(
            hass, "remember", {"text": "Alice owes Bob money.", "owner": alice}, as_bob()
        )
    assert journal_bytes(hass, setup_alto) == journal_before
    assert ids(await recall(hass, "bank PIN money", as_alice())) == {pin, shared}
    assert state(hass, COUNT) == "3"

    # Alice may forget her own.
    assert await alto_service(hass, "forget", {"id": pin}, as_alice()) == {"forgotten": [pin]}
    assert "4821" not in str(await recall(hass, "bank PIN", as_alice()))
    assert quotes(await recall(hass, "bank", as_alice())) == ["The bank is closed on Mondays."]


async def test_two_remembers_in_one_script_run_are_both_kept(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """Two remembers sharing one context are both kept."""
    run = Context()  # HA gives every action of one script or automation run the same context
    first = await remember(hass, KEY, run)
    second = await remember(hass, "The recycling goes out on Fridays.", run)
    assert first != second
    assert state(hass, COUNT) == "2"
