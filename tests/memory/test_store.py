"""The Chroma store: restart, idempotent apply, scoped recall, exact codes."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from custom_components.alto.memory.intake import forget, remember
from custom_components.alto.memory.journal import Journal
from custom_components.alto.memory.pipeline import IntakeInput
from custom_components.alto.memory.records import Mutation, Row
from custom_components.alto.memory.references import render_reference
from custom_components.alto.memory.replay import reconcile
from custom_components.alto.memory.selection import scores
from custom_components.alto.memory.server import ChromaServer
from custom_components.alto.memory.store import MemoryStore
from custom_components.alto.memory.update_link import BIAS, WEIGHTS, Link

from .conftest import DIM, USER_A, USER_B, FakeModel, fake_embed, open_store
from .recall_reference import turn_block
from .test_corrections import codes_for
from .test_intake import intake, many

NAMES = {USER_A: "Alice", USER_B: "Bob"}


async def test_restart_keeps_every_memory(tmp_path: Path, journal: Journal) -> None:
    """Restart keeps every memory."""
    store = MemoryStore.open_persistent(tmp_path / "chroma")
    model = FakeModel(mentions=("Anna",))
    await intake(many(64), store, journal, model)
    await intake([IntakeInput("Anna is allergic to peanuts.", "x/1")], store, journal, model)
    await intake([IntakeInput("Actually the bins go out on Monday.", "x/2")], store, journal, model)
    await remember(
        [IntakeInput("The spare key is under the mat.", "x/3", owner=USER_A, scope=USER_A)],
        store=store,
        journal=journal,
        embed=fake_embed,
    )
    rows = store.rows(USER_A, current_only=False)
    query = await codes_for("bins spare key peanuts")
    recalled = store.recall(query, USER_A, 16)
    snapshot, applied = store.snapshot(), store.applied
    codes = store.state.codes(rows)
    store.close()

    reopened = MemoryStore.open_persistent(tmp_path / "chroma")
    try:
        assert reopened.rows(USER_A, current_only=False) == rows
        assert np.array_equal(reopened.state.codes(rows), codes)
        assert reopened.recall(query, USER_A, 16) == recalled
        assert reopened.snapshot() == snapshot
        assert reopened.applied == applied == 4
        assert any(row.status == "superseded" for row in rows)
    finally:
        reopened.close()


async def test_apply_is_idempotent(store: MemoryStore, journal: Journal, model: FakeModel) -> None:
    """Apply is idempotent."""
    await intake(many(3), store, journal, model)
    await intake([IntakeInput("Actually the bins go out on Monday.", "i/1")], store, journal, model)
    before = store.snapshot()
    rows_before = store.state.rows()
    for entry in journal.entries():
        store.apply(Mutation.from_json(entry["mutation"], entry["vectors"]))
    assert store.snapshot() == before
    assert store.state.rows() == rows_before


async def test_scoped_recall_between_two_users(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Scoped recall between two users."""
    secret_a = IntakeInput(
        "My diary code is 1234.", "p/a", owner=USER_A, scope=USER_A, actor=USER_A
    )
    secret_b = IntakeInput(
        "My diary code is 9876.", "p/b", owner=USER_B, scope=USER_B, actor=USER_B
    )
    shared = IntakeInput("The diary is on the shelf.", "p/h", actor=USER_A)
    result = await intake([secret_a, secret_b, shared], store, journal, model)
    ids_a, ids_b, ids_h = (set(ids) for ids in result.ids)
    query = await codes_for("My diary code is 9876.")  # B's exact words
    seen_a = {row.id for row, _ in store.recall(query, USER_A, 100)}
    seen_b = {row.id for row, _ in store.recall(query, USER_B, 100)}
    seen_anyone = {row.id for row, _ in store.recall(query, None, 100)}
    assert seen_a == ids_a | ids_h
    assert not seen_a & ids_b
    assert seen_b == ids_b | ids_h
    assert not seen_b & ids_a
    assert seen_anyone == ids_h
    assert store.count(USER_A) == len(ids_a | ids_h)
    assert store.count() == len(ids_h)
    selected = store.turn_block(query, USER_A, "diary code", lambda row: row.document, {})
    assert selected
    assert {row.id for row in selected} <= ids_a | ids_h
    best_b = store.recall(query, USER_B, 1)[0][0]
    assert best_b.document == "My diary code is 9876."
    assert best_b.kind in ("source", 3)


async def test_counts_are_the_rows_a_walk_finds(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """The counts the state keeps agree with the rows after writes, corrections and a forget."""

    def check() -> None:
        every = store.state.rows()
        assert store.count_all(current_only=False) == len(every)
        assert store.count_all() == sum(1 for row in every if row.status == "current")
        for viewer in (None, USER_A, USER_B):
            for current_only in (True, False):
                walked = store.rows(viewer, current_only=current_only)
                assert store.count(viewer, current_only=current_only) == len(walked)
        assert store.has_rows() == bool(every)

    check()
    assert store.dim is None
    assert store.codes_snapshot() is None
    await intake(many(3), store, journal, model)
    private = IntakeInput("My code is 1234.", "c/a", owner=USER_A, scope=USER_A, actor=USER_A)
    await intake([private], store, journal, model)
    check()
    await intake([IntakeInput("Actually the bins go out on Monday.", "c/1")], store, journal, model)
    check()
    assert any(row.status == "superseded" for row in store.state.rows())
    await forget([store.rows(USER_A)[0].id], viewer=USER_A, store=store, journal=journal)
    check()
    snapshot = store.codes_snapshot()
    assert snapshot is not None
    assert store.dim == snapshot.dim
    mask = store.visibility(USER_B)(snapshot)
    visible = set(snapshot.ids[mask].tolist())
    assert visible == {row.id for row in store.rows(USER_B)}


async def test_recall_orders_by_score_then_object_id(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Recall orders by score then object id."""
    result = await intake(
        [IntakeInput("Same words here.", "o/1"), IntakeInput("Same words here.", "o/2")],
        store,
        journal,
        model,
    )
    ranked = store.recall(await codes_for("Same words here."), None, 4)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == 1
    assert [row.id for row, _ in ranked] == sorted(row_id for ids in result.ids for row_id in ids)


def test_store_starts_no_threads(tmp_path: Path) -> None:
    """HA's test harness fails tests that leave threads; the embedded client must not start any."""
    before = set(threading.enumerate())
    store = MemoryStore.open_persistent(tmp_path / "chroma")
    store.close()
    assert set(threading.enumerate()) <= before


CHROMA_CLI = Path(sys.executable).with_name("chroma")


@pytest.mark.skipif(not CHROMA_CLI.exists(), reason="chroma CLI not installed")
async def test_chroma_server_store(socket_enabled: None, tmp_path: Path, journal: Journal) -> None:
    """open_http: the same store over a real Chroma server on 127.0.0.1, across a reconnect."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(CHROMA_CLI), "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1"]
    server = await asyncio.create_subprocess_exec(
        *command, "--port", str(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "chroma server did not start"
                await asyncio.sleep(0.1)
        remote = ChromaServer("127.0.0.1", port)
        store = MemoryStore.open_http(remote, "one")
        result = await intake(many(3), store, journal, FakeModel())
        snapshot, rows = store.snapshot(), store.rows(None)
        store.close()
        # A server's rows are never read: the state comes from the journal again, and the
        # server's rows agree with it.
        again = MemoryStore.open_http(remote, "one")
        assert again.rows(None) == []
        assert again.applied == 0
        assert reconcile(journal, again) == 1
        assert not again.check_server()
        assert again.snapshot() == snapshot
        assert again.rows(None) == rows
        assert again.applied == result.sequence == 1
        again.close()
        # Another namespace on the same server is another store.
        other = MemoryStore.open_http(remote, "two")
        assert other.snapshot() != snapshot
        assert other.rows(None) == []
        other.close()
        # An embedded store opened after a server one stays embedded (no shared settings).
        local = MemoryStore.open_persistent(tmp_path / "local")
        assert local.snapshot() != snapshot
        assert local.rows(None) == []
        local.close()
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 10)


async def test_turn_block_equals_the_recall_rule_over_what_the_viewer_sees(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """Scored through `scoring` over the resident matrix, chosen exactly as the reference scan.

    The scan (`recall_reference.turn_block`) reads every visible row, with likeness from
    `selection.scores` over the state's codes.
    """

    def similar(candidates: Sequence[Row], pool: Sequence[Row]) -> list[list[int]]:
        found: list[list[int]] = scores(
            store.state.codes(pool), store.state.codes(candidates)
        ).tolist()
        return found

    await intake(many(24), store, journal, model)
    secret = IntakeInput("My diary code is 1234.", "p/a", owner=USER_A, scope=USER_A, actor=USER_A)
    await intake([secret], store, journal, model)
    for text in ("bins Tuesday", "diary code", "peanuts Anna"):
        query = await codes_for(text)
        for viewer in (None, USER_A, USER_B):
            rows = store.state.visible(viewer)
            cosine = scores(store.state.codes(rows), query).tolist()
            expected = turn_block(
                rows, cosine, text, render_reference, similar=similar, names=NAMES
            )
            assert expected
            assert store.turn_block(query, viewer, text, render_reference, NAMES) == expected
            if viewer != USER_A:
                assert all(row.scope != USER_A for row in expected)


async def test_turn_block_links_through_the_map_as_the_recall_rule_does(
    store: MemoryStore, journal: Journal, model: FakeModel
) -> None:
    """With a learnt link, step 3 finds each newer row's nearest older one through its map.

    The store maps the newer rows' codes (`update_link.Link.mapped`) where the reference scan
    reads the mapped codes of every candidate against the pool; both then weigh the pair with
    the link's own odds. A map that moves the nearest older rows moves the block with it.
    """
    rng = np.random.default_rng(11)
    link = Link(WEIGHTS, BIAS - 4.0, np.eye(DIM) + 0.8 * rng.normal(size=(DIM, DIM)))

    def similar(candidates: Sequence[Row], pool: Sequence[Row]) -> list[list[int]]:
        return scores(store.state.codes(pool), store.state.codes(candidates)).tolist()  # type: ignore[no-any-return]

    def linked(candidates: Sequence[Row], pool: Sequence[Row]) -> list[list[int]]:
        mapped = link.mapped(store.state.codes(candidates))
        return scores(store.state.codes(pool), mapped).tolist()  # type: ignore[no-any-return]

    await intake(many(24), store, journal, model)
    moved = 0
    for text in ("bins Tuesday", "diary code", "peanuts Anna", "bus stop", "keys"):
        query = await codes_for(text)
        rows = store.state.visible(None)
        cosine = scores(store.state.codes(rows), query).tolist()
        expected = turn_block(
            rows,
            cosine,
            text,
            render_reference,
            similar=similar,
            link=link,
            linked=linked,
            names=NAMES,
        )
        plain = turn_block(rows, cosine, text, render_reference, similar=similar, names=NAMES)
        found = store.turn_block(query, None, text, render_reference, NAMES, link=link)
        assert found == expected
        moved += found != plain
    assert moved  # the map changed some block: the test reads the map, not only the plain rule


async def test_warm_recall_reads_every_row_as_a_turn_will(
    store: MemoryStore, journal: Journal, model: FakeModel, stemmed: list[str]
) -> None:
    """Warm recall reads every row as a turn will."""
    await intake(many(8), store, journal, model)
    store.warm_recall()
    stemmed.clear()
    query = await codes_for("bins")
    assert store.turn_block(query, None, "bins", render_reference, NAMES)
    assert stemmed == []  # the turn found every row indexed


@pytest.mark.parametrize("with_checkpoint", [True, False])
async def test_a_turn_whose_statement_was_corrected_leaves_the_block_by_its_statements(
    tmp_path: Path, home: tuple[MemoryStore, Journal], model: FakeModel, with_checkpoint: bool
) -> None:
    """Mode 2: the corrected turn's text no longer competes, its other statement still does.

    Before, the turn's source row still said "Tuesday" after the correction retired its
    statement, so the block showed what the correction replaced. So after a start too, from the
    checkpoint or from Chroma's records.
    """
    store, journal = home
    said = "The bins go out on Tuesday. The recycling goes out on Friday."
    corrected = "Actually the bins go out on Wednesday."
    await intake([IntakeInput(said, "t/1")], store, journal, model)
    result = await intake([IntakeInput(corrected, "t/2")], store, journal, model)
    assert result.superseded
    query = await codes_for("bins recycling Tuesday")

    def block(found: MemoryStore) -> list[str]:
        return [row.document for row in found.turn_block(query, None, "bins", render_reference, {})]

    try:
        assert said not in block(store)
        assert "The bins go out on Tuesday." not in block(store)
        assert {"The recycling goes out on Friday.", corrected} <= set(block(store))
        assert said in [row.document for row in store.rows(None)]  # kept: only the block leaves it
    finally:
        store.close()
    reopened = open_store(tmp_path, with_checkpoint=with_checkpoint)
    try:
        assert said not in block(reopened)
        assert {"The recycling goes out on Friday.", corrected} <= set(block(reopened))
    finally:
        reopened.close()
