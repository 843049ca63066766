"""What a loaded entry holds at run time, and the coordinator of the model's availability.

The runtime type and the entry alias live here, beside the coordinator they hold, so every
platform imports them from one module and nothing imports upward.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

import ollama
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator, UpdateFailed

from .action_organ import ActionOrgan
from .const import DOMAIN, HEALTH_POLL_SECONDS, LOGGER, PROBE_TIMEOUT
from .history import TurnBuffers
from .memory_organ import MemoryOrgan
from .model_client import ModelFailure, ServedModel, classify_failure, list_models
from .settings import AltoSettings
from .thoughts import ThoughtOrgan

type AltoConfigEntry = ConfigEntry[AltoRuntime]


@dataclass
class AltoRuntime:
    """Runtime state of one config entry (one Ollama server, one agent, one memory)."""

    settings: AltoSettings
    client: ollama.AsyncClient
    coordinator: ModelCoordinator
    organ: ActionOrgan
    memory: MemoryOrgan | None  # None when the store could not be opened
    thoughts: ThoughtOrgan
    buffers: TurnBuffers = field(default_factory=TurnBuffers)


class ModelCoordinator(DataUpdateCoordinator[dict[str, ServedModel]]):
    """Served models by name; `last_update_success` is whether Ollama answers."""

    config_entry: AltoConfigEntry

    def __init__(
        self, hass: HomeAssistant, entry: AltoConfigEntry, client: ollama.AsyncClient
    ) -> None:
        """Poll every HEALTH_POLL_SECONDS so availability recovers without a turn."""
        super().__init__(
            hass,
            LOGGER,
            config_entry=entry,
            name=DOMAIN,
            update_interval=timedelta(seconds=HEALTH_POLL_SECONDS),
        )
        self.client = client

    async def _async_update_data(self) -> dict[str, ServedModel]:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                models = await list_models(self.client)
        except Exception as err:
            failure = classify_failure(err)
            if failure is None:  # not a model failure: let the coordinator log it
                raise
            if failure is ModelFailure.UNAUTHORIZED:  # HA starts the reauth flow
                raise ConfigEntryAuthFailed(
                    translation_domain=DOMAIN, translation_key=failure.value
                ) from err
            raise UpdateFailed(
                translation_domain=DOMAIN,
                translation_key="model_unreachable",
            ) from err
        return {m.name: m for m in models}

    @callback
    def async_turn_succeeded(self) -> None:
        """A model call worked: Ollama is back, tell the listeners now."""
        if not self.last_update_success:
            self.async_set_updated_data(self.data)

    @callback
    def async_turn_failed(self, err: Exception) -> None:
        """A model call failed: show it at once rather than at the next poll."""
        if classify_failure(err) is ModelFailure.UNAUTHORIZED:
            self.config_entry.async_start_reauth(self.hass)
        self.async_set_update_error(err)
