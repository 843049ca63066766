"""Fix flows for Alto's repair issues."""

from __future__ import annotations

from typing import Any

from homeassistant.components import assist_pipeline
from homeassistant.components.repairs import ConfirmRepairFlow, RepairsFlow, RepairsFlowResult
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant

from .act_organ.local_intents import ISSUE_PREFIX
from .coordinator import AltoConfigEntry
from .memory_organ.freshness import ISSUE_EMBEDDED_OTHERWISE, ISSUE_RENAMED


class PreferLocalIntentsFlow(ConfirmRepairFlow):
    """Turn "prefer handling commands locally" off for the pipeline the issue names."""

    def __init__(self, pipeline_id: str) -> None:
        """The pipeline to change."""
        self._pipeline_id = pipeline_id

    async def async_step_confirm(
        self, user_input: dict[str, str] | None = None
    ) -> RepairsFlowResult:
        """On confirmation, change the pipeline; its change listener then clears the issue."""
        if user_input is not None:
            for pipeline in assist_pipeline.async_get_pipelines(self.hass):
                if pipeline.id == self._pipeline_id:
                    await assist_pipeline.async_update_pipeline(
                        self.hass, pipeline, prefer_local_intents=False
                    )
        return await super().async_step_confirm(user_input)


class EmbedAgainFlow(ConfirmRepairFlow):
    """Embed every memory of the entry again (`alto.reembed`), in the background."""

    def __init__(self, entry_id: str) -> None:
        """The entry whose memories to embed again."""
        self._entry_id = entry_id

    async def async_step_confirm(
        self, user_input: dict[str, str] | None = None
    ) -> RepairsFlowResult:
        """On confirmation, start it; it logs how many it did, and the next start checks again."""
        entry: AltoConfigEntry | None = self.hass.config_entries.async_get_entry(self._entry_id)
        if (
            user_input is not None
            and entry is not None
            and entry.state is ConfigEntryState.LOADED
            and (organ := entry.runtime_data.memory) is not None
        ):
            entry.async_create_background_task(
                self.hass, organ.async_reembed(), f"alto_reembed_{self._entry_id}"
            )
        return await super().async_step_confirm(user_input)


async def async_create_fix_flow(
    hass: HomeAssistant, issue_id: str, data: dict[str, Any] | None
) -> RepairsFlow:
    """The fix flow of an Alto issue (every fixable one is created with its data)."""
    assert data is not None
    if issue_id.startswith(ISSUE_PREFIX):
        return PreferLocalIntentsFlow(str(data["pipeline_id"]))
    assert issue_id.startswith((ISSUE_EMBEDDED_OTHERWISE, ISSUE_RENAMED))
    return EmbedAgainFlow(str(data["entry_id"]))
