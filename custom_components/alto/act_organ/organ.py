"""The action organ in Home Assistant: span → executor → guard → consent tier → effector.

Every captured span ends in exactly one verdict, fired on the bus (`alto_intent_captured`) and
on `event.alto_intents`. Only effector success yields a breadcrumb; a span that did not execute
is never recorded as done. A span that names no action (`_names_an_action`) is refused
(`names_no_action`) before the executor is asked: no model call for small talk written as an
action.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import ollama
from homeassistant.components import persistent_notification
from homeassistant.core import CALLBACK_TYPE, Context, HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.helpers.event import async_call_later

from ..act.confirm import parse_confirmation
from ..act.executor import Message, propose
from ..act.guard import validate_state_query, validate_tool_call
from ..act.mentions import Mentions, opens_with_a_command
from ..act.model import (
    CALL_SERVICE_TOOL,
    ExposedEntity,
    GuardReason,
    GuardRefusal,
    Proposal,
    Registry,
    StateQuery,
    ValidatedCall,
)
from ..act.readable import readable_state
from ..act.tiers import READ_TIER, Tier, tier_for
from ..const import DOMAIN, LOGGER
from ..errors import async_phrase
from ..model_client import described
from ..prompt import breadcrumb
from ..settings import AltoSettings
from .commands import async_reads_as_command
from .effector import async_execute
from .exposure import ExposureIndex

EVENT_INTENT_CAPTURED = "alto_intent_captured"
CONFIRM_TIMEOUT_S = 60.0


class IntentVerdict(StrEnum):
    """How a captured span ended; also the event types of `event.alto_intents`."""

    EXECUTED = "executed"
    REFUSED = "refused"
    AWAITING_CONFIRMATION = "awaiting_confirmation"
    CONFIRMED = "confirmed"
    DECLINED = "declined"
    FAILED = "failed"


def signal_intent(entry_id: str) -> str:
    """Dispatcher signal the event entity listens on."""
    return f"{DOMAIN}_{entry_id}_intent"


@dataclass(slots=True)
class SpanOutcome:
    """What became of one span."""

    span: str
    verdict: IntentVerdict
    entity_id: str | None = None
    service: str | None = None
    tier: Tier | None = None
    reason: str = ""
    state: str | None = None  # a validated read: the entity's state, for the follow-up call
    question: str | None = None  # confirm-first: what Alto asks the user
    breadcrumb: str | None = None  # effector success only


@dataclass(slots=True)
class _Pending:
    call: ValidatedCall
    span: str
    tier: Tier
    user_id: str | None  # the requester: only they, on the same device, can answer
    device_id: str | None
    cancel_timeout: CALLBACK_TYPE | None = field(default=None)


# A held call's key: its conversation and its requester (HA user id, device id). Each requester
# holds their own: someone else in the conversation can neither answer nor replace it.
type _HeldKey = tuple[str, str | None, str | None]


@dataclass(frozen=True, slots=True)
class TurnContext:
    """Who speaks, where, in which conversation."""

    context: Context
    conversation_id: str
    device_id: str | None
    language: str

    @property
    def held_key(self) -> _HeldKey:
        """Where this speaker's held call is kept: their own, in this conversation."""
        return (self.conversation_id, self.context.user_id, self.device_id)


class ActOrgan:
    """The only part of Alto that knows Home Assistant services exist."""

    def __init__(
        self,
        hass: HomeAssistant,
        *,
        entry_id: str,
        index: ExposureIndex,
        client: ollama.AsyncClient,
        model: str,
        keep_alive: str,
        num_ctx: int,
        timeout: float,
        tiers: Mapping[str, str],
        overrides: Mapping[str, Tier] | None = None,
        conversation_model: str | None = None,
    ) -> None:
        """Use `build`; bind to one entry's client, model, model timeout and consent tiers.

        ``tiers`` are the options' tiers by domain, ``overrides`` the user's by entity id.
        ``conversation_model`` is the conversational call's model: when it is the executor's, the
        executor's prompt begins with the conversation's (`act.executor.propose`).
        """
        self._hass = hass
        self._entry_id = entry_id
        self.index = index
        self._client = client
        self._model = model
        self._conversation_model = conversation_model
        self._keep_alive = keep_alive
        self._num_ctx = num_ctx
        self._timeout = timeout
        self._tiers = dict(tiers)
        self._overrides = dict(overrides or {})
        self._pending: dict[_HeldKey, _Pending] = {}
        self._mentions: tuple[Registry, Mentions] | None = None

    @classmethod
    def build(
        cls,
        hass: HomeAssistant,
        entry_id: str,
        client: ollama.AsyncClient,
        settings: AltoSettings,
        index: ExposureIndex,
    ) -> ActOrgan:
        """The organ of an entry: its executor model, timeouts and consent tiers from `settings`.

        The tiers are the options' per domain, and the user's per entity as overrides.
        """
        return cls(
            hass,
            entry_id=entry_id,
            index=index,
            client=client,
            model=settings.action_model,
            conversation_model=settings.model,
            keep_alive=settings.keep_alive,
            num_ctx=settings.num_ctx,
            timeout=settings.request_timeout,
            tiers=settings.consent,
            overrides=settings.entity_consent,
        )

    @callback
    def async_shutdown(self) -> None:
        """Forget held calls and their timers (entry unload)."""
        for pending in self._pending.values():
            if pending.cancel_timeout:
                pending.cancel_timeout()
        self._pending.clear()

    def tier_of(self, call: ValidatedCall | StateQuery) -> Tier:
        """The consent tier of a validated call (reads are always autonomous)."""
        entity = self.index.registry.get(call.entity_id)
        if isinstance(call, StateQuery) or entity is None:
            return READ_TIER
        return self.tier_of_entity(entity)

    def tier_of_entity(self, entity: ExposedEntity) -> Tier:
        """The consent tier of a service call on ``entity``, with this entry's tiers."""
        return tier_for(entity, self._tiers, overrides=self._overrides)

    def check(self, proposal: Proposal) -> ValidatedCall | StateQuery | GuardRefusal:
        """Guard a raw proposal against the current registry (no execution)."""
        registry = self.index.registry
        if proposal.tool == CALL_SERVICE_TOOL:
            return validate_tool_call(registry, proposal)
        return validate_state_query(registry, proposal)

    async def async_handle_spans(
        self, spans: list[str], turn: TurnContext, *, prompt: Sequence[Message] = ()
    ) -> list[SpanOutcome]:
        """Dispatch every span of one reply; never raises.

        `prompt` is the conversational call's messages, exactly as sent: the executor's prompt
        begins with them when it runs on the same model, so the server's prompt cache still
        holds the conversation afterwards.

        At most one confirm-first call is held per reply: one question, one answer. A later
        confirm-first span of the same reply is declined (`one_confirmation_at_a_time`). A held
        call is the requester's own: their next confirm-first request replaces it (`superseded`),
        someone else's is held beside it, under them.
        """
        outcomes: list[SpanOutcome] = []
        for span in spans:
            may_hold = not any(o.verdict is IntentVerdict.AWAITING_CONFIRMATION for o in outcomes)
            try:
                outcome = await self._handle(span, turn, may_hold=may_hold, prompt=prompt)
            except Exception as err:  # noqa: BLE001 - an organ never raises into the turn
                LOGGER.exception("Action organ failed on a span")
                outcome = SpanOutcome(
                    span, IntentVerdict.FAILED, reason=f"organ_error: {err}"[:200]
                )
            self._fire(outcome, turn.conversation_id, turn.context.user_id)
            outcomes.append(outcome)
        return outcomes

    async def async_resolve_pending(self, text: str, turn: TurnContext) -> SpanOutcome | None:
        """The requester's next utterance confirms or declines their held call.

        None when the speaker holds nothing in the conversation: another user's (or another
        device's) "yes" or "no" neither confirms nor declines someone else's held call, which
        stays held for its requester until they answer or it times out. A confirmed call is
        checked by the guard again first, since exposure or the entity may have changed meanwhile.
        """
        pending = self._pending.pop(turn.held_key, None)
        if pending is None:
            return None
        if pending.cancel_timeout:
            pending.cancel_timeout()
        call = pending.call
        outcome = SpanOutcome(
            pending.span, IntentVerdict.DECLINED, call.entity_id, call.service, pending.tier
        )
        if parse_confirmation(text, turn.language) is not True:
            outcome.reason = "not_confirmed"
        elif isinstance(checked := self._recheck(call), GuardRefusal):
            outcome.verdict, outcome.reason = IntentVerdict.REFUSED, checked.reason.value
        elif (failure := await async_execute(self._hass, checked, turn.context)) is not None:
            outcome.verdict, outcome.reason = IntentVerdict.FAILED, failure
        else:
            outcome.verdict = IntentVerdict.CONFIRMED
            outcome.breadcrumb = breadcrumb(call, self._name(call.entity_id))
        self._fire(outcome, turn.conversation_id, turn.context.user_id)
        return outcome

    def _recheck(self, call: ValidatedCall) -> ValidatedCall | GuardRefusal:
        """A held call through the guard again, against the registry as it is now."""
        proposal = Proposal(
            CALL_SERVICE_TOOL,
            {"entity": call.entity_id, "service": call.service, "data": dict(call.data)},
        )
        checked = self.check(proposal)
        if isinstance(checked, StateQuery):  # cannot happen for a service call; fail closed
            return GuardRefusal(GuardReason.UNKNOWN_TOOL, "not a service call")
        return checked

    def _mentions_now(self) -> Mentions:
        """The names of the exposed entities, indexed once per registry."""
        registry = self.index.registry
        if self._mentions is None or self._mentions[0] is not registry:
            self._mentions = (registry, Mentions(registry.entities()))
        return self._mentions[1]

    async def _names_an_action(self, span: str, turn: TurnContext) -> bool:
        """Whether `span` names an exposed entity, alias or area, or reads as a command.

        A command: it opens with one (`act.mentions.opens_with_a_command`), or Home Assistant's
        own sentences read it as one in the turn's language (`commands`), asked only for a span
        that passed neither check; when they cannot tell (a language it has none for, an error)
        the span goes on to the executor: a wasted model call is cheaper than a lost action.
        """
        mentions = self._mentions_now()
        if mentions.names_something(span) or opens_with_a_command(span):
            return True
        try:
            command = await async_reads_as_command(
                self._hass,
                span,
                language=turn.language,
                context=turn.context,
                device_id=turn.device_id,
                mentions=mentions,
            )
        except Exception:  # noqa: BLE001 - the check only saves a call; it never loses a span
            LOGGER.exception("Recognizing an action span failed")
            return True
        return command is not False

    async def _handle(
        self, span: str, turn: TurnContext, *, may_hold: bool, prompt: Sequence[Message]
    ) -> SpanOutcome:
        if not await self._names_an_action(span, turn):
            return SpanOutcome(span, IntentVerdict.REFUSED, reason="names_no_action")
        try:
            # The executor's model call has its own timeout; the device call below has none of
            # a model's: a slow lock is a slow lock, not a slow model.
            async with asyncio.timeout(self._timeout):
                proposal = await propose(
                    self._client,
                    model=self._model,
                    span=span,
                    area=self.index.area_of_device(turn.device_id),
                    registry=self.index.registry,
                    keep_alive=self._keep_alive,
                    num_ctx=self._num_ctx,
                    prefix=prompt if self._model == self._conversation_model else (),
                )
        except Exception as err:  # noqa: BLE001 - any executor failure ends the span, logged
            LOGGER.warning("Action executor call failed: %s", described(err))
            return SpanOutcome(span, IntentVerdict.FAILED, reason="executor_unavailable")
        if proposal is None:
            return SpanOutcome(span, IntentVerdict.REFUSED, reason="no_action")
        if isinstance(proposal, GuardRefusal):
            return SpanOutcome(span, IntentVerdict.REFUSED, reason=proposal.reason.value)
        checked = self.check(proposal)
        if isinstance(checked, GuardRefusal):
            # The entity is named only once the registry resolved it: an automation filtering
            # on entity_id must never be steered by the model's raw text.
            arguments = proposal.arguments
            entity = arguments.get("entity") if isinstance(arguments, Mapping) else None
            resolved = self.index.registry.resolve(entity)
            return SpanOutcome(
                span,
                IntentVerdict.REFUSED,
                entity_id=None if isinstance(resolved, GuardRefusal) else resolved.entity_id,
                reason=checked.reason.value,
            )
        tier = self.tier_of(checked)
        if isinstance(checked, StateQuery):
            state = self._hass.states.get(checked.entity_id)
            return SpanOutcome(
                span,
                IntentVerdict.EXECUTED,
                checked.entity_id,
                "get_device_state",
                tier,
                state=readable_state(state.domain, state.state, state.attributes)
                if state
                else "unknown",
            )
        outcome = SpanOutcome(
            span, IntentVerdict.EXECUTED, checked.entity_id, checked.service, tier
        )
        if tier is Tier.CONFIRM_FIRST and not may_hold:
            outcome.verdict = IntentVerdict.DECLINED
            outcome.reason = "one_confirmation_at_a_time"
            return outcome
        if tier is Tier.CONFIRM_FIRST:
            self._hold(checked, span, tier, turn)
            outcome.verdict = IntentVerdict.AWAITING_CONFIRMATION
            outcome.question = await async_phrase(
                self._hass,
                turn.language,
                "confirm_question",
                {"action": _action_words(checked, self._name(checked.entity_id))},
            )
            return outcome
        if (failure := await async_execute(self._hass, checked, turn.context)) is not None:
            outcome.verdict, outcome.reason = IntentVerdict.FAILED, failure
            return outcome
        outcome.breadcrumb = breadcrumb(checked, self._name(checked.entity_id))
        if tier is Tier.ACT_AND_NOTIFY:
            persistent_notification.async_create(
                self._hass,
                await async_phrase(
                    self._hass,
                    turn.language,
                    "action_notification",
                    {"action": _action_words(checked, self._name(checked.entity_id))},
                ),
                title="Alto",
            )
        return outcome

    def _hold(self, call: ValidatedCall, span: str, tier: Tier, turn: TurnContext) -> None:
        conversation_id, key = turn.conversation_id, turn.held_key
        if previous := self._pending.pop(key, None):
            # The requester's newer request replaces their unanswered one, declined, not lost.
            if previous.cancel_timeout:
                previous.cancel_timeout()
            self._fire(
                SpanOutcome(
                    previous.span,
                    IntentVerdict.DECLINED,
                    previous.call.entity_id,
                    previous.call.service,
                    previous.tier,
                    reason="superseded",
                ),
                conversation_id,
                previous.user_id,
            )
        pending = _Pending(call, span, tier, turn.context.user_id, turn.device_id)

        @callback
        def _expire(_now: Any) -> None:
            if self._pending.get(key) is pending:
                del self._pending[key]
                self._fire(
                    SpanOutcome(
                        span, IntentVerdict.DECLINED, call.entity_id, call.service, tier, "timeout"
                    ),
                    conversation_id,
                    pending.user_id,
                )

        pending.cancel_timeout = async_call_later(self._hass, CONFIRM_TIMEOUT_S, _expire)
        self._pending[key] = pending

    def _name(self, entity_id: str) -> str:
        entity = self.index.registry.get(entity_id)
        return entity.name if entity else entity_id

    def _fire(self, outcome: SpanOutcome, conversation_id: str, user_id: str | None) -> None:
        data = {
            "verdict": outcome.verdict.value,
            "span": outcome.span,
            "entity_id": outcome.entity_id,
            "service": outcome.service,
            "tier": outcome.tier.value if outcome.tier else None,
            "reason": outcome.reason,
            "conversation_id": conversation_id,
            "user_id": user_id,
        }
        self._hass.bus.async_fire(EVENT_INTENT_CAPTURED, data)
        async_dispatcher_send(self._hass, signal_intent(self._entry_id), data)


def _action_words(call: ValidatedCall, name: str) -> str:
    # "open_cover" reads "open Garage Door", "set_temperature" reads "set temperature …".
    verb = call.service.removesuffix(f"_{call.domain}").replace("_", " ")
    return f"{verb} {name}"
