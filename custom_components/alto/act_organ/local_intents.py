"""A repair issue when Assist's "prefer handling commands locally" can bypass confirm-first.

With that pipeline option on, Home Assistant's built-in intents act on exposed entities before
Alto sees the sentence: "unlock the front door" unlocks it, no question asked. Alto cannot stop
HA's local handler, so it makes the risk visible: one issue per pipeline whose conversation
agent is this entry's Alto, that prefers local intents, while a confirm-first entity is exposed
to Assist. Checked once the pipelines are set up (at Alto's setup or later), at once whenever a
pipeline or exposure changes, and, debounced, whenever anything else that can change a consent
tier does (the exposure index goes stale: an entity renamed "Garage door", given aliases, a
device class or an area, a device renamed, a scene or script added or reloaded). The issue goes
away once the risk does, and its fix flow turns the option off for that pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from homeassistant.components import assist_pipeline
from homeassistant.components.assist_pipeline.pipeline import KEY_ASSIST_PIPELINE
from homeassistant.components.homeassistant.exposed_entities import async_listen_entity_updates
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.debounce import Debouncer
from homeassistant.setup import async_when_setup

from ..act.tiers import Tier
from ..const import DOMAIN, LOGGER
from ..coordinator import AltoConfigEntry
from .exposure import ASSISTANT

ISSUE_PREFIX = "prefer_local_intents_"
ISSUE_TRANSLATION_KEY = "prefer_local_intents"
# A burst of registry updates (an integration loading its entities) costs one rebuild at most
# this often, the first at once.
RECHECK_COOLDOWN_S = 2.0


def issue_id(pipeline_id: str) -> str:
    """The repair issue of one pipeline."""
    return f"{ISSUE_PREFIX}{pipeline_id}"


@callback
def async_check(hass: HomeAssistant, entry: AltoConfigEntry) -> None:
    """Raise or clear the issue of every pipeline (a no-op without Assist pipelines)."""
    if KEY_ASSIST_PIPELINE not in hass.data:
        return
    organ = entry.runtime_data.organ
    agents = {entry.entry_id}
    if agent := er.async_get(hass).async_get_entity_id("conversation", DOMAIN, entry.entry_id):
        agents.add(agent)
    pipelines = [
        pipeline
        for pipeline in assist_pipeline.async_get_pipelines(hass)
        if pipeline.conversation_engine in agents
    ]
    # Only a pipeline at risk needs the registry read (and perhaps rebuilt).
    guarded = (
        sorted(
            entity.name
            for entity in organ.index.registry.entities()
            if organ.tier_of_entity(entity) is Tier.CONFIRM_FIRST
        )
        if any(pipeline.prefer_local_intents for pipeline in pipelines)
        else []
    )
    for pipeline in pipelines:
        if pipeline.prefer_local_intents and guarded:
            ir.async_create_issue(
                hass,
                DOMAIN,
                issue_id(pipeline.id),
                is_fixable=True,
                severity=ir.IssueSeverity.WARNING,
                translation_key=ISSUE_TRANSLATION_KEY,
                translation_placeholders={
                    "pipeline": pipeline.name,
                    "entities": ", ".join(guarded[:5]) + (" …" if len(guarded) > 5 else ""),
                },
                data={"pipeline_id": pipeline.id},
            )
        else:
            ir.async_delete_issue(hass, DOMAIN, issue_id(pipeline.id))


@callback
def async_start(hass: HomeAssistant, entry: AltoConfigEntry) -> Callable[[], None]:
    """Check, and keep checking on every change that can change the risk; return the stop callback.

    Checking starts whenever Assist's pipelines are set up (now, or later).
    """
    stops: list[Callable[[], None]] = []
    stopped = False

    @callback
    def _check() -> None:
        # The registry is rebuilt lazily on the next read; this read is it.
        async_check(hass, entry)

    # Exposure changes are checked at once as well: they are the user's own, and few.
    recheck = Debouncer(hass, LOGGER, cooldown=RECHECK_COOLDOWN_S, immediate=True, function=_check)

    async def _pipelines_changed(*_args: Any) -> None:
        async_check(hass, entry)

    async def _pipelines_ready(hass: HomeAssistant, _component: str) -> None:
        if stopped:
            return
        store = hass.data[KEY_ASSIST_PIPELINE].pipeline_store
        index = entry.runtime_data.organ.index
        stops.append(store.async_add_listener(_pipelines_changed))
        stops.append(async_listen_entity_updates(hass, ASSISTANT, _check))
        stops.append(index.async_add_listener(recheck.async_schedule_call))
        stops.append(recheck.async_shutdown)
        async_check(hass, entry)

    async_when_setup(hass, "assist_pipeline", _pipelines_ready)

    @callback
    def _stop() -> None:
        nonlocal stopped
        stopped = True
        for stop in stops:
            stop()
        for issue in list(ir.async_get(hass).issues.values()):
            if issue.domain == DOMAIN and issue.issue_id.startswith(ISSUE_PREFIX):
                ir.async_delete_issue(hass, DOMAIN, issue.issue_id)

    return _stop
