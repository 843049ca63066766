"""Constants for the Alto integration."""

from __future__ import annotations

import logging
from typing import Final

from . import options as opt
from .memory.qualification import Mode

DOMAIN: Final = "alto"
LOGGER = logging.getLogger(__package__)

# Which loaded entry a service call or a panel command addresses (default: the first one).
ATTR_ENTRY_ID: Final = "config_entry_id"
# A memory mode as the mode sensor's state and the panel name it.
MODE_STATES: Final = {
    Mode.EXPLICIT: "explicit",
    Mode.SOURCE: "source_text",
    Mode.AUTOMATIC: "automatic",
}

CONF_URL: Final = "url"  # the config entry's data: this, the API key and the models

# Keys and a default that diagnostics, the tests and the benches name: the options table's.
CONF_MODEL: Final = opt.MODEL.key
CONF_EMBEDDING_MODEL: Final = opt.EMBEDDING_MODEL.key
CONF_PROMPT: Final = opt.PROMPT.key
CONF_MAX_HISTORY: Final = opt.MAX_HISTORY.key
CONF_REQUEST_TIMEOUT: Final = opt.REQUEST_TIMEOUT.key
CONF_MEMORY_MODE: Final = opt.MEMORY_MODE.key
CONF_CHROMA_HOST: Final = opt.CHROMA_HOST.key
CONF_CHROMA_PORT: Final = opt.CHROMA_PORT.key
CONF_CHROMA_TOKEN: Final = opt.CHROMA_TOKEN.key
CONF_CHROMA_TLS: Final = opt.CHROMA_TLS.key
CONF_CHROMA_CA_FILE: Final = opt.CHROMA_CA_FILE.key
CONF_MAX_MEMORIES: Final = opt.MAX_MEMORIES.key
CONF_SURFACER_ENABLED: Final = opt.SURFACER_ENABLED.key
CONF_SURFACER_WAIT: Final = opt.SURFACER_WAIT.key
CONF_REFLECT: Final = opt.REFLECT.key
CONF_N1_ENABLED: Final = opt.N1_ENABLED.key
CONF_N1_MODEL: Final = opt.N1_MODEL.key
CONF_REFLECTION_ENABLED: Final = opt.REFLECTION_ENABLED.key
CONF_REFLECTION_INTERVAL: Final = opt.REFLECTION_INTERVAL.key
CONF_SYNTHESIS_ENABLED: Final = opt.SYNTHESIS_ENABLED.key
CONF_SYNTHESIS_INTERVAL: Final = opt.SYNTHESIS_INTERVAL.key
CONF_BREATHER: Final = opt.BREATHER.key
DEFAULT_NUM_CTX: Final = opt.NUM_CTX.default

# How often the model's availability is polled (GET /api/tags) so it recovers on its own.
HEALTH_POLL_SECONDS: Final = 60
# Timeout of the set-up and health probes (seconds).
PROBE_TIMEOUT: Final = 10.0
