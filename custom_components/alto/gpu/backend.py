"""Selection backends: exact selection on the CPU, or the CUDA kernels on a GPU, chosen at setup.

Both return exactly ``memory.selection.top_k``'s answer over the snapshot they were last given
(``load``), restricted to the rows an ``allowed`` function of that snapshot selects when given.
The CPU backend scores the memory state's own matrix in place (``memory.scoring``: onnxruntime's
integer GEMM, numpy without it), so it keeps no copy of the codes. ``select_backend("auto", ...)``
tries CUDA and degrades to the CPU with one warning line: a missing GPU never raises into a
turn. PyCUDA is optional and imported only when CUDA is attempted.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

import numpy as np

from ..memory import scoring
from ..memory.matrix import Snapshot
from ..memory.scoring import Allowed, Scorer
from . import plan
from .device import CudaDevice
from .worker import OwnerThread

_LOGGER = logging.getLogger(__name__)

type Hits = list[tuple[int, int]]


class SelectionBackend(Protocol):
    """Exact top-k over a code matrix snapshot; results are (object id, integer score)."""

    name: str

    def load(self, snapshot: Snapshot) -> None:
        """Select over ``snapshot`` from now on."""

    def top_k(self, query_codes: np.ndarray, k: int, allowed: Allowed | None = None) -> Hits:
        """At most k (id, score) for one query, over the rows ``allowed`` leaves."""

    def top_k_batch(
        self, queries: np.ndarray, k: int, allowed: Allowed | None = None
    ) -> list[Hits]:
        """At most k (id, score) per query, over the rows ``allowed`` leaves."""

    async def async_top_k(
        self, query_codes: np.ndarray, k: int, allowed: Allowed | None = None
    ) -> Hits:
        """`top_k` without blocking the event loop."""

    async def async_top_k_batch(
        self, queries: np.ndarray, k: int, allowed: Allowed | None = None
    ) -> list[Hits]:
        """`top_k_batch` without blocking the event loop."""

    def close(self) -> None:
        """Release what the backend holds."""


def _query(query_codes: np.ndarray) -> np.ndarray:
    query = np.asarray(query_codes)
    if query.dtype != np.int8 or query.ndim != 1:
        raise ValueError("a query is a one-dimensional int8 code vector")
    return query[np.newaxis]


def _queries(queries: np.ndarray) -> np.ndarray:
    batch = np.asarray(queries)
    if batch.dtype != np.int8 or batch.ndim != 2:
        raise ValueError("queries are a two-dimensional int8 code matrix")
    return np.array(batch)


class CpuBackend:
    """``memory.scoring`` over the loaded snapshot, which it shares rather than copies."""

    def __init__(self, scorer: Scorer | None = None) -> None:
        """Score with ``scorer`` (default: ``scoring.default_scorer()``)."""
        self._scorer = scorer or scoring.default_scorer()
        self.name: str = self._scorer.name
        self._snapshot: Snapshot | None = None

    def load(self, snapshot: Snapshot) -> None:
        """Select over ``snapshot`` from now on."""
        self._snapshot = snapshot  # one reference swap: a running selection keeps its snapshot

    def top_k(self, query_codes: np.ndarray, k: int, allowed: Allowed | None = None) -> Hits:
        """At most k (id, score) for one query, over the rows ``allowed`` leaves."""
        return self.top_k_batch(_query(query_codes), k, allowed)[0]

    def top_k_batch(
        self, queries: np.ndarray, k: int, allowed: Allowed | None = None
    ) -> list[Hits]:
        """At most k (id, score) per query, over the rows ``allowed`` leaves."""
        batch = _queries(queries)
        snapshot = self._snapshot
        if snapshot is None:
            return [[] for _ in range(len(batch))]
        mask = allowed(snapshot) if allowed is not None else None
        return scoring.top_k_batch(snapshot, batch, k, scorer=self._scorer, allowed=mask)

    async def async_top_k(
        self, query_codes: np.ndarray, k: int, allowed: Allowed | None = None
    ) -> Hits:
        """`top_k` without blocking the event loop."""
        return (await self.async_top_k_batch(_query(query_codes), k, allowed))[0]

    async def async_top_k_batch(
        self, queries: np.ndarray, k: int, allowed: Allowed | None = None
    ) -> list[Hits]:
        """`top_k_batch` in the executor."""
        batch = _queries(queries)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.top_k_batch, batch, k, allowed)

    def close(self) -> None:
        """Drop the snapshot."""
        self._snapshot = None


class CudaBackend:
    """The CUDA kernels, with every call run on the one thread that owns the context.

    Inputs are validated and copied on the caller's thread. Sync methods block the calling
    thread; from HA's event loop use the ``async_`` variants, which await the owner's future.
    """

    def __init__(
        self, cache_dir: str | Path, ordinal: int = 0, *, tensor_cores: bool = True
    ) -> None:
        """Start the thread that owns device ``ordinal``'s context.

        Compiled kernels are cached in ``cache_dir``; ``tensor_cores=False`` scores batches
        with __dp4a even where int8 mma exists (as devices before compute capability 8.0 do).
        """
        # Fails fast with ImportError (no PyCUDA, or no driver library) before a thread starts.
        importlib.import_module("pycuda.driver")

        path = Path(cache_dir)
        self._owner = OwnerThread(
            lambda: CudaDevice(path, ordinal, tensor_cores=tensor_cores), name="alto-cuda"
        )
        self.name: str = self._owner.submit(lambda device: device.name).result()
        self._snapshot: Snapshot | None = None  # the last snapshot loaded, for masks
        self._uploaded: tuple[int, int] | None = None  # (origin, rows) the device holds

    def load(self, snapshot: Snapshot) -> None:
        """Hold ``snapshot`` on the device.

        When the device holds an earlier snapshot of the same matrix, only the rows added
        since are uploaded; otherwise all of them. The codes travel as the snapshot keeps them
        (column blocks), through pinned buffers, and become device rows on the device.
        """
        held, self._uploaded = self._uploaded, None  # a failed upload forces a full one next
        start = held[1] if held and held[0] == snapshot.origin and held[1] <= len(snapshot) else 0
        self._owner.submit(CudaDevice.load, snapshot, start).result()
        self._snapshot, self._uploaded = snapshot, (snapshot.origin, len(snapshot))

    def top_k(self, query_codes: np.ndarray, k: int, allowed: Allowed | None = None) -> Hits:
        """At most k (id, score) for one query, over the rows ``allowed`` leaves."""
        return self.top_k_batch(_query(query_codes), k, allowed)[0]

    def top_k_batch(
        self, queries: np.ndarray, k: int, allowed: Allowed | None = None
    ) -> list[Hits]:
        """At most k (id, score) per query, over the rows ``allowed`` leaves (default: all).

        With ``allowed``, the kernels select k plus the hidden rows and the hidden ones are
        dropped; past ``plan.MAX_K`` the host scores the snapshot instead (``memory.scoring``).
        """
        if allowed is None:
            return self._top_k_batch(queries, k).result()
        batch, snapshot = _queries(queries), self._snapshot
        if snapshot is None:
            return [[] for _ in range(len(batch))]
        mask = allowed(snapshot)
        hidden = len(snapshot) - int(np.count_nonzero(mask))
        if k + hidden > plan.MAX_K:
            return scoring.top_k_batch(snapshot, batch, k, allowed=mask)
        # Kept by membership in the allowed ids, so a row the device holds that this snapshot
        # does not (a load under way) is never returned.
        permitted = snapshot.ids[mask]
        found = []
        for hits in self._top_k_batch(batch, k + hidden).result():
            ids = np.array([row_id for row_id, _ in hits], dtype=np.int64)
            keep = np.isin(ids, permitted).tolist()
            found.append([hit for hit, ok in zip(hits, keep, strict=True) if ok][:k])
        return found

    async def async_top_k(
        self, query_codes: np.ndarray, k: int, allowed: Allowed | None = None
    ) -> Hits:
        """`top_k` without blocking the event loop."""
        return (await self.async_top_k_batch(_query(query_codes), k, allowed))[0]

    async def async_top_k_batch(
        self, queries: np.ndarray, k: int, allowed: Allowed | None = None
    ) -> list[Hits]:
        """`top_k_batch` without blocking the event loop."""
        if allowed is None:
            return await asyncio.wrap_future(self._top_k_batch(queries, k))
        batch = _queries(queries)  # masks and the host path are CPU work: off the event loop
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.top_k_batch, batch, k, allowed)

    def _top_k_batch(self, queries: np.ndarray, k: int) -> Future[list[Hits]]:
        """Submit a top-k batch to the owner thread; k must be at most ``plan.MAX_K``.

        A larger k raises ValueError through the future.
        """
        return self._owner.submit(CudaDevice.top_k_batch, _queries(queries), k)

    def copy_bandwidth(self) -> float:
        """Device copy bandwidth in bytes/s (benchmark only)."""
        return self._owner.submit(CudaDevice.copy_bandwidth).result()

    def close(self) -> None:
        """Free device memory and release the context on its own thread, then join the thread."""
        self._owner.stop()


def select_backend(
    mode: str, cache_dir: str | Path, *, fallback_level: int = logging.WARNING
) -> SelectionBackend:
    """The selection backend for `mode`.

    ``"off"``: the CPU. ``"auto"``: CUDA when PyCUDA, a driver, a device and nvcc all work;
    otherwise the CPU after one line at `fallback_level` that says why (Home Assistant's setup
    says it once, at INFO: most homes have no GPU).
    """
    if mode == "off":
        return CpuBackend()
    if mode != "auto":
        raise ValueError(f"unknown GPU mode {mode!r} (expected 'auto' or 'off')")
    try:
        return CudaBackend(cache_dir)
    except Exception as err:  # noqa: BLE001 - PyCUDA, driver, nvcc: any failure means the CPU
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        _LOGGER.log(
            fallback_level,
            "GPU selection unavailable, using the CPU: %s%s",
            type(err).__name__,
            f": {reason}" if reason else "",
        )
        return CpuBackend()
