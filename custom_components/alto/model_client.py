"""The one place Alto builds an Ollama client and classifies its failures.

Facts this module encodes (ollama 0.6.x): the client's default `timeout=None` never times out,
so a timeout is always passed; a refused connection raises the builtin `ConnectionError` without
streaming but a raw `httpx.ConnectError` with `stream=True`; any non-2xx is
`ollama.ResponseError` (401/403: the server, or a proxy in front of it, refused the API key), and
an `{"error": ...}` line mid-stream is a `ResponseError` with `status_code=-1`. Asked to think
(`think: true`), a model that cannot answers 400 "… does not support thinking"; `think: false` is
accepted by every model (one that always thinks, gpt-oss, streams its thinking anyway).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit, urlunsplit

import httpx
import ollama
from homeassistant.util.ssl import get_default_context

from .model.prompt_cache import KeeperTransport, PromptCacheKeeper


class ModelFailure(StrEnum):
    """Failure classes; each value is a translation key under `exceptions`."""

    UNREACHABLE = "model_unreachable"
    SERVER_ERROR = "model_server_error"
    STREAM_CUT = "model_stream_cut"
    TIMEOUT = "model_timeout"
    UNAUTHORIZED = "model_unauthorized"
    CANNOT_THINK = "model_cannot_think"


AUTH_STATUSES = frozenset({401, 403})
# Tokens a conversational reply may take: enough for a long spoken answer with its actions and
# thought, and a bound on a weak model that never closes its answer (Ollama's default is none).
REPLY_TOKENS = 768
# Tokens added for a model asked to think: Ollama counts its thinking against `num_predict`, and
# a thinking model that runs out before its answer says nothing.
THINKING_TOKENS = 2048
_CANNOT_THINK = "does not support thinking"


@dataclass(frozen=True, slots=True)
class ServedModel:
    """A model as `/api/tags` lists it (the digest is only there, not in `/api/show`)."""

    name: str
    digest: str


LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """One spelling per server, so the same Ollama cannot be added twice.

    Scheme and host lowercased, a loopback name spelled 127.0.0.1, a default port and a trailing
    slash dropped; user info, path and query are kept as given. A URL that does not parse is
    returned stripped, for the URL check to refuse.
    """
    url = url.strip()
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return url
    if not parts.scheme or not host:
        return url
    scheme = parts.scheme.lower()
    host = "127.0.0.1" if host in LOOPBACK_NAMES else host
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        netloc = f"{netloc}:{port}"
    if parts.username is not None:
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def make_client(
    url: str,
    timeout: float,
    api_key: str | None = None,
    keeper: PromptCacheKeeper | None = None,
) -> ollama.AsyncClient:
    """Create an async client that always times out and sends the API key as a bearer token.

    The SSL context is Home Assistant's shared one, created once at HA's start: letting httpx
    build its own would read the CA bundle from disk, a blocking call on the event loop. With a
    `keeper`, every chat request passes by it (`model.prompt_cache`).
    """
    token = (api_key or "").strip()
    inner = httpx.AsyncHTTPTransport(verify=get_default_context())
    return ollama.AsyncClient(
        host=url,
        timeout=timeout,
        headers={"Authorization": f"Bearer {token}"} if token else None,
        transport=KeeperTransport(inner, keeper) if keeper is not None else inner,
    )


async def close_client(client: ollama.AsyncClient) -> None:
    """Close the client's HTTP pool."""
    await client.close()  # type: ignore[no-untyped-call]  # ollama 0.6 leaves close() unannotated


async def list_models(client: ollama.AsyncClient) -> list[ServedModel]:
    """Return the served models with their digests, sorted by name."""
    response = await client.list()
    models = [
        ServedModel(name=str(m.model), digest=str(m.digest or ""))
        for m in response.models
        if m.model
    ]
    return sorted(models, key=lambda m: m.name)


async def model_capabilities(client: ollama.AsyncClient, name: str) -> frozenset[str]:
    """What `/api/show` says a model can do ("completion", "embedding", ...).

    Empty when the server does not say (an older Ollama) or the call fails: unknown, not
    incapable.
    """
    try:
        shown = await client.show(name)
    except (ollama.ResponseError, httpx.HTTPError, ConnectionError):
        return frozenset()
    return frozenset(shown.capabilities or ())


def described(err: BaseException) -> str:
    """An exception for a log line: its type, and its message when it has one.

    `str(TimeoutError())` is empty, which made "failed: " lines that said nothing.
    """
    message = str(err).strip()
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def classify_failure(err: BaseException) -> ModelFailure | None:
    """Map an exception raised by a model call to a failure class, or None if unexpected."""
    if isinstance(err, TimeoutError | httpx.TimeoutException):
        return ModelFailure.TIMEOUT
    if isinstance(err, ollama.ResponseError):
        if err.status_code in AUTH_STATUSES:
            return ModelFailure.UNAUTHORIZED
        if err.status_code == 400 and _CANNOT_THINK in str(err.error):
            return ModelFailure.CANNOT_THINK
        # status -1 is an error line in the middle of a stream.
        return ModelFailure.STREAM_CUT if err.status_code == -1 else ModelFailure.SERVER_ERROR
    if isinstance(err, httpx.ConnectError | ConnectionError):
        return ModelFailure.UNREACHABLE
    if isinstance(err, httpx.RemoteProtocolError | httpx.ReadError | ollama.RequestError):
        return ModelFailure.STREAM_CUT
    if isinstance(err, httpx.TransportError):
        return ModelFailure.UNREACHABLE
    return None
