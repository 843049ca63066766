"""`todo.alto_memories`: the household's current memories as a list.

Adding an item is an explicit remember (owned by the household); deleting one forgets it.
Private memories of individual users are not listed here.
"""

from __future__ import annotations

from homeassistant.components.todo import (
    TodoItem,
    TodoItemStatus,
    TodoListEntity,
    TodoListEntityFeature,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddEntitiesCallback
from homeassistant.util.ulid import ulid_now

from .const import DOMAIN
from .entity import AltoEntity
from .memory.records import HOUSEHOLD
from .memory_organ import STORE_ERROR, STORE_PENDING, IntakeReport, signal_memory_changed
from .runtime import AltoConfigEntry

PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddEntitiesCallback
) -> None:
    """Add the memories list when the store is open."""
    if entry.runtime_data.memory is not None:
        async_add_entities([MemoriesTodo(entry)])


def _raise_if_refused(report: IntakeReport) -> None:
    if report.reason in (STORE_ERROR, STORE_PENDING):
        raise HomeAssistantError(translation_domain=DOMAIN, translation_key=report.reason)
    if not report.admitted:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="memory_refused",
            translation_placeholders={"reason": report.reason or "unknown"},
        )


class MemoriesTodo(AltoEntity, TodoListEntity):
    """The household's memories."""

    _attr_translation_key = "memories"
    _attr_supported_features = (
        TodoListEntityFeature.CREATE_TODO_ITEM | TodoListEntityFeature.DELETE_TODO_ITEM
    )

    def __init__(self, entry: AltoConfigEntry) -> None:
        """Bind to the memory organ."""
        super().__init__(entry, "memories")
        self._memory = entry.runtime_data.memory

    async def async_added_to_hass(self) -> None:
        """Refresh when memory changes."""
        await super().async_added_to_hass()
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass, signal_memory_changed(self.entry.entry_id), self._async_changed
            )
        )
        self._async_changed()

    @callback
    def _async_changed(self) -> None:
        self._attr_todo_items = [
            TodoItem(summary=row.document, uid=str(row.id), status=TodoItemStatus.NEEDS_ACTION)
            for row in self._memory.rows(None)
            if row.scope == HOUSEHOLD
        ]
        if self.hass is not None and self.entity_id:
            self.async_write_ha_state()

    async def async_create_todo_item(self, item: TodoItem) -> None:
        """Remember the item's text explicitly, for the whole household."""
        actor = self._context.user_id if self._context else None
        report = await self._memory.async_remember(
            item.summary or "", owner=HOUSEHOLD, actor=actor, source_id=f"todo/{ulid_now()}"
        )
        _raise_if_refused(report)

    async def async_delete_todo_items(self, uids: list[str]) -> None:
        """Forget the items."""
        ids = [int(uid) for uid in uids if uid.isdigit()]
        report = await self._memory.async_forget(ids, viewer=None)
        _raise_if_refused(report)
