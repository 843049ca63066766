"""The panel at scale: one snapshot per change, sent as changes and pages, subscriptions capped.

Real Home Assistant, real websocket connections and the real embedded store. Rows are written to
the store directly (as the benches fill theirs) and memory's change signal is sent, as the writer
sends it after each write. Pages are small here (`PAGE_SIZE` 5, `RESET_OVER` 30), so a few dozen
entries page, keep floors and start over.

The property: over a family of random households (users, a deleted user's scope, the household's;
things said with what was understood from them, questions, commands, authored memories) and
changes (adds, forgets of whole sources or single rows, corrections, bulk writes, renames), with
panels that page, resubscribe and switch between memories and everything said at random, every
panel holds exactly the newest entries of a fresh `alto/view` of its list down to where it paged
(all of them once it has paged to the end), and its sections equal the view's; no message ever
carries an entry its viewer may not see, nor removes one it was not sent; a page never repeats an
entry the panel holds.
"""

from __future__ import annotations

import itertools
import random
import threading
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest
from homeassistant.auth.const import GROUP_ID_ADMIN, GROUP_ID_USER
from homeassistant.auth.providers import homeassistant as auth_ha
from homeassistant.core import HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.util.ulid import ulid_at_time
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import WebSocketGenerator

from custom_components.alto.memory.corpus import competes
from custom_components.alto.memory.pipeline import forget_ids
from custom_components.alto.memory.records import (
    HOUSEHOLD,
    KIND_ASSERTION,
    KIND_CORRECTION,
    KIND_EXPLICIT,
    KIND_PARTICIPANT,
    KIND_SOURCE,
    MemoryState,
    Mutation,
    Row,
    object_id,
    vector_bytes,
)
from custom_components.alto.memory_organ.organ import signal_memory_changed
from custom_components.alto.panel import feed as feed_module
from custom_components.alto.panel import memories
from custom_components.alto.panel.feed import DATA_FEEDS, MAX_PER_USER

from .helpers import memory
from .panel_client import PanelModel, Person, connect, panels_settled

PAGE = 5
RESET = 30
GONE = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # the scope of a user deleted from Home Assistant


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 5; more than 30 changed ids start every panel over."""
    monkeypatch.setattr(memories, "PAGE_SIZE", PAGE)
    monkeypatch.setattr(memories, "RESET_OVER", RESET)


@pytest.fixture
async def people(
    hass: HomeAssistant,
    hass_ws_client: WebSocketGenerator,
    local_auth: auth_ha.HassAuthProvider,
    setup_alto: MockConfigEntry,
) -> list[Person]:
    """Ana (an administrator), Bob and Cleo, each connected."""
    return [
        await connect(hass, hass_ws_client, "Ana", GROUP_ID_ADMIN),
        await connect(hass, hass_ws_client, "Bob", GROUP_ID_USER),
        await connect(hass, hass_ws_client, "Cleo", GROUP_ID_USER),
    ]


@dataclass
class Home:
    """The rows the test wrote, and writing more the way the memory writer does."""

    hass: HomeAssistant
    entry_id: str
    actors: list[str]
    scopes: dict[int, str] = field(default_factory=dict)  # every id written: its scope
    stored: set[int] = field(default_factory=set)
    corrections: set[int] = field(default_factory=set)
    sequences: itertools.count[int] = field(default_factory=lambda: itertools.count(1 << 21))
    vectors: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    shapes: random.Random = field(default_factory=lambda: random.Random(0))

    async def write(self, mutation: Mutation) -> None:
        """Apply one mutation to the store and tell whoever listens, as the writer does."""
        await self.hass.async_add_executor_job(memory(self.hass).store.apply, mutation)
        async_dispatcher_send(self.hass, signal_memory_changed(self.entry_id))
        self.stored |= {row.id for row in mutation.upsert}
        self.stored -= set(mutation.delete)

    def row(self, sequence: int, index: int, scope: str, **fields: Any) -> Row:
        """A row of `scope` said by one of the actors."""
        row_id = object_id(sequence, index)
        self.scopes[row_id] = scope
        values: dict[str, Any] = {
            "kind": KIND_ASSERTION,
            "actor": self.actors[row_id % len(self.actors)],
            "source_id": f"conversation/{row_id:032x}/{ulid_at_time(1_790_000_000 + index)}",
            "source_version": 1,
            "offset": 0,
            "length": 1,
            **fields,
        }
        vector = vector_bytes(self.vectors.standard_normal(8).tolist())
        return Row(row_id, f"Memory {row_id}.", owner=scope, scope=scope, vector=vector, **values)

    def said(self, sequence: int, first: int, scope: str, shape: str | None = None) -> list[Row]:
        """One thing said in `scope` from row index `first`, in one of the shapes a store holds.

        A statement with what was understood from it, a question or a command (one mention of
        it at most), something asked to be remembered, or a lone assertion (no source row);
        `shape` names one, else one is drawn.
        """
        shapes = ["said", "said", "asked", "command", "explicit", "assertion"]
        shape = shape or self.shapes.choice(shapes)
        source = f"{shape}/{sequence:x}{first:x}/{ulid_at_time(1_790_000_000 + first)}"
        n = object_id(sequence, first)
        head, understood = {
            "said": (KIND_SOURCE, self.shapes.randint(0, 2)),
            "asked": (KIND_SOURCE, self.shapes.randint(0, 1)),
            "command": (KIND_SOURCE, 0),
            "explicit": (KIND_EXPLICIT, 0),
        }.get(shape, (KIND_ASSERTION, 0))
        text = {"asked": f"Is memory {n} coming round?", "command": f"Turn on the lamp {n}."}
        rows = [self.row(sequence, first, scope, kind=head, source_id=source)]
        if shape in text:
            rows[0] = replace(rows[0], document=text[shape])
        kinds = [KIND_ASSERTION, KIND_PARTICIPANT]
        rows += [
            self.row(sequence, first + 1 + i, scope, kind=kinds[i % 2], source_id=source)
            for i in range(understood)
        ]
        return rows

    async def add(self, scopes: list[str], shape: str | None = None) -> None:
        """One thing said per scope given, in one mutation (of `shape`, if given)."""
        sequence = next(self.sequences)
        rows: list[Row] = []
        for scope in scopes:
            rows += self.said(sequence, len(rows), scope, shape)
        await self.write(Mutation(sequence, tuple(rows)))

    async def forget(self, ids: list[int]) -> None:
        """Delete these rows."""
        await self.write(Mutation(next(self.sequences), delete=tuple(ids)))

    async def correct(self, target: int, scope: str) -> None:
        """A correction in `scope` that supersedes `target`."""
        sequence = next(self.sequences)
        row = self.row(sequence, 0, scope, kind=KIND_CORRECTION, target=target)
        self.corrections.add(row.id)
        await self.write(Mutation(sequence, (row,), supersede=(target,)))


@dataclass
class Panel:
    """One person's subscribed panel, and every entry id its subscription was sent."""

    person: Person
    subscription: int = 0
    received: set[int] = field(default_factory=set)
    everything: bool = False  # the list shows everything said, not only memories

    @property
    def seen_scopes(self) -> tuple[str, str]:
        """The scopes the person may see."""
        return (HOUSEHOLD, self.person.user.id)

    async def subscribe(self) -> None:
        """A new subscription (the old one, if any, ended first)."""
        if self.subscription:
            await self.person.ok(type="unsubscribe_events", subscription=self.subscription)
        self.person.panel, self.received = PanelModel(), set()
        self.subscription = await self.person.subscribe()
        self.everything = False

    async def switch(self) -> None:
        """Between memories and everything said: the list starts over."""
        self.everything = not self.everything
        await self.person.ok(
            type="alto/everything", subscription=self.subscription, everything=self.everything
        )

    def carried(self, home: Home, shown: list[dict[str, Any]], removed: list[int]) -> None:
        """Entries a message carried: each one its viewer may see; removals of ones it was sent."""
        ids = [m["id"] for m in shown]
        assert len(ids) <= PAGE, "a message of more than a page"
        rows = [i for m in shown for i in [m["id"], *(u["id"] for u in m["understood"])]]
        assert all(home.scopes[i] in self.seen_scopes for i in rows), "a memory of someone else"
        assert all(m["listed"] for m in shown) or self.everything, "not a memory"
        assert set(removed) <= self.received, "a removal of a memory it was never sent"
        self.received |= set(ids)

    async def take_events(self, home: Home) -> None:
        """Apply every event sent so far, checking what each carried."""
        for message in await self.person.flushed():
            assert (message["id"], message["type"]) == (self.subscription, "event"), message
            event = message["event"]
            if (changed := event.get("memories")) is not None:
                self.carried(home, changed["upsert"], changed["remove"])
            self.person.panel.apply(event)

    async def page(self, home: Home) -> None:
        """One older page: memories the panel did not hold yet."""
        page = await self.person.ok(type="alto/memories", subscription=self.subscription)
        self.carried(home, page["memories"], [])
        assert not {m["id"] for m in page["memories"]} & self.person.panel.memories.keys()
        self.person.panel.add(page["memories"], page["total"], page["more"])

    async def check(self, home: Home, *, to_the_end: bool) -> None:
        """The panel holds the newest entries of a fresh view of its list down to where it paged."""
        panel = self.person.panel
        if to_the_end:
            while panel.more:
                await self.page(home)
        fresh = await self.person.view(everything=self.everything)
        held = panel.shown()
        assert {k: v for k, v in fresh.items() if k != "memories"} == panel.view
        assert panel.total == len(fresh["memories"])
        assert panel.more or held["memories"] == fresh["memories"]
        assert not panel.more or len(fresh["memories"]) > len(held["memories"])
        if held["memories"]:
            oldest = held["memories"][-1]["id"]
            assert held["memories"] == [m for m in fresh["memories"] if m["id"] >= oldest]


async def _change(rng: random.Random, home: Home, people: list[Person]) -> None:
    """One random change of the store (and now and then a rename with it)."""
    scopes = [HOUSEHOLD, GONE, *(person.user.id for person in people)]
    stored = sorted(home.stored)
    corrections = sorted(home.stored & home.corrections)
    what = rng.choices(
        ["add", "bulk", "forget", "oldest", "correct", "uncorrect", "rename"], [6, 1, 3, 2, 3, 2, 1]
    )[0]
    if what == "forget" and stored:
        await home.forget(rng.sample(stored, min(len(stored), rng.randint(1, 3))))
    elif what == "oldest" and stored:  # as retention does: a panel's older pages go
        await home.forget(stored[: rng.randint(1, 8)])
    elif what == "uncorrect" and corrections:  # what it replaced stays, replaced by nothing
        await home.forget([rng.choice(corrections)])
    elif what == "correct" and stored:
        target = rng.choice(stored)
        # Mostly in the target's own scope; sometimes the household's correcting a private row.
        await home.correct(target, rng.choice([home.scopes[target]] * 3 + [HOUSEHOLD]))
    elif what == "bulk":
        await home.add([rng.choice(scopes) for _ in range(RESET + 5)])
    else:
        if what == "rename":
            person = rng.choice(people)
            await home.hass.auth.async_update_user(person.user, name=f"{person.user.name}+")
        await home.add([rng.choice(scopes) for _ in range(rng.randint(1, 15))])


@pytest.mark.parametrize("seed", range(3))
async def test_every_panel_holds_exactly_its_view_through_every_change(
    hass: HomeAssistant, setup_alto: MockConfigEntry, people: list[Person], seed: int
) -> None:
    """Changes, pages and resubscriptions at random; each step checked against `alto/view`."""
    rng = random.Random(seed)
    actors = ["unknown", *(person.user.id for person in people)]
    home = Home(hass, setup_alto.entry_id, actors)
    await home.add([rng.choice([HOUSEHOLD, GONE, people[1].user.id]) for _ in range(12)])
    panels = [Panel(person) for person in people]
    for panel in panels:
        await panel.subscribe()
    for _ in range(20):
        await _change(rng, home, people)
        await panels_settled(hass, setup_alto.entry_id)
        for panel in panels:
            await panel.take_events(home)
            await panel.check(home, to_the_end=False)
            roll = rng.random()
            if roll < 0.3:
                await panel.page(home)
                await panel.check(home, to_the_end=False)
            elif roll < 0.45:
                await panel.check(home, to_the_end=True)
            elif roll < 0.55:
                await panel.subscribe()
                await panels_settled(hass, setup_alto.entry_id)
                await panel.take_events(home)
                await panel.check(home, to_the_end=False)
            elif roll < 0.7:
                await panel.switch()
                await panels_settled(hass, setup_alto.entry_id)
                await panel.take_events(home)
                await panel.check(home, to_the_end=False)
    for panel in panels:
        await panel.check(home, to_the_end=True)
    # The administrator's counts are every owner's private entries (things said, whatever was
    # understood from them), the deleted user's included.
    users = {u["id"]: u["private_memories"] for u in people[0].panel.view["admin"]["users"]}
    rows = await hass.async_add_executor_job(memory(hass).store.get, sorted(home.stored))
    for scope in (GONE, *(person.user.id for person in people)):
        said = {(r.source_id, r.source_version) for r in rows if r.scope == scope}
        assert users.get(scope, 0) == len(said)


async def test_one_snapshot_per_change_off_the_loop_whatever_the_panels(
    hass: HomeAssistant,
    setup_alto: MockConfigEntry,
    people: list[Person],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Six panels of three people: one change is read from the store once, in an executor job."""
    built: list[bool] = []

    def counted(*args: Any) -> memories.Snapshot:
        built.append(threading.get_ident() == hass.loop_thread_id)
        return memories.build_snapshot(*args)

    monkeypatch.setattr(feed_module, "build_snapshot", counted)
    home = Home(hass, setup_alto.entry_id, ["unknown"])
    panels = [Panel(person) for person in people * 2]
    for panel in panels:
        await panel.subscribe()
    await panels_settled(hass, setup_alto.entry_id)
    built.clear()
    await home.add([HOUSEHOLD], "explicit")
    await panels_settled(hass, setup_alto.entry_id)
    assert built == [False]  # once, not on the loop's thread
    for person in people:  # and each panel was sent the one new entry, as a change
        events = [m["event"] for m in await person.flushed()]
        assert [len(e["memories"]["upsert"]) for e in events[-2:]] == [1, 1]
        assert not any(e["memories"]["reset"] for e in events[-2:])


async def test_a_users_newest_panel_closes_their_oldest_past_the_cap(
    hass: HomeAssistant, setup_alto: MockConfigEntry, people: list[Person]
) -> None:
    """Bob's sixth subscription closes his first, which is told; Ana's is untouched."""
    ana, bob = people[0], people[1]
    home = Home(hass, setup_alto.entry_id, ["unknown"])
    bobs = [await bob.subscribe() for _ in range(MAX_PER_USER)]
    anas = await ana.subscribe()
    await panels_settled(hass, setup_alto.entry_id)
    for person in (ana, bob):
        await person.flushed()

    newest = await bob.subscribe()
    await panels_settled(hass, setup_alto.entry_id)
    closing = [m for m in await bob.flushed() if m["id"] == bobs[0]]
    assert [m["event"] for m in closing] == [{"closed": "too_many"}]
    feed = hass.data[DATA_FEEDS][setup_alto.entry_id]
    assert sum(s.viewer.user_id == bob.user.id for s in feed.subscriptions) == MAX_PER_USER

    # The closed one answers no page; its id is still the panel's to unsubscribe.
    refused = await bob.command(type="alto/memories", subscription=bobs[0])
    assert not refused["success"]
    assert refused["error"]["translation_key"] == "not_subscribed"
    stranger = await bob.command(type="alto/memories", subscription=newest + 100)
    assert stranger["error"]["translation_key"] == "not_subscribed"
    assert (await bob.command(type="unsubscribe_events", subscription=bobs[0]))["success"]

    # A change reaches Bob's five open panels and Ana's, not the closed one.
    await home.add([HOUSEHOLD], "explicit")
    await panels_settled(hass, setup_alto.entry_id)
    assert sorted(m["id"] for m in await bob.flushed()) == sorted([*bobs[1:], newest])
    assert [m["id"] for m in await ana.flushed()] == [anas]


# -- a panel that falls behind: the snapshots alone, without Home Assistant -----------------------
class _Rows:
    """The store's read methods `build_snapshot` uses, over a `MemoryState`."""

    def __init__(self) -> None:
        self.state = MemoryState()

    @property
    def version(self) -> int:
        return self.state.version

    def ids(self) -> list[int]:
        return [row.id for row in self.state.rows()]

    def get(self, ids: list[int]) -> list[Row]:
        return [row for row in map(self.state.get, ids) if row is not None]


def _held_matches(
    model: PanelModel, state: MemoryState, viewer: str, names: dict[str, str], everything: bool
) -> None:
    """The panel's entries are the newest of the viewer's, as a whole view renders them."""
    visible = state.visible(viewer, current_only=False)
    fresh = memories.entries_view(visible, names, everything=everything)
    held = model.shown()["memories"]
    assert model.total == len(fresh)
    assert model.more == (len(fresh) > len(held))
    assert held == fresh[: len(held)]


def _catch_up(
    rng: random.Random,
    model: PanelModel,
    held: memories.Held | None,
    snapshot: memories.Snapshot,
    viewer: str,
    *,
    everything: bool,
) -> memories.Held:
    """The panel sent what changed since it last was (its first page at first), then pages."""
    if held is None:
        message, now = memories.first_page(snapshot, viewer, everything)
    else:
        message, now = memories.changes(held, snapshot, viewer)
    if message is not None:
        assert len(message["upsert"]) + len(message["remove"]) <= PAGE
        assert message["reset"] or set(message["remove"]) <= model.memories.keys()
        model.apply({"memories": message})
    while model.more and rng.random() < 0.3:
        page, now = memories.next_page(now, viewer)
        assert not {m["id"] for m in page["memories"]} & model.memories.keys()
        model.add(page["memories"], page["total"], page["more"])
    return now


def test_a_panel_behind_by_any_number_of_changes_catches_up_exactly() -> None:
    """Panels that skip snapshots (up to past `HISTORY`), page, and catch up with one message."""
    viewers, scopes = ["u1", "u2"], [HOUSEHOLD, "u1", "u2", GONE]
    for seed in range(40):
        rng = random.Random(seed)
        store, names = _Rows(), {"u1": "Ana", "u2": "Bob"}
        home = Home(None, "", ["unknown", "u1", "u2"])  # type: ignore[arg-type]
        snapshot = memories.build_snapshot(store, None, names)  # type: ignore[arg-type]
        panels: dict[str, tuple[PanelModel, memories.Held | None]] = {
            viewer: (PanelModel(), None) for viewer in viewers
        }
        everything = {viewer: rng.random() < 0.5 for viewer in viewers}
        for _ in range(30):
            sequence, stored = next(home.sequences), sorted(store.state.rows(), key=lambda r: r.id)
            roll = rng.random()
            if stored and roll < 0.5:  # some at random, or the oldest (what a panel pages to)
                gone = rng.sample(stored, min(len(stored), rng.randint(1, 6)))
                gone = stored[: rng.randint(1, len(stored))] if roll < 0.2 else gone
                store.state.apply(Mutation(sequence, delete=tuple(r.id for r in gone)))
            elif stored and roll < 0.65:  # a correction of an older row: changed below a floor
                target = rng.choice(stored)
                row = home.row(sequence, 0, target.scope, kind=KIND_CORRECTION, target=target.id)
                store.state.apply(Mutation(sequence, (row,), supersede=(target.id,)))
            else:
                count = RESET + 1 if rng.random() < 0.05 else rng.choice([1, 1, 2, 3, 7])
                rows: list[Row] = []
                for _ in range(count):
                    rows += home.said(sequence, len(rows), rng.choice(scopes))
                store.state.apply(Mutation(sequence, tuple(rows)))
            if rng.random() < 0.05:
                names = {**names, "u1": names["u1"] + "+"}
            snapshot = memories.build_snapshot(store, snapshot, names)  # type: ignore[arg-type]
            fresh = memories.build_snapshot(store, None, names)  # type: ignore[arg-type]
            # Entries rebuilt only where rows changed are the entries built from nothing.
            assert (snapshot.entries, snapshot.entry_of) == (fresh.entries, fresh.entry_of)
            assert snapshot.lists == fresh.lists
            assert snapshot.private_counts == fresh.private_counts
            for viewer, (model, held) in list(panels.items()):
                if rng.random() < 0.6:  # a panel that does not catch up now falls behind
                    continue
                shows = everything[viewer]
                now = _catch_up(rng, model, held, snapshot, viewer, everything=shows)
                panels[viewer] = (model, now)
                _held_matches(model, store.state, viewer, names, shows)


def test_one_entry_per_thing_said_and_forgetting_it_forgets_all_of_it() -> None:
    """Over random households: the entries a viewer sees hold each of their rows exactly once.

    Each entry is one source of one scope; it is listed as a memory exactly when its source
    competes for recall; forgetting its `forget` ids deletes its rows and no other entry's.
    """
    scopes = [HOUSEHOLD, "u1", "u2"]
    for seed in range(30):
        rng = random.Random(seed)
        state, home = MemoryState(), Home(None, "", ["unknown", "u1"])  # type: ignore[arg-type]
        home.shapes = random.Random(seed)
        for _ in range(6):
            sequence, rows = next(home.sequences), []
            for _ in range(rng.randint(1, 4)):
                rows += home.said(sequence, len(rows), rng.choice(scopes))
            state.apply(Mutation(sequence, tuple(rows)))
        stored = state.rows()
        if rng.random() < 0.5:  # a single row forgotten on its own: a source without its head
            state.apply(Mutation(next(home.sequences), delete=(rng.choice(stored).id,)))
        visible = state.visible("u1", current_only=False)
        shown = memories.entries_view(visible, {"u1": "Ana"})
        held = [i for e in shown for i in [e["id"], *(u["id"] for u in e["understood"])]]
        assert sorted(held) == [row.id for row in visible]
        listed = memories.entries_view(visible, {"u1": "Ana"}, everything=False)
        assert [e["id"] for e in listed] == [e["id"] for e in shown if e["listed"]]
        for entry in shown:
            rows = state.rows_of([entry["id"], *(u["id"] for u in entry["understood"])])
            assert len({(row.source_key, row.scope) for row in rows}) == 1
            head = state.get(entry["id"])
            assert head is not None
            assert entry["quote"] == head.document
            assert entry["listed"] == competes(head)
            forgotten = forget_ids(entry["forget"], "u1", state)
            assert isinstance(forgotten, tuple)
            assert sorted(forgotten) == sorted(row.id for row in rows)
