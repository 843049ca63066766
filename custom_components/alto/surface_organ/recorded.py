"""Erasing what Home Assistant's recorder kept of the last thought sensor (forgetting erases).

`sensor.alto_last_thought`'s state is a household thought's text (dashboards show it), and a
thought renders memory quotes, so the recorder's history (`home-assistant_v2.db` under the config
dir, 10 days by default) can quote a memory after it was forgotten. The sensor's `thought`
attribute is never recorded (`_unrecorded_attributes`) and the `alto_thought` event carries no
words: the recorded states are what is left. After a forget of household memories (the sensor
shows no other thought) `HistoryEraser` queues on the recorder the tasks its `purge_entities`
and `purge` services queue (Alto calls no service but a device's, through its effector):

1. purge the sensor's whole recorded history (`PurgeEntitiesTask`, everything before now), and
2. on SQLite, `PurgeTask` before a date no row is as old as: it purges nothing by age
   (the user's retention stays theirs), and, as after every purge, checkpoints the write-ahead
   log with TRUNCATE (the `-wal` file held the rows' old pages). Where SQLite is built to zero
   deleted content (`SQLITE_SECURE_DELETE`, as Debian builds it) that is all; otherwise the
   purge also repacks (VACUUM: the deleted rows stay in the file's pages until one).

The recorder runs both in its own thread, in the order they were asked. A VACUUM rewrites the
whole database, so erasures never overlap: a forget while one runs asks for one more after it,
however many forgets there were. MariaDB and PostgreSQL delete the rows (their files are the
database server's, outside the config dir); Alto does not repack them.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import timedelta
from functools import cache

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.recorder import get_instance
from homeassistant.util import dt as dt_util

from ..const import DOMAIN, LOGGER

RECORDER = "recorder"
# Older than any recorded row: a purge of what is older purges nothing by age.
_NOTHING_THAT_OLD = timedelta(days=36_500)


@dataclass(slots=True)
class HistoryEraser:
    """Purges the recorded history of one Alto sensor and erases it from the SQLite files."""

    hass: HomeAssistant
    unique_id: str
    _running: asyncio.Task[None] | None = None
    _again: bool = False

    @callback
    def async_erase(self) -> None:
        """Erase the sensor's recorded history in the background (nothing without a recorder)."""
        if RECORDER not in self.hass.config.components:
            return
        if self._running is not None and not self._running.done():
            self._again = True  # after the running one, which may have missed this forget
            return
        self._running = self.hass.async_create_background_task(
            self._async_erase(), f"alto_erase_recorded_{self.unique_id}"
        )

    async def _async_erase(self) -> None:
        self._again = True
        registry = er.async_get(self.hass)
        while self._again:
            self._again = False
            entity_id = registry.async_get_entity_id("sensor", DOMAIN, self.unique_id)
            if entity_id is None:
                return
            try:
                await _async_purge(self.hass, entity_id)
            except Exception:  # noqa: BLE001 - the forget has happened; say what was not erased
                LOGGER.exception("The recorder's history of %s was not purged", entity_id)
                return


async def _async_purge(hass: HomeAssistant, entity_id: str) -> None:
    """Queue the purge (and on SQLite the repack) and wait until the recorder has run them."""
    # Only once the recorder is loaded: its package needs its own requirements (SQLAlchemy).
    from homeassistant.components.recorder.tasks import (  # noqa: PLC0415
        PurgeEntitiesTask,
        PurgeTask,
    )

    recorder = get_instance(hass)
    now = dt_util.utcnow()
    recorder.queue_task(PurgeEntitiesTask(lambda purged: purged == entity_id, now))
    if recorder.db_url.startswith("sqlite"):
        recorder.queue_task(PurgeTask(now - _NOTHING_THAT_OLD, not sqlite_zeroes_deleted(), False))
    await recorder.async_block_till_done()


@cache
def sqlite_zeroes_deleted() -> bool:
    """Whether this process's SQLite overwrites deleted content (`PRAGMA secure_delete`).

    The library's default, which the recorder's connections keep (Home Assistant never sets it).
    """
    with closing(sqlite3.connect(":memory:")) as connection:
        (on,) = connection.execute("PRAGMA secure_delete").fetchone()
    return bool(on)
