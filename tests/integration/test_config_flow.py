"""Config, reconfigure and options flows, every error path."""

from __future__ import annotations

from typing import Any

import pytest
from homeassistant import config_entries
from homeassistant.components.repairs import repairs_flow_manager
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType, InvalidData, section
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.alto.act.tiers import ALWAYS_ASKED
from custom_components.alto.const import CONF_URL, DOMAIN
from custom_components.alto.options import (
    ACTION_MODEL,
    EMBEDDING_MODEL,
    ENTITY_CONSENT,
    FAMILY,
    MODEL,
    OFFERED_DOMAINS,
    PLAIN_REPLY_FALLBACK,
)

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama
from .helpers import AGENT, quotes, recall, remember

OTHER_EMBED_MODEL = "embeddinggemma:latest"


async def start_user_flow(hass: HomeAssistant, url: str) -> dict:
    """Start the user flow and submit `url`; returns the next step."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    return await hass.config_entries.flow.async_configure(result["flow_id"], {CONF_URL: url})


async def test_user_flow_creates_entry(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """The user flow trims the URL, lists the models and creates an entry with its agent."""
    result = await start_user_flow(hass, f" {fake_ollama.url} ")
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "models"
    assert ("/api/tags", {}) in fake_ollama.requests
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {MODEL.key: CHAT_MODEL, EMBEDDING_MODEL.key: EMBED_MODEL, ACTION_MODEL.key: CHAT_MODEL},
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Alto"
    assert result["data"] == {
        CONF_URL: fake_ollama.url,
        MODEL.key: CHAT_MODEL,
        EMBEDDING_MODEL.key: EMBED_MODEL,
        ACTION_MODEL.key: CHAT_MODEL,
    }
    assert hass.states.get(AGENT) is not None


async def test_second_entry_gets_its_own_title(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """A second entry's title names its host; no action model is stored unless chosen."""
    MockConfigEntry(domain=DOMAIN, title="Alto", data={CONF_URL: "http://other:11434"}).add_to_hass(
        hass
    )
    result = await start_user_flow(hass, fake_ollama.url)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {MODEL.key: CHAT_MODEL, EMBEDDING_MODEL.key: EMBED_MODEL}
    )
    # The host only: user info in a URL must never become entity names.
    assert result["title"] == f"Alto (127.0.0.1:{fake_ollama.port})"
    assert ACTION_MODEL.key not in result["data"]


async def test_cannot_connect_then_recovers(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """An unreachable server is `cannot_connect`; the same form works once it is back."""
    await fake_ollama.stop()
    result = await start_user_flow(hass, fake_ollama.url)
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": "cannot_connect"}
    await fake_ollama.start()
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: fake_ollama.url}
    )
    assert result["step_id"] == "models"


async def test_server_error_is_cannot_connect(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """A server error while listing models is `cannot_connect`."""
    fake_ollama.fail_tags = 1
    result = await start_user_flow(hass, fake_ollama.url)
    assert result["errors"] == {"base": "cannot_connect"}


async def test_no_models(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """A server without models is `no_models`."""
    fake_ollama.models = []
    result = await start_user_flow(hass, fake_ollama.url)
    assert result["errors"] == {"base": "no_models"}


@pytest.mark.usefixtures("socket_enabled")
async def test_invalid_url(hass: HomeAssistant) -> None:
    """A URL that is not one is `invalid_url`."""
    result = await start_user_flow(hass, "not a url")
    assert result["errors"] == {"base": "invalid_url"}


async def test_one_entry_per_url(hass: HomeAssistant, fake_ollama: FakeOllama) -> None:
    """A second entry for the same URL is aborted."""
    MockConfigEntry(domain=DOMAIN, data={CONF_URL: fake_ollama.url}).add_to_hass(hass)
    result = await start_user_flow(hass, fake_ollama.url)
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"


async def test_reconfigure(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """Reconfigure checks the new URL, then changes the models."""
    entry = setup_alto
    result = await entry.start_reconfigure_flow(hass)
    assert result["step_id"] == "reconfigure"
    await fake_ollama.stop()
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: fake_ollama.url}
    )
    assert result["errors"] == {"base": "cannot_connect"}
    await fake_ollama.start()
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: fake_ollama.url}
    )
    assert result["step_id"] == "reconfigure_models"
    # An embedding-only model cannot chat (Ollama's /api/show says so): a clear error.
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {MODEL.key: EMBED_MODEL, EMBEDDING_MODEL.key: EMBED_MODEL}
    )
    assert result["errors"] == {MODEL.key: "not_a_chat_model"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {MODEL.key: CHAT_MODEL, EMBEDDING_MODEL.key: EMBED_MODEL, ACTION_MODEL.key: CHAT_MODEL},
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    assert entry.data[ACTION_MODEL.key] == CHAT_MODEL


async def reconfigure_models(
    hass: HomeAssistant, entry: MockConfigEntry, url: str, embedding_model: str
) -> dict:
    """A reconfigure flow through to the models step, submitting `embedding_model`."""
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {CONF_URL: url})
    assert result["step_id"] == "reconfigure_models"
    return await hass.config_entries.flow.async_configure(
        result["flow_id"], {MODEL.key: CHAT_MODEL, EMBEDDING_MODEL.key: embedding_model}
    )


async def test_reconfigure_to_an_embedding_model_of_another_size_asks_first(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """With memories stored, another vector size is confirmed with both sizes, then taken.

    Nothing changes until the confirmation; after it the start-up check raises the issue whose
    fix embeds every memory with the new model, and recall finds them again.
    """
    await remember(hass, "The spare key is under the blue pot.")
    fake_ollama.models.append(OTHER_EMBED_MODEL)
    fake_ollama.embed_dim = 32  # the stored memories have 64
    result = await reconfigure_models(hass, setup_alto, fake_ollama.url, OTHER_EMBED_MODEL)
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "reconfigure_resize"
    assert result["description_placeholders"] == {"model_size": "32", "store_size": "64"}
    assert setup_alto.data[EMBEDDING_MODEL.key] == EMBED_MODEL
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {})
    await hass.async_block_till_done(wait_background_tasks=True)
    assert result["reason"] == "reconfigure_successful"
    assert setup_alto.data[EMBEDDING_MODEL.key] == OTHER_EMBED_MODEL
    issue = f"memories_embedded_otherwise_{setup_alto.entry_id}"
    found = ir.async_get(hass).async_get_issue(DOMAIN, issue)
    assert found is not None
    assert found.translation_key == "embedding_size_changed"
    with pytest.raises(HomeAssistantError, match="32 dimensions"):
        await recall(hass, "spare key")

    assert await async_setup_component(hass, "repairs", {})
    manager = repairs_flow_manager(hass)
    assert manager is not None
    flow = await manager.async_init(DOMAIN, data={"issue_id": issue})
    await manager.async_configure(flow["flow_id"], {})
    await hass.async_block_till_done(wait_background_tasks=True)
    assert quotes(await recall(hass, "spare key")) == ["The spare key is under the blue pot."]


async def test_reconfigure_to_a_model_of_the_stored_size_needs_no_confirmation(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """Another model of 64 dimensions is taken at once; the memories stay found."""
    await remember(hass, "The spare key is under the blue pot.")
    fake_ollama.models.append(OTHER_EMBED_MODEL)
    result = await reconfigure_models(hass, setup_alto, fake_ollama.url, OTHER_EMBED_MODEL)
    await hass.async_block_till_done()
    assert result["reason"] == "reconfigure_successful"
    assert setup_alto.data[EMBEDDING_MODEL.key] == OTHER_EMBED_MODEL
    assert quotes(await recall(hass, "spare key")) == ["The spare key is under the blue pot."]


async def test_reconfigure_takes_any_embedding_model_while_nothing_is_stored(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """No memory stored: no size to keep, so no embedding request is made to check one."""
    fake_ollama.models.append(OTHER_EMBED_MODEL)
    fake_ollama.embed_dim = 32
    embedded = len(fake_ollama.embedded_texts)
    result = await reconfigure_models(hass, setup_alto, fake_ollama.url, OTHER_EMBED_MODEL)
    await hass.async_block_till_done()
    assert result["reason"] == "reconfigure_successful"
    assert len(fake_ollama.embedded_texts) == embedded


async def test_reconfigure_takes_the_new_model_when_it_does_not_answer(
    hass: HomeAssistant, fake_ollama: FakeOllama, setup_alto: MockConfigEntry
) -> None:
    """A model whose size cannot be learned now is not refused: the start-up check tells later."""
    await remember(hass, "The spare key is under the blue pot.")
    fake_ollama.models.append(OTHER_EMBED_MODEL)
    fake_ollama.fail_embed = 1
    result = await reconfigure_models(hass, setup_alto, fake_ollama.url, OTHER_EMBED_MODEL)
    await hass.async_block_till_done()
    assert result["reason"] == "reconfigure_successful"


async def test_reconfigure_to_a_url_already_used(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """Reconfiguring to another entry's URL is aborted."""
    MockConfigEntry(domain=DOMAIN, data={CONF_URL: "http://127.0.0.1:1"}).add_to_hass(hass)
    result = await setup_alto.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: "http://127.0.0.1:1"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"


async def open_settings(
    hass: HomeAssistant, entry: MockConfigEntry
) -> config_entries.ConfigFlowResult:
    """Open the options and pick the settings form from the menu."""
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert result["type"] is FlowResultType.MENU
    assert result["menu_options"] == ["settings", ENTITY_CONSENT.key, FAMILY.key]
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": "settings"}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "settings"
    return result


async def test_options_flow(hass: HomeAssistant, setup_alto: MockConfigEntry) -> None:
    """The settings form stores every option, consent tiers included."""
    result = await open_settings(hass, setup_alto)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {
            "prompt": "You are terse.",
            "assistant_name": "Pip",
            "max_history": 5,
            "num_ctx": 4096,
            "keep_alive": 300,
            "request_timeout": 30,
            PLAIN_REPLY_FALLBACK.key: False,
            "consent": {**OFFERED_DOMAINS, "light": "confirm_first"},
        },
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert setup_alto.options["assistant_name"] == "Pip"
    assert setup_alto.options[PLAIN_REPLY_FALLBACK.key] is False
    assert setup_alto.options["consent"]["light"] == "confirm_first"
    assert setup_alto.options["consent"]["switch"] == "autonomous"


async def test_options_flow_rejects_an_unknown_tier(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """An unknown consent tier is rejected and nothing is stored."""
    result = await open_settings(hass, setup_alto)
    with pytest.raises(InvalidData):
        await hass.config_entries.options.async_configure(
            result["flow_id"], {"consent": {**OFFERED_DOMAINS, "light": "whenever"}}
        )
    assert "consent" not in setup_alto.options


@pytest.mark.parametrize("domain", sorted(ALWAYS_ASKED))
async def test_the_consent_section_offers_no_tier_for_locks_and_alarm_panels(
    hass: HomeAssistant, setup_alto: MockConfigEntry, domain: str
) -> None:
    """A lock's or alarm panel's tier is no field of the section: sending one is refused."""
    result = await open_settings(hass, setup_alto)
    offered = form_defaults(result["data_schema"].schema["consent"])
    assert offered == OFFERED_DOMAINS
    assert domain not in offered
    with pytest.raises(InvalidData):
        await hass.config_entries.options.async_configure(
            result["flow_id"], {"consent": {**OFFERED_DOMAINS, domain: "confirm_first"}}
        )


async def test_saving_the_settings_keeps_the_per_entity_tiers(
    hass: HomeAssistant, setup_alto: MockConfigEntry
) -> None:
    """The settings form replaces what it shows, an emptied field too, and nothing else."""
    chosen = {"light.kitchen_lights": "confirm_first"}
    hass.config_entries.async_update_entry(
        setup_alto,
        options={ENTITY_CONSENT.key: chosen, "assistant_name": "Pip"},
    )
    await hass.async_block_till_done()
    result = await open_settings(hass, setup_alto)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"consent": dict(OFFERED_DOMAINS)}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert setup_alto.options[ENTITY_CONSENT.key] == chosen
    assert "assistant_name" not in setup_alto.options


def form_defaults(schema: Any) -> dict[str, object]:
    """The defaults a form (or a section, given its validator) offers, by field."""
    fields = schema.schema.schema if isinstance(schema, section) else schema.schema
    return {
        str(key.schema): key.default() for key in fields if callable(getattr(key, "default", None))
    }


async def test_models_are_offered_by_capability(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """The chat model defaults to one that chats, the embedding model to one that embeds."""
    fake_ollama.models = ["all-minilm-embed:latest", "a-small-chat:latest", "zz-chat:latest"]
    result = await start_user_flow(hass, fake_ollama.url)
    defaults = form_defaults(result["data_schema"])
    assert defaults[MODEL.key] == "a-small-chat:latest"
    assert defaults[EMBEDDING_MODEL.key] == "all-minilm-embed:latest"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {MODEL.key: "a-small-chat:latest", EMBEDDING_MODEL.key: "zz-chat:latest"},
    )
    assert result["errors"] == {EMBEDDING_MODEL.key: "not_an_embedding_model"}


async def test_embeddinggemma_is_the_default_embedding_model_when_served(
    hass: HomeAssistant, fake_ollama: FakeOllama
) -> None:
    """Among several embedding models the measured best is offered first, wherever it sorts."""
    fake_ollama.models = [
        "all-minilm-embed:latest",
        "library/embeddinggemma:300m",
        "nomic-embed-text:latest",
        "a-small-chat:latest",
    ]
    result = await start_user_flow(hass, fake_ollama.url)
    defaults = form_defaults(result["data_schema"])
    assert defaults[EMBEDDING_MODEL.key] == "library/embeddinggemma:300m"
    assert defaults[MODEL.key] == "a-small-chat:latest"
