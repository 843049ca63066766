"""The panel's websocket API: each user's view, live updates, and the services' scope checks.

Two users over real websocket connections: Ana, an administrator, and Bob, an ordinary user.
Real HA, the fake Ollama over HTTP and the real embedded Chroma store.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from homeassistant.auth.const import GROUP_ID_ADMIN, GROUP_ID_USER
from homeassistant.auth.providers import homeassistant as auth_ha
from homeassistant.components.frontend import DATA_PANELS
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.util.ulid import ulid_at_time
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    WebSocketGenerator,
)

from custom_components.alto.act_organ.organ import signal_intent
from custom_components.alto.const import CONF_BREATHER, CONF_REFLECT
from custom_components.alto.memory.records import HOUSEHOLD, Row
from custom_components.alto.panel.memories import SOURCE_TYPES, entries_view, source_of
from custom_components.alto.panel.sidebar import PANEL_URL_PATH, STATIC_URL
from custom_components.alto.surface.surfacer import SurfaceOutcome
from custom_components.alto.surface_organ.organ import signal_thought

from ..fake_ollama import ChatReply, FakeOllama
from .helpers import (
    Body,
    alto_service,
    answer,
    converse,
    kind_of,
    memory,
    said_in,
    settle,
    synthesis_answer,
    turn_refs,
)
from .panel_client import Person, connect

ANA_SECRET = "My pin for the bike lock is 4711."
BOB_SECRET = "I hide chocolate in the piano."
SHARED = "The bins go out on Tuesday."
ASKED = "Is Carla coming round this weekend?"
COMMAND = "Please turn on the kitchen light."
TOLD = "My sister Carla visits every Sunday."


@pytest.fixture
async def ana(
    hass: HomeAssistant,
    hass_ws_client: WebSocketGenerator,
    local_auth: auth_ha.HassAuthProvider,
    setup_alto: MockConfigEntry,
) -> Person:
    """Ana, an administrator, connected."""
    return await connect(hass, hass_ws_client, "Ana", GROUP_ID_ADMIN)


@pytest.fixture
async def bob(
    hass: HomeAssistant,
    hass_ws_client: WebSocketGenerator,
    local_auth: auth_ha.HassAuthProvider,
    setup_alto: MockConfigEntry,
) -> Person:
    """Bob, an ordinary user, connected."""
    return await connect(hass, hass_ws_client, "Bob", GROUP_ID_USER)


async def _remember(person: Person, text: str, **extra: Any) -> int:
    ids = (await person.ok(type="alto/remember", text=text, **extra))["ids"]
    assert len(ids) == 1
    return int(ids[0])


def _quotes(view: dict[str, Any]) -> set[str]:
    return {m["quote"] for m in view["memories"]}


# -- the panel itself ----------------------------------------------------------------------------
async def test_panel_is_registered_and_served(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, setup_alto: MockConfigEntry
) -> None:
    """The sidebar entry exists for every user and its module is served from the integration."""
    panel = hass.data[DATA_PANELS][PANEL_URL_PATH]
    assert panel.sidebar_title == "Alto"
    assert panel.require_admin is False
    assert panel.config is not None
    custom = panel.config["_panel_custom"]
    assert custom["name"] == "alto-panel"
    assert custom["module_url"].startswith(f"{STATIC_URL}/alto-panel.js?v=")

    client = await hass_client()
    response = await client.get(custom["module_url"])
    assert response.status == 200
    assert 'customElements.define("alto-panel"' in await response.text()


async def test_panel_strings_come_from_the_translations(ana: Person) -> None:
    """The panel's strings are the `panel_` keys of `common`, without the prefix, per language."""
    strings = await ana.ok(type="alto/strings", language="en")
    assert strings["memories"] == "Memories"
    assert strings["said_by"] == "Said by {name}"
    assert all(not key.startswith("panel_") for key in strings)
    german = await ana.ok(type="alto/strings", language="de")
    assert german["memories"] == "Erinnerungen"
    assert german.keys() == strings.keys()


# -- what each user sees --------------------------------------------------------------------------
async def test_each_user_sees_household_and_only_their_own_private_memories(
    ana: Person, bob: Person
) -> None:
    """Household memories for both, each one's private memories for that one only."""
    shared_id = await _remember(ana, SHARED, owner=HOUSEHOLD)
    ana_id = await _remember(ana, ANA_SECRET)
    bob_id = await _remember(bob, BOB_SECRET)

    ana_view, bob_view = await ana.view(), await bob.view()
    assert _quotes(ana_view) == {SHARED, ANA_SECRET}
    assert _quotes(bob_view) == {SHARED, BOB_SECRET}
    # Newest first; who said it by display name, never a user id.
    assert [m["id"] for m in bob_view["memories"]] == [bob_id, shared_id]
    mine, shared = bob_view["memories"]
    assert (mine["scope"], mine["owner"], mine["actor"]) == ("private", "Bob", "Bob")
    assert (shared["scope"], shared["owner"], shared["actor"]) == ("household", None, "Ana")
    assert mine["source"]["type"] == "service"
    assert mine["source"]["when"] is not None
    assert (mine["kind"], mine["listed"], mine["understood"]) == ("explicit", True, [])
    assert mine["forget"] == [bob_id]
    for view in (ana_view, bob_view):
        assert ana.user.id not in str(view["memories"])
        assert bob.user.id not in str(view["memories"])
    assert ana_id not in {m["id"] for m in bob_view["memories"]}


async def test_recall_searches_only_what_the_caller_may_see(ana: Person, bob: Person) -> None:
    """Bob's search never finds Ana's private memory; a query passes admission as in the service."""
    await _remember(ana, ANA_SECRET)
    bob_id = await _remember(bob, BOB_SECRET)

    found = await bob.ok(type="alto/recall", query="bike lock pin", limit=10)
    assert [m["id"] for m in found["memories"]] == [bob_id]
    assert found["memories"][0]["actor"] == "Bob"
    refused = await bob.command(type="alto/recall", query="bad\x00query")
    assert not refused["success"]
    assert refused["error"]["translation_key"] == "query_refused"


async def test_a_user_cannot_forget_or_write_another_users_memories(
    ana: Person, bob: Person
) -> None:
    """Forget and remember-for-someone-else are refused as the services refuse them."""
    ana_id = await _remember(ana, ANA_SECRET)

    forget = await bob.command(type="alto/forget", memory_id=ana_id)
    assert not forget["success"]
    assert forget["error"]["translation_key"] == "not_found"  # as if it did not exist
    as_ana = await bob.command(type="alto/remember", text="Ana owes Bob money.", owner=ana.user.id)
    assert not as_ana["success"]
    assert as_ana["error"]["code"] == "unauthorized"
    assert _quotes(await ana.view()) == {ANA_SECRET}

    # The owner forgets it: gone from her view.
    assert (await ana.ok(type="alto/forget", memory_id=ana_id))["forgotten"] == [ana_id]
    assert (await ana.view())["memories"] == []


async def test_only_an_administrator_qualifies_purges_and_sees_the_admin_section(
    hass: HomeAssistant, ana: Person, bob: Person
) -> None:
    """Qualify and purge are administrator services; the admin section is only in Ana's view."""
    await _remember(bob, BOB_SECRET)
    await _remember(bob, "I am learning the cello.")

    bob_view = await bob.view()
    assert bob_view["admin"] is None
    assert bob_view["viewer"] == {"name": "Bob", "is_admin": False}
    for message in ({"type": "alto/qualify"}, {"type": "alto/purge", "owner": bob.user.id}):
        refused = await bob.command(**message)
        assert not refused["success"]
        assert refused["error"]["code"] == "unauthorized"

    admin = (await ana.view())["admin"]
    assert admin["qualified"] is False
    assert admin["effective_mode"] == "source_text"
    assert admin["model_digest"] == memory(hass).model_digest
    counts = {user["name"]: user["private_memories"] for user in admin["users"]}
    assert (counts["Ana"], counts["Bob"]) == (0, 2)

    purged = await ana.ok(type="alto/purge", owner=bob.user.id)
    assert len(purged["forgotten"]) == 2
    assert (await bob.view())["memories"] == []
    counts = {u["name"]: u["private_memories"] for u in (await ana.view())["admin"]["users"]}
    assert (counts["Ana"], counts["Bob"]) == (0, 0)


async def test_an_administrator_purges_the_memories_of_a_user_deleted_from_home_assistant(
    hass: HomeAssistant, ana: Person
) -> None:
    """A deleted user's memories stay listed (no name) until an administrator purges them."""
    carl = MockUser(name="Carl").add_to_hass(hass)
    await alto_service(hass, "remember", {"text": BOB_SECRET}, Context(user_id=carl.id))
    await _remember(ana, SHARED, owner=HOUSEHOLD)
    await hass.auth.async_remove_user(carl)

    users = (await ana.view())["admin"]["users"]
    assert {"id": carl.id, "name": None, "private_memories": 1} in users
    assert len((await ana.ok(type="alto/purge", owner=carl.id))["forgotten"]) == 1
    assert carl.id not in {user["id"] for user in (await ana.view())["admin"]["users"]}
    assert _quotes(await ana.view()) == {SHARED}


async def test_qualify_reports_the_verdict_without_the_raw_answers(ana: Person) -> None:
    """The panel gets the verdict; the 25 raw answers stay in the service response."""
    result = await ana.ok(type="alto/qualify")
    assert "answers" not in result
    assert {"passed", "recorded", "cases", "failed", "model_digest", "processor_digest"} <= set(
        result
    )
    assert result["cases"] == 25


# -- live updates ---------------------------------------------------------------------------------
async def _next_view(person: Person, subscription: int) -> dict[str, Any]:
    """The view the person's panel shows after the subscription's next event."""
    message = await asyncio.wait_for(person.receive(), 10)
    assert (message["id"], message["type"]) == (subscription, "event"), message
    person.panel.apply(message["event"])
    return person.panel.shown()


async def _nothing_arrives(hass: HomeAssistant, person: Person) -> None:
    await hass.async_block_till_done()
    assert person.events == []
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(person.ws.receive_json(), 0.3)


async def test_subscription_follows_the_viewers_memory_and_nothing_else(
    hass: HomeAssistant, ana: Person, bob: Person
) -> None:
    """A new view on every change Bob can see, none for Ana's private one, none after."""
    await bob.ws.send_json_auto_id({"type": "alto/subscribe"})
    subscribed = await bob.ws.receive_json()
    assert subscribed["success"]
    subscription = subscribed["id"]
    assert (await _next_view(bob, subscription))["memories"] == []

    bob_id = await _remember(bob, BOB_SECRET)
    assert _quotes(await _next_view(bob, subscription)) == {BOB_SECRET}

    # Ana's private memory changes nothing Bob sees: he is sent nothing.
    await _remember(ana, ANA_SECRET)
    await _nothing_arrives(hass, bob)

    await _remember(ana, SHARED, owner=HOUSEHOLD)
    assert _quotes(await _next_view(bob, subscription)) == {BOB_SECRET, SHARED}

    await bob.ok(type="alto/forget", memory_id=bob_id)
    assert _quotes(await _next_view(bob, subscription)) == {SHARED}

    await bob.ok(type="unsubscribe_events", subscription=subscription)
    await _remember(ana, "The plumber comes on Friday.", owner=HOUSEHOLD)
    await _nothing_arrives(hass, bob)


# -- recent thoughts and intents ------------------------------------------------------------------
def _intent(verdict: str, user_id: str | None, span: str) -> dict[str, Any]:
    return {
        "verdict": verdict,
        "span": span,
        "entity_id": "light.kitchen",
        "service": "turn_on",
        "tier": "autonomous",
        "reason": None,
        "conversation_id": "c1",
        "user_id": user_id,
    }


async def test_intents_show_to_their_speaker_and_voice_turns_to_everyone(
    hass: HomeAssistant, setup_alto: MockConfigEntry, ana: Person, bob: Person
) -> None:
    """Each user sees the intents of their own turns and of turns without a user."""
    signal = signal_intent(setup_alto.entry_id)
    async_dispatcher_send(hass, signal, _intent("executed", ana.user.id, "kitchen light on"))
    async_dispatcher_send(hass, signal, _intent("refused", bob.user.id, "open the safe"))
    async_dispatcher_send(hass, signal, _intent("declined", None, "unlock the door"))

    bob_intents = (await bob.view())["intents"]
    assert [(i["span"], i["verdict"], i["user"]) for i in bob_intents] == [
        ("unlock the door", "declined", None),
        ("open the safe", "refused", "Bob"),
    ]
    ana_spans = [i["span"] for i in (await ana.view())["intents"]]
    assert ana_spans == ["unlock the door", "kitchen light on"]


async def test_a_thought_shows_only_to_whom_its_memories_belong_and_goes_with_them(
    hass: HomeAssistant, setup_alto: MockConfigEntry, ana: Person, bob: Person
) -> None:
    """A thought quoting Ana's private memory is hers alone, and forgetting it removes it."""
    ana_id = await _remember(ana, ANA_SECRET)
    shared_id = await _remember(ana, SHARED, owner=HOUSEHOLD)
    thoughts = setup_alto.runtime_data.thoughts
    signal = signal_thought(setup_alto.entry_id)
    for source, text in ((ana_id, "I remember your bike lock pin."), (shared_id, "Bins go out.")):
        thoughts.last = SurfaceOutcome("surfaced", text, [str(source)], [], 1)
        async_dispatcher_send(hass, signal)
    thoughts.last = SurfaceOutcome("dropped", "an unverified render", [str(shared_id)], ["echo"], 2)
    async_dispatcher_send(hass, signal)

    seen = [(t["verdict"], t["thought"]) for t in (await ana.view())["thoughts"]]
    assert seen == [
        ("dropped", None),  # a dropped render is never shown as a thought
        ("surfaced", "Bins go out."),
        ("surfaced", "I remember your bike lock pin."),
    ]
    assert [t["thought"] for t in (await bob.view())["thoughts"]] == [None, "Bins go out."]

    await ana.ok(type="alto/forget", memory_id=ana_id)
    assert [t["thought"] for t in (await ana.view())["thoughts"]] == [None, "Bins go out."]


# -- the reflect organ's inbox and latest synthesis ------------------------------------------------
# What N+1 notes for a turn that speaks of each word, and the theme a synthesis finds in it.
NOTES = {
    "plumber": "Ana said she would call the plumber; nothing shows it happened.",
    "dentist": "The dentist appointment still has no time.",
}
THEMES = {"plumber": "Waiting on the plumber", "dentist": "The family's dentist visits"}


def observe(body: Body) -> ChatReply:
    """N+1: one low-urgency item per word of `NOTES` said in the turns shown."""
    observations = [
        {"mandate": "complete", "turns": turns, "content": note, "urgency": "low"}
        for word, note in NOTES.items()
        if (turns := said_in(body, word))
    ]
    return answer(observations=observations, nominations=[])


def synthesize(body: Body) -> ChatReply:
    """A synthesis: a theme per word of `THEMES` in the turns shown, citing the first turn."""
    shown = body["messages"][1]["content"]
    first = turn_refs(body)[0]
    themes = [{"text": theme, "cites": [first]} for word, theme in THEMES.items() if word in shown]
    return synthesis_answer(themes=themes)


class TestInboxAndSynthesis:
    """Each viewer sees the household's inbox and synthesis and their own, never another's."""

    @pytest.fixture
    def entry_options(self) -> dict[str, Any]:
        """No breather: N+1 runs as soon as a turn has ended."""
        return {CONF_REFLECT: {CONF_BREATHER: 0}}

    @pytest.fixture
    def scripted(self, fake_ollama: FakeOllama) -> FakeOllama:
        """N+1 notes `NOTES`, synthesis finds `THEMES`."""
        fake_ollama.when(lambda body: kind_of(body) == "n1", observe)
        fake_ollama.when(lambda body: kind_of(body) == "synthesize", synthesize)
        return fake_ollama

    async def test_nothing_yet_is_an_empty_inbox_and_no_synthesis(
        self, ana: Person, bob: Person
    ) -> None:
        """Before any turn: empty lists and None for both scopes."""
        for person in (ana, bob):
            view = await person.view()
            assert view["inbox"] == []
            assert view["synthesis"] == {"household": None, "private": None}

    async def test_household_items_for_everyone_private_ones_for_their_owner(
        self, hass: HomeAssistant, scripted: FakeOllama, ana: Person, bob: Person
    ) -> None:
        """Ana sees both scopes' items and syntheses, Bob the household's only.

        A household turn and one of Ana's, each synthesized on demand; no user id is shown.
        """
        as_ana = Context(user_id=ana.user.id)
        await converse(hass, "The dentist rang about the appointment.")
        await converse(hass, "I'll call the plumber this afternoon.", context=as_ana)
        await settle(hass)
        household = await alto_service(hass, "synthesize", {})
        private = await alto_service(hass, "synthesize", {}, as_ana)
        assert (household["scope"], private["scope"]) == (HOUSEHOLD, ana.user.id)

        ana_view, bob_view = await ana.view(), await bob.view()
        assert {(i["scope"], i["content"]) for i in ana_view["inbox"]} == {
            ("private", NOTES["plumber"]),
            ("household", NOTES["dentist"]),
        }
        assert [(i["scope"], i["content"]) for i in bob_view["inbox"]] == [
            ("household", NOTES["dentist"])
        ]
        item = bob_view["inbox"][0]
        assert (item["urgency"], item["box"]) == ("low", "pending")
        assert isinstance(item["when"], int)

        shown = ana_view["synthesis"]
        assert shown["private"]["elements"] == [{"field": "themes", "texts": [THEMES["plumber"]]}]
        assert shown["household"]["elements"] == [{"field": "themes", "texts": [THEMES["dentist"]]}]
        assert (shown["household"]["trigger"], shown["private"]["trigger"]) == ("demand", "demand")
        assert bob_view["synthesis"] == {"household": shown["household"], "private": None}
        for view in (ana_view, bob_view):
            shown_sections = str((view["inbox"], view["synthesis"]))
            assert ana.user.id not in shown_sections
            assert bob.user.id not in shown_sections

    async def test_a_subscriber_gets_their_new_item_and_nobody_elses(
        self, hass: HomeAssistant, scripted: FakeOllama, ana: Person, bob: Person
    ) -> None:
        """Ana's item reaches her subscribed panel when N+1 notes it; Bob is sent nothing."""
        subscriptions = {}
        for person in (ana, bob):
            await person.ws.send_json_auto_id({"type": "alto/subscribe"})
            subscribed = await person.ws.receive_json()
            assert subscribed["success"]
            subscriptions[person.user.name] = subscribed["id"]
            assert (await _next_view(person, subscribed["id"]))["inbox"] == []

        as_ana = Context(user_id=ana.user.id)
        await converse(hass, "I'll call the plumber this afternoon.", context=as_ana)
        inbox: list[dict[str, Any]] = []
        while not inbox:  # her turn's memory comes first; the item once N+1 has run
            inbox = (await _next_view(ana, subscriptions["Ana"]))["inbox"]
        assert [i["content"] for i in inbox] == [NOTES["plumber"]]
        # (Not `settle`: it waits for background tasks, and a subscription is one until closed.)
        await _nothing_arrives(hass, bob)


# -- how a memory is shown ------------------------------------------------------------------------
def _row(row_id: int, text: str, **fields: Any) -> Row:
    values: dict[str, Any] = {
        "kind": 3,
        "owner": "u1",
        "scope": "u1",
        "actor": "u1",
        "source_id": "conversation/0123456789abcdef0123456789abcdef/01J0000000ABCDEFGHJKMNPQRS",
        "source_version": 1,
        "offset": 0,
        "length": len(text.encode()),
        **fields,
    }
    return Row(id=row_id, document=text, **values)


def test_an_entry_holds_what_was_understood_and_the_corrections_either_way() -> None:
    """A source's rows are one entry; a correction from another source shows in both."""
    source = "conversation/0123456789abcdef0123456789abcdef/01J0000000ABCDEFGHJKMNPQRS"
    said = _row(1, "The dentist is on Monday, with Carla.", kind="source")
    old = _row(2, "The dentist is on Monday.", status="superseded")
    carla = _row(3, "Carla", kind=1)
    later = "conversation/0123456789abcdef0123456789abcdef/01J1000000ABCDEFGHJKMNPQRS"
    told = _row(4, "No, it is on Tuesday.", kind="source", source_id=later)
    new = _row(5, "The dentist is on Tuesday.", kind=4, target=2, source_id=later)
    first, second = reversed(entries_view([said, old, carla, told, new], {"u1": "Ana"}))
    assert (first["id"], first["quote"], first["forget"]) == (1, said.document, [1])
    assert [(u["id"], u["kind"], u["status"]) for u in first["understood"]] == [
        (2, "assertion", "superseded"),
        (3, "participant", "current"),
    ]
    assert first["understood"][0]["superseded_by"] == {"id": 5, "quote": new.document}
    assert first["corrected"]
    assert (second["id"], second["corrected"]) == (4, False)
    assert second["understood"][0]["replaces"] == {"id": 2, "quote": old.document}
    assert first["source"] == {"type": "conversation", "when": first["source"]["when"]}
    assert source not in str(first)


def test_a_source_says_where_it_came_from_never_its_id() -> None:
    """A source's kind in words and its time: when it was said, else its ULID's; no id."""
    turn = ulid_at_time(1_700_000_000.25)
    assert source_of(f"conversation/0123456789abcdef0123/{turn}") == {
        "type": "conversation",
        "when": 1_700_000_000_250,
    }
    assert source_of(f"todo/{turn}", said_at=1_800_000_000)["when"] == 1_800_000_000_000
    assert source_of("service/key/0123abcd") == {"type": "service", "when": None}
    assert source_of(f"import/{turn}")["type"] == "other"
    for kind in SOURCE_TYPES:
        assert source_of(f"{kind}/x/{turn}")["type"] == kind
    (shown,) = entries_view(
        [_row(1, "Hi there, Carla is here.", actor="unknown", scope=HOUSEHOLD)], {}
    )
    assert (shown["actor"], shown["scope"], shown["owner"]) == (None, "household", None)


async def test_one_entry_per_thing_said_questions_and_commands_only_under_everything(
    hass: HomeAssistant, ana: Person
) -> None:
    """Each turn is one entry; a question and a command are kept but listed only with everything.

    Forgetting an entry by its `forget` ids removes its source from the store.
    """
    as_ana = Context(user_id=ana.user.id)
    for text in (ASKED, COMMAND, TOLD):
        await converse(hass, text, context=as_ana)
    await settle(hass)
    shared_id = await _remember(ana, SHARED, owner=HOUSEHOLD)

    listed = (await ana.view())["memories"]
    assert [m["quote"] for m in listed] == [SHARED, TOLD]
    everything = (await ana.view(everything=True))["memories"]
    assert [m["quote"] for m in everything] == [SHARED, TOLD, COMMAND, ASKED]
    assert [m["listed"] for m in everything] == [True, True, False, False]
    said = everything[1]
    assert (said["source"]["type"], said["actor"], said["scope"]) == (
        "conversation",
        "Ana",
        "private",
    )
    assert "conversation/" not in str(everything)
    assert everything[0]["source"]["type"] == "service"

    for entry in everything[1:]:  # forgetting each, the question and the command included
        for memory_id in entry["forget"]:
            await ana.ok(type="alto/forget", memory_id=memory_id)
    assert [m["id"] for m in (await ana.view(everything=True))["memories"]] == [shared_id]
    rows = await hass.async_add_executor_job(memory(hass).store.rows, ana.user.id)
    assert [row.document for row in rows] == [SHARED]
