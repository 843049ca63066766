"""Every answered turn's memory survives a crash (`kill -9`) or a stop of a real Home Assistant."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .ha_process import HomeAssistantProcess

FACTS = [f"Note {n}: the spare key number {n} hangs on hook {n} in the hall." for n in range(20)]


@pytest.fixture
def home_assistant(socket_enabled: None, tmp_path: Path) -> Iterator[HomeAssistantProcess]:
    """A Home Assistant with Alto added over REST, the fake Ollama beside it."""
    process = HomeAssistantProcess(tmp_path / "config")
    try:
        process.start()
        process.onboard()
        process.add_alto()
        process.wait_until_running()
        # A normal restart first, so Home Assistant's own stores (the user and the token this
        # test holds, saved after a delay) are on disk before the crash the test is about.
        process.stop(signal.SIGTERM)
        process.start()
        process.wait_until_running()
        yield process
    finally:
        process.close()


def recalled(ha: HomeAssistantProcess) -> list[str]:
    """The quotes `alto.recall` finds for the facts, as the owner who stated them."""
    body = {"query": "spare key hook hall", "limit": 48}
    answer: dict[str, Any] = ha.call("POST", "/api/services/alto/recall?return_response", body)
    return [memory["quote"] for memory in answer["service_response"]["memories"]]


def wait_for(ha: HomeAssistantProcess, expected: list[str], timeout: float = 60) -> list[str]:
    """The recalled facts once all `expected` are there, or as they are at the timeout."""
    # Interpretation resumes in the background after a start: the memories come a little later.
    deadline = time.monotonic() + timeout
    while sorted(found := [q for q in recalled(ha) if q in FACTS]) != sorted(expected):
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    return found


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "stop"])
def test_concurrent_stated_facts_survive_a_restart_right_after_the_replies(
    home_assistant: HomeAssistantProcess, sig: signal.Signals
) -> None:
    """20 conversations state a fact each at once; HA dies right after the replies; all kept."""
    ha = home_assistant
    with ThreadPoolExecutor(len(FACTS)) as pool:
        answers = list(pool.map(ha.converse, FACTS))
    answered = [
        fact
        for fact, answer in zip(FACTS, answers, strict=True)
        if answer["response"]["response_type"] != "error"
    ]
    assert len(answered) == len(FACTS)
    ha.stop(sig)

    ha.start()
    ha.wait_until_running()
    assert sorted(wait_for(ha, answered)) == sorted(answered)  # each once, none lost
    log = ha.log
    assert "Detected blocking call" not in log, log
    assert "ERROR (MainThread) [custom_components.alto" not in log, log
