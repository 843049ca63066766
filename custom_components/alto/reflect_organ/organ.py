"""The reflect organ in Home Assistant: background passes between turns, and what they give back.

`ReflectOrgan` holds the pure `Reflector` (one journal per scope under the entry's storage
folder, blocking work in HA's executor) and its `PassRunner`, and is the one place a turn talks
to them, through `turn()`:

- entering it pauses the passes and cancels the one in flight (its model call is closed, it has
  written nothing, and it runs again once no turn is left and the breather has passed);
- `TurnReflector.async_context()` gives the speaker's frame-of-mind line, Alto's impressions (the
  scope's latest synthesis) and at most one intrusive inbox item, as Alto's own noticing;
- `TurnReflector.finished()`, after the reply, notes the prompt's share of the context window,
  journals the exchange with the effector's outcomes (never the model's words about them), moves
  the delivered noticing to sent and queues the passes now due, in the background.

Scope rule: a signed-in speaker's turns are their own scope (their user id), anyone else's the
household's; a scope's inbox, ledgers and synthesis reach only that scope's prompts. An intrusive
item is delivered once, on its scope's next successful turn, and only while every turn it cites
is still in the scope's log (forgetting a turn already removes what cites it; this also holds
back an item whose turns left by retention). Entity states are readable by every user, so the
inbox list and its size show the household's items only; events and sensors carry ids, counts,
times and urgency, never text.

Each pass may use its own (smaller) model. Nominations of durable facts go to memory intake,
which admits or refuses them by its own rules; no pass writes memory. A scope quiet for
`IDLE_REFLECTION_S` with turns since its last reflection that give a pass work (small talk gives
none, see `reflect.heuristics.gives_work`) gets one (when reflection is on); the services
`alto.reflect` and `alto.synthesize` run a pass on demand, outside the queue.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final

import ollama
from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import CALLBACK_TYPE, Event, HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.util import dt as dt_util

from ..act_organ.organ import SpanOutcome
from ..const import DOMAIN, LOGGER
from ..history import BufferEntry
from ..memory.records import HOUSEHOLD
from ..memory_organ.organ import MemoryOrgan, storage_dir
from ..model.calls import Message
from ..model.ollama_io import call_model_for
from ..model.schemas import Schema
from ..prompt import noticing
from ..reflect import (
    N1Report,
    Nomination,
    Observation,
    Outcome,
    PassRunner,
    ReflectConfig,
    ReflectionReport,
    Reflector,
    SynthesisReport,
)
from ..reflect.records import valid_scope
from ..settings import AltoSettings, PassSettings

EVENT_OBSERVATION: Final = "alto_observation"
EVENT_REFLECTION: Final = "alto_reflection"
EVENT_SYNTHESIS: Final = "alto_synthesis"
EVENT_PRESSURE: Final = "alto_context_pressure"
# The pass kinds: the queue's, the model calls' and the diagnostics' keys, not option keys (each
# pass's options are `AltoSettings.n1`, `.reflection` and `.synthesis`; see `_passes`).
N1: Final = "n1"
REFLECT: Final = "reflect"
SYNTHESIZE: Final = "synthesize"
IDLE_REFLECTION_S: Final = 3600.0
IDLE_CHECK: Final = timedelta(minutes=15)


@dataclass(slots=True)
class _Run:
    """The pass running in a task: its model calls go to its model, and their wait adds up."""

    kind: str
    model_s: float = 0.0


_RUN: ContextVar[_Run] = ContextVar("alto_reflect_run")


def signal_reflection(entry_id: str) -> str:
    """The dispatcher signal that something the reflect entities show changed.

    An inbox (the household's or a private one), a pass record, a scope's journal or the
    pressure.
    """
    return f"{DOMAIN}_{entry_id}_reflection"


def scope_of(user_id: str | None) -> str:
    """The turn log a speaker's turns go to: their own, or the household's."""
    return user_id or HOUSEHOLD


@dataclass(frozen=True, slots=True)
class PassRecord:
    """When a pass last ran, in which kind of scope, and what it did in counts and codes."""

    at: datetime
    private: bool
    facts: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PressureRecord:
    """The latest conversational prompt's share of the context window."""

    percent: float
    tier: int
    prompt_tokens: int
    num_ctx: int
    private: bool


@dataclass(frozen=True, slots=True)
class ReflectionState:
    """What the reflect entities show: the household's open items, the last passes, pressure."""

    inbox: tuple[Observation, ...] = ()  # intrusive (most urgent first), then pending
    last_reflection: PassRecord | None = None
    last_synthesis: PassRecord | None = None
    pressure: PressureRecord | None = None


@dataclass(frozen=True, slots=True)
class TurnReflection:
    """What a turn's model call sees of the speaker's scope."""

    frame_of_mind: str = ""
    impressions: str = ""
    noticing: tuple[BufferEntry, ...] = ()  # at most one intrusive item, as Alto's noticing


@dataclass(slots=True)
class PassCost:
    """Completed runs of one pass kind: wall time, and the part spent waiting for the model."""

    runs: int = 0
    total_s: float = 0.0
    model_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Runs and mean milliseconds, total and Alto's own (without the model's wait)."""
        mean = self.total_s / self.runs * 1000 if self.runs else 0.0
        own = (self.total_s - self.model_s) / self.runs * 1000 if self.runs else 0.0
        return {"runs": self.runs, "mean_ms": round(mean, 1), "own_mean_ms": round(own, 1)}


def _passes(settings: AltoSettings) -> dict[str, PassSettings]:
    """Each pass kind's settings: whether it runs on its own, and its model."""
    return {N1: settings.n1, REFLECT: settings.reflection, SYNTHESIZE: settings.synthesis}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _outcome(span: SpanOutcome) -> Outcome:
    return Outcome(span.verdict.value, span.entity_id, span.service)


def _nominations(nominations: Iterable[Nomination]) -> list[dict[str, Any]]:
    return [{"turn": x.turn, "quote": x.quote} for x in nominations]


def reflection_facts(report: ReflectionReport) -> dict[str, Any]:
    """A reflection in counts and codes, for its event and the sensor (no text)."""
    first, last = report.covered
    return {
        "covered": [first, last],
        "extracted": report.extracted,
        "appended": len(report.appended),
        "dropped": len(report.dropped),
        "nominations": len(report.nominations),
        "exited_cleanly": report.exited_cleanly,
        "refusal": report.refusal,
    }


def synthesis_facts(report: SynthesisReport) -> dict[str, Any]:
    """A synthesis in counts and codes, for its event and the sensor (no text)."""
    made = report.synthesis
    return {
        "trigger": report.trigger,
        "covered": list(report.covered),
        "elements": sum(len(e) for e in made.elements.values()) if made else 0,
        "dropped": report.dropped,
        "exited_cleanly": report.exited_cleanly,
        "refusal": report.refusal,
    }


def reflection_response(report: ReflectionReport) -> dict[str, Any]:
    """`alto.reflect`'s response: the whole report, for a caller who may see the scope."""
    return {
        "scope": report.scope,
        **reflection_facts(report),
        "investigated": dict(report.investigated),
        "appended": [
            {
                "id": e.id,
                "ledger": e.ledger.value,
                "kind": e.kind,
                "content": e.content,
                "turns": list(e.turns),
                "resolves": e.resolves,
                "at": dt_util.utc_from_timestamp(e.at).isoformat(),
            }
            for e in report.appended
        ],
        "dropped": [{"item": index, "reason": reason} for index, reason in report.dropped],
        "nominations": _nominations(report.nominations),
    }


def synthesis_response(report: SynthesisReport) -> dict[str, Any]:
    """`alto.synthesize`'s response: the synthesis itself, for a caller who may see the scope."""
    made = report.synthesis
    return {
        "scope": report.scope,
        **synthesis_facts(report),
        "skipped": report.skipped,
        "synthesis": None
        if made is None
        else {
            name: [{"text": e.text, "cites": list(e.cites)} for e in found]
            for name, found in made.elements.items()
        },
    }


class ReflectOrgan:
    """One entry's reflect organ, its pass queue, and what its entities and events show."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry_id: str,
        *,
        settings: AltoSettings,
        models: Mapping[str, Callable[[list[Message], Schema], Awaitable[str]]],
        memory: MemoryOrgan | None,
    ) -> None:
        """Use `build`; `models` maps each pass kind to its model call."""
        self._hass = hass
        self._entry_id = entry_id
        self._settings = settings
        self._models = dict(models)
        self._memory = memory
        self.reflector = Reflector(
            storage_dir(hass, entry_id) / "reflect",
            call_model=self._call_model,
            run_blocking=hass.async_add_executor_job,
            config=ReflectConfig(
                reflection_interval=settings.reflection_interval,
                synthesis_interval=settings.synthesis_interval,
            ),
        )
        self.runner = PassRunner(
            {N1: self._n1, REFLECT: self._reflect, SYNTHESIZE: self._synthesize},
            breather_s=settings.breather,
            on_result=self._on_result,
        )
        self.state = ReflectionState()
        self.costs = {kind: PassCost() for kind in _passes(settings)}
        self._claimed: set[tuple[str, int]] = set()  # noticings in a turn, not yet sent
        self._tiers: dict[str, int] = {}  # the pressure tier each scope was last at
        # scope -> monotonic time of its last turn, while a turn since its last reflection gives
        # a pass work
        self._unreflected: dict[str, float] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    @classmethod
    def build(
        cls,
        hass: HomeAssistant,
        entry_id: str,
        client: ollama.AsyncClient,
        settings: AltoSettings,
        memory: MemoryOrgan | None,
    ) -> ReflectOrgan:
        """The organ of an entry, each pass calling its own model with the entry's num_ctx."""
        models = {
            kind: call_model_for(client, chosen.model, num_ctx=settings.num_ctx)
            for kind, chosen in _passes(settings).items()
        }
        return cls(hass, entry_id, settings=settings, models=models, memory=memory)

    # -- lifecycle ---------------------------------------------------------------------------
    async def async_start(self) -> None:
        """Read the household's inbox and last pass times, then start the queue.

        A damaged household journal leaves the entities empty, never the setup failed.
        """
        try:
            status = await self.reflector.status(HOUSEHOLD)
            inbox = await self.reflector.inbox(HOUSEHOLD)
        except Exception as err:  # noqa: BLE001 - any journal failure: start without them
            LOGGER.warning("Reflect journal of the household unreadable: %s", err)
        else:
            self.state = ReflectionState(
                inbox=(*inbox.intrusive, *inbox.pending),
                last_reflection=_stored(status.last_reflection_at),
                last_synthesis=_stored(status.last_synthesis_at),
            )
        self.runner.start()

    @callback
    def async_listen(self) -> CALLBACK_TYPE:
        """The idle check, and closing the queue when Home Assistant stops; returns the stop."""
        stop_idle = async_track_time_interval(
            self._hass, self._async_idle_check, IDLE_CHECK, cancel_on_shutdown=True
        )
        stop_listening = self._hass.bus.async_listen(EVENT_HOMEASSISTANT_STOP, self._async_stop)
        # A forgotten memory's words leave the turn logs too (and all that cites those turns).
        stop_forgetting = (
            self._memory.async_on_forget(self.reflector.forget_texts)
            if self._memory is not None
            else None
        )

        @callback
        def stop() -> None:
            stop_idle()
            stop_listening()
            if stop_forgetting is not None:
                stop_forgetting()

        return stop

    async def _async_stop(self, _event: Event) -> None:
        await self.async_close()

    async def async_close(self) -> None:
        """Stop the queue and the pass in flight, and the follow-ups still running."""
        await self.runner.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- the turn ----------------------------------------------------------------------------
    @contextmanager
    def turn(self, user_id: str | None) -> Iterator[TurnReflector]:
        """One conversational turn: the passes wait while it runs (see the module docstring)."""
        self.runner.turn_started()
        reflector = TurnReflector(self, scope_of(user_id))
        try:
            yield reflector
        finally:
            self.runner.turn_finished()
            reflector.release()

    async def async_claim_noticing(self, scope: str) -> Observation | None:
        """The scope's most urgent intrusive item no other turn holds.

        Only if its cited turns are all still in the log (held for this turn until
        `async_record` or `release`); one whose turns are gone is dismissed, since it can no
        longer be checked against them.
        """
        intrusive = [
            item
            for item in (await self.reflector.inbox(scope)).intrusive
            if (scope, item.id) not in self._claimed
        ]
        if not intrusive:
            return None
        kept = {turn.n for turn in await self.reflector.turns(scope)}
        for item in intrusive:
            if set(item.turns) <= kept:
                self._claimed.add((scope, item.id))
                return item
            await self.reflector.dismiss(scope, [item.id])
            await self._async_inbox_changed(scope)
        return None

    @callback
    def release(self, scope: str, ids: Iterable[int]) -> None:
        """Items a turn held and did not deliver: intrusive again for the next turn."""
        self._claimed.difference_update((scope, i) for i in ids)

    @callback
    def note_pressure(self, scope: str, prompt_tokens: int) -> None:
        """Record the prompt's share of the context window; fire a warning on a new tier."""
        pressure = self.reflector.note_pressure(scope, prompt_tokens, self._settings.num_ctx)
        percent = round(pressure.ratio * 100, 1)
        self.state = replace(
            self.state,
            pressure=PressureRecord(
                percent, pressure.tier, prompt_tokens, pressure.num_ctx, scope != HOUSEHOLD
            ),
        )
        if pressure.tier and pressure.tier != self._tiers.get(scope):
            self._hass.bus.async_fire(
                EVENT_PRESSURE,
                {
                    "scope": scope,
                    "percent": percent,
                    "tier": pressure.tier,
                    "prompt_tokens": prompt_tokens,
                    "num_ctx": pressure.num_ctx,
                },
            )
        self._tiers[scope] = pressure.tier
        self._changed()

    async def async_record(
        self,
        scope: str,
        *,
        utterance: str,
        reply: str,
        outcomes: list[Outcome],
        conversation_id: str,
        delivered: tuple[int, ...],
    ) -> None:
        """Journal the exchange, move the delivered noticing to sent, queue what is due."""
        try:
            receipt = await self.reflector.record_turn(
                scope,
                utterance=utterance,
                reply=reply,
                outcomes=outcomes,
                conversation_id=conversation_id,
            )
            if delivered:
                await self.reflector.mark_sent(scope, delivered)
        except Exception as err:  # noqa: BLE001 - a journal failure never reaches the turn
            LOGGER.warning("Reflect turn log not written: %s", err)
            return
        finally:
            self.release(scope, delivered)
        if delivered:
            await self._async_inbox_changed(scope)
        due, passes = receipt.due, _passes(self._settings)
        if due.unreflected:  # small talk alone leaves nothing to reflect on, even when idle
            self._unreflected[scope] = time.monotonic()
        for kind, is_due in ((N1, due.n1), (REFLECT, due.reflection), (SYNTHESIZE, due.synthesis)):
            if is_due and passes[kind].enabled:
                self.runner.submit(kind, scope)

    # -- the passes --------------------------------------------------------------------------
    async def _call_model(self, messages: list[Message], schema: Schema) -> str:
        """The running pass's model call, timed for its cost."""
        run = _RUN.get()
        start = time.perf_counter()
        try:
            return await self._models[run.kind](messages, schema)
        finally:
            run.model_s += time.perf_counter() - start

    async def _run[T](self, kind: str, work: Callable[[], Awaitable[T]]) -> T:
        """Run one pass with its model.

        Its cost counts once it completes (a pass cancelled by a turn counts when it runs
        again).
        """
        run = _Run(kind)
        token = _RUN.set(run)
        start = time.perf_counter()
        try:
            result = await work()
        finally:
            _RUN.reset(token)
        cost = self.costs[kind]
        cost.runs += 1
        cost.total_s += time.perf_counter() - start
        cost.model_s += run.model_s
        return result

    async def _n1(self, scope: str) -> N1Report:
        return await self._run(N1, lambda: self.reflector.run_n1(scope))

    async def _reflect(self, scope: str) -> ReflectionReport:
        return await self._run(REFLECT, lambda: self.reflector.reflect(scope))

    async def _synthesize(self, scope: str) -> SynthesisReport | None:
        """The queued synthesis, with the trigger that made it due (None: no longer due)."""
        trigger = (await self.reflector.due(scope)).synthesis
        if trigger is None:
            return None
        return await self._run(
            SYNTHESIZE, lambda: self.reflector.synthesize(scope, trigger=trigger)
        )

    async def async_reflect(self, scope: str) -> ReflectionReport:
        """Reflect on the scope now (`alto.reflect`), outside the queue."""
        report = await self._run(REFLECT, lambda: self.reflector.reflect(scope))
        self._on_result(REFLECT, scope, report)
        return report

    async def async_synthesize(self, scope: str) -> SynthesisReport:
        """Synthesize the scope now (`alto.synthesize`), outside the queue."""
        report = await self._run(SYNTHESIZE, lambda: self.reflector.synthesize(scope))
        self._on_result(SYNTHESIZE, scope, report)
        return report

    @callback
    def _on_result(self, kind: str, scope: str, result: object) -> None:
        """A pass completed: its events, its nominations to memory intake, the entities."""
        if isinstance(result, N1Report):
            for item in result.observations:
                self._hass.bus.async_fire(EVENT_OBSERVATION, _observation_event(scope, item))
            self._nominate(scope, result.nominations)
            if result.observations:
                self.background(self._async_inbox_changed(scope), "alto_reflect_inbox")
        elif isinstance(result, ReflectionReport):
            first, last = result.covered
            if first > last:
                return  # nothing new to reflect on: no pass ran
            self._unreflected.pop(scope, None)
            facts = reflection_facts(result)
            self._hass.bus.async_fire(EVENT_REFLECTION, {"scope": scope, **facts})
            self._nominate(scope, result.nominations)
            record = PassRecord(dt_util.utcnow(), scope != HOUSEHOLD, facts)
            self.state = replace(self.state, last_reflection=record)
            self._changed()
        elif isinstance(result, SynthesisReport) and result.skipped is None:
            facts = synthesis_facts(result)
            self._hass.bus.async_fire(EVENT_SYNTHESIS, {"scope": scope, **facts})
            record = PassRecord(dt_util.utcnow(), scope != HOUSEHOLD, facts)
            self.state = replace(self.state, last_synthesis=record)
            self._changed()

    @callback
    def _nominate(self, scope: str, nominations: Iterable[Nomination]) -> None:
        """Hand each nominated quote to memory intake as the scope's own words."""
        if self._memory is None or not (found := list(nominations)):
            return
        self.background(self._async_nominate(self._memory, scope, found), "alto_reflect_intake")

    @staticmethod
    async def _async_nominate(memory: MemoryOrgan, scope: str, found: list[Nomination]) -> None:
        actor = None if scope == HOUSEHOLD else scope
        for nomination in found:
            # One source per quoted turn and quote: a nomination made again is the same source,
            # which intake refuses as a duplicate.
            source_id = f"reflect/{scope}/{nomination.turn}/{_digest(nomination.quote)}"
            await memory.async_intake_turn(nomination.quote, source_id=source_id, actor=actor)

    async def _async_idle_check(self, _now: datetime) -> None:
        """Queue a reflection for each scope quiet since `IDLE_REFLECTION_S`.

        Only a scope with turns since its last reflection (an empty one makes no model call).
        """
        if not self._settings.reflection.enabled:
            return
        now = time.monotonic()
        for scope, last in list(self._unreflected.items()):
            if now - last >= IDLE_REFLECTION_S:
                del self._unreflected[scope]
                self.runner.submit(REFLECT, scope)

    # -- the inbox list and the other entities -----------------------------------------------
    async def async_complete(self, ids: Iterable[int]) -> None:
        """Household items checked off in the list: done."""
        await self.reflector.complete(HOUSEHOLD, ids)
        await self._async_refresh()

    async def async_dismiss(self, ids: Iterable[int]) -> None:
        """Household items deleted from the list: removed unread."""
        await self.reflector.dismiss(HOUSEHOLD, ids)
        await self._async_refresh()

    async def async_purge(self, scope: str) -> None:
        """Delete one user's turn log and all derived from it (`alto.purge`)."""
        await self.reflector.purge(scope)
        self._unreflected.pop(scope, None)
        self._tiers.pop(scope, None)
        self._changed()

    async def _async_inbox_changed(self, scope: str) -> None:
        """A scope's inbox changed: the household's is read again for the entities.

        A private one's only tells the listeners (the panel reads it per viewer).
        """
        if scope == HOUSEHOLD:
            await self._async_refresh()
        else:
            self._changed()

    async def _async_refresh(self) -> None:
        """Read the household's open items again and tell the entities."""
        inbox = await self.reflector.inbox(HOUSEHOLD)
        self.state = replace(self.state, inbox=(*inbox.intrusive, *inbox.pending))
        self._changed()

    @callback
    def _changed(self) -> None:
        async_dispatcher_send(self._hass, signal_reflection(self._entry_id))

    def background(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run `work` as an HA background task, cancelled when the entry unloads."""
        task = self._hass.async_create_background_task(work, name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def async_diagnostics(self) -> dict[str, Any]:
        """Per scope counts (private scopes numbered, never named), the queue, pass costs."""
        root = storage_dir(self._hass, self._entry_id) / "reflect"

        def scopes() -> list[str]:
            found = [p.stem for p in root.glob("*.jsonl")] if root.is_dir() else []
            return sorted(s for s in found if valid_scope(s))

        found = await self._hass.async_add_executor_job(scopes)
        private = iter(range(1, len(found) + 1))
        counted: dict[str, Any] = {}
        for scope in sorted(found, key=lambda s: s != HOUSEHOLD):
            name = scope if scope == HOUSEHOLD else f"private_{next(private)}"
            try:
                status = await self.reflector.status(scope)
            except Exception as err:  # noqa: BLE001 - a damaged journal is what to report
                counted[name] = {"error": type(err).__name__}
                continue
            counted[name] = {
                "turns": status.turns,
                "last_turn": status.last_turn,
                "intrusive": status.intrusive,
                "pending": status.pending,
                "sent": status.sent,
                "ledger_lines": status.ledger_lines,
                "reflected": status.last_reflection_at is not None,
                "synthesized": status.last_synthesis_at is not None,
                "pressure_tier": status.pressure.tier if status.pressure else None,
            }
        return {
            "scopes": counted,
            "queued": [kind for kind, _scope in self.runner.queued],
            "running": self.runner.running[0] if self.runner.running else None,
            "passes": {kind: cost.as_dict() for kind, cost in self.costs.items()},
        }


class TurnReflector:
    """The reflect organ as one turn sees it (from `ReflectOrgan.turn`)."""

    def __init__(self, organ: ReflectOrgan, scope: str) -> None:
        """Bind to the speaker's scope (a user id that is no scope gets nothing)."""
        self._organ = organ
        self._scope = scope if valid_scope(scope) else None
        self._held: tuple[int, ...] = ()
        self._handed_over = False

    async def async_context(self) -> TurnReflection:
        """Frame of mind, impressions and a noticing from the speaker's scope.

        Nothing when its journal cannot be read (the turn goes on without them).
        """
        scope, reflector = self._scope, self._organ.reflector
        if scope is None:
            return TurnReflection()
        try:
            frame = await reflector.frame_of_mind(scope)
            impressions = await reflector.impressions(scope)
            item = await self._organ.async_claim_noticing(scope)
        except Exception as err:  # noqa: BLE001 - the turn never fails for its reflections
            LOGGER.warning("Reflect context unavailable for this turn: %s", err)
            return TurnReflection()
        if item is None:
            return TurnReflection(frame, impressions)
        self._held = (item.id,)
        private_to = None if scope == HOUSEHOLD else scope
        entry = BufferEntry("assistant", noticing(item.content), "thought", private_to=private_to)
        return TurnReflection(frame, impressions, (entry,))

    @callback
    def finished(
        self,
        *,
        utterance: str,
        reply: str,
        outcomes: Iterable[SpanOutcome],
        conversation_id: str,
        prompt_tokens: int | None,
    ) -> None:
        """The reply was given: record it in the background (see the module docstring)."""
        organ, scope = self._organ, self._scope
        if scope is None:
            return
        if prompt_tokens is not None:
            organ.note_pressure(scope, prompt_tokens)
        self._handed_over = True
        organ.background(
            organ.async_record(
                scope,
                utterance=utterance,
                reply=reply,
                outcomes=[_outcome(o) for o in outcomes],
                conversation_id=conversation_id,
                delivered=self._held,
            ),
            "alto_reflect_record",
        )

    def release(self) -> None:
        """The turn ended without a reply: its noticing stays intrusive for the next turn."""
        if not self._handed_over and self._scope is not None:
            self._organ.release(self._scope, self._held)


def _observation_event(scope: str, item: Observation) -> dict[str, Any]:
    return {
        "scope": scope,
        "id": item.id,
        "urgency": item.urgency.value,
        "mandate": item.mandate.value,
        "box": item.box.value,
        "turns": list(item.turns),
        "source": item.source,
    }


def _stored(at: int | None) -> PassRecord | None:
    """A household pass time read back from its journal (its counts were not kept)."""
    return None if at is None else PassRecord(dt_util.utc_from_timestamp(at), False, {})
