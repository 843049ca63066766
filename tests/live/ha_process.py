"""A real Home Assistant process with Alto, driven the way the UI drives it: over REST.

`HomeAssistantProcess` writes a config dir, links the project's `custom_components/alto` into it,
starts `python -m homeassistant` on a free 127.0.0.1 port and the fake Ollama beside it, and
offers the REST calls a user's browser makes: onboarding, the config flow, conversation; and the
websocket commands the UI's user settings send (adding a user).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Self

import aiohttp

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL

ROOT = Path(__file__).parents[2]
CONFIG = """
api:
config:
onboarding:
conversation:
logger:
  default: warning
  logs:
    custom_components.alto: info
"""


def _http_store(port: int) -> str:
    """Home Assistant's stored HTTP settings (`.storage/http`): listen on 127.0.0.1:`port` only.

    Stored, not in configuration.yaml: Home Assistant takes an `http:` block there as a change to
    confirm in the UI, and reverts it with a restart five minutes later without a confirmation.
    This is version 1 of the store, which Home Assistant migrates and completes with its defaults.
    """
    data = {"server_host": ["127.0.0.1"], "server_port": port}
    return json.dumps({"version": 1, "key": "http", "data": data})


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before listening")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.25)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout} s")


class HomeAssistantProcess:
    """Home Assistant and the fake Ollama as child processes, with a REST client for HA."""

    def __init__(
        self,
        config_dir: Path,
        components: tuple[str, ...] = (),
        ollama_module: str = "tests.fake_ollama",
    ) -> None:
        """Prepare `config_dir`; `start()` launches the processes.

        `components` are set up besides the minimal ones (e.g. `frontend` for a browser);
        `ollama_module` is the fake Ollama to run (`python -m MODULE PORT`), e.g. a scripted one.
        """
        self._ollama_module = ollama_module
        self.config_dir = config_dir
        self.port = free_port()
        self.ollama_port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.token = ""
        self._ha: subprocess.Popen[bytes] | None = None
        self._ollama: subprocess.Popen[bytes] | None = None
        config_dir.mkdir(parents=True, exist_ok=True)
        extra = "".join(f"{component}:\n" for component in components)
        (config_dir / "configuration.yaml").write_text(CONFIG + extra)
        (config_dir / ".storage").mkdir(exist_ok=True)
        (config_dir / ".storage" / "http").write_text(_http_store(self.port))
        (config_dir / "custom_components").mkdir(exist_ok=True)
        link = config_dir / "custom_components" / "alto"
        if not link.exists():
            link.symlink_to(ROOT / "custom_components" / "alto")

    @property
    def ollama_url(self) -> str:
        """Where the fake Ollama listens."""
        return f"http://127.0.0.1:{self.ollama_port}"

    @property
    def log(self) -> str:
        """Home Assistant's log so far."""
        path = self.config_dir / "home-assistant.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self, timeout: float = 240) -> Self:
        """Start the fake Ollama (once) and Home Assistant; return when HA answers REST."""
        if self._ollama is None:
            self._ollama = subprocess.Popen(
                [sys.executable, "-m", self._ollama_module, str(self.ollama_port)],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
            )
            _wait_for_port(self.ollama_port, self._ollama, 30)
        self._ha = subprocess.Popen(
            [sys.executable, "-m", "homeassistant", "--config", str(self.config_dir), "--skip-pip"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        _wait_for_port(self.port, self._ha, timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # the HTTP server answers before HA has started
            try:
                self.call("GET", "/api/onboarding", auth=False)
                return self
            except urllib.error.HTTPError:
                return self  # an answer all the same (a restart after onboarding: not found)
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        raise TimeoutError("Home Assistant did not answer REST")

    def wait_until_running(self, timeout: float = 120) -> None:
        """Wait until Home Assistant has finished starting (REST answers before that)."""
        deadline = time.monotonic() + timeout
        while self.call("GET", "/api/config")["state"] != "RUNNING":
            if time.monotonic() > deadline:
                raise TimeoutError("Home Assistant did not finish starting")
            time.sleep(0.5)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120) -> int:
        """Stop Home Assistant with `sig` (SIGTERM: a normal stop; SIGKILL: a crash)."""
        assert self._ha is not None
        self._ha.send_signal(sig)
        code = self._ha.wait(timeout)
        self._ha = None
        return code

    def close(self) -> None:
        """Stop everything still running."""
        for process in (self._ha, self._ollama):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(30)

    def call(
        self, method: str, path: str, body: Any = None, *, auth: bool = True, form: bool = False
    ) -> Any:
        """One REST call; the JSON answer."""
        headers = {}
        data = None
        if body is not None:
            if form:
                data = urllib.parse.urlencode(body).encode()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            else:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
        if auth:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base + path, data, headers, method=method)
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read() or b"null")

    def onboard(self) -> None:
        """Create the owner account and finish onboarding, as the first browser visit does."""
        client_id = self.base + "/"
        user = {
            "client_id": client_id,
            "name": "Ana",
            "username": "ana",
            "password": "correct-horse-battery",
            "language": "en",
        }
        code = self.call("POST", "/api/onboarding/users", user, auth=False)["auth_code"]
        token = {"grant_type": "authorization_code", "code": code, "client_id": client_id}
        self.token = self.call("POST", "/auth/token", token, auth=False, form=True)["access_token"]
        self.call("POST", "/api/onboarding/core_config", {})
        self.call("POST", "/api/onboarding/analytics", {})
        redirect = {"client_id": client_id, "redirect_uri": client_id + "?auth_callback=1"}
        self.call("POST", "/api/onboarding/integration", redirect)

    def flow(self, flow_id: str, user_input: dict[str, Any]) -> dict[str, Any]:
        """Submit one config-flow step."""
        result: dict[str, Any] = self.call(
            "POST", f"/api/config/config_entries/flow/{flow_id}", user_input
        )
        return result

    def converse(self, text: str, **extra: Any) -> dict[str, Any]:
        """Ask `conversation.alto`; the conversation API's answer."""
        body = {"text": text, "agent_id": "conversation.alto", "language": "en", **extra}
        answer: dict[str, Any] = self.call("POST", "/api/conversation/process", body)
        return answer

    def add_alto(self) -> None:
        """Add Alto through the config flow with the fake Ollama's two models."""
        flow = self.call("POST", "/api/config/config_entries/flow", {"handler": "alto"})
        flow = self.flow(flow["flow_id"], {"url": self.ollama_url})
        flow = self.flow(flow["flow_id"], {"model": CHAT_MODEL, "embedding_model": EMBED_MODEL})
        if flow["type"] != "create_entry":
            raise RuntimeError(f"the config flow did not create an entry: {flow}")

    def websocket(self, *messages: dict[str, Any]) -> list[Any]:
        """Send websocket commands as the owner, as the UI does; their results, in order."""
        return asyncio.run(self._websocket(messages))

    async def _websocket(self, messages: tuple[dict[str, Any], ...]) -> list[Any]:
        url = self.base.replace("http", "ws", 1) + "/api/websocket"
        async with aiohttp.ClientSession() as session, session.ws_connect(url) as socket_:
            await socket_.receive_json()  # auth_required
            await socket_.send_json({"type": "auth", "access_token": self.token})
            if (answer := await socket_.receive_json())["type"] != "auth_ok":
                raise RuntimeError(f"websocket authentication failed: {answer}")
            results = []
            for number, message in enumerate(messages, start=1):
                await socket_.send_json({**message, "id": number})
                answer = await socket_.receive_json()
                if not answer["success"]:
                    raise RuntimeError(f"{message['type']} failed: {answer['error']}")
                results.append(answer["result"])
            return results

    def add_user(self, name: str, username: str, password: str, *, admin: bool = False) -> str:
        """A new person with a login, as Settings → People → Add person does; their user id."""
        group = "system-admin" if admin else "system-users"
        (created,) = self.websocket(
            {"type": "config/auth/create", "name": name, "group_ids": [group]}
        )
        user_id = str(created["user"]["id"])
        login = {"user_id": user_id, "username": username, "password": password}
        self.websocket({"type": "config/auth_provider/homeassistant/create", **login})
        return user_id
