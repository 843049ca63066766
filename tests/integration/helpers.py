"""Plain helpers shared by the integration tests.

The agent id, turns, results, memory services and the reflect organ's passes.

Fixtures live in `conftest.py`; this module holds functions and constants only. Three ways to
hold a turn differ in what they wait for, and each test module says which it means by its name:
`converse` returns as soon as the agent answers, `converse_and_settle` then waits for what the
turn started (`hass.async_block_till_done()`), and `converse_and_wait_for_background` waits for
background tasks too (the memory intake, a late Surfacer render).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import CONF_URL
from homeassistant.core import Context, Event, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import intent
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.const import DOMAIN
from custom_components.alto.memory.profile import (
    CLASSIFICATION_INSTRUCTION,
    STATEMENT_INSTRUCTION,
)
from custom_components.alto.memory_organ.organ import MemoryOrgan
from custom_components.alto.reflect.records import SYNTHESIS_FIELDS
from custom_components.alto.reflect_organ.organ import ReflectOrgan

from ..fake_ollama import ChatReply, FakeOllama, last_user_text, wants_reply_object

AGENT = "conversation.alto"
COUNT = "sensor.alto_memory_count"
TODO = "todo.alto_memories"
MARIA = "Maria walks the dog every morning."


# -- turns ---------------------------------------------------------------------------------------
async def converse(
    hass: HomeAssistant,
    text: str,
    conversation_id: str | None = None,
    *,
    context: Context | None = None,
    device_id: str | None = None,
    language: str = "en",
) -> conversation.ConversationResult:
    """One turn through HA's conversation API to Alto; returns as soon as the agent answers."""
    return await conversation.async_converse(
        hass,
        text,
        conversation_id,
        context or Context(),
        language=language,
        agent_id=AGENT,
        device_id=device_id,
    )


async def converse_and_settle(
    hass: HomeAssistant,
    text: str,
    conversation_id: str | None = None,
    *,
    context: Context | None = None,
    device_id: str | None = None,
) -> conversation.ConversationResult:
    """One turn, then `hass.async_block_till_done()` (background tasks are not waited for)."""
    result = await converse(
        hass, text, conversation_id, context=context, device_id=device_id, language="en"
    )
    await hass.async_block_till_done()
    return result


async def converse_and_wait_for_background(
    hass: HomeAssistant,
    text: str,
    conversation_id: str | None = None,
    *,
    context: Context | None = None,
) -> conversation.ConversationResult:
    """One turn, then wait for background tasks too (the memory intake, a late render)."""
    result = await converse(hass, text, conversation_id, context=context, language="en")
    await hass.async_block_till_done(wait_background_tasks=True)
    return result


# -- results -------------------------------------------------------------------------------------
async def add_builtin_ollama(hass: HomeAssistant, url: str, agent: Mapping[str, Any]) -> str:
    """HA's own `ollama` integration at `url`, with one conversation agent; its entity id.

    `agent`: the agent's subentry data, as its setup form stores it (model, think, LLM API...).
    """
    entry = MockConfigEntry(
        domain="ollama",
        data={CONF_URL: url},
        version=3,
        minor_version=3,
        subentries_data=[
            ConfigSubentryData(
                data=dict(agent), subentry_type="conversation", title="Built-in", unique_id=None
            )
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    (subentry_id,) = entry.subentries
    entity_id = er.async_get(hass).async_get_entity_id("conversation", "ollama", subentry_id)
    assert entity_id is not None
    return entity_id


def speech(result: conversation.ConversationResult) -> str:
    """What the turn said, whatever kind of response it was."""
    return result.response.speech["plain"]["speech"]


def spoken(result: conversation.ConversationResult) -> str:
    """What the turn said (fails for an error response)."""
    assert result.response.response_type.value != "error"
    return speech(result)


def error_text(result: conversation.ConversationResult) -> str:
    """What the turn said (fails unless it is an error response)."""
    assert result.response.response_type is intent.IntentResponseType.ERROR
    return speech(result)


def answered(result: conversation.ConversationResult) -> bool:
    """The turn said something, and not as an error."""
    return result.response.response_type is not intent.IntentResponseType.ERROR and bool(
        speech(result)
    )


def state(hass: HomeAssistant, entity_id: str) -> str:
    """The state of an entity that must exist."""
    found = hass.states.get(entity_id)
    assert found is not None, entity_id
    return found.state


# -- memory --------------------------------------------------------------------------------------
def table_path(hass: HomeAssistant) -> Path:
    """Where the organ reads and `alto.qualify` writes qualified pairs."""
    return Path(hass.config.path(".storage", DOMAIN, "qualified_pairs.json"))


def memory(hass: HomeAssistant) -> MemoryOrgan:
    """The loaded entry's memory organ."""
    organ = hass.config_entries.async_entries(DOMAIN)[0].runtime_data.memory
    assert organ is not None
    return organ


def journal_file(hass: HomeAssistant, entry: MockConfigEntry) -> Path:
    """The entry's journal (under the test's own config dir)."""
    return Path(hass.config.path(".storage", DOMAIN, entry.entry_id, "journal.jsonl"))


def journal_bytes(hass: HomeAssistant, entry: MockConfigEntry) -> bytes | None:
    """The journal's exact bytes, None while it does not exist."""
    path = journal_file(hass, entry)
    return path.read_bytes() if path.exists() else None


async def store_contents(hass: HomeAssistant) -> dict[str, Any]:
    """Exact contents of both Chroma collections, read from Chroma."""
    return await hass.async_add_executor_job(memory(hass).store.snapshot)


async def alto_service(
    hass: HomeAssistant, service: str, data: dict[str, Any], context: Context | None = None
) -> Any:
    """An Alto service call with its response."""
    return await hass.services.async_call(
        DOMAIN, service, data, blocking=True, return_response=True, context=context
    )


async def recall(
    hass: HomeAssistant, query: str, context: Context | None = None, **extra: Any
) -> list[dict[str, Any]]:
    """`alto.recall` memories (limit 48, the most, unless given)."""
    response = await alto_service(hass, "recall", {"query": query, "limit": 48, **extra}, context)
    return response["memories"]


async def remember(
    hass: HomeAssistant, text: str, context: Context | None = None, **extra: Any
) -> int:
    """`alto.remember`; returns the one id it wrote."""
    response = await alto_service(hass, "remember", {"text": text, **extra}, context)
    assert len(response["ids"]) == 1
    return response["ids"][0]


def quotes(memories: list[dict[str, Any]]) -> list[str]:
    """The quotes of recalled memories, in order."""
    return [m["quote"] for m in memories]


def is_call_1(body: dict[str, Any]) -> bool:
    """Intake call 1 (statement labels)."""
    return "format" in body and body["messages"][0]["content"] == STATEMENT_INSTRUCTION


def is_call_2(body: dict[str, Any]) -> bool:
    """Intake call 2 (classification)."""
    return "format" in body and body["messages"][0]["content"] == CLASSIFICATION_INSTRUCTION


EVENT = "alto_intent_captured"


# --- the action organ's model: scripted proposals and replies ---------------------------

NONE = {"tool": "none"}
EVENT_KEYS = {
    "verdict",
    "span",
    "entity_id",
    "service",
    "tier",
    "reason",
    "conversation_id",
    "user_id",
}
VERDICTS = {"executed", "refused", "awaiting_confirmation", "confirmed", "declined", "failed"}


def is_executor_call(body: dict[str, Any]) -> bool:
    """The executor's request: a `format` schema that is not the reply's."""
    return bool(body.get("format")) and not wants_reply_object(body)


class Script:
    """Scripted model: proposals for the executor by span, replies for the conversation."""

    def __init__(self, fake: FakeOllama) -> None:
        """Answer the fake's executor requests from proposals, the rest from replies."""
        self.fake = fake
        self.proposals: dict[str, ChatReply] = {}
        self.replies: deque[ChatReply] = deque()
        fake.when(is_executor_call, self._propose)
        fake.when(lambda body: not is_executor_call(body), self._reply)

    def propose(self, span: str, proposal: dict[str, Any] | str | ChatReply) -> None:
        """What the executor answers for the span `span`."""
        if isinstance(proposal, dict):
            proposal = json.dumps(proposal)
        self.proposals[span] = ChatReply.text(proposal) if isinstance(proposal, str) else proposal

    def say(self, *replies: str | ChatReply) -> None:
        """Queue the model's raw conversational outputs, in order."""
        for reply in replies:
            self.replies.append(ChatReply.text(reply) if isinstance(reply, str) else reply)

    def _propose(self, body: dict[str, Any]) -> ChatReply:
        """The proposal for the span the executor is asked about, else `none`."""
        text = last_user_text(body)
        # Longest span first, so "yes" never shadows a span that contains it.
        for span in sorted(self.proposals, key=len, reverse=True):
            if json.dumps(span, ensure_ascii=False) in text:
                return self.proposals[span]
        return ChatReply.text(json.dumps(NONE))

    def _reply(self, body: dict[str, Any]) -> ChatReply:
        """The next queued reply, else a plain spoken "Okay."."""
        return self.replies.popleft() if self.replies else ChatReply.text("¦Okay.¦")

    @property
    def executor_requests(self) -> list[dict[str, Any]]:
        """The executor's requests (those with a `format` schema), in order."""
        return [body for body in self.fake.chat_requests if is_executor_call(body)]

    @property
    def conversation_requests(self) -> list[dict[str, Any]]:
        """The conversational requests (no `format`), in order."""
        return [body for body in self.fake.chat_requests if not is_executor_call(body)]


def verdicts(events: list[Event]) -> list[str]:
    """The verdicts of intent events, in order."""
    return [event.data["verdict"] for event in events]


def only(events: list[Event]) -> dict[str, Any]:
    """The data of the one event; also checks its shape."""
    assert len(events) == 1, [event.data for event in events]
    data = dict(events[0].data)
    assert data.keys() >= EVENT_KEYS, data
    assert data["verdict"] in VERDICTS
    return data


def call_ha_service(entity: str, service: str, **data: Any) -> dict[str, Any]:
    """A `call_ha_service` proposal, as the executor model would answer."""
    return {"tool": "call_ha_service", "entity": entity, "service": service, "data": data}


def situation_of(body: dict[str, Any]) -> str:
    """The turn's situation message: home snapshot, time, frame of mind, impressions.

    The system message after the history, before the memory block and the user's words.
    """
    found = [
        m["content"]
        for m in body["messages"][1:]
        if m["role"] == "system" and "The current time is" in m["content"]
    ]
    assert len(found) == 1, body["messages"]
    return str(found[0])


# -- the reflect organ's passes -------------------------------------------------------------------
# The background passes are told apart from the conversation by their `format` schema: N+1's has
# `observations`, reflection's `items`, synthesis's `themes`.
type Body = dict[str, Any]


def kind_of(body: Body) -> str | None:
    """The pass a chat request belongs to, by its `format` schema (None: not a pass)."""
    properties = (body.get("format") or {}).get("properties") or {}
    for key, kind in (("observations", "n1"), ("items", "reflect"), ("themes", "synthesize")):
        if key in properties:
            return kind
    return None


def said_in(body: Body, words: str) -> list[int]:
    """The turns shown to a pass whose person's line holds `words`."""
    blocks = re.findall(r"^T(\d+) \(.*\)\nperson: (.*)$", body["messages"][1]["content"], re.M)
    return [int(n) for n, person in blocks if words in person]


def answer(**fields: Any) -> ChatReply:
    """A JSON answer (not streamed, so one chunk)."""
    return ChatReply(chunks=[json.dumps(fields)])


def synthesis_answer(**elements: list[dict[str, Any]]) -> ChatReply:
    """A synthesis answer: the fields given, every other one empty."""
    return answer(**{name: elements.get(name, []) for name in SYNTHESIS_FIELDS})


def turn_refs(body: Body) -> list[str]:
    """The turn references (``T<n>``) a synthesis request lets an element cite, oldest first."""
    element = body["format"]["properties"]["themes"]["items"]["properties"]["cites"]["items"]
    return [ref for ref in element["enum"] if ref.startswith("T")]


def reflection_organ(hass: HomeAssistant) -> ReflectOrgan:
    """The loaded entry's reflect organ."""
    organ: ReflectOrgan = hass.config_entries.async_entries(DOMAIN)[0].runtime_data.reflection
    return organ


async def settle(hass: HomeAssistant) -> None:
    """Wait until no pass is queued or running, and what the turns and passes started is done."""
    runner = reflection_organ(hass).runner
    for _ in range(1000):
        await hass.async_block_till_done(wait_background_tasks=True)
        if not runner.queued and runner.running is None:
            await hass.async_block_till_done(wait_background_tasks=True)
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"passes still queued: {runner.queued}, running: {runner.running}")
