"""Diagnostics redact the URL's credentials."""

from __future__ import annotations

from typing import Any

import pytest
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator
from syrupy.assertion import SnapshotAssertion

from custom_components.alto.const import (
    CONF_CHROMA_TOKEN,
    CONF_EMBEDDING_MODEL,
    CONF_MODEL,
    CONF_URL,
)
from custom_components.alto.diagnostics import redact_url

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama, digest_of


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://user:secret@ollama.lan:11434/", "http://**REDACTED**@ollama.lan:11434/"),
        ("https://token@10.0.0.2/api?key=abc", "https://**REDACTED**@10.0.0.2/api?**REDACTED**"),
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("http://[::1]:11434", "http://[::1]:11434"),
        ("http://host:notaport", "**REDACTED**"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    """Credentials and query strings in a URL are redacted; an unparsable URL is redacted whole."""
    assert redact_url(url) == expected


@pytest.fixture
def entry_data(fake_ollama: FakeOllama) -> dict[str, Any]:
    """The fake server's URL with credentials in it, and an API key."""
    return {
        CONF_URL: f"http://me:pw@127.0.0.1:{fake_ollama.port}",
        CONF_API_KEY: "tok-123",
        CONF_MODEL: CHAT_MODEL,
        CONF_EMBEDDING_MODEL: EMBED_MODEL,
    }


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """A persona prompt and a Chroma token that diagnostics must not show."""
    return {"prompt": "my family's secrets", CONF_CHROMA_TOKEN: "chroma-secret"}


async def test_diagnostics(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """Redacted settings, served models and the memory organ's figures."""
    assert await async_setup_component(hass, "diagnostics", {})
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, setup_alto)
    assert diagnostics["data"]["url"] == f"http://**REDACTED**@127.0.0.1:{fake_ollama.port}"
    # The whole document, less the fake server's port (a new one every run).
    assert {**diagnostics, "data": {**diagnostics["data"], "url": "…"}} == snapshot
    assert diagnostics["data"][CONF_API_KEY] == "**REDACTED**"
    assert "pw" not in str(diagnostics)
    assert "secrets" not in str(diagnostics)
    assert "tok-123" not in str(diagnostics)
    assert "chroma-secret" not in str(diagnostics)
    assert diagnostics["served_models"][CHAT_MODEL] == digest_of(CHAT_MODEL)
    assert diagnostics["model_available"] is True
    # No PyCUDA here: gpu "auto" fell back to the CPU path (onnxruntime's integer GEMM).
    assert diagnostics["memory"]["selection_backend"] == "onnxruntime"
    assert diagnostics["memory"]["effective_mode"] == "source"
