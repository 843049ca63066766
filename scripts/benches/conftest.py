"""Pytest setup for the Home Assistant benches in this folder (bench_*.py), and the two model
servers they talk to: the fake (`fake`) and the real small models (`local_ollama`).

The repository root goes on `sys.path` so a bench can import `custom_components` and `tests`
however pytest is started, and importing `custom_components.alto` here makes the project's package
the one HA's loader finds (the harness puts its own test config dir's `custom_components` first).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import custom_components.alto  # noqa: E402, F401
from tests.fake_ollama import FakeOllama  # noqa: E402
from tests.local_model import LocalOllama  # noqa: E402


@pytest.fixture
async def fake(socket_enabled: None) -> AsyncGenerator[FakeOllama]:
    """The fake model server."""
    server = FakeOllama()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def local_ollama(socket_enabled: None) -> AsyncGenerator[LocalOllama]:
    """The real small models on 127.0.0.1 (tests/local_model.py), the chat model loaded."""
    server = LocalOllama()
    await server.start()
    await server.preload()
    yield server
    await server.stop()
