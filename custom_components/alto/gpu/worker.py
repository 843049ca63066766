"""One thread that owns a thread-bound resource (a CUDA context) from creation to close.

A CUDA context is current on one thread; PyCUDA keeps a per-thread context stack and aborts the
process if a thread's stack is not empty when PyCUDA cleans it up. So the resource is built,
used and closed on this thread only, and every call is submitted to it. Callers block on
``Future.result()`` or, from an event loop, ``await asyncio.wrap_future(...)``.
"""

from __future__ import annotations

import atexit
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol


class Closeable(Protocol):
    """A resource the owner thread closes when it stops."""

    def close(self) -> None:
        """Release the resource."""


class OwnerThread[R: Closeable]:
    """Runs ``factory()`` on a new thread, then every submitted ``fn(resource, *args)`` there.

    ``stop()`` closes the resource on the same thread and joins it. The thread is a daemon with
    an ``atexit`` hook as a safety net: atexit runs while daemon threads still live, so a
    forgotten ``stop()`` still closes the resource in its own thread instead of aborting at exit.
    """

    def __init__(self, factory: Callable[[], R], name: str) -> None:
        """Start the thread named ``name`` and build the resource on it."""
        self._queue: queue.SimpleQueue[
            tuple[Callable[..., Any], tuple[Any, ...], Future[Any]] | None
        ] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stopped = False
        ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, args=(factory, ready), name=name)
        self._thread.daemon = True
        self._thread.start()
        try:
            ready.result()  # re-raises the factory's error after the thread has ended
        except BaseException:
            self._thread.join()
            self._stopped = True
            raise
        atexit.register(self.stop)

    def _run(self, factory: Callable[[], R], ready: Future[None]) -> None:
        try:
            resource = factory()
        except BaseException as err:  # noqa: BLE001 - handed to the constructor, which re-raises it
            ready.set_exception(err)
            return
        ready.set_result(None)
        try:
            while (item := self._queue.get()) is not None:
                fn, args, future = item
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(fn(resource, *args))
                except BaseException as err:  # noqa: BLE001 - the caller gets it through the future
                    future.set_exception(err)
        finally:
            resource.close()

    def submit[T](self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Queue ``fn(resource, *args)``; its result or exception arrives through the future."""
        future: Future[T] = Future()
        with self._lock:
            if self._stopped:
                raise RuntimeError("the owner thread is stopped")
            self._queue.put((fn, args, future))
        return future

    def stop(self) -> None:
        """Finish queued calls, close the resource on its thread, join it. Idempotent."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("stop() called from the owner thread itself")
        with self._lock:
            if not self._stopped:
                self._stopped = True
                self._queue.put(None)
        self._thread.join()
        atexit.unregister(self.stop)

    @property
    def alive(self) -> bool:
        """Whether the owner thread still runs."""
        return self._thread.is_alive()
