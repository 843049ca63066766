"""Forgetting erases what HA's recorder kept: no byte of a forgotten memory in its database.

Real HA with the recorder on a SQLite file under the config dir (`home-assistant_v2.db`, as
Home Assistant keeps it), the fake Ollama and the embedded Chroma store. A household memory
surfaces as a thought: `sensor.alto_last_thought` shows it and `alto_thought` fires, and the
recorder writes both. After `alto.forget` of the memory, once the recorder has run what the
forget asked of it, no file under the config dir (the database, its `-wal` and `-shm` included)
holds the memory's words: with SQLite as Debian and Alpine build it (deleted content zeroed,
`secure_delete`) and as SQLite's own default leaves it (deleted rows stay in the file until a
VACUUM).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from homeassistant.components.recorder import Recorder
from homeassistant.components.recorder.util import setup_connection_for_dialect
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_purge_done,
    async_wait_recording_done,
)
from pytest_homeassistant_custom_component.typing import RecorderInstanceContextManager

from custom_components.alto.const import CONF_SURFACER_WAIT
from custom_components.alto.recorded import sqlite_zeroes_deleted
from custom_components.alto.thoughts import EVENT_THOUGHT

from ..fake_ollama import FakeOllama, is_render
from .helpers import MARIA, alto_service, converse_and_wait_for_background, is_call_1, is_call_2

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
        patch("custom_components.alto.recorded.sqlite_zeroes_deleted", return_value=False),
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


def _holding(root: Path, needles: tuple[str, ...]) -> dict[str, list[str]]:
    """Every file under `root` (all bytes, recursively) that holds one of `needles`."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if held := [n for n in needles if n.encode() in data]:
                found[str(path.relative_to(root))] = held
    return found


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


@pytest.mark.usefixtures("qualified")
async def test_forgetting_erases_the_recorded_thought(
    recorder_mock: Recorder,
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
) -> None:
    """A forgotten memory's thought leaves the recorder's files: state, attribute and event."""
    root = Path(hass.config.config_dir)
    _script(fake_ollama)
    await converse_and_wait_for_background(hass, MARIA)  # a household memory, in mode 2
    thoughts = async_capture_events(hass, EVENT_THOUGHT)
    await converse_and_wait_for_background(hass, "Is Maria home today?")
    assert hass.states.get(LAST_THOUGHT).state == THOUGHT
    # The event says what happened, not the words: they are the sensor's.
    (event,) = thoughts
    assert event.data["verdict"] == "surfaced"
    assert "thought" not in event.data
    assert THOUGHT not in json.dumps(event.data)
    await async_wait_recording_done(hass)
    recorded = await hass.async_add_executor_job(_holding, root, NEEDLES)
    assert any(name.startswith(DATABASE) for name in recorded), recorded  # the state is recorded

    found = await alto_service(hass, "recall", {"query": "Maria dog morning", "limit": 50})
    source = next(m for m in found["memories"] if m["quote"] == MARIA and m["kind"] == "source")
    await alto_service(hass, "forget", {"id": source["id"]})
    await hass.async_block_till_done(wait_background_tasks=True)
    await async_wait_purge_done(hass)

    assert hass.states.get(LAST_THOUGHT).state == "unknown"
    assert await hass.async_add_executor_job(_holding, root, NEEDLES) == {}
    # The recorder still records the sensor after the purge.
    assert recorder_mock.recording
