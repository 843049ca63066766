"""The action organ end to end, in a real Home Assistant with the `demo` devices.

A captured ¤span¤ goes through the executor, the guard, the consent tiers and the effector.

The fake Ollama answers the executor (the one request with a `format` schema) from proposals
keyed by span, and every conversational request (no `format`) from a queue of replies.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from homeassistant.components import conversation, persistent_notification
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import Context, Event, HomeAssistant
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers import device_registry as dr
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)

from ..fake_ollama import ChatReply
from .helpers import (
    NONE,
    Script,
    answered,
    call_ha_service,
    converse_and_settle,
    is_executor_call,
    only,
    speech,
    verdicts,
)

EVENT_ENTITY = "event.alto_intents"
BREADCRUMB = "Earlier this session Alto carried out:"
DEMO = "homeassistant.components.demo"
ALTO_PACKAGE = Path(__file__).parents[2] / "custom_components" / "alto"


# --- harness ---------------------------------------------------------------------------------


def asks_to_confirm(result: conversation.ConversationResult, model_speech: str) -> bool:
    """Alto's reply is the model's speech followed by a question asking to confirm."""
    text = speech(result)
    if not text.startswith(model_speech):
        return False
    added = text[len(model_speech) :].strip()
    return "?" in added and "confirm" in added.casefold()


def service_of(data: dict[str, Any]) -> str:
    """The service named by an event, without a domain prefix."""
    return str(data["service"]).rpartition(".")[2]


def calls_to(events: list[Event], *domains: str) -> list[dict[str, Any]]:
    """The data of the service calls to any of `domains`."""
    return [dict(event.data) for event in events if event.data.get("domain") in domains]


def notifications(hass: HomeAssistant) -> list[str]:
    """Persistent notifications, less HA's own "new devices discovered" one."""
    return [
        f"{note.get('title') or ''} {note.get('message') or ''}"
        for key, note in persistent_notification._async_get_or_create_notifications(hass).items()
        if key != "config_entry_discovery"
    ]


def has_breadcrumb(body: dict[str, Any]) -> bool:
    """A request carries the "Alto carried out" breadcrumb as an assistant message."""
    return any(
        m.get("role") == "assistant" and BREADCRUMB in str(m.get("content"))
        for m in body["messages"]
    )


# --- one span, one verdict ------------------------------------------------------------------


SAID = "On it."
DEMO_DOMAINS = ("light", "lock", "cover", "climate", "switch")
# What a refused spoof must leave as it was: the light it names, the switch, the exposed lock.
SPOOFED = {"light.bed_light": "off", "switch.ac": "off", "lock.front_door": "locked"}
FRONT_DOOR = ("lock.front_door",)


@dataclass(frozen=True, slots=True)
class Act:
    """One case (`name` is its test id): a span, the executor's proposal, what the turn leaves.

    `after` gives an entity's state, or some of its attributes; `reason` and `tier` are compared
    when given. `notified`: one notification naming the entity, else none at all.
    """

    name: str
    span: str
    proposal: dict[str, Any] | str
    verdict: str
    after: dict[str, str | dict[str, Any]] = field(default_factory=dict)
    reason: str | None = None
    tier: str | None = None
    notified: bool = False
    expose: tuple[str, ...] = ()


def demo_states(hass: HomeAssistant) -> dict[str, tuple[str, dict[str, Any]]]:
    """The demo devices' states and attributes."""
    return {s.entity_id: (s.state, dict(s.attributes)) for s in hass.states.async_all(DEMO_DOMAINS)}


async def act_once(
    hass: HomeAssistant, script: Script, intents: list[Event], service_calls: list[Event], act: Act
) -> conversation.ConversationResult:
    """One turn whose reply holds `act.span`, checked against `act`; returns the turn's result.

    Whatever the case, the turn answers with the model's speech (asking to confirm when a call is
    held), fires exactly one event whose verdict the event entity shows, and changes nothing but
    an executed call's own entity, through that one service call.
    """
    for entity_id in act.expose:
        async_expose_entity(hass, "conversation", entity_id, True)
    script.say(f"¤{act.span}¤¦{SAID}¦")
    script.propose(act.span, act.proposal)
    before = demo_states(hass)
    result = await converse_and_settle(hass, "do it")

    assert answered(result)
    if act.verdict == "awaiting_confirmation":
        assert asks_to_confirm(result, SAID)
    else:
        assert speech(result) == SAID
    data = only(intents)
    assert data["verdict"] == act.verdict
    if act.reason is not None:
        assert data["reason"] == act.reason
    if act.tier is not None:
        assert data["tier"] == act.tier
    assert hass.states.get(EVENT_ENTITY).attributes["event_type"] == act.verdict
    for entity_id, expected in act.after.items():
        state = hass.states.get(entity_id)
        if isinstance(expected, str):
            assert state.state == expected, entity_id
        else:
            assert {key: state.attributes.get(key) for key in expected} == expected, entity_id

    executed = act.verdict == "executed" and isinstance(act.proposal, dict)
    target = act.proposal["entity"] if executed else None
    expected_calls = [(target.partition(".")[0], act.proposal["service"])] if executed else []
    assert [(c.data["domain"], service_of(c.data)) for c in service_calls] == expected_calls
    unchanged = {key: value for key, value in before.items() if key != target}
    assert {key: value for key, value in demo_states(hass).items() if key != target} == unchanged

    notes = notifications(hass)
    if act.notified:
        assert len(notes) == 1
        named = (target, hass.states.get(target).attributes["friendly_name"])
        assert any(name in notes[0] for name in named), notes
    else:
        assert notes == []
    return result


ACTS = [
    Act(
        "service-data-reaches-the-device",
        "dim the kitchen lights to half",
        call_ha_service("light.kitchen_lights", "turn_on", brightness=128),
        "executed",
        {"light.kitchen_lights": {"brightness": 128}},
    ),
    Act(
        "climate-acts-and-notifies",
        "set the hvac to 23 degrees",
        call_ha_service("climate.hvac", "set_temperature", temperature=23),
        "executed",
        {"climate.hvac": {"temperature": 23}},
        tier="act_and_notify",
        notified=True,
    ),
    Act(
        "ordinary-cover-acts-and-notifies",
        "open the kitchen window",
        call_ha_service("cover.kitchen_window", "open_cover"),
        "executed",
        {"cover.kitchen_window": "open"},
        tier="act_and_notify",
        notified=True,
    ),
    Act(
        "unexposed-lock",
        "unlock the front door",
        call_ha_service("lock.front_door", "unlock"),
        "refused",
        {"lock.front_door": "locked"},
        reason="unknown_entity",
    ),
    # The model's domain is discarded: the registry says light, and lights cannot unlock.
    Act(
        "spoofed-domain",
        "do the thing to the bed light",
        {
            "tool": "call_ha_service",
            "entity": "light.bed_light",
            "service": "unlock",
            "domain": "lock",
        },
        "refused",
        SPOOFED,
        reason="service_not_allowed",
        expose=FRONT_DOOR,
    ),
    Act(
        "foreign-service",
        "do the thing to the bed light",
        call_ha_service("light.bed_light", "lock.unlock"),
        "refused",
        SPOOFED,
        reason="service_not_allowed",
        expose=FRONT_DOOR,
    ),
    Act(
        "other-domains-service",
        "do the thing to the bed light",
        call_ha_service("switch.ac", "light.turn_on"),
        "refused",
        SPOOFED,
        reason="service_not_allowed",
        expose=FRONT_DOOR,
    ),
    Act(
        "smuggled-entity",
        "do the thing to the bed light",
        call_ha_service("light.bed_light", "turn_on", entity_id="lock.front_door"),
        "refused",
        SPOOFED,
        reason="entity_smuggled",
        expose=FRONT_DOOR,
    ),
    Act(
        "unknown-data-key",
        "do the thing to the bed light",
        call_ha_service("light.bed_light", "turn_on", flash="long"),
        "refused",
        SPOOFED,
        reason="bad_data_key",
        expose=FRONT_DOOR,
    ),
    Act(
        "temperature-out-of-range",
        "set the hvac to 40 degrees",
        call_ha_service("climate.hvac", "set_temperature", temperature=40),
        "refused",
        reason="bad_data_value",
    ),
    Act(
        "malformed-proposal",
        "turn on the bed light",
        "Sure! I'll turn on light.bed_light for you.",
        "refused",
        {"light.bed_light": "off"},
        reason="malformed_proposal",
    ),
    Act("none-proposal", "make me a sandwich", NONE, "refused"),
]


@pytest.mark.usefixtures("alto")
@pytest.mark.parametrize("act", ACTS, ids=lambda act: act.name)
async def test_one_span_gets_its_verdict(
    hass: HomeAssistant,
    script: Script,
    intents: list[Event],
    service_calls: list[Event],
    act: Act,
) -> None:
    """Default consent: a span runs, notifies or is refused as its proposal and tier say."""
    await act_once(hass, script, intents, service_calls, act)


class TestConsentOverrides:
    """Consent tiers changed in the options."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """Climate and covers autonomous, lights confirm first."""
        return {
            "consent": {"climate": "autonomous", "light": "confirm_first", "cover": "autonomous"}
        }

    @pytest.mark.usefixtures("alto")
    @pytest.mark.parametrize(
        "act",
        [
            Act(
                "climate-made-autonomous",
                "set the hvac to 23 degrees",
                call_ha_service("climate.hvac", "set_temperature", temperature=23),
                "executed",
                {"climate.hvac": {"temperature": 23}},
                tier="autonomous",
            ),
            Act(
                "lights-made-confirm-first",
                "turn on the bed light",
                call_ha_service("light.bed_light", "turn_on"),
                "awaiting_confirmation",
                {"light.bed_light": "off"},
                tier="confirm_first",
            ),
            # A garage door still asks first when covers are made autonomous.
            Act(
                "garage-stays-confirm-first",
                "open the garage door",
                call_ha_service("cover.garage_door", "open_cover"),
                "awaiting_confirmation",
                {"cover.garage_door": "closed"},
                tier="confirm_first",
            ),
        ],
        ids=lambda act: act.name,
    )
    async def test_override_sets_the_tier(
        self,
        hass: HomeAssistant,
        script: Script,
        intents: list[Event],
        service_calls: list[Event],
        act: Act,
    ) -> None:
        """The overridden tier decides; a garage door is confirm-first whatever covers are."""
        await act_once(hass, script, intents, service_calls, act)


# --- execution ------------------------------------------------------------------------------


@pytest.mark.usefixtures("alto")
async def test_span_turns_on_an_exposed_light(
    hass: HomeAssistant, script: Script, intents: list[Event], hass_admin_user
) -> None:
    """An action span turns on an exposed light; the event and the event entity record it."""
    script.say("Sure. ¤turn on the bed light¤¦Turning on the bed light.¦")
    script.propose("turn on the bed light", call_ha_service("light.bed_light", "turn_on"))
    context = Context(user_id=hass_admin_user.id)
    result = await converse_and_settle(hass, "bed light on please", context=context)

    assert speech(result) == "Turning on the bed light."
    assert hass.states.get("light.bed_light").state == "on"
    data = only(intents)
    assert data["verdict"] == "executed"
    assert data["span"] == "turn on the bed light"
    assert data["entity_id"] == "light.bed_light"
    assert service_of(data) == "turn_on"
    assert data["tier"] == "autonomous"
    assert data["conversation_id"] == result.conversation_id
    assert data["user_id"] == hass_admin_user.id
    # Autonomous: no notification.
    assert notifications(hass) == []

    state = hass.states.get(EVENT_ENTITY)
    assert state is not None
    assert dt_util.parse_datetime(state.state) is not None
    assert state.attributes["event_type"] == "executed"
    assert state.attributes["entity_id"] == "light.bed_light"
    assert "span" not in state.attributes  # a shared entity carries no one's words
    assert state.attributes["tier"] == "autonomous"
    # Who asked, in which conversation: on the bus event only, never in recorded attributes.
    assert "conversation_id" not in state.attributes
    assert "user_id" not in state.attributes


@pytest.mark.usefixtures("alto")
async def test_executor_request_extends_the_conversation_prompt_with_a_schema(
    hass: HomeAssistant, script: Script
) -> None:
    """The executor gets a schema, and the conversational prompt unchanged, then its own lines.

    The same model serves both calls, so the executor's prompt begins with the conversation's,
    byte for byte (the server's prompt cache still holds it afterwards); nothing the model
    answered (its thought, its speech) is in it.
    """
    area = ar.async_get(hass).async_create("Bedroom")
    satellite_entry = MockConfigEntry(domain="test")
    satellite_entry.add_to_hass(hass)
    satellite = dr.async_get(hass).async_get_or_create(
        config_entry_id=satellite_entry.entry_id, identifiers={("test", "satellite")}
    )
    dr.async_get(hass).async_update_device(satellite.id, area_id=area.id)

    script.say('pondering zebras ¤turn on the "bed" light¤¦Of course, my dear.¦')
    script.propose('turn on the "bed" light', call_ha_service("light.bed_light", "turn_on"))
    await converse_and_settle(hass, "the quokka wants light", device_id=satellite.id)

    assert len(script.executor_requests) == 1
    body = script.executor_requests[0]
    assert isinstance(body["format"], dict)
    assert body["stream"] is False
    assert not body.get("tools")
    messages = body["messages"]
    conversation_prompt = script.conversation_requests[0]["messages"]
    assert json.dumps(messages[: len(conversation_prompt)]) == json.dumps(conversation_prompt)
    own = messages[len(conversation_prompt) :]
    assert [m["role"] for m in own] == ["system", "user"]
    assert json.dumps('turn on the "bed" light') in own[1]["content"]
    assert "Bedroom" in own[1]["content"]
    # Nothing the model answered: neither its thought nor its speech.
    for private in ("zebras", "my dear"):
        assert private not in json.dumps(messages)
    assert hass.states.get("light.bed_light").state == "on"


@pytest.mark.usefixtures("alto")
async def test_each_span_gets_one_executor_call(
    hass: HomeAssistant, script: Script, intents: list[Event]
) -> None:
    """Two spans in one reply get one executor call each, and both run."""
    script.say("¤turn on the bed light¤ ¤turn off the ceiling lights¤¦Both done.¦")
    script.propose("turn on the bed light", call_ha_service("light.bed_light", "turn_on"))
    script.propose(
        "turn off the ceiling lights", call_ha_service("light.ceiling_lights", "turn_off")
    )
    await converse_and_settle(hass, "swap the lights")
    assert len(script.executor_requests) == 2
    assert len(script.conversation_requests) == 1
    assert verdicts(intents) == ["executed", "executed"]
    assert hass.states.get("light.bed_light").state == "on"
    assert hass.states.get("light.ceiling_lights").state == "off"


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.usefixtures("alto")
async def test_executor_http_error_still_answers(
    hass: HomeAssistant, script: Script, intents: list[Event], service_calls: list[Event]
) -> None:
    """An executor failure still lets the turn answer, and the next turn works."""
    script.say("¤turn on the bed light¤¦On it.¦")
    script.propose("turn on the bed light", ChatReply(status=500, error="CUDA out of memory"))
    result = await converse_and_settle(hass, "light")
    assert answered(result)
    assert "On it." in speech(result)
    assert only(intents)["verdict"] in {"failed", "refused"}
    assert calls_to(service_calls, "light") == []
    assert hass.states.get("light.bed_light").state == "off"
    # The next turn works normally.
    script.say("¦Still here.¦")
    assert (
        speech(await converse_and_settle(hass, "hello?", result.conversation_id)) == "Still here."
    )


# --- confirm first --------------------------------------------------------------------------


async def _ask_to_unlock(hass: HomeAssistant, script: Script) -> conversation.ConversationResult:
    """A turn that asks to unlock the exposed front door, which stays locked."""
    script.say("¤unlock the front door¤¦Unlocking the front door.¦")
    script.propose("unlock the front door", call_ha_service("lock.front_door", "unlock"))
    result = await converse_and_settle(hass, "unlock the front door")
    assert hass.states.get("lock.front_door").state == "locked"
    return result


@pytest.mark.usefixtures("front_door_exposed")
async def test_unlock_waits_for_the_users_yes(
    hass: HomeAssistant, script: Script, intents: list[Event]
) -> None:
    """An unlock waits for the user's yes, then runs the held call without a new executor call."""
    first = await _ask_to_unlock(hass, script)
    assert asks_to_confirm(first, "Unlocking the front door.")
    data = only(intents)
    assert data["verdict"] == "awaiting_confirmation"
    assert data["tier"] == "confirm_first"
    assert data["entity_id"] == "lock.front_door"
    assert service_of(data) == "unlock"
    assert hass.states.get(EVENT_ENTITY).attributes["event_type"] == "awaiting_confirmation"
    executor_calls = len(script.executor_requests)

    intents.clear()
    second = await converse_and_settle(hass, "yes", first.conversation_id)
    assert answered(second)
    assert hass.states.get("lock.front_door").state == "unlocked"
    data = only(intents)
    assert data["verdict"] == "confirmed"
    assert data["entity_id"] == "lock.front_door"
    assert data["conversation_id"] == first.conversation_id
    assert hass.states.get(EVENT_ENTITY).attributes["event_type"] == "confirmed"
    # The held call runs; the executor is not asked again.
    assert len(script.executor_requests) == executor_calls


@pytest.mark.usefixtures("front_door_exposed")
async def test_the_model_saying_yes_never_confirms(
    hass: HomeAssistant, script: Script, intents: list[Event]
) -> None:
    """The model saying or acting "yes" never confirms a held call."""
    # The model tries in the same turn as the request...
    script.say("¤unlock the front door¤¦Unlocking.¦ ¦yes¦ ¤yes¤")
    script.propose("unlock the front door", call_ha_service("lock.front_door", "unlock"))
    script.propose("yes", call_ha_service("lock.front_door", "unlock"))
    first = await converse_and_settle(hass, "unlock the front door")
    assert hass.states.get("lock.front_door").state == "locked"
    # ...and in the next turn, while the user says something else.
    script.say("¦yes¦ ¤yes¤ ¦Yes, confirmed.¦")
    await converse_and_settle(hass, "hmm, what time is it?", first.conversation_id)
    assert hass.states.get("lock.front_door").state == "locked"
    assert "confirmed" not in verdicts(intents)
    assert "executed" not in verdicts(intents)
    assert "declined" in verdicts(intents)


@pytest.mark.usefixtures("front_door_exposed")
async def test_users_no_declines(
    hass: HomeAssistant, script: Script, intents: list[Event], service_calls: list[Event]
) -> None:
    """The user's no declines; a later yes has nothing to confirm."""
    first = await _ask_to_unlock(hass, script)
    intents.clear()
    second = await converse_and_settle(hass, "no", first.conversation_id)
    assert answered(second)
    data = only(intents)
    assert data["verdict"] == "declined"
    assert data["entity_id"] == "lock.front_door"
    assert hass.states.get("lock.front_door").state == "locked"
    assert calls_to(service_calls, "lock") == []
    # A later yes has nothing left to confirm.
    await converse_and_settle(hass, "yes", first.conversation_id)
    assert hass.states.get("lock.front_door").state == "locked"
    assert "confirmed" not in verdicts(intents)


@pytest.mark.usefixtures("front_door_exposed")
async def test_anything_but_yes_declines(hass: HomeAssistant, script: Script, intents) -> None:
    """A yes with more in it declines."""
    first = await _ask_to_unlock(hass, script)
    intents.clear()
    await converse_and_settle(hass, "yes, and also turn on the bed light", first.conversation_id)
    assert hass.states.get("lock.front_door").state == "locked"
    assert "declined" in verdicts(intents)
    assert "confirmed" not in verdicts(intents)


@pytest.mark.usefixtures("front_door_exposed")
async def test_confirmation_times_out(
    hass: HomeAssistant, script: Script, intents: list[Event]
) -> None:
    """A held call is declined after a minute without an answer."""
    first = await _ask_to_unlock(hass, script)
    intents.clear()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=61))
    await hass.async_block_till_done()
    data = only(intents)
    assert data["verdict"] == "declined"
    assert data["entity_id"] == "lock.front_door"
    assert data["conversation_id"] == first.conversation_id
    await converse_and_settle(hass, "yes", first.conversation_id)
    assert hass.states.get("lock.front_door").state == "locked"
    assert "confirmed" not in verdicts(intents)


@pytest.mark.usefixtures("front_door_exposed")
async def test_yes_in_another_conversation_does_not_confirm(
    hass: HomeAssistant, script: Script, intents: list[Event]
) -> None:
    """A yes in another conversation confirms nothing."""
    await _ask_to_unlock(hass, script)
    await converse_and_settle(hass, "yes")  # a new conversation
    assert hass.states.get("lock.front_door").state == "locked"
    assert "confirmed" not in verdicts(intents)


@pytest.mark.usefixtures("alto")
async def test_garage_door_is_confirm_first(
    hass: HomeAssistant, script: Script, intents: list[Event], service_calls: list[Event]
) -> None:
    """A garage door asks first and opens on yes."""
    garage = Act(
        "garage-door",
        "open the garage door",
        call_ha_service("cover.garage_door", "open_cover"),
        "awaiting_confirmation",
        {"cover.garage_door": "closed"},
        tier="confirm_first",
    )
    first = await act_once(hass, script, intents, service_calls, garage)
    intents.clear()
    await converse_and_settle(hass, "yes please", first.conversation_id)
    assert only(intents)["verdict"] == "confirmed"
    assert hass.states.get("cover.garage_door").state == "open"


# --- effector permissions -------------------------------------------------------------------


@pytest.mark.usefixtures("alto", "hass_owner_user")
async def test_read_only_users_context_fails(
    hass: HomeAssistant, script: Script, intents: list[Event]
) -> None:
    """A read-only user's call fails in the effector, and leaves no breadcrumb."""
    # The owner exists first, else HA would make the guest the owner (an admin).
    guest = await hass.auth.async_create_user("guest", group_ids=["system-read-only"])
    assert not guest.is_admin
    script.say("¤turn on the bed light¤¦Turning it on.¦")
    script.propose("turn on the bed light", call_ha_service("light.bed_light", "turn_on"))
    result = await converse_and_settle(hass, "bed light", context=Context(user_id=guest.id))
    assert answered(result)
    data = only(intents)
    assert data["verdict"] == "failed"
    assert data["user_id"] == guest.id
    assert data["entity_id"] == "light.bed_light"
    assert hass.states.get("light.bed_light").state == "off"
    # No breadcrumb for a failed call.
    script.say("¦ok¦")
    await converse_and_settle(
        hass, "and?", result.conversation_id, context=Context(user_id=guest.id)
    )
    assert not has_breadcrumb(script.conversation_requests[-1])


# --- breadcrumbs ----------------------------------------------------------------------------


@pytest.mark.usefixtures("alto")
async def test_breadcrumb_after_success_only_in_that_conversation(
    hass: HomeAssistant, script: Script
) -> None:
    """A successful call leaves one breadcrumb, in its own conversation only."""
    script.say("¤turn on the bed light¤¦Done.¦")
    script.propose("turn on the bed light", call_ha_service("light.bed_light", "turn_on"))
    first = await converse_and_settle(hass, "bed light")
    assert not has_breadcrumb(script.conversation_requests[-1])

    await converse_and_settle(hass, "thanks", first.conversation_id)
    body = script.conversation_requests[-1]
    crumbs = [
        m["content"]
        for m in body["messages"]
        if m["role"] == "assistant" and BREADCRUMB in m["content"]
    ]
    assert len(crumbs) == 1
    assert "turn_on" in crumbs[0]
    assert "light.bed_light" in crumbs[0] or "Bed Light" in crumbs[0]

    await converse_and_settle(hass, "hello")  # another conversation
    assert not has_breadcrumb(script.conversation_requests[-1])


@pytest.mark.usefixtures("front_door_exposed")
@pytest.mark.parametrize(
    "proposal",
    [
        "not json at all",
        call_ha_service("lock.kitchen_door", "lock"),  # unexposed: refused
        call_ha_service("climate.hvac", "set_temperature", temperature=99),  # refused
        call_ha_service("lock.front_door", "unlock"),  # awaiting confirmation
    ],
)
async def test_no_breadcrumb_without_success(
    hass: HomeAssistant, script: Script, proposal: dict[str, Any] | str
) -> None:
    """Malformed, refused or held calls leave no breadcrumb."""
    script.say("¤do the thing to the front door¤¦Doing the thing.¦")
    script.propose("do the thing to the front door", proposal)
    first = await converse_and_settle(hass, "do the thing")
    await converse_and_settle(hass, "so?", first.conversation_id)  # also declines a held call
    for body in script.conversation_requests:
        assert not has_breadcrumb(body)
        assert "carried out" not in json.dumps(body["messages"][1:])


# --- reads ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("alto")
async def test_read_span_gets_one_follow_up_with_the_state(
    hass: HomeAssistant, script: Script, intents: list[Event], service_calls: list[Event]
) -> None:
    """A read span gets one follow-up request carrying the state, and calls no service."""
    assert hass.states.get("climate.hvac").state == "cool"
    script.say("¤check the hvac¤", "¦The air conditioner is cooling.¦")
    script.propose("check the hvac", {"tool": "get_device_state", "entity": "climate.hvac"})
    result = await converse_and_settle(hass, "is the AC running?")

    assert speech(result) == "The air conditioner is cooling."
    bodies = script.fake.chat_requests
    assert [is_executor_call(b) for b in bodies] == [False, True, False]
    first, follow_up = bodies[0], bodies[2]
    assert not follow_up.get("tools")
    assert not is_executor_call(follow_up)
    new = [m for m in follow_up["messages"] if m not in first["messages"]]
    assert new, "the follow-up must add the read result"
    assert "cool" in json.dumps(new)
    assert "climate.hvac" in json.dumps(new) or "Hvac" in json.dumps(new)
    data = only(intents)
    assert data["verdict"] == "executed"
    assert data["entity_id"] == "climate.hvac"
    assert data["tier"] == "autonomous"
    assert calls_to(service_calls, "climate") == []


@pytest.mark.usefixtures("alto")
async def test_read_of_an_unexposed_entity_is_refused_without_follow_up(
    hass: HomeAssistant, script: Script, intents: list[Event], service_calls: list[Event]
) -> None:
    """Reading an unexposed entity is refused, with no follow-up and no state."""
    read = Act(
        "unexposed-read",
        "is the front door locked",
        {"tool": "get_device_state", "entity": "lock.front_door"},
        "refused",
        reason="unknown_entity",
    )
    await act_once(hass, script, intents, service_calls, read)
    assert len(script.conversation_requests) == 1
    assert "locked" not in json.dumps(script.conversation_requests[0]["messages"][1:])


# --- the one effector -----------------------------------------------------------------------


def _service_call_sites() -> list[tuple[str, int, str]]:
    """Every `<x>.services.async_call(` / `.services.call(` in Alto's package."""
    sites = []
    for path in sorted(ALTO_PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"async_call", "call"}
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "services"
            ):
                relative = path.relative_to(ALTO_PACKAGE).as_posix()
                sites.append((relative, node.lineno, node.func.attr))
    return sites


def test_effector_is_the_only_service_call_site() -> None:
    """The effector is Alto's only service call site, and it blocks and passes the context."""
    sites = _service_call_sites()
    assert [(path, attr) for path, _, attr in sites] == [("act_organ/effector.py", "async_call")], (
        sites
    )
    # It blocks and carries the turn's context.
    path, line, _ = sites[0]
    tree = ast.parse((ALTO_PACKAGE / path).read_text(encoding="utf-8"))
    node = next(
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n, "lineno", 0) == line
    )
    keywords = {kw.arg: kw.value for kw in node.keywords}
    assert isinstance(keywords.get("blocking"), ast.Constant)
    assert keywords["blocking"].value is True
    assert "context" in keywords


@pytest.mark.usefixtures("alto")
async def test_breadcrumb_survives_a_failed_follow_up(
    hass: HomeAssistant, script: Script, intents: list[Event]
) -> None:
    """A call that ran keeps its breadcrumb when the follow-up fails."""
    # One reply both acts and reads; the follow-up for the read fails after the light went on.
    script.say("¤turn on the bed light¤¤check the hvac¤", ChatReply(status=500))
    script.propose("turn on the bed light", call_ha_service("light.bed_light", "turn_on"))
    script.propose("check the hvac", {"tool": "get_device_state", "entity": "climate.hvac"})
    result = await converse_and_settle(hass, "light on and how is the AC?")
    assert not answered(result)
    assert hass.states.get("light.bed_light").state == "on"
    assert verdicts(intents) == ["executed", "executed"]
    script.say("¦ok¦")
    await converse_and_settle(hass, "and now?", result.conversation_id)
    assert has_breadcrumb(script.conversation_requests[-1])


class TestSlowDevice:
    """A device call is not a model call: no model timeout cancels it."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """A half-second model timeout (a lock always asks first: it runs on the user's yes)."""
        return {"request_timeout": 0.5}

    @pytest.mark.usefixtures("front_door_exposed")
    async def test_slow_lock_finishes_and_the_model_stays_available(
        self, hass: HomeAssistant, script: Script, intents: list[Event]
    ) -> None:
        """A lock that takes longer than the model timeout still runs to the end."""
        script.say("¤unlock the front door¤¦Unlocking it.¦")
        script.propose("unlock the front door", call_ha_service("lock.front_door", "unlock"))
        with patch(f"{DEMO}.lock.LOCK_UNLOCK_DELAY", 1.0):
            asked = await converse_and_settle(hass, "let me in")
            await converse_and_settle(hass, "yes", asked.conversation_id)
        assert [event.data["verdict"] for event in intents] == [
            "awaiting_confirmation",
            "confirmed",
        ]
        assert hass.states.get("lock.front_door").state == "unlocked"
        assert hass.states.get("binary_sensor.alto_model_available").state == "on"


@pytest.mark.usefixtures("alto")
async def test_every_call_to_the_chat_model_uses_one_context_window(
    hass: HomeAssistant, script: Script
) -> None:
    """Executor and conversation send the same num_ctx: Ollama reloads a model when it changes."""
    script.say("¤turn on the bed light¤¦I'll try.¦")
    script.propose("turn on the bed light", call_ha_service("light.bed_light", "turn_on"))
    await converse_and_settle(hass, "bed light")
    windows = {
        body["options"]["num_ctx"]
        for body in [*script.executor_requests, *script.conversation_requests]
    }
    assert windows == {8192}


@pytest.mark.usefixtures("alto")
async def test_a_reply_that_only_acts_is_answered_without_speech(
    hass: HomeAssistant, script: Script, intents: list[Event]
) -> None:
    """No speech, one refused action: an empty answer, not an error from the chat log."""
    script.say("¤do the impossible¤")
    result = await converse_and_settle(hass, "do it")
    assert verdicts(intents) == ["refused"]
    assert result.response.response_type.value == "query_answer"
    assert speech(result) == ""
