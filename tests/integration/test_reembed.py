"""`alto.reembed` end to end: real HA, the fake Ollama over HTTP, the real embedded Chroma store.

Every stored memory is embedded again as a new one is (role prefix, the speaker's name now);
Chroma holds the new vectors, the journal replays, and a model that fails or answers another
size stops it with a translated error, having written nothing more.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, Unauthorized
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.memory.store import COLLECTION

from ..fake_ollama import FakeOllama, embed_text
from .helpers import (
    alto_service,
    converse_and_wait_for_background,
    journal_bytes,
    journal_file,
    remember,
    store_contents,
)

PILL = "I take my pill with breakfast"
DENTIST = "My dentist is on Friday."


def embedded_texts(fake: FakeOllama) -> list[str]:
    """Every text sent to /api/embed, in order."""
    return [
        text
        for path, body in fake.requests
        if path == "/api/embed"
        for text in ([body["input"]] if isinstance(body["input"], str) else body["input"])
    ]


async def _stored_vectors(hass: HomeAssistant) -> dict[str, bytes]:
    """Document -> the embedding Chroma holds for it (float64 bytes, as `snapshot` reads it)."""
    contents = await store_contents(hass)
    return {document: vector for _id, document, _meta, vector in contents[COLLECTION]}


def _as_stored(text: str, dim: int) -> bytes:
    return np.asarray(embed_text(text, dim), dtype="<f4").astype(np.float64).tobytes()


@pytest.fixture
async def alice(hass: HomeAssistant, hass_admin_user: Any) -> Context:
    """The admin, named Alice, with a memory and a turn of hers stored."""
    await hass.auth.async_update_user(hass_admin_user, name="Alice")
    context = Context(user_id=hass_admin_user.id)
    await remember(hass, PILL, context)
    await converse_and_wait_for_background(hass, DENTIST, context=context)
    return context


async def test_reembed_embeds_every_memory_again_after_its_speakers_name_now(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
    alice: Context,
) -> None:
    """A renamed speaker's memories are embedded after her new name; the journal replays."""
    assert embedded_texts(fake_ollama)[-1] == f"search_document: Alice said: {DENTIST}"
    await hass.auth.async_update_user(hass_admin_user, name="Alicia")
    sent = len(embedded_texts(fake_ollama))

    assert await alto_service(hass, "reembed", {}, alice) == {"reembedded": 2}

    again = [f"search_document: Alicia said: {PILL}", f"search_document: Alicia said: {DENTIST}"]
    assert sorted(embedded_texts(fake_ollama)[sent:]) == sorted(again)
    dim = fake_ollama.embed_dim
    assert await _stored_vectors(hass) == {
        PILL: _as_stored(again[0], dim),
        DENTIST: _as_stored(again[1], dim),
    }
    lines = journal_file(hass, setup_alto).read_bytes().splitlines()
    assert json.loads(lines[-1])["op"] == "reembed"
    replayed = await alto_service(hass, "replay", {}, alice)
    assert replayed["ok"], replayed


async def test_reembed_is_for_administrators(
    hass: HomeAssistant, setup_alto: MockConfigEntry, hass_read_only_user: Any
) -> None:
    """Every owner's memories: a user who is not an administrator may not."""
    with pytest.raises(Unauthorized):
        await alto_service(hass, "reembed", {}, Context(user_id=hass_read_only_user.id))


async def test_reembed_of_an_empty_store_does_nothing(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """No memory, nothing to embed, no journal."""
    assert await alto_service(hass, "reembed", {}) == {"reembedded": 0}
    assert journal_bytes(hass, setup_alto) is None


@pytest.mark.parametrize("case", [("down", "reembed_failed"), ("size", "reembed_dimension")])
async def test_reembed_stops_with_a_translated_error_and_writes_nothing(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    alice: Context,
    case: tuple[str, str],
) -> None:
    """The model is down or gives vectors of another size: what it says, and nothing written."""
    fault, key = case
    # Renamed: texts the embedder has not just embedded (it answers those from memory).
    user = await hass.auth.async_get_user(alice.user_id or "")
    assert user is not None
    await hass.auth.async_update_user(user, name="Alicia")
    before = (journal_bytes(hass, setup_alto), await _stored_vectors(hass))
    if fault == "down":
        fake_ollama.fail_embed = 10
    else:
        fake_ollama.embed_dim += 8
    with pytest.raises(HomeAssistantError) as raised:
        await alto_service(hass, "reembed", {}, alice)
    assert raised.value.translation_key == key
    assert raised.value.translation_placeholders == {"done": "0", "total": "2"}
    assert "0 of 2" in str(raised.value)
    assert (journal_bytes(hass, setup_alto), await _stored_vectors(hass)) == before
