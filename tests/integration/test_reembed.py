"""`alto.reembed` end to end: real HA, the fake Ollama over HTTP, the real embedded Chroma store.

Every stored memory is embedded again as a new one is (role prefix, the speaker's name now);
Chroma holds the new vectors, the journal replays, and a model that fails or answers two sizes
stops it with a translated error, having written nothing more. A model of another size moves
every memory at once. After a start, memories embedded otherwise, or of another size than the
model's, raise a repair issue whose fix embeds them again, and so does renaming a user who said
some (`memory_freshness`).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from homeassistant.components.repairs import repairs_flow_manager
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, Unauthorized
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.const import DOMAIN
from custom_components.alto.memory.pipeline import in_their_name
from custom_components.alto.memory.store import COLLECTION
from custom_components.alto.memory_organ.freshness import alike, spread

from .. import fake_ollama as fake_ollama_module
from ..fake_ollama import FakeOllama, embed_text
from .helpers import (
    alto_service,
    converse_and_wait_for_background,
    journal_bytes,
    journal_file,
    memory,
    quotes,
    recall,
    remember,
    store_contents,
)

PILL = "I take my pill with breakfast"
DENTIST = "My dentist is on Friday."
BIKE = "My bike is the green one."
KEY = "The spare key is under the blue pot."


def _said(name: str, text: str) -> str:
    """What nomic-embed-text is sent for `text` said by `name` (`pipeline.said_by`)."""
    return f"search_document: {name} said: {in_their_name(text, name)}"


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
    assert fake_ollama.embedded_texts[-1] == _said("Alice", DENTIST)
    await hass.auth.async_update_user(hass_admin_user, name="Alicia")
    sent = len(fake_ollama.embedded_texts)

    assert await alto_service(hass, "reembed", {}, alice) == {"reembedded": 2}

    again = [_said("Alicia", PILL), _said("Alicia", DENTIST)]
    assert sorted(fake_ollama.embedded_texts[sent:]) == sorted(again)
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


@pytest.mark.parametrize("case", [("down", "reembed_failed"), ("sizes", "reembed_dimension")])
async def test_reembed_stops_with_a_translated_error_and_writes_nothing(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    alice: Context,
    *,
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[str, str],
) -> None:
    """The model is down or gives vectors of two sizes: what it says, and nothing written."""
    fault, key = case
    # Renamed: texts the embedder has not just embedded (it answers those from memory).
    user = await hass.auth.async_get_user(alice.user_id or "")
    assert user is not None
    await hass.auth.async_update_user(user, name="Alicia")
    before = (journal_bytes(hass, setup_alto), await _stored_vectors(hass))
    if fault == "down":
        fake_ollama.fail_embed = 10
    else:  # one size for the pill, another for the dentist
        monkeypatch.setattr(
            fake_ollama_module,
            "embed_text",
            lambda text, dim: embed_text(text, dim + 8 * ("pill" in text)),
        )
    with pytest.raises(HomeAssistantError) as raised:
        await alto_service(hass, "reembed", {}, alice)
    assert raised.value.translation_key == key
    assert raised.value.translation_placeholders == {"done": "0", "total": "2"}
    assert "0 of 2" in str(raised.value)
    assert (journal_bytes(hass, setup_alto), await _stored_vectors(hass)) == before


def test_spread_takes_the_first_the_last_and_evenly_between() -> None:
    """A sample over the whole store, oldest to newest."""
    assert spread([1, 2, 3], 8) == [1, 2, 3]
    assert spread(list(range(100)), 5) == [0, 25, 50, 74, 99]


def test_alike_tells_one_embedding_from_another() -> None:
    """Codes a few steps apart are alike; another text's or the other sign's are not."""
    codes = np.arange(-64, 64, dtype=np.int8)
    assert alike(codes, codes + np.int8(1))
    assert not alike(codes, -codes)
    assert not alike(codes, np.roll(codes, 7))


async def _restart(hass: HomeAssistant, entry: MockConfigEntry) -> ir.IssueRegistry:
    """Reload the entry and let its start-up check finish."""
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    return ir.async_get(hass)


async def test_memories_embedded_otherwise_raise_an_issue_whose_fix_embeds_them_again(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
    alice: Context,
) -> None:
    """Stored as Alice's, she is Alicia now: an issue after a start; its fix clears it."""
    issue = f"memories_embedded_otherwise_{setup_alto.entry_id}"
    assert (await _restart(hass, setup_alto)).async_get_issue(DOMAIN, issue) is None
    await hass.auth.async_update_user(hass_admin_user, name="Alicia")

    found = (await _restart(hass, setup_alto)).async_get_issue(DOMAIN, issue)
    assert found is not None
    assert found.is_fixable
    assert found.translation_placeholders == {"otherwise": "2", "checked": "2"}

    await _fix(hass, issue)
    lines = journal_file(hass, setup_alto).read_bytes().splitlines()
    assert json.loads(lines[-1])["op"] == "reembed"
    assert (await _restart(hass, setup_alto)).async_get_issue(DOMAIN, issue) is None


async def test_reembed_moves_every_memory_to_a_model_of_another_size(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry, alice: Context
) -> None:
    """Memories of 64 dimensions, a model of 96: one entry moves both; recall finds them."""
    fake_ollama.embed_dim = 96
    assert await alto_service(hass, "reembed", {}, alice) == {"reembedded": 2}
    assert memory(hass).store.dim == 96
    said = [_said("Alice", text) for text in (PILL, DENTIST)]
    assert await _stored_vectors(hass) == {
        PILL: _as_stored(said[0], 96),
        DENTIST: _as_stored(said[1], 96),
    }
    [line] = journal_file(hass, setup_alto).read_bytes().splitlines()[-1:]
    entry = json.loads(line)
    assert entry["op"] == "reembed"
    assert len(entry["request"]["ids"]) == 2
    assert quotes(await recall(hass, "when do I take my pill", alice))[0] == PILL
    await remember(hass, KEY, alice)
    assert quotes(await recall(hass, "spare key", alice))[0] == KEY
    replayed = await alto_service(hass, "replay", {}, alice)
    assert replayed["ok"], replayed


async def test_a_model_of_another_size_raises_an_issue_whose_fix_moves_the_memories(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry, alice: Context
) -> None:
    """Memories of 64 dimensions, a model of 72: what is said meanwhile waits, and is kept."""
    fake_ollama.embed_dim += 8
    registry = await _restart(hass, setup_alto)
    issue = f"memories_embedded_otherwise_{setup_alto.entry_id}"
    found = registry.async_get_issue(DOMAIN, issue)
    assert found is not None
    assert found.is_fixable
    assert found.translation_key == "embedding_size_changed"
    assert found.translation_placeholders == {"model_size": "72", "store_size": "64"}
    with pytest.raises(HomeAssistantError) as raised:
        await recall(hass, "when do I take my pill", alice)
    assert raised.value.translation_key == "recall_size_differs"
    result = await converse_and_wait_for_background(hass, BIKE, context=alice)
    assert result.response.error_code is None
    assert BIKE not in await _stored_vectors(hass)

    await _fix(hass, issue)
    assert memory(hass).store.dim == 72
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue) is None
    assert quotes(await recall(hass, "when do I take my pill", alice))[0] == PILL
    assert quotes(await recall(hass, "what colour is my bike", alice))[0] == BIKE
    assert (await _restart(hass, setup_alto)).async_get_issue(DOMAIN, issue) is None


async def test_a_model_that_does_not_answer_at_start_raises_nothing(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry, alice: Context
) -> None:
    """Checked at the next start instead."""
    fake_ollama.fail_embed = 10
    registry = await _restart(hass, setup_alto)
    assert not [i for i in registry.issues.values() if i.domain == DOMAIN]


async def _fix(hass: HomeAssistant, issue: str) -> None:
    """Submit the issue's fix flow and let the re-embedding it starts finish."""
    assert await async_setup_component(hass, "repairs", {})
    manager = repairs_flow_manager(hass)
    assert manager is not None
    flow = await manager.async_init(DOMAIN, data={"issue_id": issue})
    assert flow["step_id"] == "confirm"
    await manager.async_configure(flow["flow_id"], {})
    await hass.async_block_till_done(wait_background_tasks=True)


async def test_renaming_a_user_who_said_memories_raises_an_issue_until_they_are_embedded_again(
    hass: HomeAssistant,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
    hass_read_only_user: Any,
    alice: Context,
) -> None:
    """Alice renamed: an issue for her two memories, gone if renamed back; none for others."""
    registry = ir.async_get(hass)
    renamed = f"memories_of_renamed_user_{setup_alto.entry_id}_"
    await hass.auth.async_update_user(hass_read_only_user, name="Someone Else")
    await hass.auth.async_update_user(hass_admin_user, is_active=True)
    await hass.async_block_till_done()
    assert not [i for (d, i) in registry.issues if d == DOMAIN and i.startswith(renamed)]

    for name in ("Alicia", "Alice"):  # renamed, then back
        await hass.auth.async_update_user(hass_admin_user, name=name)
        await hass.async_block_till_done()
    assert registry.async_get_issue(DOMAIN, renamed + hass_admin_user.id) is None

    for name in ("Alicia", "Ally"):  # the memories still hold the first name
        await hass.auth.async_update_user(hass_admin_user, name=name)
        await hass.async_block_till_done()
    issue = registry.async_get_issue(DOMAIN, renamed + hass_admin_user.id)
    assert issue is not None
    assert (issue.is_fixable, issue.is_persistent) == (True, True)
    assert issue.translation_placeholders == {"old": "Alice", "new": "Ally", "count": "2"}

    await _fix(hass, issue.issue_id)
    assert registry.async_get_issue(DOMAIN, issue.issue_id) is None
    lines = journal_file(hass, setup_alto).read_bytes().splitlines()
    assert json.loads(lines[-1])["op"] == "reembed"
