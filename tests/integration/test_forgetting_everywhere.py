"""Forgetting reaches everywhere Home Assistant keeps the words: every path × every place.

Real HA with the recorder on a SQLite file under the config dir, an Assist pipeline around
`conversation.alto`, the fake Ollama and the embedded Chroma store. Someone says a secret in a
conversation, through the pipeline, so HA keeps a conversation trace, a chat log and a pipeline
debug run of it; a memory holds it, and service calls carry it (`alto.remember`,
`todo.add_item`, `alto.recall` and `todo.remove_item`: the recorder keeps their `call_service`
events). Each way to forget it (`alto.forget`, the panel's `alto/forget`, `todo.remove_item`,
`alto.purge`, retention past `max_memories`) must leave it in none of these places:

- the next prompt of the same conversation (Alto's turn buffer), nor the reply that answered it;
- any byte under the config dir, `home-assistant_v2.db` and its `-wal` and `-shm` included, with
  SQLite zeroing deleted content (this build) and not (SQLite's default: a VACUUM erases);
- HA's conversation traces, chat logs and Assist pipeline debug runs, held in memory.

What else was said stays in the next prompt. The rule the turn buffers follow is a property over
every layout of turns `turn` writes (`test_a_turn_buffer_forgets_the_turn_that_said_it`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from homeassistant.components.assist_pipeline import (
    Pipeline,
    PipelineEvent,
    PipelineEventType,
    PipelineInput,
    PipelineRun,
    PipelineStage,
)
from homeassistant.components.assist_pipeline.pipeline import KEY_ASSIST_PIPELINE
from homeassistant.components.conversation import trace
from homeassistant.components.conversation.chat_log import DATA_CHAT_LOGS
from homeassistant.components.recorder import Recorder
from homeassistant.components.recorder.util import setup_connection_for_dialect
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import CLIENT_ID, MockConfigEntry, MockUser
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_purge_done,
    async_wait_recording_done,
)
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    RecorderInstanceContextManager,
    WebSocketGenerator,
)

from custom_components.alto.const import CONF_MAX_MEMORIES, CONF_MEMORY_MODE
from custom_components.alto.history import BufferEntry, TurnBuffer
from custom_components.alto.memory_organ.recorded import sqlite_zeroes_deleted

from ..fake_ollama import FakeOllama, last_user_text
from ..on_disk import holding
from .helpers import AGENT, TODO, alto_service, recall, remember

SECRET = "My bank PIN is 4821."
ANSWER = "I will keep that in mind."  # the reply to the secret: it answered it, it goes too
SAID = "The bins go out on Thursday."  # said in the same conversation, and kept
NEXT = "What day is it today?"
NEEDLES = (SECRET, "4821", "bank PIN", ANSWER)
CONVERSATION = "kitchen-talk"  # not a ULID: Home Assistant keeps it as the conversation's id
DATABASE = "home-assistant_v2.db"

# Who says the secret, whose memory holds it and how it is forgotten: the owner's own ways
# (a private memory), the household's list, an administrator's purge, and retention.
PATHS = ("alto.forget", "panel", "todo.remove_item", "alto.purge", "retention")


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> str:
    """The way the secret is forgotten."""
    return str(request.param)


@pytest.fixture
def entry_options(path: str) -> dict[str, Any]:
    """Explicit memories only, except retention: it forgets what turns left (mode 1) past 3."""
    if path == "retention":
        return {CONF_MEMORY_MODE: 1, CONF_MAX_MEMORIES: 3}
    return {CONF_MEMORY_MODE: 0}


@pytest.fixture
def recorder_db_url(tmp_path: Path) -> str:
    """The recorder's database is a file in the config dir (`_home_assistant` makes it tmp_path)."""
    return f"sqlite:///{tmp_path / DATABASE}"


@pytest.fixture
def secure_delete(request: pytest.FixtureRequest) -> Iterator[bool]:
    """The recorder's SQLite zeroes deleted content (this build's default) or not (SQLite's)."""
    if getattr(request, "param", True):
        assert sqlite_zeroes_deleted()
        yield True
        return

    def setup(instance: Recorder, dialect: str, connection: Any, first: bool) -> Any:
        engine = setup_connection_for_dialect(instance, dialect, connection, first)
        cursor = connection.cursor()
        cursor.execute("PRAGMA secure_delete=OFF")
        cursor.close()
        return engine

    with (
        patch("homeassistant.components.recorder.core.setup_connection_for_dialect", setup),
        patch(
            "custom_components.alto.memory_organ.recorded.sqlite_zeroes_deleted",
            return_value=False,
        ),
    ):
        yield False


@pytest.fixture
def mock_recorder_before_hass(
    secure_delete: bool, async_test_recorder: RecorderInstanceContextManager
) -> None:
    """The recorder's database is chosen before `hass` exists (HA's own recorder tests' way)."""


@pytest.fixture
async def pipeline(hass: HomeAssistant, setup_alto: MockConfigEntry) -> Pipeline:
    """An Assist pipeline that hands text to Alto."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    return await hass.data[KEY_ASSIST_PIPELINE].pipeline_store.async_create_item(
        {
            "name": "Alto",
            "language": "en",
            "conversation_engine": AGENT,
            "conversation_language": "en",
            "prefer_local_intents": False,
            "stt_engine": None,
            "stt_language": None,
            "tts_engine": None,
            "tts_language": None,
            "tts_voice": None,
            "wake_word_entity": None,
            "wake_word_id": None,
        }
    )


async def _say(hass: HomeAssistant, pipeline: Pipeline, text: str, context: Context) -> None:
    """One turn of the conversation through the pipeline (as its websocket runs one)."""
    events: list[PipelineEvent] = []
    run = PipelineRun(
        hass,
        context=context,
        pipeline=pipeline,
        start_stage=PipelineStage.INTENT,
        end_stage=PipelineStage.INTENT,
        event_callback=events.append,
    )
    with chat_session.async_get_chat_session(hass, CONVERSATION) as session:
        said = PipelineInput(run=run, session=session, intent_input=text)
        await said.validate()
        await said.execute()
    assert PipelineEventType.ERROR not in [event.type for event in events], events
    assert events[-1].type is PipelineEventType.RUN_END
    await hass.async_block_till_done(wait_background_tasks=True)


@dataclasses.dataclass
class Home:
    """Who is there: Alice (with the panel open), an administrator, and the kitchen."""

    hass: HomeAssistant
    alice: Context
    admin: Context
    panel: MockHAClientWebSocket  # Alice's websocket connection

    async def forget(self, path: str, speaker: Context, memory_id: int) -> None:
        """Forget the secret's memory the way `path` does."""
        if path == "alto.forget":
            await alto_service(self.hass, "forget", {"id": memory_id}, speaker)
        elif path == "panel":
            await self.panel.send_json_auto_id({"type": "alto/forget", "memory_id": memory_id})
            answer = await self.panel.receive_json()
            assert answer["success"], answer
        elif path == "todo.remove_item":  # by its text, as a person removes an item
            await self.hass.services.async_call(
                "todo",
                "remove_item",
                {"item": [SECRET]},
                target={"entity_id": TODO},
                blocking=True,
                context=speaker,
            )
        elif path == "alto.purge":
            owner = speaker.user_id
            await alto_service(self.hass, "purge", {"owner": owner}, self.admin)
        else:  # two more memories, and the oldest turn's goes for room
            await remember(self.hass, "The car is in the blue garage.", speaker)
            await remember(self.hass, "Grandma visits in May.", speaker)


@pytest.fixture
async def home(
    hass: HomeAssistant, hass_ws_client: WebSocketGenerator, hass_admin_user: MockUser
) -> Home:
    """Alice, with a websocket connection, and an administrator."""
    alice = MockUser(name="Alice").add_to_hass(hass)
    token = await hass.auth.async_create_refresh_token(alice, CLIENT_ID)
    panel = await hass_ws_client(hass, hass.auth.async_create_access_token(token))
    return Home(hass, Context(user_id=alice.id), Context(user_id=hass_admin_user.id), panel)


# What makes the memory that holds the secret, for each path (mode 0 keeps nothing of a turn,
# mode 1 keeps the turn's words).
type Keep = Callable[[HomeAssistant, Context], Awaitable[None]]


async def _remember(hass: HomeAssistant, speaker: Context) -> None:
    await remember(hass, SECRET, speaker)


async def _add_to_the_list(hass: HomeAssistant, speaker: Context) -> None:
    await hass.services.async_call(
        "todo",
        "add_item",
        {"item": SECRET},
        target={"entity_id": TODO},
        blocking=True,
        context=speaker,
    )


async def _the_turn_keeps_it(hass: HomeAssistant, speaker: Context) -> None:
    """Mode 1 kept the turn's words when it was said."""


KEEP: dict[str, Keep] = {
    "alto.forget": _remember,
    "panel": _remember,
    "todo.remove_item": _add_to_the_list,
    "alto.purge": _remember,
    "retention": _the_turn_keeps_it,
}


def _speaker(home: Home, path: str) -> Context:
    """Alice says it where the memory is hers; the kitchen (no user) for the household's."""
    return Context() if path in ("todo.remove_item", "retention") else home.alice


def _in_memory(hass: HomeAssistant) -> dict[str, list[str]]:
    """HA's records of recent conversations that still hold one of NEEDLES, by kind."""
    records = {
        "conversation traces": [t.as_dict() for t in trace.async_get_traces()],
        "chat logs": [log.as_dict() for log in hass.data.get(DATA_CHAT_LOGS, {}).values()],
        "pipeline debug runs": [
            [dataclasses.asdict(event) for event in run.events]
            for runs in hass.data[KEY_ASSIST_PIPELINE].pipeline_debug.values()
            for run in runs.values()
        ],
    }
    found = {}
    for kind, held in records.items():
        text = json.dumps(held, default=str)
        if needles := [n for n in (SECRET, "bank PIN", ANSWER) if n in text]:
            found[kind] = needles
    return found


def _prompt(fake: FakeOllama) -> str:
    """The messages of the last conversational request, for NEXT."""
    (*_, body) = (b for b in fake.chat_requests if b.get("stream") and last_user_text(b) == NEXT)
    return json.dumps(body["messages"])


@pytest.mark.parametrize(
    "secure_delete", [True, False], ids=["secure_delete", "sqlite_default"], indirect=True
)
@pytest.mark.usefixtures("recorder_mock", "setup_alto")  # the recorder first, as HA starts
async def test_forgetting_leaves_the_words_nowhere(
    recorder_mock: Recorder, fake_ollama: FakeOllama, pipeline: Pipeline, home: Home, path: str
) -> None:
    """After each way to forget, the secret is in no place HA or Alto keeps words."""
    hass = home.hass
    fake_ollama.when(lambda body: last_user_text(body) == SECRET, f"¦{ANSWER}¦")
    speaker = _speaker(home, path)
    root = Path(hass.config.config_dir)
    await _say(hass, pipeline, SECRET, speaker)
    await _say(hass, pipeline, SAID, speaker)
    await KEEP[path](hass, speaker)
    # Asked about by its very words: `alto.recall`'s event holds them too.
    (memory,) = [m for m in await recall(hass, SECRET, speaker) if m["quote"] == SECRET]
    await async_wait_recording_done(hass)
    recorded = await hass.async_add_executor_job(holding, root, NEEDLES)
    assert any(name.startswith(DATABASE) for name in recorded), recorded
    assert set(_in_memory(hass)) == {"conversation traces", "chat logs", "pipeline debug runs"}

    await home.forget(path, speaker, memory["id"])
    await hass.async_block_till_done(wait_background_tasks=True)
    await async_wait_purge_done(hass)
    assert not [m for m in await recall(hass, "my PIN", speaker) if m["quote"] == SECRET]

    leaks: dict[str, Any] = {}
    if on_disk := await hass.async_add_executor_job(holding, root, NEEDLES):
        leaks["config dir"] = on_disk
    leaks |= _in_memory(hass)
    await _say(hass, pipeline, NEXT, speaker)
    prompt = _prompt(fake_ollama)
    if held := [needle for needle in NEEDLES if needle in prompt]:
        leaks["next prompt"] = held
    assert leaks == {}
    assert SAID in prompt  # what else was said stays
    assert recorder_mock.recording


# -- the turn buffer's rule, over every layout of turns -------------------------------------------

# What `turn` adds for one turn, in order: a settled call's breadcrumb and thoughts before the
# utterance, the reply and the action's breadcrumbs after it.
LAYOUTS = list(
    itertools.product(
        (False, True),  # a thought surfaced for it
        (False, True),  # a spoken reply
        (False, True),  # an action's breadcrumb
    )
)


def _turn(n: int, layout: tuple[bool, bool, bool], utterance: str) -> list[BufferEntry]:
    thought, reply, breadcrumb = layout
    return [
        *([BufferEntry("assistant", f"I remember thought {n}.", "thought")] if thought else []),
        BufferEntry("user", utterance, "user"),
        *([BufferEntry("assistant", f"Reply {n}.", "reply")] if reply else []),
        *([BufferEntry("assistant", f"Did action {n}.", "breadcrumb")] if breadcrumb else []),
    ]


def test_a_turn_buffer_forgets_the_turn_that_said_it() -> None:
    """The turn whose utterance holds the text goes whole; every other entry stays.

    For three turns of every layout, the text said in any one of them, matched inside the
    utterance whatever its case and spacing.
    """
    for layouts in itertools.product(LAYOUTS, repeat=3):
        for said_in in range(3):
            turns = [
                _turn(n, layout, _utterance(n, said=n == said_in))
                for n, layout in enumerate(layouts)
            ]
            buffer = TurnBuffer([entry for turn in turns for entry in turn])
            dropped = buffer.forget({"my bank pin is 4821."})
            kept = [e for n, turn in enumerate(turns) if n != said_in for e in turn]
            assert buffer.entries == kept, (layouts, said_in)
            assert dropped == len(turns[said_in])


def _utterance(n: int, *, said: bool) -> str:
    return f"  MY BANK  PIN is 4821.\nTell nobody {n}." if said else f"Hi {n}."


def test_a_turn_buffer_forgets_a_thought_that_quotes_it_and_keeps_its_turn() -> None:
    """A thought or reply quoting the text goes alone: the utterance it answered did not say it."""
    entries = [
        BufferEntry("assistant", "I remember: my bank PIN is 4821.", "thought", "alice"),
        BufferEntry("user", "What was my PIN again?", "user"),
        BufferEntry("assistant", "Your note says: My bank PIN is 4821.", "reply"),
    ]
    buffer = TurnBuffer(list(entries))
    assert buffer.forget({"my bank pin is 4821."}) == 2
    assert buffer.entries == [entries[1]]
