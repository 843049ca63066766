"""Without a usable GPU, select_backend degrades to the CPU with one warning, identical results."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.gpu.backend import CpuBackend, select_backend
from custom_components.alto.gpu.worker import OwnerThread
from custom_components.alto.memory import scoring, selection
from custom_components.alto.memory.matrix import CodeMatrix, Snapshot

RNG = np.random.default_rng(0)
CODES = RNG.integers(-3, 4, size=(200, 24), dtype=np.int8)
IDS = RNG.permutation(200).astype(np.int64) * 11
QUERIES = RNG.integers(-3, 4, size=(5, 24), dtype=np.int8)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The GPU backends' records at WARNING or above.

    Only the GPU package's: where onnxruntime is missing the CPU scorer says so itself.
    """
    return [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("custom_components.alto.gpu")
    ]


def snapshot(rows: int = len(CODES)) -> Snapshot:
    """The first `rows` rows, appended in two steps across small blocks."""
    matrix = CodeMatrix(24, block_rows=16)
    for part in (slice(0, min(rows, 50)), slice(50, rows)):
        matrix.append(CODES[part], IDS[part], np.zeros(len(IDS[part])))
    return matrix.snapshot()


def even(loaded: Snapshot) -> np.ndarray:
    """The mask of a snapshot's rows with an even id."""
    return loaded.ids % 2 == 0


def assert_reference_results(backend: CpuBackend) -> None:
    """Assert `backend` answers as `selection`'s reference, scoped or not."""
    backend.load(snapshot())
    mask = IDS % 2 == 0
    for k in (0, 1, 10, 500):
        assert backend.top_k(QUERIES[0], k) == selection.top_k(CODES, IDS, QUERIES[0], k)
        assert backend.top_k_batch(QUERIES, k) == selection.top_k_batch(CODES, IDS, QUERIES, k)
        scoped = selection.top_k_batch(CODES[mask], IDS[mask], QUERIES, k)
        assert backend.top_k_batch(QUERIES, k, allowed=even) == scoped


def test_off_is_the_cpu_without_a_word(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    """Off is the cpu without a word."""
    backend = select_backend("off", tmp_path)
    assert isinstance(backend, CpuBackend)
    assert backend.name == scoring.default_scorer().name
    assert not warnings_of(caplog)
    assert_reference_results(backend)
    backend.close()


@pytest.mark.skipif(
    importlib.util.find_spec("pycuda") is not None, reason="PyCUDA is installed here"
)
def test_auto_without_pycuda_installed(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    """Without PyCUDA, auto falls back to the CPU after one one-line warning."""
    backend = select_backend("auto", tmp_path)
    assert isinstance(backend, CpuBackend)
    [warning] = warnings_of(caplog)
    assert "ImportError" in warning.getMessage() or "ModuleNotFoundError" in warning.getMessage()
    assert "\n" not in warning.getMessage()
    assert_reference_results(backend)
    backend.close()


@pytest.mark.parametrize("blocked", ["pycuda", "pycuda.driver"])
def test_auto_with_pycuda_unimportable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path, blocked: str
) -> None:
    """Auto with pycuda unimportable."""
    monkeypatch.setitem(sys.modules, blocked, None)  # import raises ImportError
    backend = select_backend("auto", tmp_path)
    assert isinstance(backend, CpuBackend)
    assert len(warnings_of(caplog)) == 1
    assert_reference_results(backend)
    assert not any(t.name == "alto-cuda" for t in threading.enumerate())
    backend.close()


async def test_cpu_backend_async_matches(tmp_path: Path) -> None:
    """The CPU backend's async calls give the reference's answer, scoped or not."""
    backend = select_backend("off", tmp_path)
    backend.load(snapshot())
    assert await backend.async_top_k(QUERIES[1], 7) == selection.top_k(CODES, IDS, QUERIES[1], 7)
    got = await backend.async_top_k_batch(QUERIES, 7)
    assert got == selection.top_k_batch(CODES, IDS, QUERIES, 7)
    mask = IDS % 2 == 0
    scoped = await backend.async_top_k(QUERIES[1], 7, allowed=even)
    assert scoped == selection.top_k(CODES[mask], IDS[mask], QUERIES[1], 7)
    backend.close()


def test_cpu_backend_shares_the_snapshot_it_is_given(tmp_path: Path) -> None:
    """Cpu backend shares the snapshot it is given."""
    backend = CpuBackend(scoring.NumpyScorer())
    assert backend.name == "numpy"
    backend.load(snapshot(120))
    older = backend.top_k(QUERIES[2], 9)
    assert older == selection.top_k(CODES[:120], IDS[:120], QUERIES[2], 9)
    backend.load(snapshot())
    assert backend.top_k(QUERIES[2], 9) == selection.top_k(CODES, IDS, QUERIES[2], 9)


def test_cpu_backend_empty_and_refusals(tmp_path: Path) -> None:
    """The CPU backend answers nothing before a load and refuses malformed queries."""
    backend = select_backend("off", tmp_path)
    assert backend.top_k(QUERIES[0], 3) == []
    assert backend.top_k_batch(QUERIES, 3, allowed=even) == [[]] * 5
    backend.load(snapshot())
    with pytest.raises(ValueError, match=r"query codes must lie in \[-127, 127\]"):
        backend.top_k(np.full(24, -128, np.int8), 3)
    with pytest.raises(ValueError, match="a query is a one-dimensional int8 code vector"):
        backend.top_k(QUERIES, 3)  # a batch is not one query
    with pytest.raises(ValueError, match="unknown GPU mode 'cuda'"):
        select_backend("cuda", tmp_path)


# -- the owner thread ----------------------------------------------------------------------


class Resource:
    """A resource that remembers the threads it was made and closed on."""

    def __init__(self) -> None:
        """Remember the thread making it."""
        self.thread = threading.current_thread()
        self.closed_on: threading.Thread | None = None

    def close(self) -> None:
        """Remember the thread closing it."""
        self.closed_on = threading.current_thread()


def test_owner_thread_runs_calls_and_closes_on_its_own_thread() -> None:
    """Owner thread runs calls and closes on its own thread."""
    holder: list[Resource] = []

    def factory() -> Resource:
        holder.append(Resource())
        return holder[0]

    owner = OwnerThread(factory, name="alto-test-owner")
    assert owner.submit(lambda r: threading.current_thread() is r.thread).result()
    with pytest.raises(ZeroDivisionError):
        owner.submit(lambda r: 1 // 0).result()
    assert owner.submit(lambda r, a, b: a + b, 2, 3).result() == 5  # still serving
    owner.stop()
    owner.stop()  # idempotent
    assert not owner.alive
    assert holder[0].closed_on is holder[0].thread
    with pytest.raises(RuntimeError):
        owner.submit(lambda r: None)


async def test_owner_thread_futures_are_awaitable() -> None:
    """Owner thread futures are awaitable."""
    owner = OwnerThread(Resource, name="alto-test-owner")
    try:
        assert await asyncio.wrap_future(owner.submit(lambda r: 42)) == 42
    finally:
        owner.stop()


def test_owner_thread_factory_failure_raises_and_leaves_no_thread() -> None:
    """Owner thread factory failure raises and leaves no thread."""

    def factory() -> Resource:
        raise OSError("no device")

    with pytest.raises(OSError, match="no device"):
        OwnerThread(factory, name="alto-test-owner")
    assert not any(t.name == "alto-test-owner" for t in threading.enumerate())
