"""Model availability: polls `/api/tags` and hears about every turn's outcome."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING

import ollama
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator, UpdateFailed

from .const import DOMAIN, HEALTH_POLL_SECONDS, LOGGER, PROBE_TIMEOUT
from .model_client import ModelFailure, ServedModel, classify, list_models

if TYPE_CHECKING:
    from .runtime import AltoConfigEntry


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
            failure = classify(err)
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
        if classify(err) is ModelFailure.UNAUTHORIZED:
            self.config_entry.async_start_reauth(self.hass)
        self.async_set_update_error(err)
