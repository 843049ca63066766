"""Nothing the household said is lost: durable intake, a self-checking journal, coalesced writes.

Also one memory per text (and idempotency keys), "not found" for an unknown id, the memory closed
when Home Assistant stops, and the GPU fallback said once. Real HA, the fake Ollama over HTTP and
the real embedded Chroma store, each test in its own config dir. `tests/live/test_durability.py`
kills a real Home Assistant process.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import shutil
from typing import Any

import probatio
import pytest
from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events

from custom_components.alto.const import DOMAIN
from custom_components.alto.memory import intake
from custom_components.alto.memory.checkpoint import MAGIC
from custom_components.alto.memory_organ import organ as memory_organ
from custom_components.alto.memory_organ.organ import EVENT_REFUSED

from ..fake_ollama import FakeOllama
from .helpers import (
    COUNT,
    MARIA,
    alto_service,
    converse,
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
)

KEY = "The spare key is under the blue pot."


def ops(hass: HomeAssistant, entry: MockConfigEntry) -> list[str]:
    """The ops of the journal's entries, in order."""
    return [json.loads(line)["op"] for line in journal_file(hass, entry).read_bytes().splitlines()]


async def reload(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """Unload and set up the entry again (a restart of Alto)."""
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()


# -- 1. a turn's source is durable before its reply ------------------------------------------------
async def test_a_turn_is_journaled_before_its_reply_and_resumed_after_a_restart(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """The reply returns after the accept entry; an interpretation cut off resumes at setup."""
    fake_ollama.fail_embed = 100  # the interpretation cannot run before the restart
    result = await converse(hass, "The boiler was serviced in March.")
    assert spoken(result) == "Hello from the fake model."
    entries = journal_file(hass, setup_alto).read_bytes().splitlines()
    [accepted] = [json.loads(line) for line in entries]  # already on disk when the reply came
    assert accepted["op"] == "accept"
    assert accepted["request"]["inputs"][0]["text"] == "The boiler was serviced in March."
    await hass.async_block_till_done(wait_background_tasks=True)
    assert ops(hass, setup_alto) == ["accept"]  # not yet interpreted
    assert state(hass, COUNT) == "0"
    fake_ollama.fail_embed = 0

    await reload(hass, setup_alto)  # the next start interprets what the journal holds
    await hass.async_block_till_done(wait_background_tasks=True)
    assert ops(hass, setup_alto) == ["accept", "intake"]
    assert quotes(await recall(hass, "boiler")) == ["The boiler was serviced in March."]
    assert len(memory(hass).journal.pending) == 0
    assert (await alto_service(hass, "replay", {}))["ok"] is True


@pytest.mark.usefixtures("qualified")
async def test_a_refused_turn_memory_is_one_log_line_without_its_text(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A final refusal is journaled, fires its event and logs one warning naming no text."""
    fake_ollama.when(is_call_1, json.dumps([[MARIA, "statement"]]))
    fake_ollama.when(is_call_2, "[[3, ")  # malformed
    refused = async_capture_events(hass, EVENT_REFUSED)
    caplog.set_level(logging.INFO)
    await converse_and_wait_for_background(hass, MARIA, context=Context(user_id=hass_admin_user.id))
    assert [e.data["reason"] for e in refused] == ["malformed_json"]
    lines = [r for r in caplog.records if "Memory of a turn refused" in r.getMessage()]
    assert [r.levelname for r in lines] == ["WARNING"]
    assert "private scope" in lines[0].getMessage()
    assert all("Maria" not in r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    assert ops(hass, setup_alto) == ["accept", "refuse"]


# -- 2. the organ closes when Home Assistant stops -------------------------------------------------
async def test_home_assistant_stop_closes_the_memory_with_a_current_checkpoint(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """The stop event writes the checkpoint of the last entry, whether or not unload runs."""
    checkpoint = journal_file(hass, setup_alto).with_name("memory.checkpoint")
    await remember(hass, KEY)
    await remember(hass, "The plumber comes on Friday.")
    assert not checkpoint.exists()  # written every 1,024 entries while running

    hass.bus.async_fire(EVENT_HOMEASSISTANT_STOP)
    await hass.async_block_till_done()
    with checkpoint.open("rb") as file:
        assert file.read(len(MAGIC)) == MAGIC
        assert json.loads(file.readline())["applied"] == 2
    with pytest.raises(HomeAssistantError) as raised:  # closed: nothing more is written
        await remember(hass, "Too late.")
    assert raised.value.translation_key == "store_error"


# -- 3. a damaged journal -------------------------------------------------------------------------
async def test_a_damaged_tail_refuses_writes_keeps_recall_and_raises_a_repair_issue(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """One changed hex digit of the last hash: nothing extends the chain until it is recovered."""
    await remember(hass, KEY)
    await remember(hass, "The plumber comes on Friday.")
    path = journal_file(hass, setup_alto)
    assert await hass.config_entries.async_unload(setup_alto.entry_id)
    first, last = path.read_bytes().splitlines()
    own = json.loads(last)["hash"]
    flipped = own[:-1] + ("0" if own[-1] != "0" else "1")
    path.write_bytes(first + b"\n" + last.replace(own.encode(), flipped.encode()) + b"\n")
    damaged = path.read_bytes()

    assert await hass.config_entries.async_setup(setup_alto.entry_id)
    await hass.async_block_till_done()
    issue = ir.async_get(hass).async_get_issue(DOMAIN, f"journal_damaged_{setup_alto.entry_id}")
    assert issue is not None
    assert issue.translation_placeholders == {
        "entry": "2",
        "reason": "entry_hash",
        "path": str(path),
    }
    assert sorted(quotes(await recall(hass, "key plumber"))) == [
        "The plumber comes on Friday.",
        KEY,
    ]
    with pytest.raises(HomeAssistantError) as raised:
        await remember(hass, "The recycling goes out on Fridays.")
    assert raised.value.translation_key == "journal_damaged"
    with pytest.raises(HomeAssistantError):
        await alto_service(hass, "forget", {"id": (await recall(hass, "key"))[0]["id"]})
    result = await converse_and_wait_for_background(hass, "The boiler was serviced in March.")
    assert spoken(result) == "Hello from the fake model."  # Alto still answers
    assert path.read_bytes() == damaged
    report = await alto_service(hass, "replay", {})
    assert (report["first_mismatch"], report["reason"]) == (1, "entry_hash")

    # The documented recovery: the sound lines only, the store rebuilt from them.
    assert await hass.config_entries.async_unload(setup_alto.entry_id)
    path.write_bytes(first + b"\n")
    shutil.rmtree(path.with_name("chroma"))
    path.with_name("memory.checkpoint").unlink(missing_ok=True)
    assert await hass.config_entries.async_setup(setup_alto.entry_id)
    await hass.async_block_till_done()
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue.issue_id) is None
    assert quotes(await recall(hass, "key plumber")) == [KEY]
    await remember(hass, "The recycling goes out on Fridays.")
    assert (await alto_service(hass, "replay", {}))["ok"] is True


# -- 4. one memory per text, owner and scope; idempotency keys ------------------------------------
async def test_the_same_text_remembered_twice_is_one_memory_with_the_later_source(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A retry without a key finds the memory by its text; the later call's source is kept."""
    first = await remember(hass, KEY)
    again = await remember(hass, KEY)
    assert again == first
    [found] = await recall(hass, "key")
    assert found["id"] == first
    assert state(hass, COUNT) == "1"
    assert ops(hass, setup_alto) == ["remember", "remember"]  # the later source, journaled
    assert found["source_id"] == memory(hass).store.get([first])[0].source_id
    assert (
        json.loads(journal_file(hass, setup_alto).read_bytes().splitlines()[1])["request"][
            "inputs"
        ][0]["source_id"]
        == found["source_id"]
    )


async def test_an_idempotency_key_makes_a_retry_store_nothing(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """The same key returns the stored id and writes nothing; other text under it is refused."""
    call = {"text": KEY, "idempotency_key": "bins-2026-11-30"}
    kept = await alto_service(hass, "remember", call)
    journal = journal_bytes(hass, setup_alto)
    assert await alto_service(hass, "remember", call) == kept
    assert journal_bytes(hass, setup_alto) == journal
    with pytest.raises(ServiceValidationError) as raised:
        await alto_service(hass, "remember", {**call, "text": "The key is gone."})
    assert raised.value.translation_placeholders == {"reason": "duplicate_source"}
    with pytest.raises(probatio.Invalid):  # an empty key names nothing
        await alto_service(hass, "remember", {**call, "idempotency_key": ""})
    assert state(hass, COUNT) == "1"


# -- 5. refusals say what was wrong ---------------------------------------------------------------
async def test_forgetting_an_unknown_id_is_not_found(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """An id that was never stored is "not found", not "did not remember"."""
    with pytest.raises(ServiceValidationError) as raised:
        await alto_service(hass, "forget", {"id": 12345})
    assert raised.value.translation_key == "not_found"


# -- 6. writes that arrive together are written together -------------------------------------------
async def test_concurrent_remembers_and_turns_are_coalesced(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """20 remembers at once, one of them refused alone; 20 turns at once; few entries.

    The first turn's write waits until another turn's accept has queued behind it: how fast a
    write is on this machine does not decide whether two turns arrive together.
    """
    accepts = memory(hass)._writer._accepts
    submit, accept = accepts.submit, intake.accept
    second = asyncio.Event()
    submitted = 0
    held = False

    async def counted(item: Any) -> Any:
        nonlocal submitted
        submitted += 1
        if submitted == 2:
            second.set()  # the item is queued before the waiting write runs again
        return await submit(item)

    async def first_waits(*args: Any, **kwargs: Any) -> Any:
        nonlocal held
        if not held:
            held = True
            async with asyncio.timeout(10):
                await second.wait()
        return await accept(*args, **kwargs)

    monkeypatch.setattr(accepts, "submit", counted)
    monkeypatch.setattr(intake, "accept", first_waits)
    texts = [f"Fact number {n} is worth keeping." for n in range(20)]
    texts[7] = "bad\x00byte"
    calls = [alto_service(hass, "remember", {"text": text}) for text in texts]
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert isinstance(results[7], ServiceValidationError)
    assert len({r["ids"][0] for r in results if isinstance(r, dict)}) == 19
    remembers = ops(hass, setup_alto).count("remember")
    assert remembers < 19

    said = [f"Conversation {n} says the blue pot is in room {n}." for n in range(20)]
    replies = await asyncio.gather(*(converse(hass, text) for text in said))
    assert all(spoken(reply) for reply in replies)
    assert ops(hass, setup_alto).count("accept") < 20
    await hass.async_block_till_done(wait_background_tasks=True)
    kept = quotes(await recall(hass, "blue pot room conversation says"))
    assert set(said) <= set(kept)
    assert state(hass, COUNT) == "39"
    assert (await alto_service(hass, "replay", {}))["ok"] is True


# -- 7. the GPU fallback is said once, at INFO -----------------------------------------------------
@pytest.mark.skipif(
    importlib.util.find_spec("pycuda") is not None, reason="PyCUDA is installed here"
)
async def test_the_cpu_fallback_is_logged_once_at_info(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    alto_entry: MockConfigEntry,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two setups without a GPU: one INFO line, no warning."""
    monkeypatch.setattr(memory_organ, "_cpu_fallback_told", False, raising=False)
    caplog.set_level(logging.DEBUG, "custom_components.alto.gpu.backend")
    assert await async_setup_component(hass, "conversation", {})
    alto_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(alto_entry.entry_id)
    await hass.async_block_till_done()
    await reload(hass, alto_entry)
    told = [r for r in caplog.records if "GPU selection unavailable" in r.getMessage()]
    assert [r.levelname for r in told] == ["INFO", "DEBUG"]
