"""Selection backends: exact numpy on the CPU, or the CUDA kernels on a GPU, chosen at setup.

Both return exactly ``memory.selection.top_k``'s answer. ``select_backend("auto", ...)`` tries
CUDA and degrades to numpy with one warning line (Principle 4: a missing GPU never raises into a
turn). PyCUDA is optional and imported only when CUDA is attempted.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

import numpy as np

from ..memory import selection
from .device import CudaDevice
from .worker import OwnerThread

_LOGGER = logging.getLogger(__name__)

type Hits = list[tuple[int, int]]


class SelectionBackend(Protocol):
    """Exact top-k over a resident int8 code matrix; results are (object id, integer score)."""

    name: str

    def set_matrix(self, codes: np.ndarray, ids: np.ndarray) -> None: ...
    def append(self, codes: np.ndarray, ids: np.ndarray) -> None: ...
    def top_k(self, query_codes: np.ndarray, k: int) -> Hits: ...
    def top_k_batch(self, queries: np.ndarray, k: int) -> list[Hits]: ...
    async def async_top_k(self, query_codes: np.ndarray, k: int) -> Hits: ...
    async def async_top_k_batch(self, queries: np.ndarray, k: int) -> list[Hits]: ...
    def close(self) -> None: ...


def _rows(codes: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validated private copies, so a caller may reuse its arrays once a call is submitted."""
    codes, ids = selection.validate_rows(np.asarray(codes), ids)
    return np.array(codes), np.array(ids)


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


class NumpyBackend:
    """The reference itself over a CodeMatrix; a lock makes appends safe against readers."""

    name = "numpy"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._matrix: selection.CodeMatrix | None = None

    def set_matrix(self, codes: np.ndarray, ids: np.ndarray) -> None:
        codes, ids = selection.validate_rows(np.asarray(codes), ids)
        matrix = selection.CodeMatrix(codes.shape[1], capacity=len(codes))
        matrix.append(codes, ids)
        with self._lock:
            self._matrix = matrix

    def append(self, codes: np.ndarray, ids: np.ndarray) -> None:
        codes, ids = selection.validate_rows(np.asarray(codes), ids)
        with self._lock:
            if self._matrix is None:
                self._matrix = selection.CodeMatrix(codes.shape[1])
            self._matrix.append(codes, ids)

    def _view(self) -> tuple[np.ndarray, np.ndarray] | None:
        with self._lock:  # views stay valid after later appends, so read outside the lock
            return None if self._matrix is None else self._matrix.view()

    def top_k(self, query_codes: np.ndarray, k: int) -> Hits:
        return self.top_k_batch(_query(query_codes), k)[0]

    def top_k_batch(self, queries: np.ndarray, k: int) -> list[Hits]:
        batch = _queries(queries)
        view = self._view()
        if view is None:
            return [[] for _ in range(len(batch))]
        return selection.top_k_batch(view[0], view[1], batch, k)

    async def async_top_k(self, query_codes: np.ndarray, k: int) -> Hits:
        return (await self.async_top_k_batch(_query(query_codes), k))[0]

    async def async_top_k_batch(self, queries: np.ndarray, k: int) -> list[Hits]:
        batch = _queries(queries)
        return await asyncio.get_running_loop().run_in_executor(None, self.top_k_batch, batch, k)

    def close(self) -> None:
        with self._lock:
            self._matrix = None


class CudaBackend:
    """The CUDA kernels, with every call run on the one thread that owns the context.

    Inputs are validated and copied on the caller's thread. Sync methods block the calling
    thread; from HA's event loop use the ``async_`` variants, which await the owner's future.
    """

    def __init__(self, cache_dir: str | Path, ordinal: int = 0) -> None:
        # Fails fast with ImportError (no PyCUDA, or no driver library) before a thread starts.
        importlib.import_module("pycuda.driver")

        path = Path(cache_dir)
        self._owner = OwnerThread(lambda: CudaDevice(path, ordinal), name="alto-cuda")
        self.name: str = self._owner.submit(lambda device: device.name).result()

    def set_matrix(self, codes: np.ndarray, ids: np.ndarray) -> None:
        self._owner.submit(CudaDevice.set_matrix, *_rows(codes, ids)).result()

    def append(self, codes: np.ndarray, ids: np.ndarray) -> None:
        self._owner.submit(CudaDevice.append, *_rows(codes, ids)).result()

    def top_k(self, query_codes: np.ndarray, k: int) -> Hits:
        return self.top_k_batch(_query(query_codes), k)[0]

    def top_k_batch(self, queries: np.ndarray, k: int) -> list[Hits]:
        return self._top_k_batch(queries, k).result()

    async def async_top_k(self, query_codes: np.ndarray, k: int) -> Hits:
        return (await self.async_top_k_batch(_query(query_codes), k))[0]

    async def async_top_k_batch(self, queries: np.ndarray, k: int) -> list[Hits]:
        return await asyncio.wrap_future(self._top_k_batch(queries, k))

    def _top_k_batch(self, queries: np.ndarray, k: int) -> Future[list[Hits]]:
        """k <= plan.MAX_K; a larger k raises ValueError through the future."""
        return self._owner.submit(CudaDevice.top_k_batch, _queries(queries), k)

    def copy_bandwidth(self) -> float:
        """Device copy bandwidth in bytes/s (benchmark only)."""
        return self._owner.submit(CudaDevice.copy_bandwidth).result()

    def close(self) -> None:
        """Free device memory and release the context on its own thread, then join the thread."""
        self._owner.stop()


def select_backend(mode: str, cache_dir: str | Path) -> SelectionBackend:
    """``"off"``: numpy. ``"auto"``: CUDA when PyCUDA, a driver, a device and nvcc all work;
    otherwise numpy after one warning line that says why."""
    if mode == "off":
        return NumpyBackend()
    if mode != "auto":
        raise ValueError(f"unknown GPU mode {mode!r} (expected 'auto' or 'off')")
    try:
        return CudaBackend(cache_dir)
    except Exception as err:  # ImportError, pycuda.driver.Error, CompileError, OSError, ...
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        _LOGGER.warning(
            "GPU selection unavailable, using numpy: %s%s",
            type(err).__name__,
            f": {reason}" if reason else "",
        )
        return NumpyBackend()
