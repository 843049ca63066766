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
from homeassistant.helpers.entity_platform import AddEntitiesCallback
from homeassistant.util.ulid import ulid_now

from .coordinator import AltoConfigEntry
from .entity import AltoMemoryEntity
from .memory.records import HOUSEHOLD

PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddEntitiesCallback
) -> None:
    """Add the memories list when the store is open."""
    if entry.runtime_data.memory is not None:
        async_add_entities([MemoriesTodo(entry)])


class MemoriesTodo(AltoMemoryEntity, TodoListEntity):
    """The household's memories."""

    _attr_translation_key = "memories"
    _attr_supported_features = (
        TodoListEntityFeature.CREATE_TODO_ITEM | TodoListEntityFeature.DELETE_TODO_ITEM
    )

    def __init__(self, entry: AltoConfigEntry) -> None:
        """Set up only when the store is open (see async_setup_entry)."""
        super().__init__(entry, "memories")
        assert entry.runtime_data.memory is not None  # async_setup_entry adds it only then
        self._organ = entry.runtime_data.memory

    async def async_added_to_hass(self) -> None:
        """Show the current memories at once, then follow changes."""
        await super().async_added_to_hass()
        self._async_memory_changed()

    @callback
    def _async_memory_changed(self) -> None:
        self._attr_todo_items = [
            TodoItem(summary=row.document, uid=str(row.id), status=TodoItemStatus.NEEDS_ACTION)
            for row in self._organ.rows(None)
            if row.scope == HOUSEHOLD
        ]
        if self.hass is not None and self.entity_id:
            self.async_write_ha_state()

    async def async_create_todo_item(self, item: TodoItem) -> None:
        """Remember the item's text explicitly, for the whole household."""
        actor = self._context.user_id if self._context else None
        report = await self._organ.async_remember(
            item.summary or "", owner=HOUSEHOLD, actor=actor, source_id=f"todo/{ulid_now()}"
        )
        report.raise_if_refused()

    async def async_delete_todo_items(self, uids: list[str]) -> None:
        """Forget the items."""
        ids = [int(uid) for uid in uids if uid.isdigit()]
        report = await self._organ.async_forget(ids, viewer=None)
        report.raise_if_refused()
