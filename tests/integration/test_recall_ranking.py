"""One ranking: `alto.recall`, the panel's search and the recall tool read as the turn's block.

Real Home Assistant, real websocket connections, the fake Ollama's bag-of-words embeddings and the
real embedded store. Rows are written to the store directly, as the writer would write them (a
source row per turn, mode 2's statement rows beside some, explicit memories, corrections that
supersede a statement and so retire its turn's text), in six languages, with questions,
acknowledgements and commands among the turns and some texts said twice.

The property: over a family of such stores and of queries (words the rows hold, words none holds,
an alias of a person), for each viewer (a user, the household) the service, the panel's search
and the tool return the memories of the turn's block in its order, as far as each one's limit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
from homeassistant.auth.const import GROUP_ID_ADMIN, GROUP_ID_USER
from homeassistant.auth.providers import homeassistant as auth_ha
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.llm import LLMContext, ToolInput
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
from homeassistant.util.ulid import ulid_at_time
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import WebSocketGenerator

from custom_components.alto.memory.recall import CONSIDERED
from custom_components.alto.memory.records import (
    HOUSEHOLD,
    KIND_ASSERTION,
    KIND_CORRECTION,
    KIND_EXPLICIT,
    KIND_SOURCE,
    Mutation,
    Row,
    object_id,
    vector_bytes,
)
from custom_components.alto.memory.references import MAX_REFERENCES
from custom_components.alto.memory_organ.tools import MAX_RECALLED, RECALL, RecallTool
from custom_components.alto.panel.memories import recalled_view
from custom_components.alto.panel.view import async_names

from ..fake_ollama import FakeOllama, embed_text
from .helpers import alto_service, memory
from .panel_client import Person, connect

# Per language: things, where or when they are, a statement, a question, an acknowledgement,
# a command (the last three never compete for the block).
LANGUAGES = {
    "en": (
        ["spare key", "bike lock", "boiler", "school bus", "piano", "garden hose"],
        ["under the blue pot", "in the shed", "at 7:30", "on Tuesday", "by the door"],
        "The {} is {}.",
        "Where is the {}?",
        "ok thanks",
        "Turn on the kitchen light.",
    ),
    "de": (
        ["Ersatzschlüssel", "Fahrradschloss", "Heizung", "Schulbus", "Klavier"],
        ["unter dem Topf", "im Schuppen", "um halb acht", "am Dienstag"],
        "Der {} ist {}.",
        "Wo ist der {}?",
        "danke",
        "Mach das Licht an.",
    ),
    "fr": (
        ["clé de secours", "antivol", "chaudière", "car scolaire", "piano"],
        ["sous le pot bleu", "dans la remise", "à sept heures", "le mardi"],
        "La {} est {}.",
        "Où est la {} ?",
        "merci",
        "Allume la lumière.",
    ),
    "es": (
        ["llave de repuesto", "candado", "caldera", "autobús escolar", "piano"],
        ["debajo de la maceta", "en el cobertizo", "a las siete", "el martes"],
        "La {} está {}.",
        "¿Dónde está la {}?",
        "vale gracias",
        "Enciende la luz.",
    ),
    "nl": (
        ["reservesleutel", "fietsslot", "ketel", "schoolbus", "piano"],
        ["onder de pot", "in de schuur", "om half acht", "op dinsdag"],
        "De {} ligt {}.",
        "Waar is de {}?",
        "dank je wel",
        "Zet het licht aan.",
    ),
    "it": (
        ["chiave di scorta", "lucchetto", "caldaia", "scuolabus", "pianoforte"],
        ["sotto il vaso", "nel capanno", "alle sette", "il martedì"],
        "La {} è {}.",
        "Dov'è la {}?",
        "grazie",
        "Accendi la luce.",
    ),
}
UNSAID = ["What about the weather on Mars?", "Wie spät ist es?", "Quel temps fait-il?"]
ALIAS = "Grandpa"  # what the household calls Bob


@pytest.fixture
async def people(
    hass: HomeAssistant,
    hass_ws_client: WebSocketGenerator,
    local_auth: auth_ha.HassAuthProvider,
    setup_alto: MockConfigEntry,
) -> list[Person]:
    """Ana (an administrator) and Bob, connected; Bob's person carries an alias."""
    assert await async_setup_component(hass, "person", {})  # before the server starts
    ana = await connect(hass, hass_ws_client, "Ana", GROUP_ID_ADMIN)
    bob = await connect(hass, hass_ws_client, "Bob", GROUP_ID_USER)
    await ana.ok(type="person/create", name="Bob", user_id=bob.user.id)
    er.async_get(hass).async_update_entity("person.bob", aliases=[ALIAS])
    return [ana, bob]


@dataclass
class Household:
    """Writes rows as the memory writer would, and remembers what it wrote."""

    hass: HomeAssistant
    fake: FakeOllama
    rng: random.Random
    actors: list[str]
    scopes: list[str]
    texts: list[str] = field(default_factory=list)
    statements: list[Row] = field(default_factory=list)  # mode 2's, correctable
    sequence: int = 1 << 20
    now: int = field(default_factory=lambda: int(dt_util.utcnow().timestamp()))

    def row(
        self,
        index: int,
        text: str,
        kind: int | str,
        source: str,
        *,
        scope: str,
        actor: str,
        said_at: int,
        target: int = 0,
    ) -> Row:
        """A row of the turn or memory at `self.sequence`."""
        return Row(
            object_id(self.sequence, index),
            text,
            kind,
            owner=scope,
            scope=scope,
            actor=actor,
            source_id=source,
            source_version=1,
            offset=0,
            length=len(text),
            target=target,
            said_at=said_at,
            vector=vector_bytes(embed_text(text, self.fake.embed_dim)),
        )

    def said(self) -> str:
        """One text someone might say: mostly a statement, else a question, thanks or command."""
        things, places, statement, question, thanks, command = LANGUAGES[
            self.rng.choice(list(LANGUAGES))
        ]
        if self.texts and self.rng.random() < 0.08:
            return self.rng.choice(self.texts)  # said again
        what = self.rng.choices(["statement", "question", "thanks", "command"], [7, 2, 1, 1])[0]
        if what == "question":
            return question.format(self.rng.choice(things))
        if what == "thanks":
            return thanks
        if what == "command":
            return command
        return statement.format(self.rng.choice(things), self.rng.choice(places))

    async def write(self) -> None:
        """One turn (its source, some with statement rows), an explicit memory or a correction."""
        self.sequence += 1
        said_at = self.now - self.rng.randrange(0, 40 * 86400)
        scope = self.rng.choice(self.scopes)
        actor = self.rng.choice(self.actors)
        source = f"conversation/{self.sequence:032x}/{ulid_at_time(said_at)}"
        common: dict[str, Any] = {"scope": scope, "actor": actor, "said_at": said_at}
        what = self.rng.choices(["turn", "explicit", "correct"], [6, 2, 2])[0]
        supersede: tuple[int, ...] = ()
        if what == "correct" and self.statements:
            target = self.statements.pop(self.rng.randrange(len(self.statements)))
            text = self.said()
            common = {**common, "scope": target.scope, "actor": target.actor}
            rows = [self.row(0, text, KIND_CORRECTION, source, target=target.id, **common)]
            supersede = (target.id,)
        elif what == "explicit":
            text = self.said()
            rows = [self.row(0, text, KIND_EXPLICIT, f"service/{self.sequence}", **common)]
        else:
            parts = [self.said() for _ in range(self.rng.choice([1, 1, 2]))]
            text = " ".join(parts)
            rows = [self.row(0, text, KIND_SOURCE, source, **common)]
            if self.rng.random() < 0.5:  # mode 2: a row per statement beside the source
                statements = [
                    self.row(i + 1, part, KIND_ASSERTION, source, **common)
                    for i, part in enumerate(parts)
                ]
                rows += statements
                self.statements += statements
        self.texts.append(text)
        await self.hass.async_add_executor_job(
            memory(self.hass).store.apply, Mutation(self.sequence, tuple(rows), supersede)
        )

    def query(self) -> str:
        """A question: words some rows hold, words none holds, or a person's alias."""
        roll = self.rng.random()
        if roll < 0.15:
            return self.rng.choice(UNSAID)
        if roll < 0.3:
            return f"Where did {ALIAS} put the {self.rng.choice(LANGUAGES['en'][0])}?"
        words = " ".join(self.rng.choice(self.texts).split()[:3])
        things = LANGUAGES[self.rng.choice(list(LANGUAGES))][0]
        return f"{words} {self.rng.choice(things)}?"


def _quote(line: str) -> str:
    """The quote of a line of the turn's block (`recall.memory_line`)."""
    return line.split("] ", 1)[1].removesuffix("\n")


def _tool_context(user_id: str | None) -> LLMContext:
    return LLMContext(
        platform="test",
        context=Context(user_id=user_id),
        language="en",
        assistant="conversation",
        device_id=None,
    )


@pytest.mark.parametrize("seed", range(4))
async def test_every_recall_ranks_as_the_turns_block(
    hass: HomeAssistant, fake_ollama: FakeOllama, people: list[Person], seed: int
) -> None:
    """Service, panel search and tool give the turn block's memories in its order."""
    rng = random.Random(seed)
    ana, bob = people
    users = [ana.user.id, bob.user.id]
    home = Household(hass, fake_ollama, rng, ["unknown", *users], [HOUSEHOLD, *users])
    for _ in range(rng.randint(25, 45)):
        await home.write()
    organ, tool = memory(hass), RecallTool()
    for _ in range(8):
        query = home.query()
        for person in (None, ana, bob):
            viewer = person.user.id if person else None
            block = [_quote(line) for line in await organ.async_turn_block(query, viewer=viewer)]
            context = Context(user_id=viewer)
            ranked = (
                await alto_service(hass, "recall", {"query": query, "limit": CONSIDERED}, context)
            )["memories"]
            # The block's rows are the ranking's first (its lines all fit its bytes here).
            assert [m["quote"] for m in ranked[: len(block)]] == block, query
            assert len(block) == min(MAX_REFERENCES, len(ranked))
            ids = [m["id"] for m in ranked]

            limit = rng.randint(1, CONSIDERED)
            found = await alto_service(hass, "recall", {"query": query, "limit": limit}, context)
            assert [m["id"] for m in found["memories"]] == ids[:limit]
            limit = rng.randint(1, MAX_RECALLED)
            called = await tool.async_call(
                hass, ToolInput(RECALL, {"query": query, "limit": limit}), _tool_context(viewer)
            )
            assert [m["id"] for m in called.data["memories"]] == ids[:limit]
            if person is not None:
                limit = rng.randint(1, CONSIDERED)
                shown = await person.ok(type="alto/recall", query=query, limit=limit)
                # The panel shows its own rows for the service's, in the service's order.
                rows = await hass.async_add_executor_job(
                    partial(organ.store.rows, viewer, current_only=False)
                )
                expected = recalled_view(rows, ids[:limit], await async_names(hass))
                assert shown["memories"] == expected
