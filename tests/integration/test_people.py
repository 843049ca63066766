"""A question that calls someone by what the household calls them ("Grandma") finds them.

The person (Settings → People) linked to a user carries voice aliases; the turn's memory block
reads a question naming an alias as naming the person, so what they said comes first.
"""

from __future__ import annotations

from typing import Any

import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.const import CONF_EMBEDDING_MODEL, CONF_MODEL, CONF_URL

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama
from .helpers import memory, remember

QUESTION = "Where does Grandma keep her glasses?"
ROSAS = "The reading specs live in the bedside drawer."
ALICES = "Ben's football boots live in the shed."


@pytest.fixture
def entry_data(fake_ollama: FakeOllama) -> dict[str, Any]:
    """Wide embeddings: texts without a word in common score 0, so only words decide."""
    fake_ollama.embed_dim = 4096
    return {CONF_URL: fake_ollama.url, CONF_MODEL: CHAT_MODEL, CONF_EMBEDDING_MODEL: EMBED_MODEL}


async def test_a_voice_alias_of_a_person_reads_as_their_name(
    hass: HomeAssistant, setup_alto: MockConfigEntry, fake_ollama: FakeOllama
) -> None:
    """Rosa's memory ranks first for "Grandma" once her person carries that alias.

    The question is embedded as it is read for words, with her name after it.
    """
    rosa = await hass.auth.async_create_user("Rosa")
    alice = await hass.auth.async_create_user("Alice")
    person = {"id": "rosa", "name": "Rosa", "user_id": rosa.id}
    assert await async_setup_component(hass, "person", {"person": [person]})
    await remember(hass, ROSAS, Context(user_id=rosa.id), owner="household")
    await remember(hass, ALICES, Context(user_id=alice.id), owner="household")
    organ = memory(hass)

    async def block() -> list[str]:
        return await organ.async_turn_block(QUESTION, viewer=alice.id)

    # No word of the question in either: the newer (Alice's) goes first.
    assert [line.split("] ")[1] for line in await block()] == [f"{ALICES}\n", f"{ROSAS}\n"]
    assert fake_ollama.embedded_texts[-2:] == [
        f"search_query: {QUESTION}",
        "search_query: Where does her",
    ]

    er.async_get(hass).async_update_entity("person.rosa", aliases=["Grandma", "Nana"])
    lines = await block()
    _, sent = fake_ollama.requests[-1]  # its form was sent with it before
    assert sent["input"] == [f"search_query: {QUESTION} Rosa"]
    assert lines[0] == f"[asked to remember; Rosa, today] {ROSAS}\n"
    assert len(lines) == 2


async def test_a_question_never_calls_its_asker_by_an_alias(
    hass: HomeAssistant, setup_alto: MockConfigEntry, fake_ollama: FakeOllama
) -> None:
    """What the household calls someone is never the asker: "my mum" asked by Mum is not her.

    The same question, asked by Alice and by Rosa (whose person carries "Mum"), is read with
    Rosa's name only when Alice asks it; every person's name still reads as theirs.
    """
    rosa = await hass.auth.async_create_user("Rosa")
    alice = await hass.auth.async_create_user("Alice")
    people = [
        {"id": "rosa", "name": "Rosa", "user_id": rosa.id},
        {"id": "alice", "name": "Alice", "user_id": alice.id},
    ]
    assert await async_setup_component(hass, "person", {"person": people})
    registry = er.async_get(hass)
    registry.async_update_entity("person.rosa", aliases=["Mum"])
    registry.async_update_entity("person.alice", aliases=["Nana"])
    await remember(hass, ROSAS, Context(user_id=rosa.id), owner="household")
    organ = memory(hass)
    cases = [  # each question once: a query embedded before is not sent again
        ("When is Mum's birthday?", alice.id, " Rosa"),
        ("When is my mum's birthday?", rosa.id, ""),
        ("Is Mum home?", None, " Rosa"),  # a satellite: no one asks
        ("Where does Nana sit?", alice.id, ""),
        ("Where does Nana sleep?", rosa.id, " Alice"),
        ("What did Rosa say?", rosa.id, ""),  # her own name, as written, is the question's
    ]
    for question, asker, read in cases:
        await organ.async_turn_block(question, viewer=asker)
        _, sent = fake_ollama.requests[-1]  # the question, then its form (if not sent before)
        assert sent["input"][0].endswith(f"{question}{read}"), (question, asker)
