"""What a loaded entry holds at run time, and the coordinators its entities follow.

The runtime type and the entry alias live here, beside the coordinators they hold, so every
platform imports them from one module and nothing imports upward. `ModelCoordinator` polls
Ollama; `MemoryCoordinator`, `ThoughtCoordinator` and `ReflectionCoordinator` are push-only views
of the memory organ, the Surfacer and the reflect organ, refreshed by their change signals
(nothing about them is polled).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

import ollama
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator, UpdateFailed

from .act_organ.organ import ActOrgan
from .const import DOMAIN, HEALTH_POLL_SECONDS, LOGGER, PROBE_TIMEOUT
from .history import TurnBuffers
from .memory.qualification import Mode
from .memory_organ.organ import MemoryOrgan, signal_memory_changed
from .model.prompt_cache import PromptCacheKeeper
from .model_client import ModelFailure, ServedModel, classify_failure, described, list_models
from .reflect_organ.organ import ReflectionState, ReflectOrgan, signal_reflection
from .reply_stats import ReplyStats
from .settings import AltoSettings
from .surface.surfacer import SurfaceOutcome
from .surface_organ.organ import SurfaceOrgan, signal_thought

type AltoConfigEntry = ConfigEntry[AltoRuntime]


@dataclass
class AltoRuntime:
    """Runtime state of one config entry (one Ollama server, one agent, one memory)."""

    settings: AltoSettings
    client: ollama.AsyncClient
    prompt_cache: PromptCacheKeeper
    coordinator: ModelCoordinator
    organ: ActOrgan
    memory: MemoryOrgan | None  # None when the store could not be opened
    memory_coordinator: MemoryCoordinator
    thoughts: SurfaceOrgan
    thought_coordinator: ThoughtCoordinator
    reflection: ReflectOrgan
    reflection_coordinator: ReflectionCoordinator
    buffers: TurnBuffers = field(default_factory=TurnBuffers)
    reply_stats: ReplyStats = field(default_factory=ReplyStats)


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
                    translation_domain=DOMAIN, translation_key="probe_unauthorized"
                ) from err
            raise UpdateFailed(
                translation_domain=DOMAIN,
                translation_key="probe_failed",
                translation_placeholders={"error": described(err)},
            ) from err
        return {m.name: m for m in models}

    @callback
    def async_turn_succeeded(self) -> None:
        """A model call worked: Ollama is back, tell the listeners now."""
        if not self.last_update_success:
            self.async_set_updated_data(self.data)

    @callback
    def async_turn_failed(self, err: Exception) -> None:
        """A model call failed: the health poll looks now, and only the poll marks Ollama down.

        A slow answer or a server error is not an unreachable server: `/api/tags`, which Ollama
        answers while a model is busy, says whether it is, asked now rather than at the next
        interval. A refused API key starts the reauth flow at once.
        """
        if classify_failure(err) is ModelFailure.UNAUTHORIZED:
            self.config_entry.async_start_reauth(self.hass)
        self.config_entry.async_create_task(
            self.hass, self.async_request_refresh(), f"{DOMAIN} health poll after a failed call"
        )


@dataclass(frozen=True, slots=True)
class MemoryState:
    """What the memory entities show: numbers and modes, never a memory's text."""

    count: int
    requested_mode: Mode
    effective_mode: Mode
    automatic_available: bool
    model_digest: str | None
    selection_backend: str


class _PushCoordinator[T](DataUpdateCoordinator[T | None]):
    """A coordinator nothing polls: an organ's dispatcher signal hands it the new state."""

    def __init__(self, hass: HomeAssistant, entry: AltoConfigEntry, name: str, signal: str) -> None:
        super().__init__(hass, LOGGER, config_entry=entry, name=name, update_interval=None)
        self._signal = signal
        self.data = self.state()

    def state(self) -> T | None:
        """The organ's state now (None: the organ is not there)."""
        raise NotImplementedError

    async def _async_update_data(self) -> T | None:
        return self.state()

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Follow the organ's change signal; returns the stop callback."""
        return async_dispatcher_connect(self.hass, self._signal, self._async_changed)

    @callback
    def _async_changed(self) -> None:
        self.async_set_updated_data(self.state())


class MemoryCoordinator(_PushCoordinator[MemoryState]):
    """The memory organ's counts and modes; no data when the store could not be opened."""

    def __init__(self, hass: HomeAssistant, entry: AltoConfigEntry, memory: MemoryOrgan | None):
        """Follow `memory` (None: every memory entity is unavailable)."""
        self._memory = memory
        super().__init__(hass, entry, f"{DOMAIN}_memory", signal_memory_changed(entry.entry_id))

    def state(self) -> MemoryState | None:
        """The organ's counts and modes now."""
        memory = self._memory
        if memory is None:
            return None
        return MemoryState(
            count=memory.count(),
            requested_mode=memory.requested_mode,
            effective_mode=memory.effective_mode,
            automatic_available=memory.automatic_available,
            model_digest=memory.model_digest,
            selection_backend=memory.selection.name,
        )


@dataclass(frozen=True, slots=True)
class ThoughtState:
    """The last thought drawn only on household memories, and the latest outcome of any kind."""

    surfaced: SurfaceOutcome | None
    last: SurfaceOutcome | None


class ThoughtCoordinator(_PushCoordinator[ThoughtState]):
    """The Surfacer's latest outcomes."""

    def __init__(self, hass: HomeAssistant, entry: AltoConfigEntry, thoughts: SurfaceOrgan):
        """Follow `surface_organ`."""
        self._thoughts = thoughts
        super().__init__(hass, entry, f"{DOMAIN}_thoughts", signal_thought(entry.entry_id))

    def state(self) -> ThoughtState:
        """The outcomes the Surfacer kept."""
        return ThoughtState(self._thoughts.last_surfaced, self._thoughts.last)


class ReflectionCoordinator(_PushCoordinator[ReflectionState]):
    """The household's inbox, the last reflection and synthesis, the latest context pressure."""

    def __init__(self, hass: HomeAssistant, entry: AltoConfigEntry, reflection: ReflectOrgan):
        """Follow `reflect_organ`."""
        self._reflection = reflection
        super().__init__(hass, entry, f"{DOMAIN}_reflection", signal_reflection(entry.entry_id))

    def state(self) -> ReflectionState:
        """What the reflect organ shows now."""
        return self._reflection.state
