"""People with websocket connections, and what the panel's script holds from a subscription.

`PanelModel` applies subscription events and pages as `frontend/alto-panel.js` does (`_apply`,
`_more`), so a test compares what a panel would show with a fresh `alto/view`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from homeassistant.auth.models import Credentials
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import CLIENT_ID, MockUser
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    WebSocketGenerator,
)

from custom_components.alto.panel.feed import DATA_FEEDS


@dataclass
class PanelModel:
    """What a panel holds: the view's sections, its entries by id, their total, more or not."""

    view: dict[str, Any] = field(default_factory=dict)
    memories: dict[int, dict[str, Any]] = field(default_factory=dict)
    total: int = 0
    more: bool = False
    subscription: int | None = None
    closed: str | None = None

    def apply(self, event: dict[str, Any]) -> None:
        """One subscription event."""
        if "closed" in event:
            self.closed = event["closed"]
            return
        if "subscription" in event:
            self.subscription = event["subscription"]
        self.view.update(event.get("view", {}))
        if (memories := event.get("memories")) is not None:
            if memories["reset"]:
                self.memories = {}
            for memory_id in memories["remove"]:
                self.memories.pop(memory_id, None)
            self.add(memories["upsert"], memories["total"], memories["more"])

    def add(self, memories: list[dict[str, Any]], total: int, more: bool) -> None:
        """Memories sent (a change's or a page's), the total and whether more are older."""
        for memory in memories:
            self.memories[memory["id"]] = memory
        self.total, self.more = total, more

    def shown(self) -> dict[str, Any]:
        """The view as the panel shows it, its memories newest first."""
        return {**self.view, "memories": [self.memories[i] for i in sorted(self.memories)[::-1]]}


@dataclass
class Person:
    """A user with an open websocket connection."""

    user: MockUser
    ws: MockHAClientWebSocket
    # Subscription events that arrived while a command waited for its result, oldest first.
    events: list[dict[str, Any]] = field(default_factory=list)
    panel: PanelModel = field(default_factory=PanelModel)  # what a subscribed panel holds

    async def command(self, **message: Any) -> dict[str, Any]:
        """Send one command; its result message (events arriving first are kept for later)."""
        await self.ws.send_json_auto_id(message)
        while True:
            answer: dict[str, Any] = await self.ws.receive_json()
            if answer.get("type") != "event":
                return answer
            self.events.append(answer)

    async def receive(self) -> dict[str, Any]:
        """The next message: a kept event first, else what the connection brings."""
        if self.events:
            return self.events.pop(0)
        message: dict[str, Any] = await self.ws.receive_json()
        return message

    async def ok(self, **message: Any) -> Any:
        """Send one command that must succeed; its result."""
        answer = await self.command(**message)
        assert answer["success"], answer
        return answer["result"]

    async def view(self, *, everything: bool = False) -> dict[str, Any]:
        """The user's whole view (every entry said, or those listed as memories)."""
        view: dict[str, Any] = await self.ok(type="alto/view", everything=everything)
        return view

    async def subscribe(self) -> int:
        """Subscribe to the view: the subscription's id."""
        subscribed = await self.command(type="alto/subscribe")
        assert subscribed["success"], subscribed
        return int(subscribed["id"])

    async def flushed(self) -> list[dict[str, Any]]:
        """Every message sent to this connection so far (a ping's answer comes after them)."""
        await self.command(type="ping")
        events, self.events = self.events, []
        return events


async def connect(
    hass: HomeAssistant, ws_client: WebSocketGenerator, name: str, group: str
) -> Person:
    """A new user in `group`, logged in over a websocket connection of their own."""
    user = MockUser(name=name, groups=[await hass.auth.async_get_group(group)]).add_to_hass(hass)
    credential = Credentials(
        id=f"credential-{name}",
        auth_provider_type="homeassistant",
        auth_provider_id=None,
        data={"username": name.lower()},
        is_new=False,
    )
    user.credentials.append(credential)
    token = await hass.auth.async_create_refresh_token(user, CLIENT_ID, credential=credential)
    return Person(user, await ws_client(hass, hass.auth.async_create_access_token(token)))


async def panels_settled(hass: HomeAssistant, entry_id: str) -> None:
    """Wait until every panel of the entry was sent the store as it is now."""
    store = hass.config_entries.async_get_known_entry(entry_id).runtime_data.memory.store
    for _ in range(1000):
        await hass.async_block_till_done()
        feed = hass.data.get(DATA_FEEDS, {}).get(entry_id)
        snapshot = feed.snapshot if feed is not None else None
        if snapshot is not None and snapshot.version == store.version:
            subscriptions = feed.subscriptions if feed is not None else []
            if all(
                s.held is not None and s.held.snapshot is snapshot and not s.dirty.is_set()
                for s in subscriptions
            ):
                return
        await asyncio.sleep(0.01)
    raise AssertionError("the panels were not sent the store's last change")
