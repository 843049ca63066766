"""Config, options and reconfigure flows for Alto."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import probatio
from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
    OptionsFlow,
)
from homeassistant.const import CONF_API_KEY
from homeassistant.core import callback
from homeassistant.data_entry_flow import section
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.selector import (
    BooleanSelector,
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)

from .act.tiers import DEFAULT_TIERS, Tier
from .const import (
    CONF_ACTION_MODEL,
    CONF_ASSISTANT_NAME,
    CONF_BREATHER,
    CONF_CHROMA_CA_FILE,
    CONF_CHROMA_HOST,
    CONF_CHROMA_PORT,
    CONF_CHROMA_TLS,
    CONF_CHROMA_TOKEN,
    CONF_CONSENT,
    CONF_EMBEDDING_MODEL,
    CONF_GPU,
    CONF_KEEP_ALIVE,
    CONF_MAX_HISTORY,
    CONF_MAX_MEMORIES,
    CONF_MEMORY_MODE,
    CONF_MODEL,
    CONF_N1_ENABLED,
    CONF_N1_MODEL,
    CONF_NUM_CTX,
    CONF_PLAIN_REPLY_FALLBACK,
    CONF_PROMPT,
    CONF_REFLECT,
    CONF_REFLECTION_ENABLED,
    CONF_REFLECTION_INTERVAL,
    CONF_REFLECTION_MODEL,
    CONF_REPLY_CHANNEL,
    CONF_REQUEST_TIMEOUT,
    CONF_SURFACER_ENABLED,
    CONF_SURFACER_MODEL,
    CONF_SURFACER_RECALL,
    CONF_SURFACER_WAIT,
    CONF_SYNTHESIS_ENABLED,
    CONF_SYNTHESIS_INTERVAL,
    CONF_SYNTHESIS_MODEL,
    CONF_URL,
    DOMAIN,
    LOGGER,
    MAX_MAX_HISTORY,
    MAX_MAX_MEMORIES,
    MAX_NUM_CTX,
    MIN_MAX_MEMORIES,
    MIN_NUM_CTX,
    PROBE_TIMEOUT,
)
from .memory.instructions import bare_name
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
from .settings import AltoSettings, ReplyChannel

if TYPE_CHECKING:
    from .coordinator import AltoConfigEntry

DEFAULT_URL = "http://127.0.0.1:11434"
CHAT = "completion"  # Ollama's capability names
EMBED = "embedding"
TITLE = "Alto"


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

    Of the embedding models measured on the recall bench (README, *Which embedding model*) it
    put the answer first most often, on every set.
    """
    return bare_name(name).startswith("embeddinggemma")


def _models_schema(models: Capabilities, current: Mapping[str, Any]) -> probatio.Schema:
    """Every served model in each list.

    The defaults are the current choice, else the first model able to chat (for the chat model)
    or to embed (for the embedding model: EmbeddingGemma first when the server has it).
    """
    names = sorted(models)
    select = SelectSelector(
        SelectSelectorConfig(options=names, mode=SelectSelectorMode.DROPDOWN, sort=True)
    )

    def default(key: str, needed: str) -> dict[str, Any]:
        if (value := current.get(key)) in models:
            return {"default": value}
        able = [n for n in names if needed in models[n]] or [
            n for n in names if _able(models[n], needed)
        ]
        if needed == EMBED:
            able.sort(key=lambda name: not _recommended(name))  # stable: by name otherwise
        return {"default": (able or names)[0]}

    return probatio.Schema(
        {
            probatio.Required(CONF_MODEL, **default(CONF_MODEL, CHAT)): select,
            probatio.Required(CONF_EMBEDDING_MODEL, **default(CONF_EMBEDDING_MODEL, EMBED)): (
                select
            ),
            probatio.Optional(CONF_ACTION_MODEL, **_current(current, CONF_ACTION_MODEL)): select,
        }
    )


def _current(current: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {"default": current[key]} if current.get(key) else {}


def _model_errors(choice: Mapping[str, Any], models: Capabilities) -> dict[str, str]:
    """A model that cannot do its job: an embedding-only model for chat, and the reverse."""
    errors = {}
    for key, needed, error in (
        (CONF_MODEL, CHAT, "not_a_chat_model"),
        (CONF_ACTION_MODEL, CHAT, "not_a_chat_model"),
        (CONF_EMBEDDING_MODEL, EMBED, "not_an_embedding_model"),
    ):
        if (name := choice.get(key)) and not _able(models.get(name, frozenset()), needed):
            errors[key] = error
    return errors


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
        model = user_input[CONF_EMBEDDING_MODEL]
        held = _stored_size(entry) if model != entry.data.get(CONF_EMBEDDING_MODEL) else None
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


def _number(minimum: float, maximum: float, step: float = 1) -> NumberSelector:
    return NumberSelector(
        NumberSelectorConfig(min=minimum, max=maximum, step=step, mode=NumberSelectorMode.BOX)
    )


def _consent_schema(current: Mapping[str, str]) -> probatio.Schema:
    """One tier selector per domain the action organ can touch."""
    tier = SelectSelector(
        SelectSelectorConfig(
            options=[t.value for t in Tier], translation_key="tier", mode=SelectSelectorMode.LIST
        )
    )
    return probatio.Schema(
        {
            probatio.Required(domain, default=current.get(domain, default.value)): tier
            for domain, default in DEFAULT_TIERS.items()
        }
    )


def _suggested(options: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The option as typed, for a field whose empty value means something (none, the chat model).

    Not a default: the settings would show what an empty field resolves to, and saving the form
    would then store it.
    """
    return {"description": {"suggested_value": options.get(key)}}


def _reflect_schema(settings: AltoSettings, chosen: Mapping[str, Any]) -> probatio.Schema:
    """Each background pass on or off, its interval and model (empty: the chat model).

    Also the breather after a turn before any of them starts.
    """

    def model(key: str) -> dict[probatio.Marker, Any]:
        return {probatio.Optional(key, **_suggested(chosen, key)): TextSelector()}

    return probatio.Schema(
        {
            probatio.Required(CONF_N1_ENABLED, default=settings.n1.enabled): BooleanSelector(),
            **model(CONF_N1_MODEL),
            probatio.Required(
                CONF_REFLECTION_ENABLED, default=settings.reflection.enabled
            ): BooleanSelector(),
            probatio.Required(
                CONF_REFLECTION_INTERVAL, default=settings.reflection_interval
            ): _number(5, 500),
            **model(CONF_REFLECTION_MODEL),
            probatio.Required(
                CONF_SYNTHESIS_ENABLED, default=settings.synthesis.enabled
            ): BooleanSelector(),
            probatio.Required(
                CONF_SYNTHESIS_INTERVAL, default=settings.synthesis_interval
            ): _number(10, 1000),
            **model(CONF_SYNTHESIS_MODEL),
            probatio.Required(CONF_BREATHER, default=settings.breather): _number(0, 60, 0.5),
        }
    )


def _options_schema(settings: AltoSettings, options: Mapping[str, Any]) -> probatio.Schema:
    """Every option, each defaulting to its current setting (`AltoSettings` holds the defaults)."""
    return probatio.Schema(
        {
            probatio.Optional(CONF_PROMPT, default=settings.prompt): TextSelector(
                TextSelectorConfig(multiline=True)
            ),
            probatio.Optional(CONF_ASSISTANT_NAME, **_suggested(options, CONF_ASSISTANT_NAME)): (
                TextSelector()
            ),
            probatio.Optional(CONF_MAX_HISTORY, default=settings.max_history): _number(
                0, MAX_MAX_HISTORY
            ),
            probatio.Optional(CONF_NUM_CTX, default=settings.num_ctx): _number(
                MIN_NUM_CTX, MAX_NUM_CTX, 1024
            ),
            probatio.Optional(CONF_KEEP_ALIVE, default=settings.keep_alive_s): _number(-1, 86400),
            probatio.Optional(CONF_REQUEST_TIMEOUT, default=settings.request_timeout): _number(
                5, 600
            ),
            probatio.Optional(CONF_REPLY_CHANNEL, default=settings.reply_channel_option): (
                SelectSelector(
                    SelectSelectorConfig(
                        options=["auto", *(c.value for c in ReplyChannel)],
                        translation_key="reply_channel",
                        mode=SelectSelectorMode.LIST,
                    )
                )
            ),
            probatio.Optional(
                CONF_PLAIN_REPLY_FALLBACK, default=settings.plain_reply_fallback
            ): BooleanSelector(),
            probatio.Optional(CONF_MEMORY_MODE, default=str(settings.memory_mode)): SelectSelector(
                SelectSelectorConfig(
                    options=["0", "1", "2"],
                    translation_key="memory_mode",
                    mode=SelectSelectorMode.LIST,
                )
            ),
            probatio.Optional(CONF_CHROMA_HOST, **_suggested(options, CONF_CHROMA_HOST)): (
                TextSelector()
            ),
            probatio.Optional(CONF_CHROMA_PORT, default=settings.chroma_port): _number(1, 65535),
            probatio.Optional(CONF_CHROMA_TOKEN, **_suggested(options, CONF_CHROMA_TOKEN)): (
                TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))
            ),
            probatio.Optional(CONF_CHROMA_TLS, default=settings.chroma_tls): BooleanSelector(),
            probatio.Optional(CONF_CHROMA_CA_FILE, **_suggested(options, CONF_CHROMA_CA_FILE)): (
                TextSelector()
            ),
            probatio.Optional(CONF_MAX_MEMORIES, default=settings.max_memories): _number(
                MIN_MAX_MEMORIES, MAX_MAX_MEMORIES
            ),
            probatio.Optional(
                CONF_SURFACER_ENABLED, default=settings.surfacer_enabled
            ): BooleanSelector(),
            probatio.Optional(
                CONF_SURFACER_RECALL, default=settings.surfacer_recall
            ): BooleanSelector(),
            probatio.Optional(CONF_SURFACER_WAIT, default=settings.surfacer_wait): _number(
                0, 10, 0.1
            ),
            probatio.Optional(CONF_SURFACER_MODEL, **_suggested(options, CONF_SURFACER_MODEL)): (
                TextSelector()
            ),
            probatio.Optional(CONF_GPU, default=settings.gpu): SelectSelector(
                SelectSelectorConfig(
                    options=["auto", "off"], translation_key="gpu", mode=SelectSelectorMode.LIST
                )
            ),
            probatio.Required(CONF_CONSENT): section(
                _consent_schema(settings.consent), {"collapsed": True}
            ),
            # Optional, so a form sent without the section keeps every pass's current setting.
            probatio.Optional(CONF_REFLECT, default={}): section(
                _reflect_schema(settings, options.get(CONF_REFLECT) or {}), {"collapsed": True}
            ),
        }
    )


class AltoOptionsFlow(OptionsFlow):
    """Every option in one form; consent tiers and the background passes in their sections."""

    async def async_step_init(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """One form with every option; a Chroma server is checked before the options are saved."""
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
                return self.async_create_entry(data=user_input)
        schema = _options_schema(AltoSettings.from_entry(entry), entry.options)
        if user_input is not None:
            schema = self.add_suggested_values_to_schema(schema, user_input)
        return self.async_show_form(step_id="init", data_schema=schema, errors=errors)
