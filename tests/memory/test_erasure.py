"""The HNSW index files' unused slots are zeroed (`erasure.scrub`), whatever the layout."""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import pytest

from custom_components.alto.memory.erasure import scrub

SIZE = 16  # bytes per element
SECRET = b"bank PIN 4821...."[:SIZE]


def _index(path: Path, *, capacity: int, count: int, slots: int, version: int = 1) -> Path:
    """An index folder: a header naming `capacity` and `count`, `slots` elements of data."""
    folder = path / "0efd27ec-afc4-48df-b68e-c3de1be232ea"
    folder.mkdir()
    (folder / "header.bin").write_bytes(struct.pack("<iQQQQ", version, 0, capacity, count, SIZE))
    (folder / "data_level0.bin").write_bytes(b"\x01" * SIZE * count + SECRET * (slots - count))
    return folder / "data_level0.bin"


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
