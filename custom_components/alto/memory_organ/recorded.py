"""Erasing what Home Assistant's recorder kept of forgotten memories (forgetting erases).

The recorder's database (`home-assistant_v2.db` under the config dir, 10 days by default) can
quote a memory after it was forgotten, in two kinds of rows:

- the states of `sensor.alto_last_thought`: its state is a household thought's text, and a
  thought renders memory quotes (its `thought` attribute is never recorded, and `alto_thought`
  carries no words). The surface organ asks for them (`HistoryEraser`) after a forget of
  household memories: the sensor shows no other thought.
- the events whose data holds what someone said: `call_service` events (`alto.remember`,
  `alto.recall`, `todo.add_item`, ...) and Alto's `alto_*` events (`recorded_events`). Every
  forget asks for them, with the forgotten texts.

`RecordedEraser`, one per Home Assistant, queues on the recorder, which runs them in its own
thread in the order asked, the tasks its `purge_entities` and `purge` services queue, and its
own for events (Alto calls no service but a device's, through its effector):

1. purge the sensor's whole recorded history (`PurgeEntitiesTask`, everything before now);
2. delete the events holding a forgotten text, with their data (`EraseEventsTask`);
3. on SQLite, `PurgeTask` before a date no row is as old as: it purges nothing by age (the
   user's retention stays theirs), and, as after every purge, checkpoints the write-ahead log
   with TRUNCATE (the `-wal` file held the rows' old pages). Where SQLite is built to zero
   deleted content (`SQLITE_SECURE_DELETE`, as Debian builds it) that is all; otherwise the
   purge also repacks (VACUUM: the deleted rows stay in the file's pages until one).

A VACUUM rewrites the whole database, so erasures never overlap: what is asked while one runs
is erased by one more after it, however many forgets there were. MariaDB and PostgreSQL delete
the rows (their files are the database server's, outside the config dir); Alto does not repack
them.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Collection
from contextlib import closing
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.recorder import get_instance
from homeassistant.util import dt as dt_util
from homeassistant.util.hass_dict import HassKey

from ..const import DOMAIN, LOGGER
from .forgotten import Forgotten

RECORDER = "recorder"
# Older than any recorded row: a purge of what is older purges nothing by age.
_NOTHING_THAT_OLD = timedelta(days=36_500)


@dataclass(slots=True)
class RecordedEraser:
    """Erases sensors' recorded history and events holding forgotten texts, one run at a time."""

    hass: HomeAssistant
    _unique_ids: set[str] = field(default_factory=set)  # of Alto sensors
    _texts: set[str] = field(default_factory=set)
    _running: asyncio.Task[None] | None = None

    @callback
    def async_erase(self, *, unique_ids: Collection[str] = (), texts: Collection[str] = ()) -> None:
        """Erase in the background the history of these sensors and the events holding `texts`.

        Nothing without a recorder.
        """
        if RECORDER not in self.hass.config.components:
            return
        self._unique_ids.update(unique_ids)
        self._texts.update(texts)
        if self._running is not None and not self._running.done():
            return  # the running erasure runs once more for these
        self._running = self.hass.async_create_background_task(
            self._async_erase(), f"{DOMAIN}_erase_recorded"
        )

    async def _async_erase(self) -> None:
        registry = er.async_get(self.hass)
        while self._unique_ids or self._texts:
            unique_ids, texts = self._unique_ids, self._texts
            self._unique_ids, self._texts = set(), set()
            entity_ids = [
                entity_id
                for unique_id in sorted(unique_ids)
                if (entity_id := registry.async_get_entity_id("sensor", DOMAIN, unique_id))
            ]
            if not entity_ids and not texts:
                continue
            try:
                await _async_purge(self.hass, entity_ids, Forgotten.of(texts))
            except Exception:  # noqa: BLE001 - the forget has happened; say what was not erased
                LOGGER.exception("The recorder still holds rows of forgotten memories")
                return


@dataclass(frozen=True, slots=True)
class HistoryEraser:
    """The recorded history of one Alto sensor, erased by the Home Assistant's eraser."""

    hass: HomeAssistant
    unique_id: str

    @callback
    def async_erase(self) -> None:
        """Erase the sensor's recorded history in the background (nothing without a recorder)."""
        recorded_eraser(self.hass).async_erase(unique_ids=[self.unique_id])


_ERASER: HassKey[RecordedEraser] = HassKey(f"{DOMAIN}_recorded_eraser")


@callback
def recorded_eraser(hass: HomeAssistant) -> RecordedEraser:
    """The one eraser of this Home Assistant, so that its erasures never overlap."""
    if (eraser := hass.data.get(_ERASER)) is None:
        eraser = hass.data[_ERASER] = RecordedEraser(hass)
    return eraser


async def _async_purge(hass: HomeAssistant, entity_ids: list[str], forgotten: Forgotten) -> None:
    """Queue the purges (and on SQLite the repack) and wait until the recorder has run them."""
    # Only once the recorder is loaded: its package needs its own requirements (SQLAlchemy).
    from homeassistant.components.recorder.tasks import (  # noqa: PLC0415
        PurgeEntitiesTask,
        PurgeTask,
    )

    from .recorded_events import EraseEventsTask  # noqa: PLC0415

    recorder = get_instance(hass)
    now = dt_util.utcnow()
    if entity_ids:
        recorder.queue_task(PurgeEntitiesTask(frozenset(entity_ids).__contains__, now))
    if forgotten.needles:
        recorder.queue_task(EraseEventsTask(forgotten))
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
