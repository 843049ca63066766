"""The panel's live subscriptions: one snapshot of the memory store per change, shared by all.

Each entry with a subscribed panel has one `Feed`. When memory changes, the feed builds one
`memories.Snapshot` in an executor job, whoever and however many are subscribed, and each
`Subscription` then sends its panel only what changed for its viewer: the sections of the view
that differ from what it last sent, and the memories as changes within what the panel holds
(`memories.changes`). A thought, an intent or a reflection changes no memory: each panel's
sections are read again, with the snapshot it has.

A subscription's event (see `docs/panel-and-dashboard.md`):

- ``subscription``: its own id, on the first event (the panel asks for older pages with it);
- ``view``: the view's keys (`view.async_sections`) whose value changed, all of them at first;
- ``memories``: the panel's list of entries (`memories.Entry`: one per thing said, the listed
  ones, or every one once the panel asked for everything said, `Subscription.show_everything`):
  ``reset`` (drop what you hold first), ``upsert`` (entries added or changed, newest first),
  ``remove`` (ids), ``total``, ``more`` (older entries than those held exist);
- ``closed``: the subscription was ended by a newer one of the same user (`MAX_PER_USER`).

Each user has at most `MAX_PER_USER` subscriptions per entry; a new one closes their oldest, which
is told so: the panel a person opens last is the one they look at, and a tab left open elsewhere
should not lock them out of a new one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.util.hass_dict import HassKey

from ..const import DOMAIN, LOGGER
from ..coordinator import AltoConfigEntry
from ..memory_organ.organ import signal_memory_changed
from ..reflect_organ.organ import signal_reflection
from .memories import Held, Snapshot, build_snapshot, changes, first_page, next_page
from .recent import signal_recent
from .view import Viewer, async_names, async_sections

MAX_PER_USER = 5  # subscriptions per user and entry; a new one closes the oldest
CLOSED_TOO_MANY = "too_many"
DATA_FEEDS: HassKey[dict[str, Feed]] = HassKey(f"{DOMAIN}_panel_feeds")


class Feed:
    """One entry's subscriptions and the memory snapshot they share."""

    def __init__(self, hass: HomeAssistant, entry: AltoConfigEntry) -> None:
        """Start following the entry's signals (`feed_for` makes one per entry)."""
        self._hass = hass
        self.entry = entry
        self.snapshot: Snapshot | None = None
        self.subscriptions: list[Subscription] = []  # oldest first
        self._stale = asyncio.Event()
        self._stale.set()  # the first snapshot
        self._task = hass.async_create_background_task(self._run(), "alto_panel_feed")
        entry_id = entry.entry_id
        self._stops = [
            async_dispatcher_connect(hass, signal_memory_changed(entry_id), self._memory_changed),
            async_dispatcher_connect(hass, signal_recent(entry_id), self._touch),
            async_dispatcher_connect(hass, signal_reflection(entry_id), self._touch),
        ]

    @callback
    def _memory_changed(self) -> None:
        self._stale.set()

    @callback
    def _touch(self) -> None:
        """Something besides memory changed: every panel reads its sections again."""
        for subscription in self.subscriptions:
            subscription.dirty.set()

    async def _run(self) -> None:
        """One snapshot per change of the store (changes during a build: one more build)."""
        while True:
            await self._stale.wait()
            self._stale.clear()
            try:
                memory = self.entry.runtime_data.memory
                names = await async_names(self._hass)
                self.snapshot = await self._hass.async_add_executor_job(
                    build_snapshot, memory.store if memory else None, self.snapshot, names
                )
            except Exception:  # noqa: BLE001 - the panels stay subscribed; the next change retries
                LOGGER.exception("The Alto panel's memories could not be read")
                continue
            self._touch()  # the admin section also follows memory's mode and qualification

    @callback
    def add(self, subscription: Subscription) -> None:
        """Follow one more subscription, closing its user's oldest past `MAX_PER_USER`."""
        self.subscriptions.append(subscription)  # first: closing the oldest leaves the feed going
        user_id = subscription.viewer.user_id
        mine = [s for s in self.subscriptions if s.viewer.user_id == user_id]
        for oldest in mine[: max(0, len(mine) - MAX_PER_USER)]:
            oldest.close(CLOSED_TOO_MANY)

    @callback
    def remove(self, subscription: Subscription) -> None:
        """Stop following a subscription; the last one stops the feed."""
        if subscription not in self.subscriptions:
            return  # already: closed, then unsubscribed by its panel
        self.subscriptions.remove(subscription)
        if not self.subscriptions:
            self._task.cancel()
            for stop in self._stops:
                stop()
            feeds = self._hass.data.get(DATA_FEEDS, {})
            if feeds.get(self.entry.entry_id) is self:
                del feeds[self.entry.entry_id]


@callback
def feed_for(hass: HomeAssistant, entry: AltoConfigEntry) -> Feed:
    """The entry's feed, started with its first subscription."""
    feeds = hass.data.setdefault(DATA_FEEDS, {})
    if (feed := feeds.get(entry.entry_id)) is None:
        feed = feeds[entry.entry_id] = Feed(hass, entry)
    return feed


class Subscription:
    """One panel's `alto/subscribe`: what it was sent, and what to send it next.

    Called, it unsubscribes: it is what the connection keeps under the subscription's id, so
    `alto/memories` finds it there, on the same connection only.
    """

    def __init__(
        self,
        hass: HomeAssistant,
        feed: Feed,
        connection: websocket_api.ActiveConnection,
        msg_id: int,
    ) -> None:
        """Subscribed (and told so) by `subscribe`."""
        self._hass = hass
        self._feed = feed
        self._connection = connection
        self._msg_id = msg_id
        self._sections: dict[str, Any] = {}  # the view's keys as last sent
        self.held: Held | None = None  # the panel's entries
        self.everything = False  # every entry, or only those listed as memories
        self.closed = False  # ended by a newer subscription of the same user (`close`)
        self.dirty = asyncio.Event()
        self._task = hass.async_create_background_task(self._run(), "alto_panel_subscription")

    @property
    def viewer(self) -> Viewer:
        """Who the panel is for, as they are now (a rename or a changed role shows at once)."""
        return Viewer.of(self._connection.user)

    async def _run(self) -> None:
        while True:
            await self.dirty.wait()
            self.dirty.clear()  # changes during a refresh mark it dirty again: one more round
            try:
                await self._refresh()
            except Exception:  # noqa: BLE001 - the panel stays subscribed; the next change retries
                LOGGER.exception("The Alto panel's view could not be built")

    async def _refresh(self) -> None:
        """Send what changed for this panel since the last event (nothing: no event)."""
        if (snapshot := self._feed.snapshot) is None:
            return  # the first snapshot is being built; the feed marks every panel dirty after
        viewer = self.viewer
        sections = await async_sections(self._hass, self._feed.entry, viewer, snapshot)
        # From here to the send nothing awaits: a page asked for meanwhile reads `held` as sent.
        event: dict[str, Any] = {}
        if self.held is None:
            event["subscription"] = self._msg_id
        if changed := {k: v for k, v in sections.items() if self._sections.get(k, ...) != v}:
            event["view"] = changed
            self._sections.update(changed)
        snapshot = self._feed.snapshot or snapshot  # the newest, should it have changed meanwhile
        memories: dict[str, Any] | None
        if self.held is None:
            memories, self.held = first_page(snapshot, viewer.user_id, self.everything)
        else:
            memories, self.held = changes(self.held, snapshot, viewer.user_id)
        if memories is not None:
            event["memories"] = memories
        if event:
            self._connection.send_event(self._msg_id, event)

    @callback
    def show_everything(self, everything: bool) -> None:
        """List every entry (`everything`) or only those listed as memories, from a first page."""
        self.everything = everything
        self.held = None  # the next event starts the list over (``reset``)
        self.dirty.set()

    def page(self) -> dict[str, Any]:
        """The next older page of the panel's entries (none before its first event)."""
        if self.held is None:
            return {"memories": [], "total": 0, "more": False}
        page, self.held = next_page(self.held, self.viewer.user_id)
        return page

    @callback
    def close(self, reason: str) -> None:
        """End the subscription from this side, telling the panel why.

        The connection keeps its id, so the panel's own unsubscribe still succeeds.
        """
        self._connection.send_event(self._msg_id, {"closed": reason})
        self.closed = True
        self()

    @callback
    def __call__(self) -> None:
        """Unsubscribe."""
        self._task.cancel()
        self._feed.remove(self)


@callback
def subscribe(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg_id: int,
    entry: AltoConfigEntry,
) -> None:
    """Subscribe the connection to `entry`'s view under `msg_id`; the first event follows."""
    feed = feed_for(hass, entry)
    subscription = Subscription(hass, feed, connection, msg_id)
    feed.add(subscription)
    connection.subscriptions[msg_id] = subscription
    connection.send_result(msg_id)
    subscription.dirty.set()
