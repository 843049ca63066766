"""The household's family, told in the options, read in a question's words of family.

"My wife" asked by Ben is Ana, "Mum" asked by Leo is Ana and asked by Ana is Rosa: the turn's
memory block reads the question with the names of the people it means to its asker.
"""

from __future__ import annotations

from typing import Any

import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.const import CONF_EMBEDDING_MODEL, CONF_MODEL, CONF_URL
from custom_components.alto.options import FAMILY

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama
from .helpers import converse, memory, remember, situation_of

ANAS = "The reading specs live in the bedside drawer."
PEOPLE = ("Rosa", "Ana", "Ben", "Leo")


@pytest.fixture
def entry_data(fake_ollama: FakeOllama) -> dict[str, Any]:
    """Wide embeddings: texts without a word in common score 0, so only words decide."""
    fake_ollama.embed_dim = 4096
    return {CONF_URL: fake_ollama.url, CONF_MODEL: CHAT_MODEL, CONF_EMBEDDING_MODEL: EMBED_MODEL}


async def people(hass: HomeAssistant) -> dict[str, str]:
    """Rosa, Ana, Ben and Leo, each a user with a person; their user ids by name."""
    users = {name: (await hass.auth.async_create_user(name)).id for name in PEOPLE}
    listed = [{"id": n.lower(), "name": n, "user_id": u} for n, u in users.items()]
    assert await async_setup_component(hass, "person", {"person": listed})
    return users


async def tell(hass: HomeAssistant, entry: MockConfigEntry, person: str, **kin: str) -> None:
    """Tell `person`'s family through the options' Family steps."""
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert FAMILY.key in result["menu_options"]
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": FAMILY.key}
    )
    assert result["step_id"] == FAMILY.key
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"person": person}
    )
    assert result["step_id"] == "family_member"
    result = await hass.config_entries.options.async_configure(result["flow_id"], kin)
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def test_the_family_steps_store_each_person_and_keep_the_other_options(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """Each person's answers are stored by person; the others' and every other option stay.

    The form shows what was told; a person told nothing is not stored.
    """
    await people(hass)
    hass.config_entries.async_update_entry(setup_alto, options={"assistant_name": "Pip"})
    await hass.async_block_till_done()
    await tell(hass, setup_alto, "person.ana", mother="person.rosa", partner="person.ben", sex="f")
    await tell(hass, setup_alto, "person.leo", mother="person.ana", sex="m")
    assert setup_alto.options == {
        "assistant_name": "Pip",
        FAMILY.key: {
            "person.ana": {"mother": "person.rosa", "partner": "person.ben", "sex": "f"},
            "person.leo": {"mother": "person.ana", "sex": "m"},
        },
    }
    result = await hass.config_entries.options.async_init(setup_alto.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": FAMILY.key}
    )
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"person": "person.ana"}
    )
    shown = {str(k): k.description["suggested_value"] for k in result["data_schema"].schema}
    assert shown == {"mother": "person.rosa", "father": None, "partner": "person.ben", "sex": "f"}
    assert result["description_placeholders"] == {"person": "Ana"}
    await hass.config_entries.options.async_configure(result["flow_id"], {})
    await hass.async_block_till_done()
    assert setup_alto.options[FAMILY.key] == {"person.leo": {"mother": "person.ana", "sex": "m"}}


async def test_the_family_step_aborts_without_people(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """With no person in Home Assistant there is no one to tell about: a translated abort."""
    result = await hass.config_entries.options.async_init(setup_alto.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": FAMILY.key}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "no_people"


async def test_a_word_of_family_reads_as_the_person_it_means_to_the_asker(
    hass: HomeAssistant, setup_alto: MockConfigEntry, fake_ollama: FakeOllama
) -> None:
    """Each question is embedded with the names it means to its asker, once the family is told.

    Ana's memory comes first for "my wife" asked by Ben, and "Mum" is Ana to Leo, Rosa to Ana.
    """
    users = await people(hass)
    await tell(hass, setup_alto, "person.ana", mother="person.rosa", partner="person.ben")
    await tell(hass, setup_alto, "person.leo", mother="person.ana")
    await remember(hass, ANAS, Context(user_id=users["Ana"]), owner="household")
    await remember(hass, "Leo's boots live in the shed.", Context(user_id=users["Leo"]))
    organ = memory(hass)
    lines = await organ.async_turn_block("Where are my wife's glasses?", viewer=users["Ben"])
    assert lines[0] == f"[asked to remember; Ana, today] {ANAS}\n"
    cases = [  # each question once: a query embedded before is not sent again
        ("Where are my wife's glasses?", users["Ben"], ""),  # asked above, with " Ana"
        ("Is Mum home?", users["Leo"], " Ana"),
        ("Is Mum home yet?", users["Ana"], " Rosa"),
        ("When is my son's match?", users["Ana"], " Leo"),
        ("When is Leo's grandma coming?", None, " Leo Rosa"),  # his name read as his too
        ("When is my husband home?", None, ""),  # a satellite: no one asks
    ]
    for question, asker, read in cases[1:]:
        await organ.async_turn_block(question, viewer=asker)
        _, sent = fake_ollama.requests[-1]  # the question, then its form (if not sent before)
        assert sent["input"][0].endswith(f"{question}{read}"), (question, asker)


async def test_the_turn_tells_the_model_who_is_speaking_and_their_family(
    hass: HomeAssistant, setup_alto: MockConfigEntry, fake_ollama: FakeOllama
) -> None:
    """A signed-in speaker is named with their family at home; a satellite's turn names no one.

    Ben is no one's father here, so to Rosa he is a child-in-law, not a son-in-law.
    """
    users = await people(hass)
    await tell(hass, setup_alto, "person.ana", mother="person.rosa", partner="person.ben")
    await tell(hass, setup_alto, "person.leo", mother="person.ana", sex="m")
    fake_ollama.reply("ok")
    await converse(hass, "hello", context=Context(user_id=users["Ben"]))
    assert (
        "You are speaking with Ben. Their family at home: Ana (wife), Leo (son), "
        "Rosa (mother-in-law)." in situation_of(fake_ollama.chat_requests[-1])
    )
    await converse(hass, "hello", context=Context(user_id=users["Rosa"]))
    assert (
        "You are speaking with Rosa. Their family at home: Ana (daughter), Leo (grandson), "
        "Ben (child-in-law)." in situation_of(fake_ollama.chat_requests[-1])
    )
    await converse(hass, "hello")
    assert "You are speaking" not in situation_of(fake_ollama.chat_requests[-1])
