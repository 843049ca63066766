"""An Ollama server that wants an API key: the config flow, setup, turns and reauth."""

from __future__ import annotations

from homeassistant import config_entries
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.const import CONF_EMBEDDING_MODEL, CONF_MODEL, CONF_URL, DOMAIN

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama
from .helpers import converse, error_text, speech

KEY = "s3cret-token"


def _secured_entry(fake_ollama: FakeOllama, api_key: str) -> MockConfigEntry:
    """An Alto entry for the fake server with the API key `api_key`."""
    return MockConfigEntry(
        domain=DOMAIN,
        title="Alto",
        data={
            CONF_URL: fake_ollama.url,
            CONF_API_KEY: api_key,
            CONF_MODEL: CHAT_MODEL,
            CONF_EMBEDDING_MODEL: EMBED_MODEL,
        },
    )


async def test_user_flow_asks_for_the_key_the_server_wants(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """A wrong or missing key is `invalid_auth`; the right one is stored and sent."""
    fake_ollama.api_key = KEY
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: fake_ollama.url}
    )
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: fake_ollama.url, CONF_API_KEY: "wrong"}
    )
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: fake_ollama.url, CONF_API_KEY: f"  {KEY} "}
    )
    assert result["step_id"] == "models"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_MODEL: CHAT_MODEL, CONF_EMBEDDING_MODEL: EMBED_MODEL}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_API_KEY] == KEY
    fake_ollama.reply("¦Authorized.¦")
    answer = await converse(hass, "hello")
    assert speech(answer) == "Authorized."


async def test_no_key_is_stored_for_an_open_server(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """An empty key field leaves no `api_key` in the entry."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: fake_ollama.url, CONF_API_KEY: "   "}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_MODEL: CHAT_MODEL, CONF_EMBEDDING_MODEL: EMBED_MODEL}
    )
    assert CONF_API_KEY not in result["data"]


async def test_refused_key_at_setup_starts_reauth_which_fixes_it(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """401 at setup fails the entry with a reauth flow; a working key reloads it."""
    fake_ollama.api_key = KEY
    assert await async_setup_component(hass, "conversation", {})
    entry = _secured_entry(fake_ollama, "expired")
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.SETUP_ERROR
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [f["context"]["source"] for f in flows] == [config_entries.SOURCE_REAUTH]

    flow_id = flows[0]["flow_id"]
    result = await hass.config_entries.flow.async_configure(flow_id, {CONF_API_KEY: "nope"})
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(flow_id, {CONF_API_KEY: KEY})
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reauth_successful"
    assert entry.data[CONF_API_KEY] == KEY
    assert entry.data[CONF_MODEL] == CHAT_MODEL
    assert entry.state is ConfigEntryState.LOADED


async def test_key_revoked_while_running_answers_and_starts_reauth(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """A turn refused with 401 gets a translated answer and HA asks for a new key."""
    fake_ollama.api_key = KEY
    assert await async_setup_component(hass, "conversation", {})
    entry = _secured_entry(fake_ollama, KEY)
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()

    fake_ollama.api_key = "rotated"
    result = await converse(hass, "hello")
    assert "refused my API key" in error_text(result)
    await hass.async_block_till_done()
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [f["context"]["source"] for f in flows] == [config_entries.SOURCE_REAUTH]
