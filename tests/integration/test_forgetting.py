"""Forgetting erases: after `alto.forget` no byte of the text is left under the config dir.

Real HA, real users, the fake Ollama and the embedded Chroma store. A user says a secret in a
conversation (interpreted in mode 2, and kept verbatim in mode 1), says and remembers things that
are kept; after the forget every file under the config directory is read whole: the secret and
its distinctive parts are nowhere, the kept memories are there and recalled, the journal replays,
and a restart loads the same memories.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_send
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.memory.records import KIND_SOURCE
from custom_components.alto.memory.replay import replay_state
from custom_components.alto.surface.surfacer import SurfaceOutcome
from custom_components.alto.surface_organ.organ import signal_thought

from ..fake_ollama import FakeOllama
from ..on_disk import holding
from .helpers import (
    alto_service,
    converse_and_wait_for_background,
    is_call_1,
    is_call_2,
    journal_file,
    memory,
    recall,
    remember,
)

SECRET = "My bank PIN is 4821 and the safe code is 9917."
SAID = "The spare key hangs by the garage door."
KEPT = "The bins go out on Thursday."
NEEDLES = (SECRET, "4821", "9917", "bank PIN")
LAST_THOUGHT = "sensor.alto_last_thought"


def _script(fake: FakeOllama, *sentences: str) -> None:
    """Call 1 labels each sentence a statement; call 2 asserts it."""
    for sentence in sentences:
        fake.when(
            lambda body, s=sentence: is_call_1(body) and json.dumps(s) in json.dumps(body),
            json.dumps([[sentence, "statement"]]),
        )
        fake.when(
            lambda body, s=sentence: is_call_2(body) and json.dumps(s)[1:-1] in _statements(body),
            json.dumps([[3, sentence]]),
        )


def _statements(body: dict[str, Any]) -> str:
    content = body["messages"][1]["content"]
    return content.split("<statements>", 1)[1]


async def _rows(hass: HomeAssistant) -> list[tuple[Any, ...]]:
    return sorted(
        (row.id, row.document, row.kind, row.status)
        for row in await hass.async_add_executor_job(memory(hass).store.state.rows)
    )


@pytest.mark.usefixtures("qualified")
@pytest.mark.parametrize("mode", ["automatic", "source_text"])
async def test_forgetting_leaves_no_byte_of_the_text(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
    mode: str,
) -> None:
    """A forgotten secret is in no file under the config dir; kept memories stay and replay."""
    if mode == "source_text":
        hass.config_entries.async_update_entry(
            setup_alto, options={**setup_alto.options, "memory_mode": 1}
        )
        assert await hass.config_entries.async_reload(setup_alto.entry_id)
        await hass.async_block_till_done()
    alice_user = await hass.auth.async_create_user("Alice", group_ids=["system-users"])
    alice = Context(user_id=alice_user.id)
    root = Path(hass.config.config_dir)
    _script(fake_ollama, SECRET, SAID)
    await converse_and_wait_for_background(hass, SECRET, context=alice)
    # A later turn of the same speaker: in mode 2 its correction table quotes the secret.
    await converse_and_wait_for_background(hass, SAID, context=alice)
    await remember(hass, KEPT, alice)
    assert holding(root, NEEDLES)  # the secret is on disk before

    # The turn's source row (recall shows a text once, as the turn's block does).
    source = next(
        row
        for row in memory(hass).rows(alice_user.id)
        if row.document == SECRET and row.kind == KIND_SOURCE
    )
    # A thought that drew on it, as the last thought sensor shows one.
    thoughts = setup_alto.runtime_data.thoughts
    thoughts.last_surfaced = thoughts.last = SurfaceOutcome(
        "surfaced", "I remember the bank PIN is 4821.", [str(source.id)]
    )
    async_dispatcher_send(hass, signal_thought(setup_alto.entry_id))
    await hass.async_block_till_done()
    assert "4821" in json.dumps(hass.states.get(LAST_THOUGHT).as_dict())
    await alto_service(hass, "forget", {"id": source.id}, alice)
    await hass.async_block_till_done(wait_background_tasks=True)
    # Its state and attributes, not its times and context ids (which may hold any digits).
    shown = hass.states.get(LAST_THOUGHT)
    assert "4821" not in json.dumps([shown.state, dict(shown.attributes)])

    assert await hass.async_add_executor_job(holding, root, NEEDLES) == {}
    kept = holding(root, (SAID, KEPT))
    assert any(SAID in held for held in kept.values())
    assert any(KEPT in held for held in kept.values())
    quotes = {m["quote"] for m in await recall(hass, "key garage bins", alice)}
    assert {SAID, KEPT} <= quotes
    assert not any("4821" in quote for quote in quotes)

    admin = Context(user_id=hass_admin_user.id)
    report = await alto_service(hass, "replay", {}, admin)
    assert report["ok"], report
    # The secret's accept and intake entries; in mode 2 also the later turn's, whose correction
    # table quoted it. Every other entry still re-derives.
    assert report["redacted"] == (3 if mode == "automatic" else 2)
    assert report["unverified"] == 0
    rows = await _rows(hass)
    path = journal_file(hass, setup_alto)
    _report, replayed = await hass.async_add_executor_job(replay_state, path)
    assert sorted((r.id, r.document, r.kind, r.status) for r in replayed.rows()) == rows

    # A restart loads the same memories, and still holds no byte of the secret.
    assert await hass.config_entries.async_reload(setup_alto.entry_id)
    await hass.async_block_till_done()
    assert await _rows(hass) == rows
    assert await hass.async_add_executor_job(holding, root, NEEDLES) == {}


async def test_a_purge_leaves_no_byte_of_a_departed_users_memories(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry, hass_admin_user: Any
) -> None:
    """`alto.purge` of a removed user: their words are in no file; the household's stay."""
    leaving = await hass.auth.async_create_user("Leaving", group_ids=["system-users"])
    context = Context(user_id=leaving.id)
    said = "My locker code is 5550 and my alarm word is heron."
    await converse_and_wait_for_background(hass, said, context=context)
    await remember(hass, "My gym pass number is 7731.", context)
    await remember(hass, KEPT)
    root = Path(hass.config.config_dir)
    needles = (said, "5550", "heron", "7731")
    assert await hass.async_add_executor_job(holding, root, needles)
    await hass.auth.async_remove_user(leaving)
    admin = Context(user_id=hass_admin_user.id)
    purged = await alto_service(hass, "purge", {"owner": leaving.id}, admin)
    assert len(purged["forgotten"]) == 2
    await hass.async_block_till_done(wait_background_tasks=True)
    assert await hass.async_add_executor_job(holding, root, needles) == {}
    assert await hass.async_add_executor_job(holding, root, (KEPT,))
    report = await alto_service(hass, "replay", {}, admin)
    assert report["ok"], report
