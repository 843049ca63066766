"""What a loaded Alto config entry holds at run time."""

from __future__ import annotations

from dataclasses import dataclass, field

import ollama
from homeassistant.config_entries import ConfigEntry

from .act.organ import ActionOrgan
from .coordinator import ModelCoordinator
from .history import TurnBuffers
from .memory_organ import MemoryOrgan
from .thoughts import ThoughtOrgan


@dataclass
class AltoRuntime:
    """Runtime state of one config entry (one Ollama server)."""

    client: ollama.AsyncClient
    coordinator: ModelCoordinator
    organ: ActionOrgan
    memory: MemoryOrgan | None  # None when the store could not be opened
    thoughts: ThoughtOrgan
    buffers: TurnBuffers = field(default_factory=TurnBuffers)


type AltoConfigEntry = ConfigEntry[AltoRuntime]
