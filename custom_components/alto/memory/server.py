"""A Chroma server as the memory store's durable copy.

Where it is, how Alto proves who it is, how the connection is checked, and which collections belong
to which entry (blocking; executor).

Chroma 1.x's own server (`chroma run`) has no authentication and no TLS of its own: a home that
serves it beyond one machine puts it behind a reverse proxy that terminates TLS and checks a
token. Alto sends the token on every request as ``Authorization: Bearer <token>`` and as
``X-Chroma-Token`` (what Chroma's token authentication and Chroma Cloud read), so either kind of
gate accepts it.

TLS always verifies the server's certificate and host name: against the certifi CA bundle (what
Home Assistant's own client SSL context trusts) or, for a private CA or a self-signed server,
against one PEM file named in the options. Verification is never turned off: a certificate that
fails it is a ``tls_failed`` error, not a warning.

Collections: several entries may share one server, so a server store's collections carry the
entry's namespace (``alto_memory_<entry id>``); the embedded store, one per entry's folder,
keeps the fixed names.
"""

from __future__ import annotations

import hashlib
import re
import ssl
from dataclasses import dataclass
from typing import Any

import chromadb
import httpx
from chromadb.config import Settings

COLLECTION = "alto_memory"
STATE_COLLECTION = "alto_memory_state"
PROBE_TIMEOUT = 10.0  # seconds for the connection check
# Chroma's collection names: 3-512 characters of [a-zA-Z0-9._-], alphanumeric at both ends.
_PLAIN_ID = re.compile(r"[A-Za-z0-9]{1,64}")


class ServerError(Exception):
    """The Chroma server cannot be used.

    ``reason`` is the translation key of why: ``cannot_connect``, ``invalid_auth`` or
    ``tls_failed``.
    """

    def __init__(self, reason: str, detail: str) -> None:
        """Why (``reason``) and what the client said (``detail``)."""
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ChromaServer:
    """Where the server is and how to reach it (from the entry's options)."""

    host: str
    port: int
    token: str | None = None
    tls: bool = False
    ca_file: str | None = None  # PEM to trust instead of the CA bundle (private CA, self-signed)

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def headers(self) -> dict[str, str]:
        """The token's headers (none without a token)."""
        if not self.token:
            return {}
        return {"Authorization": f"Bearer {self.token}", "X-Chroma-Token": self.token}

    def ssl_context(self) -> ssl.SSLContext | bool:
        """What verifies the server's certificate: the CA bundle, or the configured PEM file."""
        if not self.tls:
            return True
        if self.ca_file:
            try:
                return ssl.create_default_context(cafile=self.ca_file)
            except (OSError, ssl.SSLError) as err:
                raise ServerError("tls_failed", f"CA file {self.ca_file}: {err}") from err
        return True  # httpx's default context: the certifi bundle, as Home Assistant's


def collection_names(namespace: str | None) -> tuple[str, str]:
    """The rows' and the state record's collections.

    Fixed for the embedded store (None), the entry's own on a server.
    """
    if namespace is None:
        return COLLECTION, STATE_COLLECTION
    return f"{COLLECTION}_{namespace}", f"{STATE_COLLECTION}_{namespace}"


def namespace(entry_id: str) -> str:
    """A collection-name suffix unique to a config entry and stable across starts.

    The entry id itself when it is plain (Home Assistant's are ULIDs), else a digest of it.
    """
    if _PLAIN_ID.fullmatch(entry_id):
        return entry_id
    return hashlib.sha256(entry_id.encode("utf-8")).hexdigest()[:32]


def probe(server: ChromaServer) -> None:
    """Check that the server answers, over a verified connection, to this token.

    Raise `ServerError` naming what failed. ``/api/v2/auth/identity`` is the call Chroma's
    client makes first, and one a token gate guards.
    """
    verify = server.ssl_context()
    try:
        with httpx.Client(verify=verify, timeout=PROBE_TIMEOUT) as client:
            response = client.get(f"{server.url}/api/v2/auth/identity", headers=server.headers())
    except httpx.ConnectError as err:
        if isinstance(err.__context__, ssl.SSLError) or "CERTIFICATE" in str(err).upper():
            raise ServerError("tls_failed", str(err)) from err
        raise ServerError("cannot_connect", str(err)) from err
    except ssl.SSLError as err:
        raise ServerError("tls_failed", str(err)) from err
    except httpx.HTTPError as err:
        raise ServerError("cannot_connect", str(err)) from err
    if response.status_code in (401, 403):
        raise ServerError("invalid_auth", f"HTTP {response.status_code}")
    if response.status_code != 200:
        raise ServerError("cannot_connect", f"HTTP {response.status_code}")


def client(server: ChromaServer) -> Any:
    """A Chroma client of the server, after `probe` (so its failures are named)."""
    probe(server)
    # A fresh Settings object per client: chromadb.HttpClient writes its API and host into the
    # Settings it is given, and a shared object would turn every later embedded client into HTTP.
    settings = Settings(anonymized_telemetry=False)
    if server.tls and server.ca_file:
        # The context itself (the field is typed bool | str, but assignment is not validated
        # and httpx takes a context; a path would build one with a deprecation warning).
        settings.chroma_server_ssl_verify = server.ssl_context()  # type: ignore[assignment]
    return chromadb.HttpClient(
        host=server.host,
        port=server.port,
        ssl=server.tls,
        headers=server.headers(),
        settings=settings,
    )
