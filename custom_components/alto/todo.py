"""`todo.alto_memories`: the household's current memories as a list.

Adding an item is an explicit remember (owned by the household); deleting one forgets it.
Private memories of individual users are not listed here.
"""

from __future__ import annotations

from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.components.todo import (
    TodoItem,
    TodoItemStatus,
    TodoListEntity,
    TodoListEntityFeature,
)
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.entity import EntityDescription
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util.ulid import ulid_now

from .const import DOMAIN
from .coordinator import AltoConfigEntry, MemoryCoordinator
from .entity import AltoCoordinatorEntity
from .exposure import ASSISTANT
from .memory.records import HOUSEHOLD
from .memory_organ import MemoryOrgan

PARALLEL_UPDATES = 0


MEMORIES = EntityDescription(key="memories")
# Set in the entity's registry options once Alto has applied its exposure default, so a user who
# exposes the list afterwards is never overruled.
EXPOSURE_DEFAULT_SET = "exposure_default_set"


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add the memories list when the store is open."""
    runtime = entry.runtime_data
    if runtime.memory is not None:
        async_add_entities([MemoriesTodo(entry, runtime.memory_coordinator, runtime.memory)])


class MemoriesTodo(AltoCoordinatorEntity[MemoryCoordinator], TodoListEntity):
    """The household's memories."""

    _attr_supported_features = (
        TodoListEntityFeature.CREATE_TODO_ITEM | TodoListEntityFeature.DELETE_TODO_ITEM
    )

    def __init__(
        self, entry: AltoConfigEntry, coordinator: MemoryCoordinator, memory: MemoryOrgan
    ) -> None:
        """List and change the memories of `memory`."""
        super().__init__(entry, coordinator, MEMORIES)
        self._organ = memory

    async def async_added_to_hass(self) -> None:
        """Not exposed to Assist by default, once: HA's list intent would write memories."""
        await super().async_added_to_hass()
        registry = er.async_get(self.hass)
        entry = registry.async_get(self.entity_id)
        if entry is not None and not entry.options.get(DOMAIN, {}).get(EXPOSURE_DEFAULT_SET):
            async_expose_entity(self.hass, ASSISTANT, self.entity_id, False)
            registry.async_update_entity_options(
                self.entity_id, DOMAIN, {EXPOSURE_DEFAULT_SET: True}
            )

    @property
    def todo_items(self) -> list[TodoItem]:
        """The household's current memories (private ones never show here)."""
        return [
            TodoItem(summary=row.document, uid=str(row.id), status=TodoItemStatus.NEEDS_ACTION)
            for row in self._organ.rows(None)
            if row.scope == HOUSEHOLD
        ]

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
