"""Forgetting erases what HA's recorder kept: no byte of a forgotten memory in its database.

Real HA with the recorder on a SQLite file under the config dir (`home-assistant_v2.db`, as
Home Assistant keeps it), the fake Ollama and the embedded Chroma store. A household memory
surfaces as a thought: `sensor.alto_last_thought` shows it and `alto_thought` fires, and the
recorder writes both. After `alto.forget` of the memory, once the recorder has run what the
forget asked of it, no file under the config dir (the database, its `-wal` and `-shm` included)
holds the memory's words: with SQLite as Debian builds it (deleted content zeroed,
`secure_delete`) and as SQLite's own default leaves it (deleted rows stay in the file until a
VACUUM). Forgetting for room (`max_memories`) does the same. A private memory's forget leaves
the sensor's history alone (it never showed a private thought), and forgets while an erasure
runs are erased together by one more.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from homeassistant.components.recorder import Recorder, history
from homeassistant.components.recorder.util import setup_connection_for_dialect
from homeassistant.core import Context, HomeAssistant, State
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_purge_done,
    async_wait_recording_done,
)
from pytest_homeassistant_custom_component.typing import RecorderInstanceContextManager

from custom_components.alto.const import CONF_MAX_MEMORIES, CONF_SURFACER_WAIT
from custom_components.alto.memory.records import KIND_SOURCE
from custom_components.alto.memory_organ.recorded import HistoryEraser, sqlite_zeroes_deleted
from custom_components.alto.surface.surfacer import SurfaceOutcome
from custom_components.alto.surface_organ.organ import EVENT_THOUGHT, signal_thought

from ..fake_ollama import FakeOllama, is_render
from ..on_disk import holding
from .helpers import (
    MARIA,
    alto_service,
    converse_and_wait_for_background,
    is_call_1,
    is_call_2,
    memory,
    remember,
)

LAST_THOUGHT = "sensor.alto_last_thought"
THOUGHT = "I remember Maria walks the dog every morning."
NEEDLES = (MARIA, THOUGHT, "walks the dog", "every morning")
DATABASE = "home-assistant_v2.db"


@pytest.fixture
def recorder_db_url(tmp_path: Path) -> str:
    """The recorder's database is a file in the config dir (`_home_assistant` makes it tmp_path)."""
    return f"sqlite:///{tmp_path / DATABASE}"


@pytest.fixture(params=[True, False], ids=["secure_delete", "sqlite_default"])
def secure_delete(request: pytest.FixtureRequest) -> Iterator[bool]:
    """The recorder's SQLite zeroes deleted content (this build's default) or not (SQLite's)."""
    if request.param:
        assert sqlite_zeroes_deleted()  # Debian's build: the purge needs no VACUUM
        yield True
        return

    def setup(instance: Recorder, dialect: str, connection: Any, first: bool) -> Any:
        engine = setup_connection_for_dialect(instance, dialect, connection, first)
        cursor = connection.cursor()
        cursor.execute("PRAGMA secure_delete=OFF")
        cursor.close()
        return engine

    with (
        patch("homeassistant.components.recorder.core.setup_connection_for_dialect", setup),
        patch(
            "custom_components.alto.memory_organ.recorded.sqlite_zeroes_deleted",
            return_value=False,
        ),
    ):
        yield False


@pytest.fixture
def mock_recorder_before_hass(
    secure_delete: bool, async_test_recorder: RecorderInstanceContextManager
) -> None:
    """The recorder's database is chosen before `hass` exists (HA's own recorder tests' way)."""


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """A generous wait for a thought, so a busy machine never defers the expected one a turn."""
    return {CONF_SURFACER_WAIT: 10}


def _script(fake: FakeOllama) -> None:
    """Call 1 labels MARIA a statement; call 2 asserts it and names Maria and the task."""
    fake.when(
        lambda body: is_call_1(body) and MARIA in json.dumps(body),
        json.dumps([[MARIA, "statement"]]),
    )
    fake.when(
        lambda body: is_call_2(body) and MARIA in json.dumps(body),
        json.dumps([[3, MARIA], [1, "Maria"], [2, "walks the dog"]]),
    )
    fake.when(is_render, THOUGHT)


async def _surface_a_household_thought(hass: HomeAssistant, fake: FakeOllama) -> None:
    """MARIA becomes a household memory (mode 2) and a later turn surfaces THOUGHT from it."""
    _script(fake)
    await converse_and_wait_for_background(hass, MARIA)
    await converse_and_wait_for_background(hass, "Is Maria home today?")
    assert hass.states.get(LAST_THOUGHT).state == THOUGHT
    await async_wait_recording_done(hass)


async def _recorded(hass: HomeAssistant) -> list[State]:
    """The last thought sensor's states in the recorder's history (the last hour)."""
    start = dt_util.utcnow() - timedelta(hours=1)
    changes = await hass.async_add_executor_job(
        partial(history.state_changes_during_period, hass, start, entity_id=LAST_THOUGHT)
    )
    return changes.get(LAST_THOUGHT, [])


@pytest.mark.usefixtures("qualified")
async def test_forgetting_erases_the_recorded_thought(
    recorder_mock: Recorder,
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
) -> None:
    """A forgotten memory's thought leaves the recorder's files: state, attribute and event."""
    root = Path(hass.config.config_dir)
    thoughts = async_capture_events(hass, EVENT_THOUGHT)
    await _surface_a_household_thought(hass, fake_ollama)
    # The event says what happened, not the words: they are the sensor's.
    (event,) = thoughts
    assert event.data["verdict"] == "surfaced"
    assert "thought" not in event.data
    assert THOUGHT not in json.dumps(event.data)
    # The state is recorded; the whole thought (its attribute) is not.
    (*_, last) = await _recorded(hass)
    assert last.state == THOUGHT
    assert "thought" not in last.attributes
    assert last.attributes["source_ids"]
    recorded = await hass.async_add_executor_job(holding, root, NEEDLES)
    assert any(name.startswith(DATABASE) for name in recorded), recorded

    # The turn's source row (recall shows a text once, as the turn's block does).
    source = next(
        row for row in memory(hass).rows(None) if row.document == MARIA and row.kind == KIND_SOURCE
    )
    await alto_service(hass, "forget", {"id": source.id})
    await hass.async_block_till_done(wait_background_tasks=True)
    await async_wait_purge_done(hass)

    assert hass.states.get(LAST_THOUGHT).state == "unknown"
    assert await hass.async_add_executor_job(holding, root, NEEDLES) == {}
    assert not any(state.state == THOUGHT for state in await _recorded(hass))

    # The recorder still records the sensor: its next thought is in the history.
    organ = setup_alto.runtime_data.thoughts
    organ.last_surfaced = organ.last = SurfaceOutcome("surfaced", "I remember the bins.", ["1"])
    async_dispatcher_send(hass, signal_thought(setup_alto.entry_id))
    await async_wait_recording_done(hass)
    assert [state.state for state in await _recorded(hass)][-1] == "I remember the bins."
    assert recorder_mock.recording


@pytest.mark.usefixtures("qualified")
async def test_forgetting_for_room_erases_the_recorded_thought(
    recorder_mock: Recorder,
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
) -> None:
    """A memory forgotten past `max_memories` goes the same way: sensor, history and files."""
    hass.config_entries.async_update_entry(
        setup_alto, options={**setup_alto.options, CONF_MAX_MEMORIES: 4}
    )
    assert await hass.config_entries.async_reload(setup_alto.entry_id)
    await hass.async_block_till_done()
    await _surface_a_household_thought(hass, fake_ollama)  # MARIA's turn: 4 rows
    await remember(hass, "The bins go out on Thursday.")  # the fifth: MARIA's turn goes
    await hass.async_block_till_done(wait_background_tasks=True)
    await async_wait_purge_done(hass)

    assert hass.states.get(LAST_THOUGHT).state == "unknown"
    root = Path(hass.config.config_dir)
    assert await hass.async_add_executor_job(holding, root, NEEDLES) == {}


@pytest.mark.usefixtures("qualified")
async def test_forgetting_a_private_memory_keeps_the_recorded_history(
    recorder_mock: Recorder,
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
) -> None:
    """The sensor never shows a private thought: a private forget leaves its history alone."""
    await _surface_a_household_thought(hass, fake_ollama)
    alice = Context(user_id=(await hass.auth.async_create_user("Alice")).id)
    private = await remember(hass, "My locker code is 5550.", alice)
    purged: list[str] = []

    async def purge(_hass: HomeAssistant, entity_ids: list[str], _forgotten: Any) -> None:
        purged.extend(entity_ids)

    with patch("custom_components.alto.memory_organ.recorded._async_purge", purge):
        await alto_service(hass, "forget", {"id": private}, alice)
        await hass.async_block_till_done(wait_background_tasks=True)
    await async_wait_recording_done(hass)

    assert purged == []
    assert [state.state for state in await _recorded(hass)][-1] == THOUGHT


async def test_erasures_never_overlap(recorder_mock: Recorder, hass: HomeAssistant) -> None:
    """Forgets while an erasure runs are erased together, by one more erasure after it."""
    entity_id = (
        er.async_get(hass).async_get_or_create("sensor", "alto", "entry_last_thought").entity_id
    )
    started, release = asyncio.Event(), asyncio.Event()
    purged: list[str] = []

    async def purge(_hass: HomeAssistant, entity_ids: list[str], _forgotten: Any) -> None:
        purged.extend(entity_ids)
        started.set()
        await release.wait()

    eraser = HistoryEraser(hass, "entry_last_thought")
    with patch("custom_components.alto.memory_organ.recorded._async_purge", purge):
        eraser.async_erase()
        await started.wait()
        eraser.async_erase()
        eraser.async_erase()
        release.set()
        await hass.async_block_till_done(wait_background_tasks=True)
    assert purged == [entity_id, entity_id]
