"""Diagnostics, with the API key, the Chroma token and the Ollama URL's credentials redacted."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from homeassistant.components.diagnostics import REDACTED, async_redact_data
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant

from .const import CONF_CHROMA_TOKEN, CONF_PROMPT, CONF_URL
from .coordinator import AltoConfigEntry


def redact_url(url: str) -> str:
    """Keep scheme, host, port and path; replace user info and query with REDACTED."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return REDACTED
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    if parts.username or parts.password:
        netloc = f"{REDACTED}@{netloc}"
    query = REDACTED if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: AltoConfigEntry
) -> dict[str, Any]:
    """Return the entry's diagnostics.

    Entry settings (redacted), model availability, turn buffer counts, the reply channel chosen
    and, per chat model, its replies in each channel and the channel it answers in and why
    (`reply_stats`), memory figures and the reflect organ's counts per scope (private scopes
    numbered, never named).
    """
    runtime = entry.runtime_data
    coordinator = runtime.coordinator
    options = async_redact_data(dict(entry.options), {CONF_CHROMA_TOKEN})
    if CONF_PROMPT in options:
        options[CONF_PROMPT] = REDACTED  # the household's persona text may be personal
    return {
        "data": {
            **async_redact_data(entry.data, {CONF_API_KEY}),
            CONF_URL: redact_url(entry.data[CONF_URL]),
        },
        "options": options,
        "model_available": coordinator.last_update_success,
        "served_models": {
            name: model.digest for name, model in sorted((coordinator.data or {}).items())
        },
        "open_conversations": len(runtime.buffers),
        "reply_channel": runtime.settings.reply_channel_option,
        "reply_models": runtime.reply_stats.diagnostics(runtime.settings),
        "memory": None
        if runtime.memory is None
        else {
            "rows": runtime.memory.store.count_all(current_only=False),
            "effective_mode": runtime.memory.effective_mode.name.lower(),
            "automatic_available": runtime.memory.automatic_available,
            "selection_backend": runtime.memory.selection.name,
            "journal_entries": runtime.memory.journal.count,
        },
        "reflect": await runtime.reflection.async_diagnostics(),
    }
