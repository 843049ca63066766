"""The client factory and failure classes hold for the ollama and httpx releases installed."""

from __future__ import annotations

import ssl

import httpx
import ollama
import pytest
from homeassistant.util.ssl import get_default_context

from custom_components.alto import model_client
from custom_components.alto.model_client import (
    ModelFailure,
    classify_failure,
    make_client,
    normalize_url,
)


def test_classify_sees_the_httpx_that_ollama_raises() -> None:
    """If httpx were aliased (HA 2026.9+ can alias it to httpx2), both must agree on the module."""
    ollama_httpx = vars(__import__("ollama._client", fromlist=["httpx"]))["httpx"]
    assert ollama_httpx is model_client.httpx is httpx
    assert classify_failure(ollama_httpx.ConnectError("refused")) is ModelFailure.UNREACHABLE
    assert classify_failure(ollama_httpx.ReadTimeout("slow")) is ModelFailure.TIMEOUT


@pytest.mark.parametrize(
    ("status", "failure"),
    [
        (401, ModelFailure.UNAUTHORIZED),
        (403, ModelFailure.UNAUTHORIZED),
        (500, ModelFailure.SERVER_ERROR),
        (404, ModelFailure.SERVER_ERROR),
        (-1, ModelFailure.STREAM_CUT),
    ],
)
def test_response_errors_by_status(status: int, failure: ModelFailure) -> None:
    """A refused key is its own failure, so HA can ask for a new one."""
    assert classify_failure(ollama.ResponseError("x", status)) is failure


async def test_client_uses_home_assistants_ssl_context_and_the_key() -> None:
    """No CA bundle is loaded per client, and a key becomes a bearer header (trimmed)."""
    client = make_client("https://ollama.example:11434", 5, "  k3y ")
    try:
        inner = client._client
        assert inner.headers["authorization"] == "Bearer k3y"
        pool = inner._transport._pool
        assert pool._ssl_context is get_default_context()
        assert isinstance(pool._ssl_context, ssl.SSLContext)
    finally:
        await client.close()
    plain = make_client("http://127.0.0.1:11434", 5, "   ")
    try:
        assert "authorization" not in plain._client.headers
    finally:
        await plain.close()


@pytest.mark.parametrize(
    ("given", "normalized"),
    [
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("http://127.0.0.1:11434/", "http://127.0.0.1:11434"),
        (" http://localhost:11434 ", "http://127.0.0.1:11434"),
        ("HTTP://LocalHost:11434/", "http://127.0.0.1:11434"),
        ("https://ollama.example:443/", "https://ollama.example"),
        ("http://me:pw@Ollama.Example:8080/api/", "http://me:pw@ollama.example:8080/api"),
        ("http://[::1]:11434", "http://[::1]:11434"),
        ("not a url", "not a url"),
    ],
)
def test_one_spelling_per_server(given: str, normalized: str) -> None:
    """The same Ollama spelled three ways is one URL, so it cannot be added three times."""
    assert normalize_url(given) == normalized
