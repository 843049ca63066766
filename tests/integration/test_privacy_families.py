"""Three privacy promises, each a property over a family of cases, in a real Home Assistant.

1. A held confirmation belongs to its requester. For every pair of speakers (two users, two
   voice satellites without a user) and every thing the other one says in the requester's
   conversation (yes, no, a confirm-first request of their own, an unrelated sentence), the held
   call survives untouched and only the requester's own answer settles it. The other's own
   confirm-first request is held beside it, under them.
2. Shared entities carry ids, counts and verdicts, never anyone's words. For a private turn in
   each of six languages (an action held for confirmation, one carried out, one the executor
   finds nothing in, and a household memory the turn brings up), no word of what was said or
   of its spans is in any state or attribute of an Alto entity, nor in the recorder's states.
3. Forget is no existence oracle. Another user's private id, an id forgotten earlier, an id never
   used and malformed ids are all answered alike, and nothing is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from homeassistant.components import conversation
from homeassistant.components.recorder import get_instance
from homeassistant.components.recorder.util import session_scope
from homeassistant.core import Context, Event, HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_capture_events
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_recording_done,
)
from pytest_homeassistant_custom_component.typing import RecorderInstanceContextManager
from sqlalchemy import text

from custom_components.alto.act.model import GuardReason
from custom_components.alto.act.tiers import Tier
from custom_components.alto.const import CONF_SURFACER_WAIT
from custom_components.alto.memory_organ.organ import EVENT_REFUSED
from custom_components.alto.surface_organ.organ import EVENT_THOUGHT

from ..fake_ollama import ChatReply, FakeOllama, is_render
from .helpers import (
    AGENT,
    MARIA,
    Script,
    alto_service,
    call_ha_service,
    converse_and_settle,
    converse_and_wait_for_background,
    is_call_1,
    is_call_2,
    journal_bytes,
    memory,
    remember,
)

LOCK, GARAGE, LIGHT = "lock.front_door", "cover.garage_door", "light.bed_light"


@pytest.fixture
def entry_options() -> dict[str, Any]:
    """A generous wait for a thought, so a busy machine never defers the expected one a turn."""
    return {CONF_SURFACER_WAIT: 10}


@pytest.fixture
def mock_recorder_before_hass(async_test_recorder: RecorderInstanceContextManager) -> None:
    """The recorder is chosen before `hass` exists (HA's own recorder tests' way)."""


async def _member(hass: HomeAssistant, name: str) -> str:
    """A household member who is no administrator: their user id."""
    return (await hass.auth.async_create_user(name, group_ids=["system-users"])).id


# --- 1. a held confirmation belongs to its requester --------------------------------------------


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who speaks: a logged-in user, or a voice satellite with no user."""

    user_id: str | None
    device_id: str | None

    async def says(
        self, hass: HomeAssistant, words: str, conversation_id: str | None = None
    ) -> conversation.ConversationResult:
        """One turn of this speaker, settled."""
        return await converse_and_settle(
            hass,
            words,
            conversation_id,
            context=Context(user_id=self.user_id),
            device_id=self.device_id,
        )


SPEAKERS = ("user_a", "user_b", "voice_x", "voice_y")
PAIRS = [(asker, other) for asker in SPEAKERS for other in SPEAKERS if asker != other]
UNLOCK, OPEN_GARAGE = "unlock the front door", "open the garage door"
# What the other speaker says in the requester's conversation.
OTHERS_WORDS = {
    "yes": "yes",
    "no": "no",
    "own_request": "open the garage",
    "unrelated": "what a lovely evening",
}


async def _speakers(hass: HomeAssistant) -> dict[str, Speaker]:
    return {
        "user_a": Speaker(await _member(hass, "Alice"), None),
        "user_b": Speaker(await _member(hass, "Bob"), None),
        "voice_x": Speaker(None, "satellite_x"),
        "voice_y": Speaker(None, "satellite_y"),
    }


def _of(intents: list[Event], entity_id: str, conversation_id: str) -> list[tuple[str, Any]]:
    """(verdict, user id) of the intents on one entity in one conversation, in order."""
    return [
        (e.data["verdict"], e.data["user_id"])
        for e in intents
        if e.data["entity_id"] == entity_id and e.data["conversation_id"] == conversation_id
    ]


async def _reset(hass: HomeAssistant) -> None:
    """The front door locked and the garage closed again."""
    await hass.services.async_call("lock", "lock", {"entity_id": LOCK}, blocking=True)
    await hass.services.async_call("cover", "close_cover", {"entity_id": GARAGE}, blocking=True)
    await hass.async_block_till_done()
    assert hass.states.get(LOCK).state == "locked"
    assert hass.states.get(GARAGE).state == "closed"


@pytest.mark.parametrize(("asker_key", "other_key"), PAIRS)
@pytest.mark.usefixtures("front_door_exposed")
async def test_a_held_call_is_settled_only_by_its_requester(
    hass: HomeAssistant,
    script: Script,
    intents: list[Event],
    asker_key: str,
    other_key: str,
) -> None:
    """Whatever someone else says in the conversation, only the requester settles their call."""
    speakers = await _speakers(hass)
    asker, other = speakers[asker_key], speakers[other_key]
    script.propose(UNLOCK, call_ha_service(LOCK, "unlock"))
    script.propose(OPEN_GARAGE, call_ha_service(GARAGE, "open_cover"))
    for action, words in OTHERS_WORDS.items():
        script.say(f"¤{UNLOCK}¤¦I can unlock it.¦")
        asked = await asker.says(hass, "let me in")
        held = asked.conversation_id
        if action == "own_request":
            script.say(f"¤{OPEN_GARAGE}¤¦I can open it.¦")
        await other.says(hass, words, held)

        assert hass.states.get(LOCK).state == "locked", action
        assert _of(intents, LOCK, held) == [("awaiting_confirmation", asker.user_id)], action
        # The other's own confirm-first request is held too, under them; nothing else of theirs.
        theirs = [("awaiting_confirmation", other.user_id)] if action == "own_request" else []
        assert _of(intents, GARAGE, held) == theirs, action

        await asker.says(hass, "yes", held)
        assert hass.states.get(LOCK).state == "unlocked", action
        assert _of(intents, LOCK, held) == [
            ("awaiting_confirmation", asker.user_id),
            ("confirmed", asker.user_id),
        ], action
        # The requester's yes answered their own call only.
        assert hass.states.get(GARAGE).state == "closed", action
        assert _of(intents, GARAGE, held) == theirs, action
        if action == "own_request":
            await other.says(hass, "yes", held)
            assert hass.states.get(GARAGE).state == "open"
            assert _of(intents, GARAGE, held)[-1] == ("confirmed", other.user_id)
        await _reset(hass)


# --- 2. shared entities carry no words ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrivateTurn:
    """A logged-in user's turn: what they said, the spans of Alto's reply, and their yes."""

    language: str
    said: str
    unlock: str  # held for confirmation
    light: str  # carried out
    nothing: str  # the executor proposes nothing: refused
    yes: str


PRIVATE_TURNS = (
    PrivateTurn(
        "en",
        "Maria must not hear this: let my lover Carlos in while Bob is at work.",
        "unlock the front door for my lover Carlos while Bob is at work",
        "turn on the bed light so Carlos finds his way",
        "hide the love letters from Bob",
        "yes",
    ),
    PrivateTurn(
        "de",
        "Maria darf das nicht hören: lass meinen Liebhaber Carlos herein, während Bob arbeitet.",
        "schließ die Haustür für meinen Liebhaber Carlos auf, während Bob arbeitet",
        "mach das Bettlicht an, damit Carlos den Weg findet",
        "versteck die Liebesbriefe vor Bob",
        "ja",
    ),
    PrivateTurn(
        "fr",
        "Maria ne doit pas entendre ça : fais entrer mon amant Carlos pendant que Bob travaille.",
        "déverrouille la porte d'entrée pour mon amant Carlos pendant que Bob travaille",
        "allume la lampe de chevet pour que Carlos trouve son chemin",
        "cache les lettres d'amour de Bob",
        "oui",
    ),
    PrivateTurn(
        "es",
        "Maria no debe oírlo: deja entrar a mi amante Carlos mientras Bob trabaja.",
        "abre la puerta principal para mi amante Carlos mientras Bob trabaja",
        "enciende la luz de la cama para que Carlos encuentre el camino",
        "esconde las cartas de amor de Bob",
        "sí",
    ),
    PrivateTurn(
        "nl",
        "Maria mag dit niet horen: laat mijn minnaar Carlos binnen terwijl Bob werkt.",
        "doe de voordeur open voor mijn minnaar Carlos terwijl Bob werkt",
        "zet het bedlampje aan zodat Carlos de weg vindt",
        "verstop de liefdesbrieven voor Bob",
        "ja",
    ),
    PrivateTurn(
        "it",
        "Maria non deve sentirlo: fai entrare il mio amante Carlos mentre Bob lavora.",
        "apri la porta d'ingresso per il mio amante Carlos mentre Bob lavora",
        "accendi la luce del letto così Carlos trova la strada",
        "nascondi le lettere d'amore di Bob",
        "sì",
    ),
)
THOUGHT = "I remember Maria walks the dog every morning."  # household words Maria brings up
# Codes a shared entity may carry: tiers, refusal reasons, thought verdicts.
CODES = " ".join(
    [*(t.value for t in Tier), *(r.value for r in GuardReason), "no_action surfaced dropped"]
)


def _words(*texts: str) -> set[str]:
    """The words of `texts` (letters only, four or more), casefolded."""
    return {w for t in texts for w in re.findall(r"[^\W\d_]{4,}", t.casefold())}


def _alto_entities(hass: HomeAssistant, entry: MockConfigEntry) -> list[str]:
    """The entry's entity ids (the agent, the event entity and the sensors among them)."""
    registry = er.async_get(hass)
    found = [e.entity_id for e in er.async_entries_for_config_entry(registry, entry.entry_id)]
    assert {"event.alto_intents", "sensor.alto_last_thought", AGENT} <= set(found)
    return found


def _alto_states(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """Every state and attribute of the entry's entities, as one JSON text."""
    states = [hass.states.get(entity_id) for entity_id in _alto_entities(hass, entry)]
    return json.dumps([s.as_dict() for s in states if s is not None], default=str)


async def _recorded_states(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """Every state and attribute the recorder's database holds of the entry's entities."""
    await async_wait_recording_done(hass)
    entity_ids = _alto_entities(hass, entry)

    def read() -> str:
        with session_scope(hass=hass, read_only=True) as session:
            rows = session.execute(
                text(
                    "SELECT m.entity_id, s.state, a.shared_attrs FROM states s"
                    " JOIN states_meta m ON s.metadata_id = m.metadata_id"
                    " LEFT JOIN state_attributes a ON s.attributes_id = a.attributes_id"
                )
            ).all()
        return json.dumps([list(row[1:]) for row in rows if row[0] in entity_ids])

    return await get_instance(hass).async_add_executor_job(read)


@pytest.fixture
def scripted(fake_ollama: FakeOllama) -> Script:
    """Intake learns MARIA (mode 2), a render says THOUGHT; the rest is the action script."""
    fake_ollama.when(
        lambda body: is_call_1(body) and MARIA in json.dumps(body),
        json.dumps([[MARIA, "statement"]]),
    )
    fake_ollama.when(
        lambda body: is_call_2(body) and MARIA in json.dumps(body),
        json.dumps([[3, MARIA], [1, "Maria"], [2, "walks the dog"]]),
    )
    fake_ollama.when(is_call_1, _all_requests)
    fake_ollama.when(is_render, THOUGHT)
    return Script(fake_ollama)


def _all_requests(body: dict[str, Any]) -> ChatReply:
    """Intake call 1 for any other turn: every sentence a request (nothing to remember)."""
    spans = [pair["prefixItems"][0]["const"] for pair in body["format"]["prefixItems"]]
    return ChatReply.text(json.dumps([[span, "request"] for span in spans]))


@pytest.mark.parametrize("turn", PRIVATE_TURNS, ids=[t.language for t in PRIVATE_TURNS])
@pytest.mark.usefixtures("recorder_mock", "qualified", "front_door_exposed")
async def test_no_word_of_a_private_turn_on_a_shared_entity(
    hass: HomeAssistant,
    alto: MockConfigEntry,
    scripted: Script,
    intents: list[Event],
    turn: PrivateTurn,
) -> None:
    """A private turn's words reach no Alto entity's state or attributes, nor their history."""
    thoughts = async_capture_events(hass, EVENT_THOUGHT)
    await converse_and_wait_for_background(hass, MARIA)  # a household memory about Maria
    public = _words(_alto_states(hass, alto), CODES, LOCK, LIGHT, "unlock turn_on")
    public |= _words(*(hass.states.get(e).name for e in (LOCK, LIGHT)))
    alice = Context(user_id=await _member(hass, "Alice"))

    scripted.say(f"¤{turn.unlock}¤ ¤{turn.light}¤ ¤{turn.nothing}¤¦…¦")
    scripted.propose(turn.unlock, call_ha_service(LOCK, "unlock"))
    scripted.propose(turn.light, call_ha_service(LIGHT, "turn_on"))
    asked = await conversation.async_converse(
        hass, turn.said, None, alice, language=turn.language, agent_id=AGENT
    )
    await hass.async_block_till_done(wait_background_tasks=True)
    await conversation.async_converse(
        hass,
        turn.yes,
        asked.conversation_id,
        Context(user_id=alice.user_id),
        language=turn.language,
        agent_id=AGENT,
    )
    await hass.async_block_till_done(wait_background_tasks=True)

    # The family is what it says: every verdict happened, and Maria brought up the thought.
    assert hass.states.get(LOCK).state == "unlocked"
    assert hass.states.get(LIGHT).state == "on"
    assert [e.data["verdict"] for e in intents] == [
        "awaiting_confirmation",
        "executed",
        "refused",
        "confirmed",
    ]
    assert "surfaced" in [e.data["verdict"] for e in thoughts]
    # The bus event, which automations read, keeps the span.
    assert intents[0].data["span"] == turn.unlock

    said = _words(turn.said, turn.unlock, turn.light, turn.nothing) - public
    assert "carlos" in said
    assert said & _words(_alto_states(hass, alto)) == set()
    recorded = await _recorded_states(hass, alto)
    assert LOCK in recorded  # the event entity's attributes were recorded
    assert said & _words(recorded) == set()


# --- 3. forget is no existence oracle -------------------------------------------------------------


def _answer(raised: pytest.ExceptionInfo[ServiceValidationError]) -> tuple[Any, ...]:
    error = raised.value
    return (type(error), error.translation_key, error.translation_placeholders, str(error))


@pytest.mark.usefixtures("setup_alto")
async def test_forget_answers_alike_for_what_is_not_the_callers(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """Another user's private id, a forgotten id and an unused one: one answer, nothing written."""
    alice = Context(user_id=await _member(hass, "Alice"))
    bob = Context(user_id=await _member(hass, "Bob"))
    alices = await remember(hass, "My lover Carlos visits on Tuesdays.", alice)
    await remember(hass, "The bins go out on Thursday.")  # the household's
    gone = await remember(hass, "Bob forgot this one.", bob)
    await alto_service(hass, "forget", {"id": gone}, bob)
    unused = max(alices, gone) + 1000
    family = {"another user's private": alices, "forgotten": gone, "never used": unused}

    refused = async_capture_events(hass, EVENT_REFUSED)
    journal = journal_bytes(hass, setup_alto)
    answers: dict[str, tuple[Any, ...]] = {}
    for name, memory_id in family.items():
        with pytest.raises(ServiceValidationError) as raised:
            await alto_service(hass, "forget", {"id": memory_id}, bob)
        answers[name] = _answer(raised)
    assert len(set(answers.values())) == 1, answers
    assert next(iter(answers.values()))[1] == "not_found"
    assert _same([e.data for e in refused])

    # Below the services (the panel, the to-do list), malformed ids among them.
    organ = memory(hass)
    reports = [
        await organ.async_forget(ids, viewer=bob.user_id)
        for ids in ([alices], [gone], [unused], [-1], [2**70], [str(alices)], [alices, unused])
    ]
    assert _same([(r.admitted, r.ids, r.mode, r.status, r.reason) for r in reports])
    assert journal_bytes(hass, setup_alto) == journal
    # Alice still forgets her own.
    assert await alto_service(hass, "forget", {"id": alices}, alice) == {"forgotten": [alices]}


@pytest.mark.usefixtures("setup_alto")
async def test_an_administrator_still_purges_a_users_memories(
    hass: HomeAssistant, hass_admin_user: Any
) -> None:
    """`alto.purge` by an administrator forgets another user's private memories, as before."""
    alice = Context(user_id=await _member(hass, "Alice"))
    alices = await remember(hass, "My lover Carlos visits on Tuesdays.", alice)
    purged = await alto_service(
        hass, "purge", {"owner": alice.user_id}, Context(user_id=hass_admin_user.id)
    )
    assert purged == {"forgotten": [alices]}


def _same(items: Iterable[Any]) -> bool:
    """All the items are equal (and there is at least one)."""
    listed = list(items)
    return bool(listed) and all(item == listed[0] for item in listed)
