"""Reading a journal from its end gives exactly the entries asked for, torn tail or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from custom_components.alto.memory import journal_tail
from custom_components.alto.memory.journal import Journal


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    """A journal of 40 notes of varied lengths."""
    written = Journal(tmp_path / "journal.jsonl")
    for n in range(1, 41):
        written.append({"op": "note", "text": "x" * (n * 7 % 50)})
    return written


@pytest.mark.parametrize("step", [1, 5, 64, 1 << 20])
def test_entries_from_any_sequence(
    journal: Journal, monkeypatch: pytest.MonkeyPatch, step: int
) -> None:
    """Entries from any sequence."""
    monkeypatch.setattr(journal_tail, "_READ_BACK", step)
    everything = list(journal.entries())
    for first in (1, 2, 17, 39, 40):
        found = journal_tail.entries_from(journal.path, first)
        assert found is not None
        assert list(found) == everything[first - 1 :]
    assert journal_tail.entries_from(journal.path, 41) is None
    assert journal_tail.entries_from(journal.path, 0) is None  # no entry 0


def test_a_torn_tail_and_missing_or_empty_files(journal: Journal, tmp_path: Path) -> None:
    """A torn tail and missing or empty files."""
    with journal.path.open("ab") as file:
        file.write(b'{"sequence": 41, "op": "no')
    found = journal_tail.entries_from(journal.path, 40)
    assert found is not None
    assert [entry["sequence"] for entry in found] == [40]
    assert journal_tail.entries_from(tmp_path / "absent.jsonl", 1) is None
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert journal_tail.entries_from(tmp_path / "empty.jsonl", 1) is None
    (tmp_path / "damaged.jsonl").write_bytes(b"not json\n")
    assert journal_tail.entries_from(tmp_path / "damaged.jsonl", 1) is None
