"""An entry's settings, read once at setup: the entry's data and options with their defaults.

Options change only through the options flow, which reloads the entry, so one frozen object per
setup is always current; nothing else reads `entry.data` or `entry.options` for a setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import CONF_API_KEY

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
    DEFAULT_BREATHER,
    DEFAULT_CHROMA_PORT,
    DEFAULT_CHROMA_TLS,
    DEFAULT_GPU,
    DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_HISTORY,
    DEFAULT_MAX_MEMORIES,
    DEFAULT_MEMORY_MODE,
    DEFAULT_NUM_CTX,
    DEFAULT_PASS_ENABLED,
    DEFAULT_PLAIN_REPLY_FALLBACK,
    DEFAULT_PROMPT,
    DEFAULT_REFLECTION_INTERVAL,
    DEFAULT_REPLY_CHANNEL,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SURFACER_ENABLED,
    DEFAULT_SURFACER_RECALL,
    DEFAULT_SURFACER_WAIT,
    DEFAULT_SYNTHESIS_INTERVAL,
)
from .memory.server import ChromaServer


class ReplyChannel(StrEnum):
    """How the conversational model separates speech, actions and thought."""

    JSON = "json"  # a constrained JSON answer (Ollama `format`): holds for any model
    MARKERS = "markers"  # ¦speech¦ and ¤action¤ marks the model is asked to write


@dataclass(frozen=True, slots=True)
class PassSettings:
    """One background pass of the reflect organ: whether it runs on its own, and its model."""

    enabled: bool
    model: str  # the chat model unless one is chosen


@dataclass(frozen=True, slots=True, kw_only=True)
class AltoSettings:
    """Everything configurable about one entry; defaults where an option was never set."""

    url: str
    api_key: str | None = None
    model: str
    embedding_model: str
    action_model: str  # the chat model unless one is chosen
    surfacer_model: str  # the chat model unless one is chosen
    prompt: str = DEFAULT_PROMPT
    assistant_name: str | None = None
    max_history: int = DEFAULT_MAX_HISTORY
    num_ctx: int = DEFAULT_NUM_CTX
    keep_alive_s: int = DEFAULT_KEEP_ALIVE
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    plain_reply_fallback: bool = DEFAULT_PLAIN_REPLY_FALLBACK
    memory_mode: int = DEFAULT_MEMORY_MODE
    chroma_host: str | None = None
    chroma_port: int = DEFAULT_CHROMA_PORT
    chroma_token: str | None = None
    chroma_tls: bool = DEFAULT_CHROMA_TLS
    chroma_ca_file: str | None = None  # as typed: relative to the config folder, or absolute
    max_memories: int = DEFAULT_MAX_MEMORIES
    gpu: str = DEFAULT_GPU
    surfacer_enabled: bool = DEFAULT_SURFACER_ENABLED
    surfacer_recall: bool = DEFAULT_SURFACER_RECALL
    surfacer_wait: float = DEFAULT_SURFACER_WAIT
    consent: Mapping[str, str] = field(default_factory=dict)
    reply_channel_option: str = DEFAULT_REPLY_CHANNEL  # as chosen: "auto", "json" or "markers"
    # The reflect organ's passes (section `reflect` of the options). A disabled pass is never
    # started in the background; its service still runs it on demand.
    n1: PassSettings
    reflection: PassSettings
    synthesis: PassSettings
    reflection_interval: int = DEFAULT_REFLECTION_INTERVAL
    synthesis_interval: int = DEFAULT_SYNTHESIS_INTERVAL
    breather: float = DEFAULT_BREATHER

    @property
    def keep_alive(self) -> str:
        """Ollama's keep_alive (seconds, with the unit Ollama requires)."""
        return f"{self.keep_alive_s}s"

    def chroma_server(self, resolve: Callable[[str], str]) -> ChromaServer | None:
        """The Chroma server the options name (None: the embedded store).

        `resolve` turns the CA file's path into an absolute one (``hass.config.path``).
        """
        if not self.chroma_host:
            return None
        return ChromaServer(
            host=self.chroma_host,
            port=self.chroma_port,
            token=self.chroma_token,
            tls=self.chroma_tls,
            ca_file=resolve(self.chroma_ca_file) if self.chroma_ca_file else None,
        )

    @property
    def reply_channel(self) -> ReplyChannel:
        """The channel the reply option means.

        "auto" is the JSON answer: constrained decoding holds any Ollama model to it, while
        marks are only asked for (a small model ignores them).
        """
        option = self.reply_channel_option
        return ReplyChannel(option) if option in ReplyChannel else ReplyChannel.JSON

    @classmethod
    def from_entry(cls, entry: ConfigEntry[Any]) -> AltoSettings:
        """Data and options of `entry` (options win), typed, with defaults."""
        return cls.from_mapping({**entry.data, **entry.options})

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> AltoSettings:
        """The settings in a mapping of config keys (the options flow's numbers are floats)."""
        model = str(values[CONF_MODEL])
        reflect: Mapping[str, Any] = values.get(CONF_REFLECT) or {}

        def one_pass(enabled: str, chosen: str) -> PassSettings:
            return PassSettings(
                enabled=bool(reflect.get(enabled, DEFAULT_PASS_ENABLED)),
                model=str(reflect.get(chosen) or model),
            )

        return cls(
            url=str(values[CONF_URL]),
            api_key=values.get(CONF_API_KEY) or None,
            model=model,
            embedding_model=str(values[CONF_EMBEDDING_MODEL]),
            action_model=str(values.get(CONF_ACTION_MODEL) or model),
            surfacer_model=str(values.get(CONF_SURFACER_MODEL) or model),
            prompt=str(values.get(CONF_PROMPT, DEFAULT_PROMPT)),
            assistant_name=values.get(CONF_ASSISTANT_NAME) or None,
            max_history=int(values.get(CONF_MAX_HISTORY, DEFAULT_MAX_HISTORY)),
            num_ctx=int(values.get(CONF_NUM_CTX, DEFAULT_NUM_CTX)),
            keep_alive_s=int(values.get(CONF_KEEP_ALIVE, DEFAULT_KEEP_ALIVE)),
            request_timeout=float(values.get(CONF_REQUEST_TIMEOUT, DEFAULT_REQUEST_TIMEOUT)),
            plain_reply_fallback=bool(
                values.get(CONF_PLAIN_REPLY_FALLBACK, DEFAULT_PLAIN_REPLY_FALLBACK)
            ),
            memory_mode=int(values.get(CONF_MEMORY_MODE, DEFAULT_MEMORY_MODE)),
            chroma_host=values.get(CONF_CHROMA_HOST) or None,
            chroma_port=int(values.get(CONF_CHROMA_PORT) or DEFAULT_CHROMA_PORT),
            chroma_token=values.get(CONF_CHROMA_TOKEN) or None,
            chroma_tls=bool(values.get(CONF_CHROMA_TLS, DEFAULT_CHROMA_TLS)),
            chroma_ca_file=values.get(CONF_CHROMA_CA_FILE) or None,
            max_memories=int(values.get(CONF_MAX_MEMORIES) or DEFAULT_MAX_MEMORIES),
            gpu=str(values.get(CONF_GPU, DEFAULT_GPU)),
            surfacer_enabled=bool(values.get(CONF_SURFACER_ENABLED, DEFAULT_SURFACER_ENABLED)),
            surfacer_recall=bool(values.get(CONF_SURFACER_RECALL, DEFAULT_SURFACER_RECALL)),
            surfacer_wait=float(values.get(CONF_SURFACER_WAIT, DEFAULT_SURFACER_WAIT)),
            consent=dict(values.get(CONF_CONSENT) or {}),
            reply_channel_option=str(values.get(CONF_REPLY_CHANNEL, DEFAULT_REPLY_CHANNEL)),
            n1=one_pass(CONF_N1_ENABLED, CONF_N1_MODEL),
            reflection=one_pass(CONF_REFLECTION_ENABLED, CONF_REFLECTION_MODEL),
            synthesis=one_pass(CONF_SYNTHESIS_ENABLED, CONF_SYNTHESIS_MODEL),
            reflection_interval=int(
                reflect.get(CONF_REFLECTION_INTERVAL, DEFAULT_REFLECTION_INTERVAL)
            ),
            synthesis_interval=int(
                reflect.get(CONF_SYNTHESIS_INTERVAL, DEFAULT_SYNTHESIS_INTERVAL)
            ),
            breather=float(reflect.get(CONF_BREATHER, DEFAULT_BREATHER)),
        )
