"""Shared fixtures.

HA's test harness puts its own test config dir's `custom_components` package first; importing
the project's package here makes it the one HA's loader finds.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pytest_homeassistant_custom_component.syrupy import HomeAssistantSnapshotExtension
from syrupy.assertion import SnapshotAssertion

import custom_components.alto  # noqa: F401
from custom_components.alto.memory.journal import Journal
from custom_components.alto.memory.store import MemoryStore

from .fake_ollama import FakeOllama

if TYPE_CHECKING:
    from .local_model import LocalOllama


def pytest_report_header() -> str:
    """Which Home Assistant and Python the suite runs on, first thing in the output."""
    import platform

    from homeassistant.const import __version__ as ha_version

    return f"Home Assistant {ha_version} on Python {platform.python_version()}"


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """Snapshots through Home Assistant's extension: registry ids, times and flow ids masked.

    The harness defines this fixture too, but syrupy's own plugin shadows it here.
    """
    return snapshot.use_extension(HomeAssistantSnapshotExtension)


@pytest.fixture
async def fake_ollama(socket_enabled: None) -> AsyncGenerator[FakeOllama]:
    """A running fake Ollama server on 127.0.0.1."""
    server = FakeOllama()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def local_ollama(socket_enabled: None) -> AsyncGenerator[LocalOllama]:
    """The real small models behind Ollama's API on 127.0.0.1 (`tests/local_model.py`).

    A model loads on first use; `preload` loads the chat model now.
    """
    from .local_model import LocalOllama  # llama.cpp is loaded only where it is used

    server = LocalOllama()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    """An embedded Chroma store in a temporary directory, closed afterwards."""
    opened = MemoryStore.open_persistent(tmp_path / "chroma")
    yield opened
    opened.close()


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    """A fresh journal file."""
    return Journal(tmp_path / "journal.jsonl")
