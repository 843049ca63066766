"""Shared fixtures.

HA's test harness puts its own test config dir's `custom_components` package first; importing
the project's package here makes it the one HA's loader finds.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest

import custom_components.alto  # noqa: F401

from .fake_ollama import FakeOllama


@pytest.fixture
async def fake_ollama(socket_enabled: None) -> AsyncGenerator[FakeOllama]:
    """A running fake Ollama server on 127.0.0.1."""
    server = FakeOllama()
    await server.start()
    yield server
    await server.stop()
