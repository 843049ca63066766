"""The background queue that keeps the passes out of a conversational turn's way.

One pass runs at a time (they share the model server with the conversation), in submission
order, after a breather (default 2 s) since the last turn ended. `turn_started` pauses the queue
and cancels the pass in flight: its model call stops (closing an Ollama request stops the
generation), it has written nothing (see ``organ``), and it goes back to the front of the queue
to run again, from its cursor, once every turn in progress has ended (`turn_finished`) and the
breather has passed. A job already queued is not queued twice. A pass that raises is logged and
dropped; its cursor did not move, so the next submission retries it.

Jobs are ``(kind, scope)``; `passes` maps each kind to the coroutine function that runs it (for
the organ: ``{"n1": reflector.run_n1, "reflect": reflector.reflect, "synthesize": ...}``), and
`on_result(kind, scope, result)` receives what a completed pass returned.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping

_LOGGER = logging.getLogger(__name__)

type Job = tuple[str, str]
type Pass = Callable[[str], Awaitable[object]]
type OnResult = Callable[[str, str, object], None]


def _ignore(kind: str, scope: str, result: object) -> None:
    """The default `on_result`."""


class PassRunner:
    """A single worker over a queue of passes, preempted by conversational turns."""

    def __init__(
        self,
        passes: Mapping[str, Pass],
        *,
        breather_s: float = 2.0,
        on_result: OnResult = _ignore,
    ) -> None:
        """Bind the pass kinds; nothing runs until `start`."""
        self._passes = dict(passes)
        self._breather = breather_s
        self._on_result = on_result
        self._queue: deque[Job] = deque()
        self._turns = 0
        self._quiet_since = 0.0  # loop time the last turn ended
        self._wake = asyncio.Event()
        self._current: tuple[Job, asyncio.Task[object]] | None = None
        self._preempted = False
        self._worker: asyncio.Task[None] | None = None

    @property
    def queued(self) -> tuple[Job, ...]:
        """Jobs waiting, the next first (the one in flight excluded)."""
        return tuple(self._queue)

    @property
    def running(self) -> Job | None:
        """The job in flight."""
        return self._current[0] if self._current else None

    def start(self) -> None:
        """Start the worker in the running loop."""
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work())

    async def close(self) -> None:
        """Stop the worker and the pass in flight; queued jobs are dropped."""
        if self._current:
            self._current[1].cancel()
        if self._worker:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
        self._queue.clear()

    def submit(self, kind: str, scope: str) -> None:
        """Queue one pass of `kind` for `scope` (unless already queued)."""
        if kind not in self._passes:
            raise ValueError(f"unknown pass {kind!r}")
        if (kind, scope) not in self._queue:
            self._queue.append((kind, scope))
            self._wake.set()

    def turn_started(self) -> None:
        """A conversational turn begins: pause, and preempt the pass in flight."""
        self._turns += 1
        if self._current and not self._current[1].done():
            self._preempted = True
            self._current[1].cancel()

    def turn_finished(self) -> None:
        """A conversational turn has ended: resume after the breather once none is left."""
        self._turns = max(0, self._turns - 1)
        self._quiet_since = asyncio.get_running_loop().time()
        self._wake.set()

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue and not self._turns:
                wait = self._quiet_since + self._breather - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue  # a turn may have started or ended meanwhile
                await self._run(self._queue.popleft())

    async def _run(self, job: Job) -> None:
        kind, scope = job
        task = asyncio.ensure_future(self._passes[kind](scope))
        self._current, self._preempted = (job, task), False
        try:
            await asyncio.wait([task])
        finally:
            self._current = None
        if task.cancelled():
            if self._preempted and job not in self._queue:
                self._queue.appendleft(job)
            return
        if (error := task.exception()) is not None:
            _LOGGER.error("Reflect pass %s failed", kind, exc_info=error)
            return
        self._on_result(kind, scope, task.result())
