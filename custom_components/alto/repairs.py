"""Fix flows for Alto's repair issues."""

from __future__ import annotations

from typing import Any

from homeassistant.components import assist_pipeline
from homeassistant.components.repairs import ConfirmRepairFlow, RepairsFlow, RepairsFlowResult
from homeassistant.core import HomeAssistant

from .local_intents import ISSUE_PREFIX


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


async def async_create_fix_flow(
    hass: HomeAssistant, issue_id: str, data: dict[str, Any] | None
) -> RepairsFlow:
    """The fix flow of an Alto issue."""
    # The only fixable issue, always created with its data.
    assert issue_id.startswith(ISSUE_PREFIX)
    assert data is not None
    return PreferLocalIntentsFlow(str(data["pipeline_id"]))
