"""Writes of one kind that arrive together are written together (`Coalescer`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from homeassistant.core import HomeAssistant

from ..memory.pipeline import MAX_BATCH


class Coalescer[T, R]:
    """Writes of one kind that arrive while one is being written are written together next.

    `submit` queues an item and waits for its result; one runner takes up to `MAX_BATCH`
    queued items at a time and gives them to `commit`, which returns one result per item. The
    first item is written at once (no added wait); whatever arrives meanwhile shares the next
    write. The runner is a task of its own, so a caller that gives up does not cut a write.
    """

    def __init__(
        self,
        hass: HomeAssistant,
        name: str,
        commit: Callable[[list[T]], Awaitable[list[R]]],
    ) -> None:
        """Batch the items given to `submit` into calls of `commit` in a task named `name`."""
        self._hass = hass
        self._name = name
        self._commit = commit
        self._queue: list[tuple[T, asyncio.Future[R]]] = []
        self._runner: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        """Queue `item` for the next write and wait for its result."""
        future: asyncio.Future[R] = self._hass.loop.create_future()
        self._queue.append((item, future))
        if self._runner is None:
            # Not started eagerly: `_runner` is set before the runner can finish and clear it.
            self._runner = self._hass.async_create_background_task(
                self._run(), self._name, eager_start=False
            )
        return await future

    async def _run(self) -> None:
        taken: list[tuple[T, asyncio.Future[R]]] = []
        try:
            while self._queue:
                taken, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                try:
                    results = await self._commit([item for item, _future in taken])
                except Exception as err:  # noqa: BLE001 - every waiting caller gets the failure
                    for _item, future in taken:
                        if not future.done():
                            future.set_exception(err)
                else:
                    for (_item, future), result in zip(taken, results, strict=True):
                        if not future.done():
                            future.set_result(result)
                taken = []
        finally:
            # Cancelled (Home Assistant stopping): nobody waits for a write that will not come.
            for _item, future in [*taken, *self._queue]:
                future.cancel()
            self._runner, self._queue = None, []
