"""The pass runner: one pass at a time after a breather, preempted by turns, resumed after."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from custom_components.alto.reflect import PassRunner

BREATHER = 0.02


class Passes:
    """Pass functions that record their runs; `hold` makes a kind wait until released."""

    def __init__(self) -> None:
        """Nothing ran yet; nothing is held."""
        self.started: list[tuple[str, str]] = []
        self.results: list[tuple[str, str, object]] = []
        self.hold: dict[str, asyncio.Event] = {}
        self.entered = asyncio.Event()
        self.done = asyncio.Event()
        self.expected = 0

    def kind(self, name: str) -> Callable[[str], Awaitable[str]]:
        """The coroutine function of pass `name`."""

        async def run(scope: str) -> str:
            self.started.append((name, scope))
            self.entered.set()
            if name in self.hold:
                await self.hold[name].wait()
            if name == "boom":
                raise RuntimeError("pass failed")
            return f"{name}:{scope}"

        return run

    def on_result(self, kind: str, scope: str, result: object) -> None:
        """Collect results; signal when `expected` have arrived."""
        self.results.append((kind, scope, result))
        if len(self.results) >= self.expected:
            self.done.set()


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until `condition` holds (at most 100 iterations)."""
    for _ in range(100):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


@pytest.fixture
async def passes() -> Passes:
    """Fresh recording passes."""
    return Passes()


@pytest.fixture
async def runner(passes: Passes) -> AsyncIterator[PassRunner]:
    """A started runner over the kinds n1, reflect and boom."""
    runner = PassRunner(
        {name: passes.kind(name) for name in ("n1", "reflect", "boom")},
        breather_s=BREATHER,
        on_result=passes.on_result,
    )
    runner.start()
    yield runner
    await runner.close()


async def test_jobs_run_in_order_once_each(runner: PassRunner, passes: Passes) -> None:
    """Submission order; a job already queued is not queued again."""
    passes.expected = 2
    runner.turn_started()
    runner.submit("n1", "a")
    runner.submit("reflect", "a")
    runner.submit("n1", "a")
    assert runner.queued == (("n1", "a"), ("reflect", "a"))
    runner.turn_finished()
    await asyncio.wait_for(passes.done.wait(), 5)
    assert passes.results == [("n1", "a", "n1:a"), ("reflect", "a", "reflect:a")]


async def test_nothing_runs_during_a_turn_nor_before_the_breather(
    runner: PassRunner, passes: Passes
) -> None:
    """A job waits for the turn to end, then for the breather."""
    passes.expected = 1
    loop = asyncio.get_running_loop()
    runner.turn_started()
    runner.submit("n1", "a")
    await asyncio.sleep(BREATHER * 2)
    assert passes.started == []
    runner.turn_finished()
    ended = loop.time()
    await asyncio.wait_for(passes.entered.wait(), 5)
    assert loop.time() - ended >= BREATHER * 0.9
    await asyncio.wait_for(passes.done.wait(), 5)


async def test_a_turn_preempts_the_pass_and_it_runs_again_after(
    runner: PassRunner, passes: Passes
) -> None:
    """The pass in flight is cancelled, requeued first, and rerun once the turn ends."""
    passes.expected = 2
    passes.hold["reflect"] = asyncio.Event()
    runner.submit("reflect", "a")
    await asyncio.wait_for(passes.entered.wait(), 5)
    assert runner.running == ("reflect", "a")
    runner.turn_started()
    runner.submit("n1", "a")
    await until(lambda: runner.running is None)
    assert runner.queued == (("reflect", "a"), ("n1", "a"))
    passes.hold["reflect"].set()
    runner.turn_finished()
    await asyncio.wait_for(passes.done.wait(), 5)
    assert passes.started == [("reflect", "a"), ("reflect", "a"), ("n1", "a")]
    assert [r[0] for r in passes.results] == ["reflect", "n1"]


async def test_a_failing_pass_is_logged_and_the_queue_goes_on(
    runner: PassRunner, passes: Passes, caplog: pytest.LogCaptureFixture
) -> None:
    """No result for the failed pass; the next one runs."""
    passes.expected = 1
    with caplog.at_level(logging.ERROR):
        runner.submit("boom", "a")
        runner.submit("n1", "b")
        await asyncio.wait_for(passes.done.wait(), 5)
    assert passes.results == [("n1", "b", "n1:b")]
    assert "Reflect pass boom failed" in caplog.text


async def test_close_cancels_the_pass_in_flight(runner: PassRunner, passes: Passes) -> None:
    """Closing stops the worker and drops the queue."""
    passes.hold["n1"] = asyncio.Event()
    runner.submit("n1", "a")
    runner.submit("reflect", "a")
    await asyncio.wait_for(passes.entered.wait(), 5)
    await runner.close()
    assert runner.queued == ()
    assert passes.results == []


def test_an_unknown_kind_is_refused() -> None:
    """Only the kinds given at construction can be submitted."""
    with pytest.raises(ValueError, match="unknown pass"):
        PassRunner({}).submit("n1", "a")
