"""Alto: a conversation agent with an honest memory and guarded hands."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import ollama
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.typing import ConfigType

from .act_organ import local_intents
from .act_organ.exposure import ExposureIndex
from .act_organ.organ import ActOrgan
from .const import DOMAIN, LOGGER
from .coordinator import (
    AltoConfigEntry,
    AltoRuntime,
    MemoryCoordinator,
    ModelCoordinator,
    ReflectionCoordinator,
    ThoughtCoordinator,
)
from .memory.server import ServerError
from .memory_organ.damage import report_server_unavailable
from .memory_organ.forgetting import forget_listener
from .memory_organ.organ import MemoryOrgan, storage_dir
from .model.prompt_cache import PromptCacheKeeper
from .model_client import close_client, make_client
from .panel.recent import async_track_recent
from .panel.sidebar import async_setup_panel
from .reflect_organ.organ import ReflectOrgan
from .reply_stats import ReplyStats
from .services import async_register_services
from .settings import AltoSettings
from .surface_organ.organ import SurfaceOrgan

PLATFORMS: list[Platform] = [
    Platform.BINARY_SENSOR,
    Platform.CONVERSATION,
    Platform.EVENT,
    Platform.SENSOR,
    Platform.TODO,
]
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Register the services and the panel once for the domain."""
    async_register_services(hass)
    await async_setup_panel(hass)
    return True


async def async_setup_entry(hass: HomeAssistant, entry: AltoConfigEntry) -> bool:
    """Connect to Ollama (retried by HA while it is unreachable) and add the platforms."""
    settings = AltoSettings.from_entry(entry)
    prompt_cache = PromptCacheKeeper(
        lambda prefill: hass.async_create_background_task(prefill, "alto_prompt_cache")
    )
    client = make_client(settings.url, settings.request_timeout, settings.api_key, prompt_cache)
    entry.async_on_unload(prompt_cache.close)
    coordinator = ModelCoordinator(hass, entry, client)
    try:
        await coordinator.async_config_entry_first_refresh()
    except Exception:
        await close_client(client)
        raise
    index = ExposureIndex(hass)
    entry.async_on_unload(index.async_start())
    organ = ActOrgan.build(hass, entry.entry_id, client, settings, index)
    entry.async_on_unload(organ.async_shutdown)
    memory = await _async_open_memory(hass, entry, client, coordinator, settings)
    thoughts = SurfaceOrgan.build(hass, entry.entry_id, client, settings, memory)
    entry.async_on_unload(thoughts.async_shutdown)
    memory_coordinator = MemoryCoordinator(hass, entry, memory)
    entry.async_on_unload(memory_coordinator.async_start())
    thought_coordinator = ThoughtCoordinator(hass, entry, thoughts)
    entry.async_on_unload(thought_coordinator.async_start())
    reflection = ReflectOrgan.build(hass, entry.entry_id, client, settings, memory)
    entry.async_on_unload(reflection.async_close)
    await reflection.async_start()
    entry.async_on_unload(reflection.async_listen())
    reflection_coordinator = ReflectionCoordinator(hass, entry, reflection)
    entry.async_on_unload(reflection_coordinator.async_start())
    reply_stats = await ReplyStats.async_load(hass, entry.entry_id)
    entry.async_on_unload(reply_stats.async_save)  # a reload reads them back at once
    entry.runtime_data = AltoRuntime(
        settings=settings,
        client=client,
        prompt_cache=prompt_cache,
        coordinator=coordinator,
        organ=organ,
        memory=memory,
        memory_coordinator=memory_coordinator,
        thoughts=thoughts,
        thought_coordinator=thought_coordinator,
        reflection=reflection,
        reflection_coordinator=reflection_coordinator,
        reply_stats=reply_stats,
    )
    if memory is not None:  # the words of a forgotten memory leave the buffers, recorder, traces
        forgotten = forget_listener(hass, entry.runtime_data.buffers)
        entry.async_on_unload(memory.async_on_forget(forgotten))
    entry.async_on_unload(async_track_recent(hass, entry))
    entry.async_on_unload(entry.add_update_listener(_async_update_listener))
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    entry.async_on_unload(local_intents.async_start(hass, entry))
    return True


async def async_unload_entry(hass: HomeAssistant, entry: AltoConfigEntry) -> bool:
    """Unload the platforms, stop the background passes and close the HTTP pool."""
    if not await hass.config_entries.async_unload_platforms(entry, PLATFORMS):
        return False
    # Before the client closes: a pass cut off by a closed pool would count as a failed call.
    await entry.runtime_data.reflection.async_close()
    if entry.runtime_data.memory is not None:
        await entry.runtime_data.memory.async_close()
    await close_client(entry.runtime_data.client)
    return True


async def async_remove_entry(hass: HomeAssistant, entry: AltoConfigEntry) -> None:
    """Delete everything the entry kept under the config directory.

    That is the memories, the journal, the checkpoint, the background passes' logs and the reply
    counts per model; rows on a Chroma server stay there.
    """
    folder = storage_dir(hass, entry.entry_id)
    await hass.async_add_executor_job(shutil.rmtree, folder, True)
    await ReplyStats.async_remove(hass, entry.entry_id)
    LOGGER.info("Removed Alto's stored memories and logs for %s", entry.title)


def _make_private(folder: Path) -> None:
    """The entry's folder (and Alto's folder above it) 0700, every file in it 0600.

    Memories are for Home Assistant's own user only. Files written later sit inside the 0700
    folder.
    """
    folder.mkdir(parents=True, exist_ok=True)
    folder.parent.chmod(0o700)
    for root, folders, files in os.walk(folder):
        Path(root).chmod(0o700)
        for name in folders:
            (Path(root) / name).chmod(0o700)
        for name in files:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(0o600)


async def _async_open_memory(
    hass: HomeAssistant,
    entry: AltoConfigEntry,
    client: ollama.AsyncClient,
    coordinator: ModelCoordinator,
    settings: AltoSettings,
) -> MemoryOrgan | None:
    """Open the memory organ; without a store Alto still talks, it just remembers nothing."""
    server = settings.chroma_host
    try:
        await hass.async_add_executor_job(_make_private, storage_dir(hass, entry.entry_id))
        memory = await MemoryOrgan.async_build(hass, entry.entry_id, client, settings)
    except ServerError as err:  # a repair issue names it: a token or certificate changed
        LOGGER.warning("Chroma server %s unusable, Alto will not remember: %s", server, err)
        report_server_unavailable(hass, entry.entry_id, server or "", err.reason)
        return None
    except Exception as err:  # noqa: BLE001 - any store failure: Alto talks without memory
        LOGGER.warning("Memory store unavailable, Alto will not remember: %s", err)
        return None
    report_server_unavailable(hass, entry.entry_id, server or "", None)

    @callback
    def _digest() -> None:
        served = (coordinator.data or {}).get(settings.model)
        memory.async_set_model_digest(served.digest if served else None)

    _digest()
    entry.async_on_unload(coordinator.async_add_listener(_digest))
    return memory


async def _async_update_listener(hass: HomeAssistant, entry: AltoConfigEntry) -> None:
    """Options changed: reload so every part sees them."""
    await hass.config_entries.async_reload(entry.entry_id)
