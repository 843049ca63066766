"""`Reflector`: the reflect organ's one object. Every method takes the scope it works on.

Scopes are isolated by construction: each has its own journal file and state, and a pass reads
and writes only the scope it was given, so a private scope's turns never reach another scope's
prompt, inbox, ledgers or synthesis. A scope is loaded (verified and folded, see ``log``) on
first use.

Writes: every mutation is one journal entry, built from the state under the scope's write lock,
journaled (fsync'd, through `run_blocking`), then applied to the state. The write runs shielded:
cancelling a caller never cancels a write half way, so the journal and the state always agree.
A pass computes everything before its one write, so a cancelled pass (a conversational turn
preempting it) has written nothing, or all; run again, it resumes from its cursor and never
reads a turn twice. Each pass kind runs at most once at a time per scope; calls queue.

Model calls go through the injected `call_model` (`model.calls.CallModel`: messages and a JSON
schema in, raw text out) under `call_timeout_s`. A failure, a timeout or a malformed answer is
a refusal: N+1 falls back to its heuristics, reflection and synthesis commit nothing and report
why (a failed reflection is not due again for another reflection interval of turns, a failed
synthesis for `pressure_min_new` turns). Cancellation is not a failure and propagates.

A pass is due (`due`, and the receipt of each recorded turn) only when a turn it has not read
gives it work (`heuristics.gives_work`): small talk alone never costs a model call, and an N+1
pass passes over the unread turns before the first that does.

Retention: a scope keeps its newest `retention` turns; recording one more drops the oldest (the
``turn`` entry names it). Its text leaves the disk at the next compaction, at most
`compact_every` entries later; forgetting compacts at once, and purging deletes the file.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..memory.reasons import Reason, Refusal
from ..model.calls import CallModel, Message
from . import n1, reflection, synthesis
from .config import ReflectConfig
from .frame import frame_line
from .heuristics import gives_work
from .log import ScopeLog
from .records import (
    MAX_TURN_TEXT,
    Box,
    Ledger,
    LedgerEntry,
    Nomination,
    Observation,
    Outcome,
    Synthesis,
    Turn,
    conversation_digest,
    valid_scope,
)
from .reflection import ReflectionReport
from .reports import Due, InboxView, N1Report, ScopeStatus, TurnReceipt
from .state import ScopeState
from .strict import Malformed
from .synthesis import Pressure, SynthesisReport

type Clock = Callable[[], float]
type RunBlocking = Callable[[Callable[[], Any]], Awaitable[Any]]
type Build = Callable[[ScopeState, int], dict[str, Any] | None]


async def _inline(function: Callable[[], Any]) -> Any:
    return function()


@dataclass(slots=True)
class _Scope:
    log: ScopeLog
    state: ScopeState
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    passes: dict[str, asyncio.Lock] = field(
        default_factory=lambda: {kind: asyncio.Lock() for kind in ("n1", "reflect", "synth")}
    )
    failed_reflection_at: int = -(10**9)  # `last_turn` when a reflection last failed
    failed_synthesis_at: int = -(10**9)
    # Numbers of the turns that give a pass work (`heuristics.gives_work`), found once per turn;
    # one no longer kept (forgotten, dropped by retention) may stay: only kept turns are read.
    worked: set[int] = field(default_factory=set)

    def work_after(self, cursor: int) -> bool:
        """Whether a turn after `cursor` gives a pass work."""
        return any(n > cursor for n in self.worked)


def _urgent_first(items: Iterable[Observation]) -> tuple[Observation, ...]:
    return tuple(sorted(items, key=lambda o: (-o.urgency.rank, o.id)))


class Reflector:
    """The reflect organ over one directory of per-scope journals."""

    def __init__(
        self,
        root: Path | str,
        *,
        call_model: CallModel,
        clock: Clock = time.time,
        run_blocking: RunBlocking = _inline,
        config: ReflectConfig | None = None,
    ) -> None:
        """Bind to `root` (created on the first write), a model adapter and a clock."""
        self._root = Path(root)
        self._call_model = call_model
        self._clock = clock
        self._run_blocking = run_blocking
        self.config = config or ReflectConfig()
        self._scopes: dict[str, _Scope] = {}
        self._opening = asyncio.Lock()
        self._pressure: dict[str, Pressure] = {}

    # -- scopes and writes -------------------------------------------------------------------
    async def _scope(self, scope: str) -> _Scope:
        if not valid_scope(scope):
            raise ValueError(f"not a scope: {scope!r}")
        if (found := self._scopes.get(scope)) is not None:
            return found
        async with self._opening:
            if (found := self._scopes.get(scope)) is None:
                log = ScopeLog(self._root, scope)
                state = await self._run_blocking(log.load)
                worked = await self._run_blocking(partial(_worked, state.turns_after(0)))
                found = self._scopes[scope] = _Scope(log, state, worked=worked)
        return found

    async def _commit(self, held: _Scope, build: Build) -> dict[str, Any] | None:
        """Build, journal and apply one entry, shielded from the caller's cancellation.

        None when `build` declines or the scope was purged since `held` was taken.
        """
        return await asyncio.shield(self._write(held, build))

    async def _write(self, held: _Scope, build: Build) -> dict[str, Any] | None:
        async with held.lock:
            if self._scopes.get(held.log.scope) is not held:
                return None
            at = int(self._clock())
            body = build(held.state, at)
            if body is None:
                return None
            body = {**body, "scope": held.log.scope, "at": at}
            entry: dict[str, Any] = await self._run_blocking(partial(held.log.append, body))
            held.state.apply(entry)
            if body["op"] == "forget" or held.log.count >= self.config.compact_every:
                await self._run_blocking(partial(held.log.compact, held.state, at))
            return entry

    async def _ask[T](
        self, messages: list[Message], schema: dict[str, Any], parse: Callable[[str], T]
    ) -> tuple[str | None, T | None, Refusal | None]:
        """(raw answer, parse, None), or (raw or None, None, refusal); cancellation propagates."""
        try:
            async with asyncio.timeout(self.config.call_timeout_s):
                raw = await self._call_model(messages, schema)
        except TimeoutError:
            return None, None, Refusal(Reason.MODEL_CALL_FAILED, detail="timeout")
        except Exception as err:  # noqa: BLE001 - any substrate failure is a failed call
            return None, None, Refusal(Reason.MODEL_CALL_FAILED, detail=type(err).__name__)
        try:
            return raw, parse(raw), None
        except Malformed as malformed:
            return raw, None, malformed.refusal

    # -- the turn log ------------------------------------------------------------------------
    async def record_turn(
        self,
        scope: str,
        *,
        utterance: str,
        reply: str,
        outcomes: Sequence[Outcome],
        conversation_id: str,
    ) -> TurnReceipt:
        """Journal one finished exchange.

        The person's utterance, Alto's spoken reply, the effector's outcomes (never the
        model's words about them). Texts are cut at `MAX_TURN_TEXT` characters; a lone
        surrogate becomes "?".
        """
        held = await self._scope(scope)
        retention = max(1, self.config.retention)

        def build(state: ScopeState, at: int) -> dict[str, Any]:
            turn = Turn(
                state.next_turn,
                at,
                _text(utterance),
                _text(reply),
                tuple(outcomes),
                conversation_digest(conversation_id),
            )
            kept = sorted(state.turns)
            drop = kept[: max(0, len(kept) + 1 - retention)]
            return {"op": "turn", "turn": turn.to_json(), "drop": drop}

        entry = await self._commit(held, build)
        if entry is None:  # purged meanwhile: the turn belongs to the new, empty log
            return await self.record_turn(
                scope,
                utterance=utterance,
                reply=reply,
                outcomes=outcomes,
                conversation_id=conversation_id,
            )
        n = entry["turn"]["n"]
        held.worked.difference_update(entry["drop"])
        if (turn := held.state.turns.get(n)) is not None and gives_work(turn):
            held.worked.add(n)
        return TurnReceipt(n, self._due(held))

    async def turns(self, scope: str) -> tuple[Turn, ...]:
        """The kept turns of a scope, oldest first."""
        held = await self._scope(scope)
        return tuple(held.state.turns_after(0))

    async def frame_of_mind(self, scope: str) -> str:
        """The system prompt's frame-of-mind line, from the time since the last kept turn."""
        last = (await self._scope(scope)).state.last_turn_at
        return frame_line(None if last is None else self._clock() - last)

    # -- due ---------------------------------------------------------------------------------
    def _due(self, held: _Scope) -> Due:
        state, config = held.state, self.config
        since_reflection = state.last_turn - state.reflection_cursor
        new = state.last_turn - state.synthesis_cursor
        pressure = self._pressure.get(held.log.scope)
        trigger = None
        if state.last_turn - held.failed_synthesis_at >= config.pressure_min_new:
            if new >= config.synthesis_interval:
                trigger = "interval"
            elif pressure and pressure.tier >= config.pressure_tier:
                trigger = "pressure" if new >= config.pressure_min_new else None
        # A pass is due only when a turn it has not read gives it work: small talk alone
        # makes no model call, however many turns of it there are.
        unreflected = held.work_after(state.reflection_cursor)
        return Due(
            n1=held.work_after(state.n1_cursor),
            reflection=unreflected
            and since_reflection >= config.reflection_interval
            and state.last_turn - held.failed_reflection_at >= config.reflection_interval,
            synthesis=trigger if held.work_after(state.synthesis_cursor) else None,
            unreflected=unreflected,
        )

    async def due(self, scope: str) -> Due:
        """The passes the scope is due for now."""
        return self._due(await self._scope(scope))

    def note_pressure(self, scope: str, prompt_eval_count: int, num_ctx: int) -> Pressure:
        """Record the latest conversational prompt's share of the context window."""
        if not valid_scope(scope):
            raise ValueError(f"not a scope: {scope!r}")
        pressure = self._pressure[scope] = Pressure(max(0, prompt_eval_count), num_ctx)
        return pressure

    # -- N+1 and the inbox -------------------------------------------------------------------
    async def run_n1(self, scope: str) -> N1Report:
        """Observe the turns after the N+1 cursor (at most `n1_batch`).

        Always journals a record for them (the heartbeat when nothing is noted).
        """
        held = await self._scope(scope)
        async with held.passes["n1"]:
            unread = held.state.turns_after(held.state.n1_cursor)
            # Unread turns before the first that gives work are passed over: nothing in them
            # is there to note, and the batch then reaches the turn that made the pass due.
            first = next((i for i, t in enumerate(unread) if t.n in held.worked), 0)
            turns = unread[first : first + self.config.n1_batch]
            if not turns:
                return N1Report(scope, (), (), (), "none")
            commitments = [e for e in held.state.open_entries() if e.ledger is Ledger.COMMITMENTS]
            raw, answer, refusal = await self._ask(
                n1.n1_messages(turns, commitments),
                n1.n1_schema([t.n for t in turns]),
                partial(n1.parse_n1, turns=turns),
            )
            drafts = n1.drafts(turns, answer)
            source = "model" if answer else "heuristic"
            nominations = answer.nominations if answer else ()

            def build(state: ScopeState, at: int) -> dict[str, Any]:
                kept = [x for x in nominations if x.turn in state.turns]
                return {
                    "op": "n1",
                    "through": turns[-1].n,
                    "turns": [t.n for t in turns],
                    "source": source,
                    "refusal": refusal.reason.value if refusal else None,
                    "response": _recordable(raw, n1.MAX_ANSWER_BYTES),
                    "observations": [o.to_json() for o in n1.inbox_items(state, drafts, at)],
                    "nominations": [x.to_json() for x in kept],
                }

            entry = await self._commit(held, build)
        if entry is None:
            return N1Report(scope, (), (), (), "none")
        return N1Report(
            scope,
            tuple(entry["turns"]),
            tuple(Observation.from_json(o) for o in entry["observations"]),
            tuple(Nomination(x["turn"], x["quote"]) for x in entry["nominations"]),
            source,
            entry["refusal"],
        )

    async def inbox(self, scope: str) -> InboxView:
        """The scope's three boxes."""
        state = (await self._scope(scope)).state
        return InboxView(
            _urgent_first(state.box(Box.INTRUSIVE)),
            tuple(state.box(Box.PENDING)),
            tuple(state.box(Box.SENT)),
        )

    async def peek_intrusive(self, scope: str, limit: int = 1) -> tuple[Observation, ...]:
        """The most urgent intrusive items (oldest first among equals), left in place."""
        return (await self.inbox(scope)).intrusive[:limit]

    async def mark_sent(self, scope: str, ids: Iterable[int]) -> tuple[int, ...]:
        """Move delivered items of this scope to sent; returns the ids moved."""
        wanted = set(ids)

        def choose(state: ScopeState) -> list[int]:
            return [i for i, o in state.inbox.items() if i in wanted and o.box is not Box.SENT]

        return await self._inbox_action(scope, "sent", choose)

    async def take_intrusive(self, scope: str, limit: int = 1) -> tuple[Observation, ...]:
        """The next turn's intrusive items of this scope, moved to sent in the same write."""
        held = await self._scope(scope)
        taken: list[Observation] = []

        def build(state: ScopeState, at: int) -> dict[str, Any] | None:
            taken[:] = _urgent_first(state.box(Box.INTRUSIVE))[:limit]
            ids = [o.id for o in taken]
            return {"op": "inbox", "action": "sent", "ids": ids} if ids else None

        await self._commit(held, build)
        return tuple(taken)

    async def dismiss(self, scope: str, ids: Iterable[int]) -> tuple[int, ...]:
        """Remove items of this scope from the inbox, unread; returns the ids removed."""
        return await self._remove(scope, "dismissed", ids)

    async def complete(self, scope: str, ids: Iterable[int]) -> tuple[int, ...]:
        """Remove items of this scope as done (a todo item checked); returns the ids removed."""
        return await self._remove(scope, "completed", ids)

    async def _remove(self, scope: str, action: str, ids: Iterable[int]) -> tuple[int, ...]:
        wanted = set(ids)
        return await self._inbox_action(
            scope, action, lambda state: [i for i in state.inbox if i in wanted]
        )

    async def _inbox_action(
        self, scope: str, action: str, choose: Callable[[ScopeState], list[int]]
    ) -> tuple[int, ...]:
        held = await self._scope(scope)

        def build(state: ScopeState, at: int) -> dict[str, Any] | None:
            ids = choose(state)
            return {"op": "inbox", "action": action, "ids": ids} if ids else None

        entry = await self._commit(held, build)
        return tuple(entry["ids"]) if entry else ()

    # -- N+25 reflection ---------------------------------------------------------------------
    async def reflect(self, scope: str) -> ReflectionReport:
        """Reflect on the turns after the reflection cursor (see ``reflection``)."""
        held = await self._scope(scope)
        async with held.passes["reflect"]:
            state = held.state
            turns = reflection.batch(state, self.config.reflection_batch, self.config.prompt_budget)
            ledger = reflection.shown_ledger(state)
            investigated = dict(Counter(e.ledger.value for e in state.open_entries()))
            if not turns:
                empty = (state.reflection_cursor + 1, state.reflection_cursor)
                return ReflectionReport(scope, empty, investigated, exited_cleanly=True)
            covered = (turns[0].n, turns[-1].n)
            open_ids = [e.id for e in ledger]
            raw, answer, refusal = await self._ask(
                reflection.reflection_messages(turns, ledger),
                reflection.reflection_schema([t.n for t in turns], open_ids),
                partial(reflection.parse_reflection, turns=turns, open_ids=open_ids),
            )
            if answer is None:
                held.failed_reflection_at = state.last_turn
                why = refusal.reason.value if refusal else None
                return ReflectionReport(scope, covered, investigated, refusal=why)
            reviewed: list[reflection.Reviewed] = []

            def build(state: ScopeState, at: int) -> dict[str, Any]:
                result = reflection.review(
                    state, answer.items, at=at, stale_after=self.config.stale_after_s
                )
                reviewed.append(result)
                return {
                    "op": "reflection",
                    "from": covered[0],
                    "through": covered[1],
                    "response": raw,
                    "stale_after": self.config.stale_after_s,
                    "entries": [e.to_json() for e in result.entries],
                    "nominations": [
                        x.to_json() for x in answer.nominations if x.turn in state.turns
                    ],
                    "dropped": [list(d) for d in result.dropped],
                }

            entry = await self._commit(held, build)
        if entry is None:
            return ReflectionReport(scope, covered, investigated, extracted=len(answer.items))
        return ReflectionReport(
            scope,
            covered,
            investigated,
            extracted=len(answer.items),
            appended=reviewed[0].entries,
            dropped=reviewed[0].dropped,
            nominations=tuple(Nomination(x["turn"], x["quote"]) for x in entry["nominations"]),
            exited_cleanly=True,
        )

    async def ledgers(self, scope: str) -> dict[Ledger, tuple[LedgerEntry, ...]]:
        """Every kept ledger line of the scope, per ledger, oldest first."""
        state = (await self._scope(scope)).state
        return {
            ledger: tuple(e for e in state.ledger.values() if e.ledger is ledger)
            for ledger in Ledger
        }

    # -- N+100 synthesis ---------------------------------------------------------------------
    async def synthesize(self, scope: str, *, trigger: str = "demand") -> SynthesisReport:
        """Synthesize what is new since the last synthesis (see ``synthesis``)."""
        held = await self._scope(scope)
        async with held.passes["synth"]:
            state = held.state
            covered = (state.synthesis_cursor + 1, state.last_turn)
            if not synthesis.has_new(state):
                return SynthesisReport(scope, trigger, covered, skipped="nothing_new")
            turns, ledger = synthesis.shown(state, self.config.prompt_budget)
            refs = [f"T{t.n}" for t in turns] + [f"L{e.id}" for e in ledger]
            ledger_through = max(state.ledger, default=0)
            previous = state.syntheses[-1] if state.syntheses else None
            raw, elements, refusal = await self._ask(
                synthesis.synthesis_messages(turns, ledger, previous),
                synthesis.synthesis_schema(refs),
                synthesis.parse_synthesis,
            )
            if elements is None:
                held.failed_synthesis_at = state.last_turn
                why = refusal.reason.value if refusal else None
                return SynthesisReport(scope, trigger, covered, refusal=why)
            pressure = self._pressure.get(scope)
            made: list[tuple[Synthesis, int]] = []

            def build(state: ScopeState, at: int) -> dict[str, Any]:
                kept, dropped = synthesis.resolve(state, elements, covered)
                made.append((Synthesis(covered, ledger_through, at, trigger, kept), dropped))
                return {
                    "op": "synthesis",
                    "synthesis": made[0][0].to_json(),
                    "response": raw,
                    "dropped": dropped,
                    "pressure": round(pressure.ratio * 1000) if pressure else None,
                }

            entry = await self._commit(held, build)
        if entry is None:
            return SynthesisReport(scope, trigger, covered)
        return SynthesisReport(scope, trigger, covered, made[0][0], made[0][1])

    async def latest_synthesis(self, scope: str) -> Synthesis | None:
        """The scope's newest kept synthesis, or None when it has none."""
        state = (await self._scope(scope)).state
        return state.syntheses[-1] if state.syntheses else None

    async def impressions(self, scope: str) -> str:
        """The system prompt's "Alto's impressions" section for this scope, or ""."""
        state = (await self._scope(scope)).state
        return synthesis.render(state.syntheses[-1]) if state.syntheses else ""

    # -- forgetting --------------------------------------------------------------------------
    async def forget_turns(self, scope: str, numbers: Iterable[int]) -> tuple[int, ...]:
        """Forget turns of this scope and all that cites them; the file is compacted at once."""
        wanted = set(numbers)
        return await self._forget(scope, lambda state: sorted(wanted & set(state.turns)))

    async def forget_conversation(self, scope: str, conversation_id: str) -> tuple[int, ...]:
        """Forget this scope's turns of one conversation (see `forget_turns`)."""
        digest = conversation_digest(conversation_id)
        return await self._forget(
            scope, lambda state: [n for n, t in state.turns.items() if t.conversation == digest]
        )

    async def forget_texts(self, scope: str, texts: Collection[str]) -> tuple[int, ...]:
        """Forget this scope's turns whose utterance or reply holds one of `texts`.

        `texts` are the words of a forgotten memory (see `forget_turns`). A scope without a log
        is left without one.
        """
        if not texts or not valid_scope(scope):
            return ()

        def holding(state: ScopeState) -> list[int]:
            return sorted(
                n
                for n, turn in state.turns.items()
                if any(text in turn.utterance or text in turn.reply for text in texts)
            )

        return await self._forget(scope, holding)

    async def _forget(
        self, scope: str, choose: Callable[[ScopeState], list[int]]
    ) -> tuple[int, ...]:
        held = await self._scope(scope)

        def build(state: ScopeState, at: int) -> dict[str, Any] | None:
            numbers = choose(state)
            return {"op": "forget", "turns": numbers} if numbers else None

        entry = await self._commit(held, build)
        return tuple(entry["turns"]) if entry else ()

    async def purge(self, scope: str) -> None:
        """Delete everything of one scope: its file, its state, its pressure reading."""
        if not valid_scope(scope):
            raise ValueError(f"not a scope: {scope!r}")
        await asyncio.shield(self._purge(scope))

    async def _purge(self, scope: str) -> None:
        async with self._opening:
            held = self._scopes.get(scope)
            log = held.log if held else ScopeLog(self._root, scope)
            if held is None:
                await self._run_blocking(log.delete)
            else:
                async with held.lock:
                    del self._scopes[scope]
                    await self._run_blocking(log.delete)
            self._pressure.pop(scope, None)

    # -- status ------------------------------------------------------------------------------
    async def status(self, scope: str) -> ScopeStatus:
        """Counts and times of the scope, for sensors (no text)."""
        state = (await self._scope(scope)).state
        return ScopeStatus(
            turns=len(state.turns),
            last_turn=state.last_turn,
            intrusive=len(state.box(Box.INTRUSIVE)),
            pending=len(state.box(Box.PENDING)),
            sent=len(state.box(Box.SENT)),
            ledger_lines=len(state.ledger),
            last_reflection_at=state.last_reflection_at,
            last_synthesis_at=state.last_synthesis_at,
            pressure=self._pressure.get(scope),
        )


def _worked(turns: Iterable[Turn]) -> set[int]:
    """The numbers of the turns that give a pass work."""
    return {t.n for t in turns if gives_work(t)}


def _text(text: str) -> str:
    return text[:MAX_TURN_TEXT].encode("utf-8", "replace").decode("utf-8")


def _recordable(raw: str | None, bound: int) -> str | None:
    """A raw answer as the journal keeps it.

    None when absent, over `bound` bytes or not UTF-8 (a refused answer can be either; an
    accepted one never is).
    """
    try:
        return raw if raw is not None and len(raw.encode("utf-8")) <= bound else None
    except UnicodeEncodeError:
        return None
