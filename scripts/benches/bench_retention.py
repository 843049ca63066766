"""Memory retention at the limit: what new memories cost once `max_memories` is reached.

Run: scripts/bench, or
    .venv/bin/python -m pytest scripts/benches/bench_retention.py -q -s -p no:cacheprovider
(`ALTO_BENCH_QUICK=1` fills the store to 2,000 rows instead of 10,000.)

A forget erases its text from the embedded Chroma store by rewriting the whole collection
(`memory.erasure.rebuild`), so the cost of retention is the number of forgets times the size of
the store. One Home Assistant per way of trimming, side by side in one run, each with Alto's store
filled to its limit with household sources (384-dimension embeddings, as multilingual-e5-small
gives), then `alto.remember` called again and again, each call waited for until retention has
finished:

- one row per write: each write past the limit forgets the oldest source (TRIM_SHARE past the
  limit: `limit // TRIM_SHARE` is 0), as Alto did before;
- Alto now: past the limit the oldest go down to 1 % below it (`memory.retention.TRIM_SHARE`).

Printed: how many forgets the writes caused, and the writes' total and slowest wall time.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from homeassistant.core import HomeAssistant

from custom_components.alto.const import CONF_MAX_MEMORIES, CONF_MEMORY_MODE
from custom_components.alto.memory import retention
from custom_components.alto.memory.records import Mutation
from scripts.benches.harness import add_alto, bulk_sources, quiet_home
from tests.fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama
from tests.integration.helpers import journal_file, memory, remember

QUICK = bool(os.environ.get("ALTO_BENCH_QUICK"))
LIMIT = 2_000 if QUICK else 10_000
WRITES = 20
DIM = 384
WAYS = {"one row per write (before)": LIMIT + 1, "Alto now (down to 1 % below)": None}


def _sources(count: int) -> list[Mutation]:
    """`count` household sources, oldest first."""
    vectors = np.random.default_rng(7).standard_normal((count, DIM)).astype("<f4")
    return bulk_sources(
        count,
        lambda n: f"Household note {n}: the bins, the boiler and the bus.",
        lambda n: vectors[n].tobytes(),
    )


@pytest.mark.usefixtures("enable_custom_integrations")
@pytest.mark.parametrize("way", list(WAYS))
async def test_writes_at_the_limit(
    hass: HomeAssistant,
    fake: FakeOllama,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    way: str,
) -> None:
    """Print the forgets and wall time of WRITES memories written at the limit."""
    if (share := WAYS[way]) is not None:
        monkeypatch.setattr(retention, "TRIM_SHARE", share)
    fake.embed_dim = DIM
    await quiet_home(hass, tmp_path)
    options = {CONF_MEMORY_MODE: 0, CONF_MAX_MEMORIES: LIMIT}
    entry = await add_alto(hass, fake.url, CHAT_MODEL, EMBED_MODEL, options)
    store = memory(hass).store
    for mutation in _sources(LIMIT):
        await hass.async_add_executor_job(store.apply, mutation)
    assert store.count_all(current_only=False) == LIMIT

    times = []
    for n in range(WRITES):
        start = time.perf_counter()
        await remember(hass, f"Reminder {n}: the plumber comes on Thursday.")
        await hass.async_block_till_done(wait_background_tasks=True)
        times.append(time.perf_counter() - start)
    forgets = journal_file(hass, entry).read_bytes().count(b'"op":"forget"')
    kept = store.count_all(current_only=False)
    assert kept <= LIMIT
    print(
        f"\n{way}: {WRITES} memories written at a limit of {LIMIT:,} ({DIM}-d): {forgets} "
        f"forgets, {sum(times):.1f} s in all, slowest write {max(times):.2f} s, "
        f"{kept:,} kept",
        file=sys.__stdout__,
        flush=True,
    )
