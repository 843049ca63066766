"""Config, options and reconfigure flows for Alto."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import probatio
from homeassistant.components.person import DOMAIN as PERSON_DOMAIN
from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
    OptionsFlow,
)
from homeassistant.const import CONF_API_KEY
from homeassistant.core import callback
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.selector import (
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)

from .act_organ.exposure import ExposureIndex
from .const import CONF_URL, DOMAIN, LOGGER, PROBE_TIMEOUT
from .memory.instructions import bare_name
from .memory.kin import Kin
from .memory.server import ServerError, probe
from .model.ollama_io import embed_for
from .model_client import (
    ModelFailure,
    classify_failure,
    close_client,
    list_models,
    make_client,
    model_capabilities,
    normalize_url,
)
from .options import (
    EMBEDDING_MODEL,
    ENTITY_CONSENT,
    FAMILY,
    MODEL_FIELDS,
    Capability,
    EntityTier,
    ServedModel,
    options_schema,
)
from .settings import AltoSettings

if TYPE_CHECKING:
    from .coordinator import AltoConfigEntry

DEFAULT_URL = "http://127.0.0.1:11434"
TITLE = "Alto"
# The error of a model field holding a model that cannot do what the field needs.
UNABLE = {Capability.CHAT: "not_a_chat_model", Capability.EMBED: "not_an_embedding_model"}


type Capabilities = dict[str, frozenset[str]]


async def _probe(url: str, api_key: str | None) -> tuple[Capabilities, str | None]:
    """Served models at `url` with what each can do, and an error key (`invalid_url`, …)."""
    try:
        cv.url(url)
    except probatio.Invalid:
        return {}, "invalid_url"
    client = make_client(url, PROBE_TIMEOUT, api_key)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            models = await list_models(client)
            capabilities = await asyncio.gather(
                *(model_capabilities(client, m.name) for m in models)
            )
    except Exception as err:  # noqa: BLE001 - every failure is an answer for the form
        LOGGER.debug("Probing the Ollama server failed: %s", type(err).__name__)
        refused = classify_failure(err) is ModelFailure.UNAUTHORIZED
        return {}, "invalid_auth" if refused else "cannot_connect"
    finally:
        await close_client(client)
    if not models:
        return {}, "no_models"
    return dict(zip((m.name for m in models), capabilities, strict=True)), None


async def _embedding_size(url: str, api_key: str | None, model: str) -> int | None:
    """How many numbers a vector of `model` holds (one word embedded), None without an answer."""
    client = make_client(url, PROBE_TIMEOUT, api_key)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            vectors = await embed_for(client, model)(["size"])
        return len(vectors[0])
    except Exception as err:  # noqa: BLE001 - no answer: the start-up check tells later
        LOGGER.debug("Embedding with %s to learn its size failed: %s", model, type(err).__name__)
        return None
    finally:
        await close_client(client)


def _stored_size(entry: AltoConfigEntry) -> int | None:
    """The size of the vectors `entry`'s stored memories hold, None when it holds none."""
    if entry.state is not ConfigEntryState.LOADED or entry.runtime_data.memory is None:
        return None
    return entry.runtime_data.memory.store.dim


def _api_key_field() -> dict[probatio.Marker, Any]:
    return {
        probatio.Optional(CONF_API_KEY): TextSelector(
            TextSelectorConfig(type=TextSelectorType.PASSWORD)
        )
    }


def _url_schema(default: str) -> probatio.Schema:
    return probatio.Schema(
        {
            probatio.Required(CONF_URL, default=default): TextSelector(
                TextSelectorConfig(type=TextSelectorType.URL)
            ),
            **_api_key_field(),
        }
    )


def _connection(user_input: Mapping[str, Any]) -> dict[str, str]:
    """URL and (only when given) API key, as the entry stores them."""
    data = {CONF_URL: normalize_url(str(user_input[CONF_URL]))}
    if api_key := str(user_input.get(CONF_API_KEY) or "").strip():
        data[CONF_API_KEY] = api_key
    return data


def _able(capabilities: frozenset[str], needed: str) -> bool:
    """A model can do `needed`, or its server does not say (then it is not ruled out)."""
    return not capabilities or needed in capabilities


def _recommended(name: str) -> bool:
    """Whether `name` ("namespace/name:tag") is EmbeddingGemma.

    Of the embedding models measured on the recall bench (docs/memory.md, *Which embedding
    model*) it put the answer first most often, on every set.
    """
    return bare_name(name).startswith("embeddinggemma")


def _models_schema(models: Capabilities, current: Mapping[str, Any]) -> probatio.Schema:
    """Every served model in each list.

    The defaults are the current choice, else, for a required model, the first model able to do
    its job (for the embedding model: EmbeddingGemma first when the server has it).
    """
    names = sorted(models)
    select = SelectSelector(
        SelectSelectorConfig(options=names, mode=SelectSelectorMode.DROPDOWN, sort=True)
    )

    def marker(option: ServedModel) -> probatio.Marker:
        if not option.required:
            chosen = current.get(option.key)
            return probatio.Optional(option.key, **({"default": chosen} if chosen else {}))
        if (value := current.get(option.key)) in models:
            return probatio.Required(option.key, default=value)
        needed = option.needs
        able = [n for n in names if needed in models[n]] or [
            n for n in names if _able(models[n], needed)
        ]
        if needed is Capability.EMBED:
            able.sort(key=lambda name: not _recommended(name))  # stable: by name otherwise
        return probatio.Required(option.key, default=(able or names)[0])

    return probatio.Schema({marker(option): select for option in MODEL_FIELDS})


def _model_errors(choice: Mapping[str, Any], models: Capabilities) -> dict[str, str]:
    """A model that cannot do its job: an embedding-only model for chat, and the reverse."""
    return {
        option.key: UNABLE[option.needs]
        for option in MODEL_FIELDS
        if (name := choice.get(option.key))
        and not _able(models.get(name, frozenset()), option.needs)
    }


class AltoConfigFlow(ConfigFlow, domain=DOMAIN):
    """Ask for the Ollama URL, test it, then offer its models."""

    VERSION = 1

    def __init__(self) -> None:
        """Remember the URL and its models between steps."""
        self._connection: dict[str, str] = {}
        self._models: Capabilities = {}
        # The reconfigured data and both sizes, while a model of another size is confirmed.
        self._resized: tuple[dict[str, Any], dict[str, str]] = ({}, {})

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Ask for the Ollama URL (and the API key of a secured server)."""
        errors: dict[str, str] = {}
        if user_input is not None:
            connection = _connection(user_input)
            self._async_abort_entries_match({CONF_URL: connection[CONF_URL]})
            self._models, error = await _probe(connection[CONF_URL], connection.get(CONF_API_KEY))
            if error is None:
                self._connection = connection
                return await self.async_step_models()
            errors["base"] = error
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(
                _url_schema(DEFAULT_URL), user_input or {}
            ),
            errors=errors,
        )

    async def async_step_models(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Pick the chat, embedding and (optional) action models."""
        errors = _model_errors(user_input, self._models) if user_input is not None else {}
        if user_input is None or errors:
            return self.async_show_form(
                step_id="models",
                data_schema=_models_schema(self._models, user_input or {}),
                errors=errors,
            )
        # The host only: a URL's user info would become every entity's friendly name.
        host = urlsplit(self._connection[CONF_URL]).netloc.rpartition("@")[2]
        title = TITLE if not self._async_current_entries() else f"{TITLE} ({host})"
        return self.async_create_entry(title=title, data={**self._connection, **user_input})

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change the URL or API key (tested again)."""
        entry = self._get_reconfigure_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            connection = _connection(user_input)
            if connection[CONF_URL] != entry.data[CONF_URL]:
                self._async_abort_entries_match({CONF_URL: connection[CONF_URL]})
            self._models, error = await _probe(connection[CONF_URL], connection.get(CONF_API_KEY))
            if error is None:
                self._connection = connection
                return await self.async_step_reconfigure_models()
            errors["base"] = error
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(
                _url_schema((user_input or entry.data)[CONF_URL]), user_input or entry.data
            ),
            errors=errors,
        )

    async def async_step_reconfigure_models(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Pick the models again; the entry reloads with the new data.

        An embedding model whose vectors are not of the stored memories' size is confirmed
        first (`async_step_reconfigure_resize`): every memory must then be embedded again.
        """
        entry = self._get_reconfigure_entry()
        errors = _model_errors(user_input, self._models) if user_input is not None else {}
        if user_input is None or errors:
            return self.async_show_form(
                step_id="reconfigure_models",
                data_schema=_models_schema(self._models, user_input or entry.data),
                errors=errors,
            )
        data = {**self._connection, **user_input}
        model = user_input[EMBEDDING_MODEL.key]
        held = _stored_size(entry) if model != entry.data.get(EMBEDDING_MODEL.key) else None
        if held is not None:
            size = await _embedding_size(
                self._connection[CONF_URL], self._connection.get(CONF_API_KEY), model
            )
            if size is not None and size != held:
                self._resized = (data, {"model_size": str(size), "store_size": str(held)})
                return await self.async_step_reconfigure_resize()
        return self.async_update_reload_and_abort(entry, data=data)

    async def async_step_reconfigure_resize(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Confirm an embedding model of another size than the stored memories'.

        Its vectors cannot sit beside theirs: until every memory is embedded again (the repair
        issue the next start raises, or `alto.reembed`), recall finds none of them and new ones
        wait.
        """
        data, sizes = self._resized
        if user_input is None:
            return self.async_show_form(
                step_id="reconfigure_resize",
                data_schema=probatio.Schema({}),
                description_placeholders=sizes,
            )
        return self.async_update_reload_and_abort(self._get_reconfigure_entry(), data=data)

    async def async_step_reauth(self, entry_data: Mapping[str, Any]) -> ConfigFlowResult:
        """Ollama refused the API key: ask for a new one."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for the API key, test it against the entry's server, then reload the entry."""
        entry = self._get_reauth_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            connection = _connection({CONF_URL: entry.data[CONF_URL], **user_input})
            _models, error = await _probe(connection[CONF_URL], connection.get(CONF_API_KEY))
            if error is None:
                data = {k: v for k, v in entry.data.items() if k != CONF_API_KEY}
                return self.async_update_reload_and_abort(entry, data={**data, **connection})
            errors["base"] = error
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=probatio.Schema(_api_key_field()),
            description_placeholders={"url": entry.data[CONF_URL]},
            errors=errors,
        )

    @staticmethod
    @callback
    def async_get_options_flow(config_entry: ConfigEntry) -> OptionsFlow:
        """The options flow."""
        return AltoOptionsFlow()


class AltoOptionsFlow(OptionsFlow):
    """A menu: every setting, the consent tier of each exposed entity, or a person's family."""

    def __init__(self) -> None:
        """Remember the listed entities between showing the consent list and its answer."""
        self._listed: list[EntityTier] = []
        self._person = ""

    async def async_step_init(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Offer the settings form and the per-entity consent list."""
        return self.async_show_menu(
            step_id="init", menu_options=["settings", ENTITY_CONSENT.key, FAMILY.key]
        )

    async def async_step_settings(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Every setting in one form; a Chroma server is checked before the options are saved.

        The form replaces every option it shows (an emptied field is gone); the per-entity
        tiers, which it does not show, are kept.
        """
        entry = self.config_entry
        errors: dict[str, str] = {}
        if user_input is not None:
            chosen = AltoSettings.from_mapping({**entry.data, **user_input})
            server = chosen.chroma_server(self.hass.config.path)
            try:
                if server is not None:
                    await self.hass.async_add_executor_job(probe, server)
            except ServerError as err:
                LOGGER.debug("Checking the Chroma server failed: %s", err)
                errors["base"] = f"chroma_{err.reason}"
            else:
                kept = {k: v for k, v in entry.options.items() if k == ENTITY_CONSENT.key}
                return self.async_create_entry(data={**kept, **user_input})
        schema = options_schema({**entry.data, **entry.options})
        if user_input is not None:
            schema = self.add_suggested_values_to_schema(schema, user_input)
        return self.async_show_form(step_id="settings", data_schema=schema, errors=errors)

    async def async_step_entity_consent(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """One tier list per exposed entity Alto can act on; only changes are stored.

        The list is read from Home Assistant as it is now (exposure, names, registries), with
        the entry's saved domain tiers and per-entity choices; aborts when nothing is listed.
        """
        entry = self.config_entry
        settings = AltoSettings.from_entry(entry)
        if user_input is None:
            entities = ExposureIndex(self.hass).registry.entities()
            self._listed = ENTITY_CONSENT.rows(entities, settings.consent, settings.entity_consent)
            if not self._listed:
                return self.async_abort(reason="nothing_exposed")
            return self.async_show_form(
                step_id=ENTITY_CONSENT.key, data_schema=ENTITY_CONSENT.schema(self._listed)
            )
        options = {k: v for k, v in entry.options.items() if k != ENTITY_CONSENT.key}
        if chosen := ENTITY_CONSENT.chosen(self._listed, user_input, settings.entity_consent):
            options[ENTITY_CONSENT.key] = chosen
        return self.async_create_entry(data=options)

    async def async_step_family(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Which person to tell Alto the family of; aborts when Home Assistant has no people."""
        people = self.hass.states.async_entity_ids(PERSON_DOMAIN)
        if user_input is not None:
            self._person = str(user_input["person"])
            return await self.async_step_family_member()
        if not people:
            return self.async_abort(reason="no_people")
        return self.async_show_form(step_id=FAMILY.key, data_schema=FAMILY.person_schema(people))

    async def async_step_family_member(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """The chosen person's mother, father, partner and sex; the other options are kept."""
        entry = self.config_entry
        if user_input is None:
            kin = AltoSettings.from_entry(entry).family.get(self._person, Kin())
            state = self.hass.states.get(self._person)
            return self.async_show_form(
                step_id="family_member",
                data_schema=FAMILY.kin_schema(self._person, kin),
                description_placeholders={"person": state.name if state else self._person},
            )
        options = {k: v for k, v in entry.options.items() if k != FAMILY.key}
        if chosen := FAMILY.chosen(entry.options, self._person, user_input):
            options[FAMILY.key] = chosen
        return self.async_create_entry(data=options)
