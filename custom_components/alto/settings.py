"""An entry's settings, read once at setup: the entry's data and options with their defaults.

Options change only through the options flow, which reloads the entry, so one frozen object per
setup is always current; nothing else reads `entry.data` or `entry.options` for a setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import CONF_API_KEY

from . import options as opt
from .act.tiers import Tier
from .const import CONF_URL
from .memory.kin import Kin
from .memory.server import ChromaServer
from .options import ReplyChannel


@dataclass(frozen=True, slots=True)
class PassSettings:
    """One background pass of the reflect organ: whether it runs on its own, and its model."""

    enabled: bool
    model: str  # the chat model unless one is chosen


@dataclass(frozen=True, slots=True, kw_only=True)
class AltoSettings:
    """Everything configurable about one entry; defaults where an option was never set."""

    url: str
    api_key: str | None
    model: str
    embedding_model: str
    action_model: str  # the chat model unless one is chosen
    surfacer_model: str  # the chat model unless one is chosen
    prompt: str
    assistant_name: str | None
    max_history: int
    num_ctx: int
    keep_alive_s: int
    request_timeout: float
    plain_reply_fallback: bool
    memory_mode: int  # 0 explicit only, 1 source text, 2 automatic
    chroma_host: str | None  # None: the embedded store under the config folder
    chroma_port: int
    chroma_token: str | None  # sent as a bearer token and as X-Chroma-Token
    chroma_tls: bool  # https, the certificate always verified
    chroma_ca_file: str | None  # as typed: relative to the config folder, or absolute
    max_memories: int  # stored memories per entry, every scope together
    user_memory_share: int  # per cent of max_memories one user's private scope may hold
    gpu: str  # "auto": CUDA through PyCUDA when present, else the CPU; "off": the CPU
    surfacer_enabled: bool
    surfacer_recall: bool  # add semantic recall to the named cues
    surfacer_wait: float  # seconds the reply waits for a thought
    consent: Mapping[str, str]  # {domain: tier} overrides of the default consent tiers
    entity_consent: Mapping[str, Tier]  # {entity id: tier} where the user changed Alto's judgement
    family: Mapping[str, Kin]  # {person entity id: their mother, father, partner and sex}
    reply_channel_option: str  # as chosen: "auto", "json" or "markers"
    think: bool  # Ollama's `think`: whether a thinking model thinks before it answers
    # The reflect organ's passes (section `reflect` of the options). A disabled pass is never
    # started in the background; its service still runs it on demand.
    n1: PassSettings
    reflection: PassSettings
    synthesis: PassSettings
    reflection_interval: int  # user messages of a scope
    synthesis_interval: int  # user messages of a scope
    breather: float  # seconds after a turn before a background pass starts

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
        """The settings in a mapping of config keys; the defaults are the options table's."""
        model = str(values[opt.MODEL.key])
        reflect = opt.REFLECT.read(values)

        def one_pass(enabled: opt.Toggle, chosen: opt.Blank) -> PassSettings:
            return PassSettings(enabled=enabled.read(reflect), model=chosen.read(reflect) or model)

        return cls(
            url=str(values[CONF_URL]),
            api_key=values.get(CONF_API_KEY) or None,
            model=model,
            embedding_model=str(values[opt.EMBEDDING_MODEL.key]),
            action_model=str(values.get(opt.ACTION_MODEL.key) or model),
            surfacer_model=opt.SURFACER_MODEL.read(values) or model,
            prompt=opt.PROMPT.read(values),
            assistant_name=opt.ASSISTANT_NAME.read(values),
            max_history=opt.MAX_HISTORY.read(values),
            num_ctx=opt.NUM_CTX.read(values),
            keep_alive_s=opt.KEEP_ALIVE.read(values),
            request_timeout=opt.REQUEST_TIMEOUT.read(values),
            plain_reply_fallback=opt.PLAIN_REPLY_FALLBACK.read(values),
            memory_mode=int(opt.MEMORY_MODE.read(values)),
            chroma_host=opt.CHROMA_HOST.read(values),
            chroma_port=opt.CHROMA_PORT.read(values),
            chroma_token=opt.CHROMA_TOKEN.read(values),
            chroma_tls=opt.CHROMA_TLS.read(values),
            chroma_ca_file=opt.CHROMA_CA_FILE.read(values),
            max_memories=opt.MAX_MEMORIES.read(values),
            user_memory_share=opt.USER_MEMORY_SHARE.read(values),
            gpu=opt.GPU.read(values),
            surfacer_enabled=opt.SURFACER_ENABLED.read(values),
            surfacer_recall=opt.SURFACER_RECALL.read(values),
            surfacer_wait=opt.SURFACER_WAIT.read(values),
            consent=opt.CONSENT.read(values),
            entity_consent=opt.ENTITY_CONSENT.read(values),
            family=opt.FAMILY.read(values),
            reply_channel_option=opt.REPLY_CHANNEL.read(values),
            think=opt.THINK.read(values),
            n1=one_pass(opt.N1_ENABLED, opt.N1_MODEL),
            reflection=one_pass(opt.REFLECTION_ENABLED, opt.REFLECTION_MODEL),
            synthesis=one_pass(opt.SYNTHESIS_ENABLED, opt.SYNTHESIS_MODEL),
            reflection_interval=opt.REFLECTION_INTERVAL.read(reflect),
            synthesis_interval=opt.SYNTHESIS_INTERVAL.read(reflect),
            breather=opt.BREATHER.read(reflect),
        )
