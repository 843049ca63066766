"""The event loop's longest stall while Alto answers a large household (goal: under 50 ms).

Run: scripts/bench, or
    .venv/bin/python -m pytest scripts/benches/bench_responsiveness.py -q -s -p no:cacheprovider
(`ALTO_BENCH_QUICK=1` measures fewer turns.)

The workload is the one `tests/integration/test_responsiveness.py` checks (that test asserts
where the heavy work runs, and only a gross stall bound): 2,000 names in the store, 40 turns of
4 KB in the conversation, then turns of 4 KB that each name one of the 2,000, so the Surfacer cues,
renders, verifies and surfaces a thought every turn. A watchdog task ticks on the loop every 2 ms
through each turn and its background work; a turn's stall is the longest gap between two ticks,
less the tick. Two configurations run side by side in one HA: conversation intake and the
background passes off (what the test runs), and both on (memory mode 2: every turn goes through
intake, and N+1, reflection and synthesis run between turns). The event loop's debug mode,
which the harness switches on, is off, as in a real install.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest
from homeassistant.core import HomeAssistant

from custom_components.alto.const import (
    CONF_MAX_HISTORY,
    CONF_MEMORY_MODE,
)
from scripts.benches.harness import add_alto, quiet_home
from tests.fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama, is_render
from tests.integration.helpers import converse, converse_and_wait_for_background, spoken
from tests.integration.test_responsiveness import (
    NAMES,
    TURN_CHARS,
    TURNS,
    Watchdog,
    chatter,
    learn_names,
    name,
)

GOAL_S = 0.05
CONFIGURATIONS = {
    "intake and passes off": {
        CONF_MEMORY_MODE: 0,
        "reflect": {"n1_enabled": False, "reflection_enabled": False, "synthesis_enabled": False},
    },
    "intake (mode 2) and passes on": {CONF_MEMORY_MODE: 2},
}


@pytest.mark.parametrize("label", list(CONFIGURATIONS))
async def test_longest_stall(
    hass: HomeAssistant,
    fake: FakeOllama,
    enable_custom_integrations: None,
    tmp_path: Path,
    label: str,
) -> None:
    """Print each measured turn's longest stall, their median and maximum, against the goal."""
    measured = 3 if os.environ.get("ALTO_BENCH_QUICK") else 8
    await quiet_home(hass, tmp_path)
    options: dict[str, Any] = {CONF_MAX_HISTORY: TURNS + measured + 10, **CONFIGURATIONS[label]}
    await add_alto(hass, fake.url, CHAT_MODEL, EMBED_MODEL, options)

    rng = random.Random(11)
    conversation_id = None
    for _ in range(TURNS):
        result = await converse(hass, chatter(rng, TURN_CHARS), conversation_id)
        conversation_id = result.conversation_id
    await hass.async_block_till_done(wait_background_tasks=True)
    await learn_names(hass)

    stalls: list[float] = []
    for turn in range(measured):
        cued = name(NAMES // 2 - 1 - 8 * turn)  # each last in its sentence, a different one
        fake.when(is_render, f"I remember {cued} came round on Sunday.")
        said = chatter(rng, TURN_CHARS - 60) + f" Did {cued} come round?"
        watchdog = Watchdog()
        await watchdog.start()
        result = await converse_and_wait_for_background(hass, said, conversation_id)
        stalls.append(await watchdog.stop())
        assert spoken(result)

    ms = [round(s * 1000, 1) for s in stalls]
    median = statistics.median(stalls)
    verdict = "met" if median < GOAL_S else "NOT met"
    print(
        f"\n{label}: longest stall per turn (ms) {ms}\n"
        f"  median {median * 1000:.1f} ms, max {max(stalls) * 1000:.1f} ms; "
        f"goal: median under {GOAL_S * 1000:.0f} ms, {verdict}\n",
        file=sys.__stdout__,
        flush=True,
    )
