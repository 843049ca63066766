"""The ChromaDB memory store (blocking; the HA layer calls it from an executor).

Chroma persists rows: the id is the decimal object id, the document the exact quote, the metadata
every `Row` field (kind, owner, scope, actor, source_id, source_version, offset, length, status,
sequence, target, model_digest, processor_digest; never None), the embedding the float32 vector.
A second collection holds one record, the sequence of the last applied journal entry.

Reads never query Chroma: `open_*` loads the state into a `MemoryState` (rows plus their int8
codes in a `matrix.CodeMatrix`, no float vectors), and recall and selection run exact integer
scores on it (`scoring`: the library's integer GEMM, the same integers replay computes), so
results do not depend on Chroma's approximate index. Chroma is only the durable copy (embedded
`PersistentClient`, or a Chroma server for larger homes).

A Chroma server is another machine's copy, so its rows are never read into the state: a server
store (``trusted=False``) builds its state only from what the journal verifies (the checkpoint
and the entries after it, or the whole journal when there is no usable checkpoint: the store then
starts empty and `replay.reconcile` writes every row again). `check_server` then compares the
server's rows (ids, quotes, metadata) with that state: rows Alto never wrote (another entry's,
or added behind its back), rows changed, or rows missing are reported, and the server's copy is
rebuilt from the journal. Vectors are not compared (reading them is most of the transfer); they
never reach the state either.

With a `checkpoint.Checkpoint`, opening reads the verified checkpoint (and the journal entries
after it) instead of every Chroma record, and falls back to Chroma when there is none. The store
writes a checkpoint after a load from Chroma, every `CHECKPOINT_EVERY` entries, at close, and at
once when rows are deleted: the file holds quotes, and forgetting must erase them (the old file
is removed first, so a failed write leaves no copy behind).

Chroma details that matter here: collections are opened with ``embedding_function=None`` (we
always pass vectors and must never download a default model); the collection keeps Chroma's
default l2 space because its cosine space normalizes stored vectors, which would change the
float32 bytes the codes are quantized from; writes use ``upsert`` (``add`` silently ignores
existing ids, which would break idempotent re-application); ``update`` merges metadata keys.

`apply` is idempotent. If it raises (a crash between journal and store), reopen the store and
run `replay.reconcile` to bring it to the journal. One writer at a time; the read methods may run
in other threads meanwhile (a lock guards the mirror). Intake and replay read `state` directly:
they are the writer, so nothing changes under it; every reader outside `memory/` goes through the
locked methods here (`get`, `rows`, `count`, `visibility`, `codes_snapshot`, ...).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
from chromadb.api.collection_configuration import CreateCollectionConfiguration
from chromadb.config import Settings

from . import erasure
from .checkpoint import Checkpoint, Restored
from .corpus import Corpus, Image, View, warm
from .journal_tail import last_lines
from .matrix import Snapshot
from .paging import pages
from .pipeline import IntakeInput, forget_ids
from .reasons import Reason, Refusal
from .recall import Memo, turn_block
from .records import HOUSEHOLD, SUPERSEDED, MemoryState, Mutation, Row, vector_bytes
from .references import MAX_REFERENCE_BYTES, MAX_REFERENCES
from .retention import Shares, due, over_limit, refusals
from .scoring import Scorer, default_scorer, scores, top_k
from .selection import scores as exact_scores
from .server import COLLECTION, STATE_COLLECTION, ChromaServer, collection_names
from .server import client as server_client
from .update_link import PLAIN, Link

_LOGGER = logging.getLogger(__name__)

__all__ = ["COLLECTION", "STATE_COLLECTION", "MemoryStore", "ServerCheck"]

_STATE_ID = "state"
CHECKPOINT_EVERY = 1024  # journal entries applied between two checkpoints while running
# Alto never queries Chroma's vector index (selection scans its own codes exactly), but Chroma
# builds one for every record: at every write, and for every kept record when a forget rebuilds
# the collection (`erasure.rebuild`). So it is built as cheaply as Chroma allows; adding 20,000
# records (384-d) took 5.8 s, against 15.2 s with Chroma's defaults. A collection made before
# keeps Chroma's defaults until its first rebuild.
ROWS_INDEX: CreateCollectionConfiguration = {"hnsw": {"ef_construction": 4, "max_neighbors": 4}}


def _settings() -> Settings:
    # A fresh object per client: chromadb.HttpClient writes its API and host into the Settings
    # it is given, and a shared object would turn every later embedded client into HTTP.
    return Settings(anonymized_telemetry=False)


@dataclass(frozen=True, slots=True)
class ServerCheck:
    """What a server's rows had that the journal's state does not.

    Ids Alto never wrote (``foreign``), rows whose quote or metadata differ (``changed``), rows
    it lacks (``missing``).
    """

    foreign: int = 0
    changed: int = 0
    missing: int = 0

    def __bool__(self) -> bool:
        """Whether the server had anything the journal's state does not."""
        return bool(self.foreign or self.changed or self.missing)


class MemoryStore:
    """Rows in Chroma, mirrored in memory for exact selection."""

    def __init__(
        self,
        client: Any,
        *,
        checkpoint: Checkpoint | None = None,
        scorer: Scorer | None = None,
        namespace: str | None = None,
        trusted: bool = True,
    ) -> None:
        """Rows in `client`'s collections of `namespace` (see `open_persistent`, `open_http`)."""
        self._client = client
        # Guards the mirror: the writer applies in an executor thread while readers may recall.
        self._lock = threading.Lock()
        # What the turn's block reads of each row, by position; one sync of it at a time.
        self._corpus = Corpus()
        self._corpus_lock = threading.Lock()
        self._memos: dict[tuple[str | None, Link], Memo] = {}  # by viewer, link (`recall.Memo`)
        self._names = collection_names(namespace)
        self._trusted = trusted
        self._rows, self._meta = self._collections()
        self.scorer = scorer or default_scorer()
        self._checkpoint = checkpoint
        self._saved = 0  # the sequence of the checkpoint on disk
        self._embedded: Path | None = None  # an embedded store's folder: deletes are erased
        self._scrubbed: dict[Path, int] = {}  # index files scrubbed, as last written
        self._partial = False  # a rebuild failed: Chroma's copy waits for a start to refill it
        self._erase_due = False  # rows were deleted since the last `erase`
        self._vacuum_due = False  # a collection was dropped since (a resize)
        self.state = MemoryState()
        self._open()

    @classmethod
    def open_persistent(
        cls, path: Path | str, *, checkpoint: Checkpoint | None = None
    ) -> MemoryStore:
        """The embedded store under `path` (created if missing)."""
        client = chromadb.PersistentClient(path=str(path), settings=_settings())
        store = cls(client, checkpoint=checkpoint)
        store._embedded = Path(path)
        erasure.scrub(store._embedded, store._scrubbed)  # index files an older version left
        store._vacuum_due = erasure.orphaned(store._embedded)  # a resize's, before its vacuum
        return store

    def erase(self) -> None:
        """Erase the records deleted since the last call from the embedded Chroma's files.

        See `erasure`: it reads and writes every kept record, so the writer calls it after a
        forget outside the journal's lock (accepts go on meanwhile; they write no row). Meanwhile
        the state record says 0: after a crash, the next open writes every row again from the
        journal. A rebuild that fails leaves it at 0 for as long as this store runs, and raises;
        the next call tries again. After a resize only the dropped collection's files are left:
        no rebuild, the vacuum removes them. A server store has nothing to erase here.
        """
        if self._embedded is None or not (self._erase_due or self._vacuum_due):
            return
        path = self._embedded
        if self._erase_due:
            applied = 0 if self._partial else self.state.applied
            try:
                erasure.rebuild(
                    self._client, self._rows, lambda: self._record_applied(0), ROWS_INDEX
                )
            except Exception:
                self._partial = True
                self._rows, self._meta = self._collections()
                raise
            self._record_applied(applied)
        self._client.close()
        erasure.vacuum(path)
        self._client = chromadb.PersistentClient(path=str(path), settings=_settings())
        self._rows, self._meta = self._collections()
        self._erase_due = self._vacuum_due = False
        erasure.scrub(path, self._scrubbed)

    @classmethod
    def open_http(
        cls, server: ChromaServer, namespace: str, *, checkpoint: Checkpoint | None = None
    ) -> MemoryStore:
        """A store in `namespace`'s collections on a Chroma server.

        Its rows are not trusted (see the module docstring). Raises `server.ServerError`
        when the server cannot be used.
        """
        return cls(server_client(server), checkpoint=checkpoint, namespace=namespace, trusted=False)

    def _record_applied(self, applied: int) -> None:
        """Write the state record: how many journaled mutations Chroma's rows reflect."""
        self._meta.upsert(ids=[_STATE_ID], embeddings=[[0.0]], metadatas=[{"applied": applied}])

    def _collections(self) -> tuple[Any, Any]:
        rows, state = self._names
        return (
            self._client.get_or_create_collection(
                rows, embedding_function=None, configuration=ROWS_INDEX
            ),
            self._client.get_or_create_collection(state, embedding_function=None),
        )

    def close(self) -> None:
        """Write the checkpoint if it is behind, then release the client (SQLite handles)."""
        if self._saved != self.state.applied:
            self._save_checkpoint()
        self._client.close()
        if self._embedded is not None:
            erasure.scrub(self._embedded, self._scrubbed)

    def _open(self) -> None:
        found = self._meta.get(ids=[_STATE_ID], include=["metadatas"])
        applied = int(found["metadatas"][0]["applied"]) if found["ids"] else 0
        if not self._trusted:
            self._open_untrusted(applied)
            return
        # Chroma is not asked for its row count: that loads its whole HNSW index into memory.
        restored = self._checkpoint.load(applied) if self._checkpoint and applied else None
        if restored is not None:
            self.state, self._saved = restored.state, restored.saved
            self._seed(restored)
            if restored.deleted or applied - restored.saved >= CHECKPOINT_EVERY:
                self._save_checkpoint()
            return
        self._load(applied)
        self._save_checkpoint()

    def _open_untrusted(self, applied: int) -> None:
        """The state from the checkpoint at the server's sequence, or empty at 0.

        Never past the journal's end; empty, reconciling writes every row again from the
        journal.
        """
        target = min(applied, self._journal_end())
        restored = self._checkpoint.load(target) if self._checkpoint and target else None
        if restored is not None:
            self.state, self._saved = restored.state, restored.saved
            self._seed(restored)
        # else: the empty state at 0; the checkpoint file stays for a later start.

    def _seed(self, restored: Restored) -> None:
        """The corpus from the checkpoint's image, when it has one (no row stemmed)."""
        if restored.corpus is not None:
            with self._corpus_lock:
                self._corpus.seed(*restored.corpus)
                self._corpus.changed(restored.rewritten)

    def _journal_end(self) -> int:
        """The last journal entry's sequence (0 without a journal or a readable last line)."""
        if self._checkpoint is None:
            return 0
        try:
            lines = last_lines(self._checkpoint.journal, 1)
            return int(json.loads(lines[-1])["sequence"]) if lines else 0
        except (OSError, ValueError, KeyError, TypeError):
            return 0

    def check_server(self) -> ServerCheck:
        """Compare the server's rows with the state (after `replay.reconcile`).

        When they disagree, empty the server's collections and the state (applied 0), so
        that reconciling again rebuilds both from the journal. An embedded store has nothing
        to check.
        """
        if self._trusted:
            return ServerCheck()
        with self._lock:
            expected = {row.id: row for row in self.state.rows()}
        seen: set[int] = set()
        foreign = changed = 0
        for page in pages(self._rows, ["documents", "metadatas"]):
            for raw_id, document, metadata in zip(
                page["ids"], page["documents"], page["metadatas"], strict=True
            ):
                row = expected.get(int(raw_id)) if raw_id.isdigit() else None
                if row is None:
                    foreign += 1
                    continue
                seen.add(row.id)
                if document != row.document or dict(metadata or {}) != row.metadata():
                    changed += 1
        found = ServerCheck(foreign, changed, len(expected) - len(seen))
        if found:
            for name in self._names:
                self._client.delete_collection(name)
            self._rows, self._meta = self._collections()
            with self._lock:
                self.state = MemoryState()
            self._saved = 0
        return found

    def _save_checkpoint(self) -> None:
        """Replace the checkpoint, if the store has one.

        A failure costs only a slower next start (one warning).
        """
        if self._checkpoint is None:
            return
        try:
            self._checkpoint.discard()
            self._checkpoint.save(self.state, self._corpus_image())
        except (OSError, ValueError) as err:
            _LOGGER.warning("Memory checkpoint not written (next start reads Chroma): %s", err)
            return
        self._saved = self.state.applied

    def _load(self, applied: int) -> None:
        """Every record from Chroma, its vector quantized again (no usable checkpoint)."""
        rows: list[Row] = []
        for page in pages(self._rows, ["documents", "metadatas", "embeddings"]):
            for row_id, document, metadata, embedding in zip(
                page["ids"], page["documents"], page["metadatas"], page["embeddings"], strict=True
            ):
                vector = vector_bytes(embedding)
                rows.append(Row.from_parts(int(row_id), document, dict(metadata), vector))
        self.state.load(rows, applied)

    def snapshot(self) -> dict[str, Any]:
        """Exact contents of both Chroma collections (ids, documents, metadata, embeddings).

        Read from Chroma itself, not the mirror: tests compare snapshots to prove a refusal
        wrote nothing, and diagnostics can show what is really stored.
        """
        result = {}
        for name, collection in ((COLLECTION, self._rows), (STATE_COLLECTION, self._meta)):
            found = collection.get(include=["documents", "metadatas", "embeddings"])
            order = sorted(range(len(found["ids"])), key=lambda i: found["ids"][i])
            result[name] = [
                (
                    found["ids"][i],
                    found["documents"][i],
                    found["metadatas"][i],
                    np.asarray(found["embeddings"][i], dtype=np.float64).tobytes(),
                )
                for i in order
            ]
        return result

    @property
    def applied(self) -> int:
        """Sequence of the last journal entry applied."""
        return self.state.applied

    def apply(self, mutation: Mutation) -> None:
        """Write one mutation to Chroma, then to the mirror; applying it again changes nothing."""
        rows = list(mutation.upsert)
        resized = bool(rows) and self.state.dim not in (None, len(rows[0].vector) // 4)
        if resized:
            self._resize(rows)
        else:
            self._upsert(self._rows, rows)
        # Chroma rejects updates of unknown ids; a target already deleted has nothing to mark.
        fresh = {row.id for row in rows}
        supersede = [i for i in mutation.supersede if i in fresh or self.state.get(i) is not None]
        if supersede:
            self._rows.update(
                ids=[str(i) for i in supersede], metadatas=[{"status": SUPERSEDED}] * len(supersede)
            )
        if mutation.delete:
            self._rows.delete(ids=[str(i) for i in mutation.delete])
        applied = max(self.state.applied, mutation.sequence)
        recorded = 0 if self._partial else applied  # 0: the next open refills Chroma
        self._record_applied(recorded)
        if self._embedded is not None:
            self._erase_due |= bool(mutation.delete)  # `erase` rebuilds Chroma without them
            erasure.scrub(self._embedded, self._scrubbed)
        with self._lock:
            again = [row.id for row in mutation.upsert if self.state.get(row.id) is not None]
            self.state.apply(mutation)
            self._corpus.changed(again)
        if resized or mutation.delete or self.state.applied - self._saved >= CHECKPOINT_EVERY:
            self._save_checkpoint()
        # Read the new rows' words now, in the writer's thread, not in the next turn's.
        warm(mutation.upsert)

    def _upsert(self, collection: Any, rows: Sequence[Row]) -> None:
        step = max(1, self._client.get_max_batch_size())
        for start in range(0, len(rows), step):
            part = rows[start : start + step]
            collection.upsert(
                ids=[str(row.id) for row in part],
                documents=[row.document for row in part],
                metadatas=[row.metadata() for row in part],
                embeddings=[np.frombuffer(row.vector, dtype="<f4") for row in part],
            )

    def _resize(self, rows: Sequence[Row]) -> None:
        """Every row with vectors of another size: a new rows collection takes the old one's place.

        A collection holds vectors of one size. The rows are written into a collection beside
        the old one, which is then dropped, and the new one renamed. The state record keeps the
        sequence before this entry until the end, so after a crash or a failure at any point the
        entry is applied again (`replay.reconcile`): it carries every row, so even an empty
        collection is whole again after it. The old index's folder goes at the next `erase`, or
        after a stop before it, at the next open's (`erasure.orphaned`).
        """
        name = self._names[0]
        beside = f"{name}_resized"
        if beside in {collection.name for collection in self._client.list_collections()}:
            self._client.delete_collection(beside)  # a resize a crash interrupted
        fresh = self._client.create_collection(
            beside, embedding_function=None, configuration=ROWS_INDEX
        )
        self._upsert(fresh, rows)
        self._client.delete_collection(name)
        fresh.modify(name=name)
        self._rows, self._meta = self._collections()
        self._vacuum_due = True

    def get(self, ids: Sequence[int]) -> list[Row]:
        """The stored rows among `ids`, in the given order."""
        with self._lock:
            return [row for row in map(self.state.get, ids) if row is not None]

    def rows(self, viewer: str | None, *, current_only: bool = True) -> list[Row]:
        """Rows visible to `viewer` (None: household rows only), object-id order."""
        with self._lock:
            return self.state.visible(viewer, current_only=current_only)

    @property
    def version(self) -> int:
        """A number that changes with every change of the rows (`MemoryState.version`).

        What a reader derived from `versioned_rows` at this number still holds.
        """
        with self._lock:
            return self.state.version

    def versioned_rows(
        self, viewer: str | None, *, current_only: bool = True
    ) -> tuple[int, list[Row]]:
        """`rows` and the `version` they are at, read together."""
        with self._lock:
            return self.state.version, self.state.visible(viewer, current_only=current_only)

    def count(self, viewer: str | None = None, *, current_only: bool = True) -> int:
        """How many rows `viewer` sees (a tally kept by the state, not a walk of the rows)."""
        scopes = [HOUSEHOLD] if viewer is None else [HOUSEHOLD, viewer]
        with self._lock:
            return self.state.count(scopes, current_only=current_only)

    def count_all(self, *, current_only: bool = True) -> int:
        """How many rows are stored across every scope (current ones only by default)."""
        with self._lock:
            return self.state.count(current_only=current_only)

    def retention_due(self, shares: Shares) -> bool:
        """Whether a scope or the store passes its limit (`retention.due`, from the tally)."""
        with self._lock:
            return due(self.state.scope_counts(), shares)

    def retention(self, shares: Shares, since: int) -> tuple[dict[str | None, list[int]], int]:
        """The rows to forget past the limits, by viewer, and the sequence it was planned at.

        `since`: the sequence up to which every write was retained (`retention.over_limit`).
        """
        with self._lock:
            return over_limit(self.state, shares, since), self.state.applied

    def refusals(self, items: Sequence[IntakeInput], shares: Shares) -> list[Reason | None]:
        """Why each authored memory of `items` finds no room, or None (`retention.refusals`)."""
        with self._lock:
            return refusals(self.state, shares, items)

    def forgettable(self, ids: Sequence[int], viewer: str | None) -> list[Row]:
        """The rows a forget of `ids` by `viewer` deletes (`pipeline.forget_ids`); [] if refused."""
        with self._lock:
            chosen = forget_ids(ids, viewer, self.state)
            if isinstance(chosen, Refusal):
                return []
            return [row for row in map(self.state.get, chosen) if row is not None]

    def ids(self) -> list[int]:
        """Every stored row's id, current or superseded, in object-id order."""
        with self._lock:
            return [row.id for row in self.state.rows()]

    def count_said_by(self, actor: str) -> int:
        """How many stored rows (current or superseded) `actor` said."""
        with self._lock:
            return sum(row.actor == actor for row in self.state.rows())

    def codes_of(self, ids: Sequence[int]) -> tuple[list[Row], np.ndarray]:
        """The stored rows among `ids` and their int8 codes, read together."""
        with self._lock:
            rows = [row for row in map(self.state.get, ids) if row is not None]
            return rows, self.state.codes(rows)

    def has_rows(self) -> bool:
        """Whether any row is stored, current or superseded."""
        with self._lock:
            return len(self.state) > 0

    @property
    def dim(self) -> int | None:
        """Embedding dimension of the stored rows, None while there are none."""
        with self._lock:
            return self.state.dim

    def codes_snapshot(self) -> Snapshot | None:
        """The resident codes as they are now (None before any row arrived).

        What a selection backend loads. Not `snapshot`, which reads Chroma.
        """
        with self._lock:
            return self.state.snapshot()

    def visibility(
        self, viewer: str | None, *, current_only: bool = True
    ) -> Callable[[Snapshot], np.ndarray]:
        """The rows of a codes snapshot `viewer` may see, as a mask function of the snapshot.

        See `MemoryState.visibility`.
        """
        with self._lock:
            return self.state.visibility(viewer, current_only=current_only)

    def turn_block(
        self,
        query_codes: np.ndarray,
        viewer: str | None,
        query: str,
        render: Callable[[Row], str],
        names: Mapping[str, str],
        *,
        link: Link = PLAIN,
        max_refs: int = MAX_REFERENCES,
        max_bytes: int = MAX_REFERENCE_BYTES,
    ) -> list[Row]:
        """The turn's memory block for `viewer` (`recall.turn_block`, within these limits).

        Cosine scores come from `scoring` over the resident matrix; `names` maps user ids to
        people's names; `link` is the embedding model's (`update_link.link_for`).
        """
        if (found := self._indexed(viewer)) is None:
            return []
        snapshot, visible, view = found
        cosine = scores(snapshot, np.asarray(query_codes)[np.newaxis], self.scorer)[0]

        def compared(codes: np.ndarray, among: np.ndarray | None) -> np.ndarray:
            if among is None:
                return scores(snapshot, codes, self.scorer)
            return exact_scores(snapshot.take(among), codes)

        def likeness(positions: np.ndarray, among: np.ndarray | None) -> np.ndarray:
            return compared(snapshot.take(positions), among)

        def linking(positions: np.ndarray, among: np.ndarray | None) -> np.ndarray:
            return compared(link.mapped(snapshot.take(positions)), among)

        memo = self._memos.get((viewer, link))
        if memo is None or memo.generation != view.generation:
            memo = self._memos[(viewer, link)] = Memo(view.generation)
        return turn_block(
            view,
            visible,
            cosine,
            query,
            render,
            likeness=likeness,
            link=link,
            linking=linking,
            names=names,
            memo=memo,
            max_refs=max_refs,
            max_bytes=max_bytes,
        )

    def warm_recall(self) -> None:
        """Index every stored row as the turn's block reads it (`corpus.Corpus`).

        The first turn after a start then does not stem the whole store.
        """
        self._indexed(None)

    def _corpus_image(self) -> Image | None:
        """What the corpus read of every row now stored, for the checkpoint.

        Stems the rows it has not read yet.
        """
        with self._corpus_lock:
            found = self._synced(None)
            return None if found is None else self._corpus.image(found[2].n)

    def _indexed(self, viewer: str | None) -> tuple[Snapshot, np.ndarray, View] | None:
        """The codes as they are now, the rows `viewer` sees among them, the corpus at them.

        The rows seen are a mask, less the source rows `MemoryState.retired` names (the block
        reads it); None before any row arrived. Stems the rows new to the corpus
        outside the lock that writes wait on.
        """
        with self._corpus_lock:
            return self._synced(viewer)

    def _synced(self, viewer: str | None) -> tuple[Snapshot, np.ndarray, View] | None:
        """`_indexed`, with the corpus lock held."""
        with self._lock:
            snapshot = self.state.snapshot()
            if snapshot is None:
                return None
            visible = self.state.visibility(viewer)(snapshot)
            visible[self.state.retired()] = False  # a replaced statement's turn (`retired`)
            start = self._corpus.start(snapshot)
            fresh = self.state.rows_of(snapshot.ids[start:].tolist())
        return snapshot, visible, self._corpus.extend(snapshot, start, fresh)

    def recall(
        self, query_codes: np.ndarray, viewer: str | None, limit: int
    ) -> list[tuple[Row, int]]:
        """The `limit` best current rows visible to `viewer`: score desc, then object id asc.

        `query_codes` is `selection.quantize(embedding)` of the query text's embedding.
        """
        with self._lock:
            snapshot = self.state.snapshot()
            allowed = self.state.visibility(viewer)
        if snapshot is None:
            return []
        hits = top_k(snapshot, query_codes, limit, scorer=self.scorer, allowed=allowed(snapshot))
        with self._lock:
            found = [(self.state.get(row_id), score) for row_id, score in hits]
        return [(row, score) for row, score in found if row is not None]
