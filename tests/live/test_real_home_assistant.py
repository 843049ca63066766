"""Alto in a real Home Assistant process, set up the way a new user does it (REST, as the UI)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL
from .ha_process import HomeAssistantProcess


@pytest.fixture
def home_assistant(socket_enabled: None, tmp_path: Path) -> Iterator[HomeAssistantProcess]:
    """A fresh Home Assistant (not yet onboarded) with the fake Ollama beside it."""
    process = HomeAssistantProcess(tmp_path / "config")
    try:
        yield process.start()
    finally:
        process.close()


def test_new_user_adds_alto_and_gets_a_spoken_answer(home_assistant: HomeAssistantProcess) -> None:
    """Onboarding, the config flow over REST, then an answer from conversation.alto."""
    ha = home_assistant
    ha.onboard()
    flow = ha.call("POST", "/api/config/config_entries/flow", {"handler": "alto"})
    assert flow["step_id"] == "user"
    assert [field["name"] for field in flow["data_schema"]] == ["url", "api_key"]
    flow = ha.flow(flow["flow_id"], {"url": ha.ollama_url})
    assert flow["step_id"] == "models"
    offered = {f["name"]: f["selector"]["select"]["options"] for f in flow["data_schema"]}
    assert offered["model"] == [CHAT_MODEL, EMBED_MODEL]
    flow = ha.flow(flow["flow_id"], {"model": CHAT_MODEL, "embedding_model": EMBED_MODEL})
    assert flow["type"] == "create_entry"

    entities = {state["entity_id"] for state in ha.call("GET", "/api/states")}
    assert {"conversation.alto", "binary_sensor.alto_model_available"} <= entities
    answer = ha.converse("Hello, who are you?")
    assert answer["response"]["speech"]["plain"]["speech"] == "Hello from the fake model."

    # HA's loop protection found nothing of Alto's blocking the event loop, and Alto logged no
    # error on the way.
    log = ha.log
    assert "Detected blocking call" not in log, log
    assert "ERROR (MainThread) [custom_components.alto" not in log, log
