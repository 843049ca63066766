"""Erasing deleted rows from the embedded Chroma store's files (forgetting erases).

Deleting a record from an embedded Chroma (1.x) does not erase its text: the record stays in
Chroma's write-ahead log (the ``embeddings_queue`` table, purged only once the vector index has
persisted, every ``hnsw:sync_threshold`` records: in a small home, never) and the SQLite pages
that held it stay in the file until a VACUUM. Chroma offers ``chroma vacuum`` (its command line:
it purges what the log may purge and VACUUMs) but no way to drop one record's log entries.

What does erase them: dropping the collection. Chroma deletes its log entries and its
segments' rows with it. So after a delete `rebuild` reads the kept records (documents,
metadata, embeddings), drops the collection, creates it again with the same name and writes
them back; then, with the client closed, `vacuum` optimizes the full-text index (its merged
segments drop deleted tokens), VACUUMs the SQLite file (free pages gone), removes the dropped
collection's segment folders (its HNSW files: vectors). It costs a read and a write of every
kept record: forgetting is rare.

`scrub` handles the other leak: hnswlib persists its whole element arrays, and the unused slots
hold whatever memory the process had freed, text included (seen in tests, a forgotten sentence
among them, in ``data_level0.bin`` and in ``length.bin``). The store scrubs the index files
after every write that rewrote them, and at close.

A crash in the middle leaves the rows collection partial: the state record says 0 meanwhile
(`mark`), so the next open loads what is there and `replay.reconcile` writes every row again
from the journal.

A Chroma server is out of reach: Alto deletes the records there, and the server's files are its
operator's to vacuum (``chroma vacuum`` on the server's data path).
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chromadb.api.collection_configuration import CreateCollectionConfiguration

from .paging import pages

_LOGGER = logging.getLogger(__name__)

_INCLUDE = ["documents", "metadatas", "embeddings"]
_FTS = "embedding_fulltext_search"
# hnswlib's header.bin as Chroma writes it: a format version (int32), then offsetLevel0,
# max_elements, cur_element_count, size_data_per_element (size_t each), ...
_HEADER = struct.Struct("<iQQQQ")
LENGTH_SIZE = 4  # length.bin: an element's link list size, a uint32, for every allocated slot
_ZEROS_STEP = 1 << 20


def rebuild(
    client: Any,
    collection: Any,
    mark: Callable[[], None],
    configuration: CreateCollectionConfiguration,
) -> Any:
    """Drop `collection` and write its records back into a new one of the same name.

    See the module docstring; `mark` records that the store is being rebuilt, `configuration`
    is the new collection's (its vector index). Returns the new collection.
    """
    records: list[tuple[str, str | None, Any, Any]] = []
    for page in pages(collection, _INCLUDE):
        records += zip(
            page["ids"], page["documents"], page["metadatas"], page["embeddings"], strict=True
        )
    name = collection.name
    mark()
    client.delete_collection(name)
    fresh = client.create_collection(name, embedding_function=None, configuration=configuration)
    step = max(1, client.get_max_batch_size())
    for start in range(0, len(records), step):
        ids, documents, metadatas, embeddings = zip(*records[start : start + step], strict=True)
        fresh.add(
            ids=list(ids),
            documents=list(documents),
            metadatas=list(metadatas),
            embeddings=list(embeddings),
        )
    return fresh


def vacuum(path: Path) -> None:
    """Optimize the full-text index, VACUUM and remove orphan segment folders under `path`.

    The folders removed are those no segment of the embedded Chroma owns (a dropped
    collection's). Its client must be closed.
    """
    database = path / "chroma.sqlite3"
    connection = sqlite3.connect(database)
    try:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
        if _FTS in tables:
            try:
                connection.execute(f"INSERT INTO {_FTS}({_FTS}) VALUES('optimize')")
                connection.commit()
            except sqlite3.Error as err:  # this SQLite lacks the module: VACUUM still runs
                _LOGGER.debug("Chroma full-text index not optimized: %s", err)
        segments = _segments(connection)
        connection.execute("VACUUM")
    finally:
        connection.close()
    for folder in _segment_folders(path) - segments:
        shutil.rmtree(path / folder, ignore_errors=True)


def orphaned(path: Path) -> bool:
    """Whether a segment folder under `path` belongs to no segment: a dropped collection's.

    A resize drops a collection and leaves its folder to the next `vacuum`; a stop or a crash
    before that vacuum leaves it to the next start. Read-only, with the client open.
    """
    folders = _segment_folders(path)
    if not folders:
        return False
    connection = sqlite3.connect(f"{(path / 'chroma.sqlite3').as_uri()}?mode=ro", uri=True)
    try:
        return not folders <= _segments(connection)
    finally:
        connection.close()


def _segments(connection: sqlite3.Connection) -> set[str]:
    return {str(row[0]) for row in connection.execute("SELECT id FROM segments")}


def _segment_folders(path: Path) -> set[str]:
    return {f.name for f in path.iterdir() if f.is_dir() and _is_uuid(f.name)}


def scrub(path: Path, seen: dict[Path, int] | None = None) -> None:
    """Zero the unused slots of the HNSW index files under an embedded Chroma's `path`.

    hnswlib allocates its element arrays without clearing them and persists all of them: the
    slots past the element count hold whatever memory the process freed before (quotes
    included, a forgotten one too). Two files hold such arrays: ``data_level0.bin`` (each
    element's vector and links, the header's size per element) and ``length.bin`` (each
    element's link list size, LENGTH_SIZE bytes). Only the used slots are ever read back, so
    zeroing the rest changes nothing Chroma reads, with its client open or closed. Chroma writes
    the files at the first write after an open and when its index syncs; `seen` (file ->
    modification time after the last scrub) skips the files not written since.
    """
    for header in path.glob("*/header.bin"):
        level0 = header.with_name("data_level0.bin")
        lengths = header.with_name("length.bin")
        arrays = [level0, lengths] if lengths.exists() else [level0]
        try:
            stats = {file: file.stat() for file in arrays}
            if seen is not None and all(seen.get(f) == s.st_mtime_ns for f, s in stats.items()):
                continue
            version, _offset, capacity, count, size = _HEADER.unpack_from(header.read_bytes())
        except (OSError, struct.error):
            continue
        if version != 1 or count > capacity:
            _LOGGER.warning("Chroma index %s has an unknown layout: not scrubbed", header.parent)
            continue
        slot = {level0: size, lengths: LENGTH_SIZE}  # bytes per element in each array
        for file, stat in stats.items():
            # An array persisted after the index grew holds its used slots only (nothing to
            # zero); one written whole holds every allocated slot.
            if stat.st_size not in (capacity * slot[file], count * slot[file]):
                _LOGGER.warning("Chroma index file %s has an unknown layout: not scrubbed", file)
                continue
            _zero_from(file, count * slot[file], stat.st_size)
            if seen is not None:
                seen[file] = file.stat().st_mtime_ns


def _zero_from(file: Path, start: int, total: int) -> None:
    """Write zeros over `file` from byte `start` to its end at `total`."""
    if start >= total:
        return
    with file.open("r+b") as handle:
        handle.seek(start)
        for at in range(start, total, _ZEROS_STEP):
            handle.write(bytes(min(_ZEROS_STEP, total - at)))
        handle.flush()
        os.fsync(handle.fileno())


def _is_uuid(name: str) -> bool:
    parts = name.split("-")
    return [len(part) for part in parts] == [8, 4, 4, 4, 12] and all(
        c in "0123456789abcdef" for c in name.replace("-", "")
    )
