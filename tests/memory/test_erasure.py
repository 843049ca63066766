"""The HNSW index files' unused slots are zeroed (`erasure.scrub`), whatever the layout."""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path

import pytest

from custom_components.alto.memory.erasure import LENGTH_SIZE, scrub

SIZE = 16  # bytes per element
SECRET = b"bank PIN 4821...."[:SIZE]


def _index(path: Path, *, capacity: int, count: int, slots: int, version: int = 1) -> Path:
    """An index folder: a header naming `capacity` and `count`, `slots` elements of data."""
    folder = path / "0efd27ec-afc4-48df-b68e-c3de1be232ea"
    folder.mkdir()
    (folder / "header.bin").write_bytes(struct.pack("<iQQQQ", version, 0, capacity, count, SIZE))
    (folder / "data_level0.bin").write_bytes(b"\x01" * SIZE * count + SECRET * (slots - count))
    return folder / "data_level0.bin"


def _lengths(level0: Path, *, count: int, slots: int) -> Path:
    """The index's length.bin: `slots` link list sizes, those past `count` freed memory."""
    lengths = level0.with_name("length.bin")
    lengths.write_bytes(b"\x02" * LENGTH_SIZE * count + b"walk" * (slots - count))
    return lengths


def test_the_slots_past_the_count_are_zeroed(tmp_path: Path) -> None:
    """An index written whole (every allocated slot): the slots past its count become zeros."""
    level0 = _index(tmp_path, capacity=8, count=3, slots=8)
    scrub(tmp_path)
    assert level0.read_bytes() == b"\x01" * SIZE * 3 + bytes(SIZE * 5)


def test_an_index_of_its_used_slots_only_is_left_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An index persisted after it grew holds its used slots only: nothing to zero, no warning."""
    level0 = _index(tmp_path, capacity=2048, count=3, slots=3)
    with caplog.at_level(logging.WARNING):
        scrub(tmp_path)
    assert level0.read_bytes() == b"\x01" * SIZE * 3
    assert not caplog.records


def test_an_unknown_layout_is_left_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A layout that fits neither form is not touched, and the log says so."""
    level0 = _index(tmp_path, capacity=8, count=3, slots=5)
    with caplog.at_level(logging.WARNING):
        scrub(tmp_path)
    assert SECRET in level0.read_bytes()
    assert "unknown layout" in caplog.text


def test_the_link_list_sizes_past_the_count_are_zeroed(tmp_path: Path) -> None:
    """length.bin is written for every allocated slot too: past the count it becomes zeros."""
    level0 = _index(tmp_path, capacity=8, count=3, slots=8)
    lengths = _lengths(level0, count=3, slots=8)
    scrub(tmp_path)
    assert lengths.read_bytes() == b"\x02" * LENGTH_SIZE * 3 + bytes(LENGTH_SIZE * 5)
    assert level0.read_bytes() == b"\x01" * SIZE * 3 + bytes(SIZE * 5)


def test_a_file_of_unknown_layout_is_left_and_the_other_scrubbed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A length.bin that fits neither form is reported and left; data_level0.bin is scrubbed."""
    level0 = _index(tmp_path, capacity=8, count=3, slots=8)
    lengths = _lengths(level0, count=3, slots=5)
    with caplog.at_level(logging.WARNING):
        scrub(tmp_path)
    assert b"walk" in lengths.read_bytes()
    assert level0.read_bytes() == b"\x01" * SIZE * 3 + bytes(SIZE * 5)
    assert "unknown layout" in caplog.text


def test_a_scrub_skips_files_not_written_since_and_reads_a_rewritten_one(tmp_path: Path) -> None:
    """`seen` skips an index whose files kept their times; a rewritten length.bin is scrubbed."""
    level0 = _index(tmp_path, capacity=8, count=3, slots=8)
    lengths = _lengths(level0, count=3, slots=8)
    seen: dict[Path, int] = {}
    scrub(tmp_path, seen)
    assert set(seen) == {level0, lengths}
    _lengths(level0, count=3, slots=8)  # Chroma wrote it again, a second later
    os.utime(lengths, ns=(seen[lengths], seen[lengths] + 1_000_000_000))
    scrub(tmp_path, seen)
    assert b"walk" not in lengths.read_bytes()
