"""The reflect organ in Home Assistant: real HA, the fake Ollama over HTTP, real journals.

The background passes are told apart from the conversation by their `format` schema (N+1's has
`observations`, reflection's `items`, synthesis's `themes`) and scripted per test; the
conversation gets the fake's default reply. The breather is 0, so a pass starts as soon as a
turn has ended; `settle` waits until the pass queue is empty and what its results started is
done.

Covers: an intrusive observation surfacing once, to its own person only; 25 messages making
one reflection, and a quiet scope reflecting on the idle check; context pressure making a
synthesis that the next system prompt carries; a turn preempting the pass in flight, which runs
again after it; private scopes feeding nobody else's prompt, inbox or sensors; the household's
inbox list; nominations reaching memory intake; the services, purge, diagnostics and a pass
on its own model.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import Unauthorized
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_capture_events,
    async_fire_time_changed,
)
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.alto.const import (
    CONF_BREATHER,
    CONF_N1_ENABLED,
    CONF_N1_MODEL,
    CONF_REFLECT,
    CONF_REFLECTION_ENABLED,
)
from custom_components.alto.memory.records import HOUSEHOLD
from custom_components.alto.memory_organ.organ import EVENT_ADMITTED, storage_dir
from custom_components.alto.reflect_organ import organ as reflection
from custom_components.alto.reflect_organ.organ import (
    EVENT_OBSERVATION,
    EVENT_PRESSURE,
    EVENT_REFLECTION,
    EVENT_SYNTHESIS,
)

from ..fake_ollama import CHAT_MODEL, ChatReply, FakeOllama
from .helpers import (
    Body,
    alto_service,
    answer,
    converse,
    kind_of,
    reflection_organ,
    said_in,
    settle,
    situation_of,
    state,
    synthesis_answer,
    turn_refs,
)

INBOX = "todo.alto_inbox"
INBOX_SIZE = "sensor.alto_inbox_size"
PLUMBER = "I'll call the plumber this afternoon."
OBSERVED = "Ana said she would call the plumber; nothing shows it happened."
NOTICED = "Something I noticed after our last exchange"
THEME = "Evening routines around the boiler"
NUM_CTX = 8192  # the default context window
PRESSED = 7000  # prompt tokens the fake reports under pressure: 85 % of NUM_CTX
SMALL = "qwen2.5:0.5b"  # a smaller model for one pass


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """No breather: a pass starts as soon as a turn has ended."""
    return {CONF_REFLECT: {CONF_BREATHER: 0}}


# -- telling requests apart -----------------------------------------------------------------------
def passes(fake: FakeOllama, kind: str) -> list[Body]:
    """The chat requests of one pass kind, in order."""
    return [body for body in fake.chat_requests if kind_of(body) == kind]


def conversational(fake: FakeOllama) -> list[Body]:
    """The streamed conversational requests, in order."""
    return [body for body in fake.chat_requests if body.get("stream") is True]


def everything_sent(body: Body) -> str:
    """All message contents of a request, joined."""
    return "\n".join(message["content"] for message in body["messages"])


def shown_turns(body: Body) -> list[int]:
    """The turn numbers an N+1 request shows (its schema's enum)."""
    observation = body["format"]["properties"]["observations"]["items"]
    return observation["properties"]["turns"]["items"]["enum"]


def observe_plumber(urgency: str) -> Callable[[Body], ChatReply]:
    """N+1 answers: an observation of `urgency` on the turn speaking of the plumber, if any."""

    def reply(body: Body) -> ChatReply:
        if not (turns := said_in(body, "plumber")):
            return answer(observations=[], nominations=[])
        observation = {
            "mandate": "complete",
            "turns": turns,
            "content": OBSERVED,
            "urgency": urgency,
        }
        return answer(observations=[observation], nominations=[])

    return reply


def synthesize_theme(body: Body) -> ChatReply:
    """A synthesis with one theme citing the newest turn shown."""
    return synthesis_answer(themes=[{"text": THEME, "cites": [turn_refs(body)[-1]]}])


# -- the organ ------------------------------------------------------------------------------------


async def household_turns(hass: HomeAssistant, count: int) -> None:
    """`count` turns without a signed-in speaker, one conversation each, each telling something."""
    for index in range(count):
        await converse(hass, f"The hall light is on the landing (message {index}).")


@pytest.fixture
async def people(hass: HomeAssistant) -> tuple[Context, Context]:
    """Ana (an administrator) and Ben (not one), each with their own context."""
    ana = await hass.auth.async_create_user("Ana", group_ids=["system-admin"])
    ben = await hass.auth.async_create_user("Ben", group_ids=["system-users"])
    return Context(user_id=ana.id), Context(user_id=ben.id)


# -- N+1 and the inbox ----------------------------------------------------------------------------
async def test_an_intrusive_observation_surfaces_once_to_its_own_person(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    people: tuple[Context, Context],
) -> None:
    """Ana's urgent item reaches her next turn once, as Alto's noticing, and nobody else's.

    Neither Ben's prompt, the household's nor the list shows it; its event has no text.
    """
    ana, ben = people
    fake_ollama.when(lambda body: kind_of(body) == "n1", observe_plumber("high"))
    observed = async_capture_events(hass, EVENT_OBSERVATION)
    await converse(hass, PLUMBER, context=ana)
    await settle(hass)
    assert [event.data["urgency"] for event in observed] == ["high"]
    assert observed[0].data["scope"] == ana.user_id
    assert set(observed[0].data) == {"scope", "id", "urgency", "mandate", "box", "turns", "source"}
    assert "plumber" not in json.dumps(observed[0].data)

    await converse(hass, "What's the weather like?", context=ben)
    await converse(hass, "Is anyone home?")
    for body in conversational(fake_ollama)[-2:]:
        assert "plumber" not in everything_sent(body)
    assert state(hass, INBOX) == "0"

    await converse(hass, "Hello again.", context=ana)
    noticed = [m for m in conversational(fake_ollama)[-1]["messages"] if NOTICED in m["content"]]
    assert [(m["role"], OBSERVED in m["content"]) for m in noticed] == [("assistant", True)]
    await settle(hass)
    await converse(hass, "And now?", context=ana)
    assert NOTICED not in everything_sent(conversational(fake_ollama)[-1])
    inbox = await reflection_organ(hass).reflector.inbox(ana.user_id or "")
    assert ([o.id for o in inbox.intrusive], [o.id for o in inbox.sent]) == (
        [],
        [observed[0].data["id"]],
    )


async def test_a_turn_preempts_the_pass_in_flight_and_it_runs_again_after(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A turn cancels the N+1 call in flight and does not wait for it.

    The pass runs again after the turn and notes its observation once.
    """
    slow = [True]

    def reply(body: Body) -> ChatReply:
        answered = observe_plumber("medium")(body)
        if slow[0]:
            slow[0] = False
            answered.delay_s = 2.0
        return answered

    fake_ollama.when(lambda body: kind_of(body) == "n1", reply)
    observed = async_capture_events(hass, EVENT_OBSERVATION)
    await converse(hass, PLUMBER)
    for _ in range(500):
        if passes(fake_ollama, "n1"):
            break
        await asyncio.sleep(0.01)
    assert reflection_organ(hass).runner.running == ("n1", HOUSEHOLD)
    started = time.monotonic()
    await converse(hass, "Thanks, that's all.")
    assert time.monotonic() - started < 1.5  # the slow pass held nothing up
    await settle(hass)
    n1 = passes(fake_ollama, "n1")
    assert [1 in shown_turns(body) for body in n1[:2]] == [True, True]
    assert [event.data["turns"] for event in observed] == [[1]]


async def test_the_household_inbox_is_a_list_and_checking_an_item_off_completes_it(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A pending household item is listed and counted; checked off, it leaves both."""
    fake_ollama.when(lambda body: kind_of(body) == "n1", observe_plumber("low"))
    await converse(hass, PLUMBER)
    await settle(hass)
    assert (state(hass, INBOX), state(hass, INBOX_SIZE)) == ("1", "1")
    items = await hass.services.async_call(
        "todo", "get_items", {"entity_id": INBOX}, blocking=True, return_response=True
    )
    [item] = items[INBOX]["items"]
    assert item["summary"] == OBSERVED
    await hass.services.async_call(
        "todo",
        "update_item",
        {"entity_id": INBOX, "item": item["uid"], "status": "completed"},
        blocking=True,
    )
    await hass.async_block_till_done()
    assert (state(hass, INBOX), state(hass, INBOX_SIZE)) == ("0", "0")
    assert (await reflection_organ(hass).reflector.inbox(HOUSEHOLD)).pending == ()


async def test_a_nomination_goes_to_memory_intake_as_the_persons_own_words(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """N+1 nominates a quote of the utterance; memory intake admits it as a source of its own."""
    said = "My sister Ana is allergic to peanuts, by the way."

    def reply(body: Body) -> ChatReply:
        quoted = "My sister Ana is allergic to peanuts"
        nominations = [{"turn": n, "quote": quoted} for n in said_in(body, quoted)]
        return answer(observations=[], nominations=nominations)

    fake_ollama.when(lambda body: kind_of(body) == "n1", reply)
    admitted = async_capture_events(hass, EVENT_ADMITTED)
    await converse(hass, said)
    await settle(hass)
    sources = [event.data["source_id"] for event in admitted]
    assert [s.split("/")[:3] for s in sources if s.startswith("reflect/")] == [
        ["reflect", HOUSEHOLD, "1"]
    ]


# -- N+25 reflection ------------------------------------------------------------------------------
async def test_twenty_five_messages_make_one_reflection(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """No reflection after 24 household messages, exactly one after the 25th, none 5 later.

    It covers turns 1 to 25; its event holds counts only, and the sensor shows its time.
    """
    fact = {
        "kind": "fact",
        "ledger": "home",
        "content": "The hall light is on a dimmer",
        "turns": [3],
        "resolves": 0,
    }
    fake_ollama.when(lambda body: kind_of(body) == "reflect", answer(items=[fact], nominations=[]))
    reflected = async_capture_events(hass, EVENT_REFLECTION)
    await household_turns(hass, 24)
    await settle(hass)
    assert passes(fake_ollama, "reflect") == []
    await household_turns(hass, 1)
    await settle(hass)
    assert len(passes(fake_ollama, "reflect")) == 1
    assert [event.data["covered"] for event in reflected] == [[1, 25]]
    assert (reflected[0].data["appended"], reflected[0].data["exited_cleanly"]) == (1, True)
    assert "dimmer" not in json.dumps(reflected[0].data)
    assert state(hass, "sensor.alto_last_reflection") not in ("unknown", "unavailable")
    ledgers = await reflection_organ(hass).reflector.ledgers(HOUSEHOLD)
    assert [e.content for lines in ledgers.values() for e in lines] == [fact["content"]]
    await household_turns(hass, 5)
    await settle(hass)
    assert len(passes(fake_ollama, "reflect")) == 1


# -- N+100 synthesis under context pressure -------------------------------------------------------
@pytest.fixture
def pressed(fake_ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> None:
    """Conversational answers report a prompt of PRESSED tokens (85 % of the context window)."""
    line = fake_ollama._line

    def pressing(
        body: Body, content: str, done: bool, reason: str, *rest: Any, **more: Any
    ) -> dict[str, Any]:
        sent = line(body, content, done, reason, *rest, **more)
        if done and body.get("stream") is True:
            sent["prompt_eval_count"] = PRESSED
        return sent

    monkeypatch.setattr(fake_ollama, "_line", pressing)


async def test_context_pressure_makes_a_synthesis_that_the_next_prompt_carries(
    hass: HomeAssistant, fake_ollama: FakeOllama, pressed: None, setup_alto: MockConfigEntry
) -> None:
    """At 85 % of num_ctx, five messages make a synthesis that the next system prompt shows.

    One warning event and the pressure sensor come first; the synthesis's trigger is
    "pressure", and neither event holds text.
    """
    fake_ollama.when(lambda body: kind_of(body) == "synthesize", synthesize_theme)
    warned = async_capture_events(hass, EVENT_PRESSURE)
    synthesized = async_capture_events(hass, EVENT_SYNTHESIS)
    await household_turns(hass, 4)
    await settle(hass)
    assert passes(fake_ollama, "synthesize") == []
    assert [(e.data["tier"], e.data["prompt_tokens"], e.data["num_ctx"]) for e in warned] == [
        (80, PRESSED, NUM_CTX)
    ]
    assert float(state(hass, "sensor.alto_context_pressure")) == pytest.approx(85.4, abs=0.1)
    await household_turns(hass, 1)
    await settle(hass)
    assert [(e.data["trigger"], e.data["elements"]) for e in synthesized] == [("pressure", 1)]
    assert "boiler" not in json.dumps(synthesized[0].data)
    await converse(hass, "Good evening.")
    prompt = situation_of(conversational(fake_ollama)[-1])
    assert "Alto's impressions" in prompt
    assert THEME in prompt


# -- privacy between scopes -----------------------------------------------------------------------
async def test_a_private_scope_feeds_no_other_speakers_prompt_inbox_or_sensor(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    people: tuple[Context, Context],
) -> None:
    """Ana's pending item and her synthesis reach her own prompt only.

    Ben's and the household's prompts never show them, the inbox list and size do not count
    them, and Ben cannot run her passes.
    """
    ana, ben = people
    fake_ollama.when(lambda body: kind_of(body) == "n1", observe_plumber("low"))
    fake_ollama.when(lambda body: kind_of(body) == "synthesize", synthesize_theme)
    await converse(hass, PLUMBER, context=ana)
    await settle(hass)
    response = await alto_service(hass, "synthesize", {}, ana)
    assert (response["scope"], response["synthesis"]["themes"][0]["text"]) == (
        ana.user_id,
        THEME,
    )
    with pytest.raises(Unauthorized):
        await alto_service(hass, "synthesize", {"owner": ana.user_id}, ben)
    await converse(hass, "Hello.", context=ben)
    await converse(hass, "Hello.")
    for body in conversational(fake_ollama)[-2:]:
        sent = everything_sent(body)
        assert "plumber" not in sent
        assert THEME not in sent
    assert (state(hass, INBOX), state(hass, INBOX_SIZE)) == ("0", "0")
    await converse(hass, "Hello.", context=ana)
    assert THEME in situation_of(conversational(fake_ollama)[-1])


async def test_purge_deletes_a_users_turn_log(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    people: tuple[Context, Context],
) -> None:
    """`alto.purge` (an administrator's) deletes Ben's reflect journal with his turns."""
    ana, ben = people
    await converse(hass, PLUMBER, context=ben)
    await settle(hass)
    journal = storage_dir(hass, setup_alto.entry_id) / "reflect" / f"{ben.user_id}.jsonl"
    assert await hass.async_add_executor_job(journal.exists)
    await alto_service(hass, "purge", {"owner": ben.user_id}, ana)
    assert not await hass.async_add_executor_job(journal.exists)
    assert await reflection_organ(hass).reflector.turns(ben.user_id or "") == ()


# -- the services and the options -----------------------------------------------------------------
class TestPassesSwitchedOff:
    """N+1 and reflection off: nothing runs in the background; the service still reflects."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """Both passes off, no breather."""
        return {
            CONF_REFLECT: {CONF_BREATHER: 0, CONF_N1_ENABLED: False, CONF_REFLECTION_ENABLED: False}
        }

    async def test_nothing_runs_and_the_service_reflects_on_demand(
        self, hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
    ) -> None:
        """25 messages make no pass call; `alto.reflect` then answers with the whole report."""
        fact = {
            "kind": "preference",
            "ledger": "preferences_patterns",
            "content": "Likes the hall light dim",
            "turns": [2],
            "resolves": 0,
        }
        reply = answer(items=[fact], nominations=[])
        fake_ollama.when(lambda body: kind_of(body) == "reflect", reply)
        await household_turns(hass, 25)
        await settle(hass)
        assert [kind_of(body) for body in fake_ollama.chat_requests if kind_of(body)] == []
        report = await alto_service(hass, "reflect", {})
        assert (report["scope"], report["covered"], report["exited_cleanly"]) == (
            HOUSEHOLD,
            [1, 25],
            True,
        )
        assert [(line["ledger"], line["content"]) for line in report["appended"]] == [
            ("preferences_patterns", fact["content"])
        ]


async def test_a_quiet_scope_reflects_on_the_idle_check(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three messages, then quiet: the next idle check reflects on them, once."""
    monkeypatch.setattr(reflection, "IDLE_REFLECTION_S", 0.0)
    fake_ollama.when(lambda body: kind_of(body) == "reflect", answer(items=[], nominations=[]))
    reflected = async_capture_events(hass, EVENT_REFLECTION)
    await household_turns(hass, 3)
    await settle(hass)
    assert reflected == []
    for minutes in (15, 30):
        async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=minutes))
        await settle(hass)
    assert [event.data["covered"] for event in reflected] == [[1, 3]]


async def test_diagnostics_count_each_scope_without_naming_it(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    people: tuple[Context, Context],
) -> None:
    """The household by name, Ana's scope as private_1: counts only, no id, no text."""
    ana, _ben = people
    fake_ollama.when(lambda body: kind_of(body) == "n1", observe_plumber("low"))
    await converse(hass, PLUMBER, context=ana)
    await converse(hass, "Good night.")
    await settle(hass)
    assert await async_setup_component(hass, "diagnostics", {})
    found = (await get_diagnostics_for_config_entry(hass, hass_client, setup_alto))["reflect"]
    assert sorted(found["scopes"]) == ["household", "private_1"]
    assert (found["scopes"]["private_1"]["turns"], found["scopes"]["private_1"]["pending"]) == (
        1,
        1,
    )
    assert (found["scopes"]["household"]["turns"], found["scopes"]["household"]["pending"]) == (
        1,
        0,
    )
    assert found["passes"]["n1"]["runs"] == 1  # "Good night." gives N+1 nothing to read
    assert ana.user_id not in json.dumps(found)
    assert "plumber" not in json.dumps(found)


class TestAPassWithItsOwnModel:
    """N+1 on a smaller model than the chat model, set in the options."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """N+1 on SMALL, no breather."""
        return {CONF_REFLECT: {CONF_BREATHER: 0, CONF_N1_MODEL: SMALL}}

    @pytest.fixture
    def fake_ollama(self, fake_ollama: FakeOllama) -> FakeOllama:
        """The fake also serves SMALL."""
        fake_ollama.models.append(SMALL)
        return fake_ollama

    async def test_the_pass_calls_its_model_and_the_turn_the_chat_model(
        self, hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
    ) -> None:
        """The N+1 request names SMALL; the conversational one the chat model."""
        fake_ollama.when(lambda body: kind_of(body) == "n1", observe_plumber("low"))
        await converse(hass, PLUMBER)
        await settle(hass)
        assert [body["model"] for body in passes(fake_ollama, "n1")] == [SMALL]
        assert [body["model"] for body in conversational(fake_ollama)] == [CHAT_MODEL]
