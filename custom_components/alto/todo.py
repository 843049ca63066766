"""`todo.alto_memories` and `todo.alto_inbox`: the household's memories and open observations.

Memories: one item per thing said that the household's memory keeps, as the panel groups the store
(`panel.memories.Entry`): the words said, and as its description what Alto understood from them.
Adding an item is an explicit remember (owned by the household); deleting one forgets the whole
entry, as the panel does. Inbox: the reflect organ's intrusive and pending items, most urgent
first; checking one off completes it and deleting one dismisses it, and either way it leaves the
list. Entity states are readable by every user, so neither list shows anything of one user's
private scope.
"""

from __future__ import annotations

import asyncio
from typing import Any

from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.components.todo import (
    TodoItem,
    TodoItemStatus,
    TodoListEntity,
    TodoListEntityFeature,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.entity import EntityDescription
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util.ulid import ulid_now

from .act_organ.exposure import ASSISTANT
from .const import DOMAIN
from .coordinator import AltoConfigEntry, MemoryCoordinator, ReflectionCoordinator
from .entity import AltoCoordinatorEntity
from .memory.records import CURRENT, HOUSEHOLD, Kind
from .memory_organ.organ import MemoryOrgan
from .panel.memories import Entry, Snapshot, build_snapshot
from .reflect_organ.organ import ReflectOrgan

PARALLEL_UPDATES = 0


MEMORIES = EntityDescription(key="memories")
INBOX = EntityDescription(key="inbox")
# Set in the entity's registry options once Alto has applied its exposure default, so a user who
# exposes the list afterwards is never overruled.
EXPOSURE_DEFAULT_SET = "exposure_default_set"
# The household memories the to-do list shows at most, the latest (see `_household_items`).
MAX_TODO_ITEMS = 1000
# Between the quotes of what Alto understood from a thing said (an item's description).
UNDERSTOOD_SEPARATOR = " · "
_STATEMENTS = (Kind.ASSERTION, Kind.CORRECTION)


async def async_setup_entry(
    hass: HomeAssistant, entry: AltoConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """Add the inbox, and the memories list when the store is open."""
    runtime = entry.runtime_data
    entities: list[TodoListEntity] = [
        InboxTodo(entry, runtime.reflection_coordinator, runtime.reflection)
    ]
    if runtime.memory is not None:
        entities.append(MemoriesTodo(entry, runtime.memory_coordinator, runtime.memory))
    async_add_entities(entities)


class _UnexposedList(TodoListEntity):
    """A list Assist does not see by default: HA's list intents would change it by voice."""

    async def async_added_to_hass(self) -> None:
        """Not exposed to Assist by default, once."""
        await super().async_added_to_hass()
        registry = er.async_get(self.hass)
        entry = registry.async_get(self.entity_id)
        if entry is None:
            return
        own: dict[str, Any] = dict(entry.options.get(DOMAIN) or {})
        if not own.get(EXPOSURE_DEFAULT_SET):
            async_expose_entity(self.hass, ASSISTANT, self.entity_id, False)
            registry.async_update_entity_options(
                self.entity_id, DOMAIN, {EXPOSURE_DEFAULT_SET: True}
            )


class InboxTodo(AltoCoordinatorEntity[ReflectionCoordinator], _UnexposedList):
    """The household's open observations."""

    _attr_supported_features = (
        TodoListEntityFeature.UPDATE_TODO_ITEM | TodoListEntityFeature.DELETE_TODO_ITEM
    )

    def __init__(
        self,
        entry: AltoConfigEntry,
        coordinator: ReflectionCoordinator,
        reflection: ReflectOrgan,
    ) -> None:
        """List and settle the household's items of `reflect_organ`."""
        super().__init__(entry, coordinator, INBOX)
        self._organ = reflection

    @property
    def todo_items(self) -> list[TodoItem]:
        """Intrusive items, most urgent first, then pending ones, oldest first."""
        inbox = self.coordinator.data.inbox if self.coordinator.data else ()
        return [
            TodoItem(summary=item.content, uid=str(item.id), status=TodoItemStatus.NEEDS_ACTION)
            for item in inbox
        ]

    async def async_update_todo_item(self, item: TodoItem) -> None:
        """Checking an item off completes it; its text cannot change."""
        if item.status != TodoItemStatus.COMPLETED or not (item.uid or "").isdigit():
            raise ServiceValidationError(translation_domain=DOMAIN, translation_key="inbox_item")
        await self._organ.async_complete([int(item.uid or "")])

    async def async_delete_todo_items(self, uids: list[str]) -> None:
        """Dismiss the items unread."""
        await self._organ.async_dismiss([int(uid) for uid in uids if uid.isdigit()])


class MemoriesTodo(AltoCoordinatorEntity[MemoryCoordinator], _UnexposedList):
    """The household's memories, named so (the panel shows the viewer's private ones too)."""

    _attr_supported_features = (
        TodoListEntityFeature.CREATE_TODO_ITEM | TodoListEntityFeature.DELETE_TODO_ITEM
    )

    @property
    def suggested_object_id(self) -> str:
        """`memories`: the entity id stays `todo.<device>_memories` whatever the list is called."""
        return "memories"

    def __init__(
        self, entry: AltoConfigEntry, coordinator: MemoryCoordinator, memory: MemoryOrgan
    ) -> None:
        """List and change the memories of `memory`."""
        super().__init__(entry, coordinator, MEMORIES)
        self._organ = memory
        # Built off the event loop once per change: a large store's list would stall the loop.
        self._items: list[TodoItem] = []
        # The store as the list was last built from, each build starting from the one before.
        self._snapshot: Snapshot | None = None
        self._building: asyncio.Task[None] | None = None
        self._stale = False

    async def async_added_to_hass(self) -> None:
        """Read the list once before the first state is written."""
        await self._async_read()
        await super().async_added_to_hass()
        self.async_on_remove(self._cancel_build)

    async def _async_read(self) -> None:
        self._items, self._snapshot = await self.hass.async_add_executor_job(
            _household_items, self._organ, self._snapshot
        )

    @callback
    def _cancel_build(self) -> None:
        if self._building is not None:
            self._building.cancel()

    @callback
    def _handle_coordinator_update(self) -> None:
        """Memory changed: build the list again in the executor, then write the state."""
        if self._building is not None and not self._building.done():
            self._stale = True  # a change during a build: one more build after it
            return
        self._building = self.hass.async_create_task(
            self._async_build(), f"alto_todo_memories_{self.entity_id}"
        )

    async def _async_build(self) -> None:
        self._stale = True
        while self._stale:
            self._stale = False
            await self._async_read()
        self.async_write_ha_state()

    @property
    def todo_items(self) -> list[TodoItem]:
        """The household's latest current memories (private ones never show here)."""
        return self._items

    async def async_create_todo_item(self, item: TodoItem) -> None:
        """Remember the item's text explicitly, for the whole household."""
        actor = self._context.user_id if self._context else None
        report = await self._organ.async_remember(
            item.summary or "", owner=HOUSEHOLD, actor=actor, source_id=f"todo/{ulid_now()}"
        )
        report.raise_if_refused()

    async def async_delete_todo_items(self, uids: list[str]) -> None:
        """Forget each item's whole entry: what was said and everything understood from it.

        By the ids the panel forgets an entry by. An item gone since the list was built (or a uid
        that never was one) is its row id, which the store refuses as not found: nothing is
        forgotten, and the caller gets the translated `not_found` error.
        """
        snapshot = self._snapshot
        ids: list[int] = []
        for uid in uids:
            if not uid.isdigit():
                continue
            entry_id = int(uid)
            if snapshot is not None and entry_id in snapshot.entries:
                ids += snapshot.render(entry_id, keep=False)["forget"]
            else:
                ids.append(entry_id)
        report = await self._organ.async_forget(ids, viewer=None)
        report.raise_if_refused()


def _household_items(
    memory: MemoryOrgan, previous: Snapshot | None
) -> tuple[list[TodoItem], Snapshot]:
    """The household's latest current memories as to-do items, and the snapshot they come from.

    Blocking: a whole store's rows (`build_snapshot`, which reuses `previous`'s entries for every
    source none of whose rows changed). One item per listed household entry, its id as the uid,
    oldest first. An entry a correction replaced part of shows what of it still holds (`_item`);
    one with nothing left is left out: its correction is an entry of its own. At most
    `MAX_TODO_ITEMS`, the latest: Home Assistant compares and copies a list's every item on the
    event loop at each change, so a list of a large store's memories would stall it (the panel
    pages through all of them).
    """
    snapshot = build_snapshot(memory.store, previous, {})
    items: list[TodoItem] = []
    for entry_id in reversed(snapshot.lists.get((HOUSEHOLD, False), ())):
        if len(items) >= MAX_TODO_ITEMS:
            break
        if (item := _item(snapshot.entries[entry_id], snapshot)) is not None:
            items.append(item)
    items.reverse()
    return items, snapshot


def _item(entry: Entry, snapshot: Snapshot) -> TodoItem | None:
    """The entry as an item: what was said, and the quotes of what Alto understood from it.

    A quote is left out of the description when it is what was said, or repeats another one.
    When a correction replaced one of its statements, what was said no longer holds: the item is
    the statements that still do, without the mentions (which statement named whom is not
    kept), and None when none does.
    """
    rows = [snapshot.rows[i] for i in entry.rows if i != entry.head]
    if snapshot.rows[entry.head].status == CURRENT and all(r.status == CURRENT for r in rows):
        summary = snapshot.rows[entry.head].document
        understood = dict.fromkeys(row.document for row in rows)
        understood.pop(summary, None)
        description = UNDERSTOOD_SEPARATOR.join(understood) or None
    else:
        held = [row.document for row in rows if row.status == CURRENT and row.kind in _STATEMENTS]
        if not held:
            return None
        summary, description = UNDERSTOOD_SEPARATOR.join(dict.fromkeys(held)), None
    return TodoItem(
        summary=summary,
        uid=str(entry.id),
        status=TodoItemStatus.NEEDS_ACTION,
        description=description,
    )
