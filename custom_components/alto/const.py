"""Constants for the Alto integration."""

from __future__ import annotations

import logging
from typing import Final

DOMAIN: Final = "alto"
LOGGER = logging.getLogger(__package__)

# Config entry data (exactly these keys).
CONF_URL: Final = "url"
CONF_MODEL: Final = "model"
CONF_EMBEDDING_MODEL: Final = "embedding_model"
CONF_ACTION_MODEL: Final = "action_model"

# Options.
CONF_PROMPT: Final = "prompt"
CONF_ASSISTANT_NAME: Final = "assistant_name"
CONF_MAX_HISTORY: Final = "max_history"
CONF_NUM_CTX: Final = "num_ctx"
CONF_KEEP_ALIVE: Final = "keep_alive"
CONF_PLAIN_REPLY_FALLBACK: Final = "plain_reply_fallback"
CONF_REQUEST_TIMEOUT: Final = "request_timeout"
CONF_MEMORY_MODE: Final = "memory_mode"  # 0 explicit only, 1 source text, 2 automatic
CONF_CHROMA_HOST: Final = "chroma_host"  # empty: the embedded store under the config dir
CONF_CHROMA_PORT: Final = "chroma_port"
CONF_CHROMA_TOKEN: Final = "chroma_token"  # sent as a bearer token and as X-Chroma-Token
CONF_CHROMA_TLS: Final = "chroma_tls"  # https, the certificate always verified
CONF_CHROMA_CA_FILE: Final = "chroma_ca_file"  # PEM trusted instead of the CA bundle
CONF_MAX_MEMORIES: Final = "max_memories"  # stored memories per entry, every scope together
CONF_GPU: Final = "gpu"  # "auto": CUDA through PyCUDA when present, else numpy; "off": numpy
CONF_SURFACER_ENABLED: Final = "surfacer_enabled"
CONF_SURFACER_RECALL: Final = "surfacer_recall"  # add semantic recall to the named cues
CONF_SURFACER_WAIT: Final = "surfacer_wait"  # seconds the reply waits for a thought
CONF_SURFACER_MODEL: Final = "surfacer_model"  # default: the chat model
CONF_CONSENT: Final = "consent"  # {domain: tier} overrides of the default consent tiers
CONF_REPLY_CHANNEL: Final = "reply_channel"  # "auto", "json" or "markers"
CONF_REFLECT: Final = "reflect"  # the background passes' section of the options
CONF_N1_ENABLED: Final = "n1_enabled"
CONF_N1_MODEL: Final = "n1_model"  # default: the chat model
CONF_REFLECTION_ENABLED: Final = "reflection_enabled"
CONF_REFLECTION_INTERVAL: Final = "reflection_interval"  # user messages of a scope
CONF_REFLECTION_MODEL: Final = "reflection_model"  # default: the chat model
CONF_SYNTHESIS_ENABLED: Final = "synthesis_enabled"
CONF_SYNTHESIS_INTERVAL: Final = "synthesis_interval"  # user messages of a scope
CONF_SYNTHESIS_MODEL: Final = "synthesis_model"  # default: the chat model
CONF_BREATHER: Final = "breather"  # seconds after a turn before a background pass starts

DEFAULT_PROMPT: Final = (
    "You are a warm, concise voice assistant for the people who live in this home. "
    "Answer briefly, the way a thoughtful housemate would."
)
DEFAULT_MAX_HISTORY: Final = 20
DEFAULT_NUM_CTX: Final = 8192
DEFAULT_KEEP_ALIVE: Final = -1  # seconds; -1 keeps the model loaded
DEFAULT_PLAIN_REPLY_FALLBACK: Final = True
DEFAULT_MEMORY_MODE: Final = 2  # falls back to 1 until the model/processor pair is qualified
DEFAULT_CHROMA_PORT: Final = 8000
DEFAULT_CHROMA_TLS: Final = False
DEFAULT_MAX_MEMORIES: Final = 100_000
DEFAULT_GPU: Final = "auto"
DEFAULT_REPLY_CHANNEL: Final = "auto"
DEFAULT_SURFACER_ENABLED: Final = True
DEFAULT_SURFACER_RECALL: Final = False
DEFAULT_SURFACER_WAIT: Final = 1.5
DEFAULT_PASS_ENABLED: Final = True
DEFAULT_REFLECTION_INTERVAL: Final = 25
DEFAULT_SYNTHESIS_INTERVAL: Final = 100
DEFAULT_BREATHER: Final = 2.0
DEFAULT_REQUEST_TIMEOUT: Final = 60.0  # seconds; the ollama client never times out by default

MIN_NUM_CTX: Final = 2048
MAX_NUM_CTX: Final = 131072
MAX_MAX_HISTORY: Final = 200
MIN_MAX_MEMORIES: Final = 100
MAX_MAX_MEMORIES: Final = 10_000_000

# How often the model's availability is polled (GET /api/tags) so it recovers on its own.
HEALTH_POLL_SECONDS: Final = 60
# Timeout of the set-up and health probes (seconds).
PROBE_TIMEOUT: Final = 10.0
