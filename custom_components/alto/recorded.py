"""Erasing what Home Assistant's recorder kept of the last thought sensor (forgetting erases).

`sensor.alto_last_thought`'s state is a household thought's text (dashboards show it), and a
thought renders memory quotes, so the recorder's history (`home-assistant_v2.db` under the config
dir, 10 days by default) can quote a memory after it was forgotten. The sensor's `thought`
attribute is never recorded (`_unrecorded_attributes`) and the `alto_thought` event carries no
words: the recorded states are what is left. After a forget of household memories (the sensor
shows no other thought) `HistoryEraser` asks the recorder, through its own services, to:

1. purge the sensor's whole recorded history (`recorder.purge_entities`, `keep_days: 0`), and
2. on SQLite, `recorder.purge` with a `keep_days` no row is that old: it purges nothing by age
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
from functools import cache

from homeassistant.const import ATTR_ENTITY_ID
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.recorder import get_instance

from .const import DOMAIN, LOGGER

RECORDER = "recorder"
# More days than any recorded row is old: `recorder.purge` then purges nothing by age.
_NOTHING_THAT_OLD_DAYS = 36_500


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
        if not self.hass.services.has_service(RECORDER, "purge_entities"):
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
    await hass.services.async_call(
        RECORDER, "purge_entities", {ATTR_ENTITY_ID: [entity_id], "keep_days": 0}, blocking=True
    )
    recorder = get_instance(hass)
    if recorder.db_url.startswith("sqlite"):
        await hass.services.async_call(
            RECORDER,
            "purge",
            {"keep_days": _NOTHING_THAT_OLD_DAYS, "repack": not sqlite_zeroes_deleted()},
            blocking=True,
        )
    await recorder.async_block_till_done()


@cache
def sqlite_zeroes_deleted() -> bool:
    """Whether this process's SQLite overwrites deleted content (`PRAGMA secure_delete`).

    The library's default, which the recorder's connections keep (Home Assistant never sets it).
    """
    with closing(sqlite3.connect(":memory:")) as connection:
        (on,) = connection.execute("PRAGMA secure_delete").fetchone()
    return bool(on)
