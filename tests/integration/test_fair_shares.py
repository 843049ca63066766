"""Fair shares of the memory store, in a real Home Assistant with two users and the household.

Alice and Bob (non-administrators) and the household (a turn with no user, a remember with no
caller) write turns (kept as sources, mode 1: forgettable) and `alto.remember` memories
(authored: never forgotten for room) in a seeded random order, under several limits. After
every write, once the retention it started is done:

- no row of a scope other than the writer's was removed;
- every user's scope is within its share and the store within `max_memories`;
- a refused remember changed nothing; it says `user_memory_full` only when the writer's own
  authored memories fill their share, and `memory_full` only when everything the writer may not
  forget fills the store, each as its translated message.

At the end the journal replays to the store's rows, and a restart loads them.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import translation
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto import options as opt
from custom_components.alto.const import CONF_MAX_MEMORIES, CONF_MEMORY_MODE, DOMAIN
from custom_components.alto.memory.records import HOUSEHOLD, KIND_EXPLICIT, KIND_SOURCE, Row
from custom_components.alto.memory.replay import replay_state
from custom_components.alto.memory.retention import Shares

from ..fake_ollama import FakeOllama
from .helpers import alto_service, converse_and_wait_for_background, journal_file, memory, remember

LANGUAGES = ("en", "de", "fr", "es", "nl", "it")
# (max_memories, user_memory_share %): users hold 3 and 2 rows; the household what is left.
LIMITS = [(8, 40), (10, 20)]
WRITES = 18


@pytest.fixture(params=LIMITS, ids=lambda limits: f"{limits[0]}-{limits[1]}%")
def limits(request: pytest.FixtureRequest) -> tuple[int, int]:
    """One family's limits."""
    total, share = request.param
    return total, share


@pytest.fixture
def entry_options(limits: tuple[int, int]) -> dict[str, Any]:
    """Turns kept as their source text; the family's limits."""
    total, share = limits
    return {CONF_MEMORY_MODE: 1, CONF_MAX_MEMORIES: total, opt.USER_MEMORY_SHARE.key: share}


async def _rows(hass: HomeAssistant) -> dict[int, Row]:
    rows = await hass.async_add_executor_job(memory(hass).store.state.rows)
    return {row.id: row for row in rows}


async def _message(hass: HomeAssistant, language: str, key: str) -> str:
    """An error's message in `language`, as Home Assistant shows it (no final full stop)."""
    strings = await translation.async_get_translations(hass, language, "exceptions", [DOMAIN])
    return strings[f"component.{DOMAIN}.exceptions.{key}.message"].rstrip(".")


async def _write(
    hass: HomeAssistant, fake_ollama: FakeOllama, text: str, context: Context, *, turn: bool
) -> HomeAssistantError | None:
    """A turn or a remember said by `context`'s user, its retention done; its error if any."""
    try:
        if turn:
            fake_ollama.reply("¦Noted.¦")
            await converse_and_wait_for_background(hass, text, context=context)
        else:
            await remember(hass, text, context)
    except HomeAssistantError as err:
        return err
    await hass.async_block_till_done(wait_background_tasks=True)
    return None


def _within(rows: dict[int, Row], shares: Shares) -> bool:
    counts: dict[str, int] = {}
    for row in rows.values():
        counts[row.scope] = counts.get(row.scope, 0) + 1
    users = all(n <= shares.limit(s) for s, n in counts.items() if s != HOUSEHOLD)
    return users and len(rows) <= shares.total


async def test_no_ones_write_makes_room_with_anothers(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    setup_alto: MockConfigEntry,
    hass_admin_user: Any,
    limits: tuple[int, int],
) -> None:
    """Every write of the family keeps the other scopes' rows; refusals are the writer's own."""
    shares = Shares.of(*limits)
    users = {
        name: (await hass.auth.async_create_user(name, group_ids=["system-users"])).id
        for name in ("Alice", "Bob")
    }
    contexts = {users["Alice"]: Context(user_id=users["Alice"])}
    contexts[users["Bob"]] = Context(user_id=users["Bob"])
    contexts[HOUSEHOLD] = Context()
    rng = random.Random(sum(limits))
    refused: dict[str, int] = {}
    for number in range(WRITES):
        scope = rng.choice([*users.values(), HOUSEHOLD])
        kind = rng.choice(("turn", "remember", "remember"))
        before = await _rows(hass)
        text = f"Note number {number} is about the {kind} of the garden."
        error = await _write(hass, fake_ollama, text, contexts[scope], turn=kind == "turn")
        if error is not None:
            key = str(error.translation_key)
            refused[key] = refused.get(key, 0) + 1
            assert await _rows(hass) == before  # nothing written, nothing forgotten
            assert str(error) == await _message(hass, "en", key)
            mine = [row for row in before.values() if row.scope == scope]
            authored = sum(1 for row in mine if row.kind == KIND_EXPLICIT)
            if key == "user_memory_full":
                assert scope != HOUSEHOLD
                assert authored == shares.user
            else:
                assert key == "memory_full"
                sources = sum(1 for row in mine if row.kind == KIND_SOURCE)
                assert len(before) - sources >= shares.total
            continue
        after = await _rows(hass)
        removed = [row for row_id, row in before.items() if row_id not in after]
        assert {row.scope for row in removed} <= {scope}
        assert _within(after, shares)
    assert refused.get("user_memory_full")  # the family reaches a user's share

    admin = Context(user_id=hass_admin_user.id)
    assert (await alto_service(hass, "replay", {}, admin))["ok"]
    rows = await _rows(hass)
    path = journal_file(hass, setup_alto)
    _report, replayed = await hass.async_add_executor_job(replay_state, path)
    assert {row.id: row for row in replayed.rows()} == rows
    assert await hass.config_entries.async_reload(setup_alto.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert await _rows(hass) == rows


@pytest.mark.parametrize("limits", [(100, 25)], ids=["default-share"])
async def test_a_user_who_fills_their_share_is_told_and_everyone_else_writes(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """Alice's remembers past a quarter of 100 are refused as hers; Bob and the home go on.

    Nothing of Bob's or the household's is forgotten, and the reason is translated in every
    language.
    """
    alice = Context(user_id=(await hass.auth.async_create_user("Alice")).id)
    bob = Context(user_id=(await hass.auth.async_create_user("Bob")).id)
    bobs = await remember(hass, "My locker code is 5550.", bob)
    homes = await remember(hass, "The spare key is under the blue pot.")
    for n in range(25):
        await remember(hass, f"Alice's memory number {n}.", alice)
    with pytest.raises(HomeAssistantError) as refused:
        await remember(hass, "One more of Alice's.", alice)
    assert refused.value.translation_key == "user_memory_full"
    assert str(refused.value) == await _message(hass, "en", "user_memory_full")
    messages = {
        language: await _message(hass, language, "user_memory_full") for language in LANGUAGES
    }
    assert len(set(messages.values())) == len(LANGUAGES)
    assert messages["en"] != await _message(hass, "en", "memory_full")
    await hass.async_block_till_done(wait_background_tasks=True)
    assert memory(hass).store.get([bobs, homes])  # neither pushed out
    await remember(hass, "Bob's bike is in the shed.", bob)
    await remember(hass, "The bins go out on Thursday.")
    await remember(hass, "Alice asked the home to keep this.", alice, owner=HOUSEHOLD)
