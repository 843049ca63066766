"""Pytest setup for the Home Assistant benches in this folder (bench_*.py), and the two model
servers they talk to: the fake (`fake`) and the real small models (`local_ollama`).

The repository root goes on `sys.path` so a bench can import `custom_components` and `tests`
however pytest is started, and importing `custom_components.alto` here makes the project's package
the one HA's loader finds (the harness puts its own test config dir's `custom_components` first).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import custom_components.alto  # noqa: E402, F401
from tests.conftest import fake_ollama, local_ollama  # noqa: E402, F401 - the tests' fixtures
from tests.fake_ollama import FakeOllama  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    """The recall bench's other models (`bench_recall.py`)."""
    parser.addoption(
        "--embedding-model",
        default="",
        help="recall bench: this embedding model, from --embedding-url",
    )
    parser.addoption(
        "--embedding-url",
        default="http://127.0.0.1:11434",
        help="recall bench: the Ollama API that serves --embedding-model and --chat-model",
    )
    parser.addoption(
        "--chat-model",
        default="",
        help="recall bench, marked run: this chat model, from --embedding-url, marks corrections"
        " (it must pass alto.qualify) instead of the set",
    )


@pytest.fixture
def fake(fake_ollama: FakeOllama) -> FakeOllama:  # noqa: F811 - the fixture, by name
    """The fake model server (the tests' `fake_ollama`)."""
    return fake_ollama
