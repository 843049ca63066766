"""What the memory writes is pinned byte for byte: the journal, the checkpoint and Chroma's copy.

Row kinds and statuses are `IntEnum`s in the code; on disk they stay the bare integers they
were (json writes an `IntEnum` member as its integer, Chroma's metadata keeps the integer), so
journals written before and after read alike and replay re-derives them. The hashes below are
of the files this history wrote before the enums existed; a deliberate change of the format,
the processor (its digest is journaled) or the test's fake model or embedding changes them.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from custom_components.alto.memory.checkpoint import Checkpoint
from custom_components.alto.memory.journal import Journal
from custom_components.alto.memory.records import Kind, canonical_json
from custom_components.alto.memory.replay import replay
from custom_components.alto.memory.store import COLLECTION, MemoryStore

from .test_replay import build_history

# The forget of entry 4 lists the tombstone of entry 3 (`redaction`), which holds no "Code 42.".
JOURNAL_SHA256 = "fe32317beb987c36ee7b1445decdcbbbc138d608649974167f8cf74b84b8d32f"
# Version 2 (the corpus image after the rows, `checkpoint.MAGIC`); version 1 files still load.
# Its header holds the word rules' fingerprint (`corpus.LEXICON`): a change of a word list, as
# of `informative.ACKNOWLEDGEMENTS` or `languages.Language.finite`, changes these bytes and
# nothing else of them.
CHECKPOINT_SHA256 = (
    "3e38155d3c53e8744601b337be355d156904a9e642f4f10b92e2d2ce41df4afc"  # its entry's hash
)
CHROMA_SHA256 = "cdf46d01648d908944ed3d6b6eb01569357522d8b6270c77add3611ec221ccf8"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_history_is_written_byte_for_byte_as_before(tmp_path: Path) -> None:
    """History is written byte for byte as before."""
    journal = Journal(tmp_path / "journal.jsonl")
    checkpoint = Checkpoint(tmp_path / "memory.checkpoint", journal.path)
    store = MemoryStore.open_persistent(tmp_path / "chroma", checkpoint=checkpoint)
    try:
        await build_history(store, journal)
        stored = store.snapshot()
        # What was written came from enum members (the parser's kinds, intake's statuses).
        assert any(isinstance(row.kind, Kind) for row in store.rows(None))
        assert b'"status":12' in journal.path.read_bytes()
    finally:
        store.close()  # writes the checkpoint
    kinds = {type(metadata["kind"]) for _id, _doc, metadata, _v in stored[COLLECTION]}
    assert kinds == {str, int}  # Chroma gives back bare integers, not enum members
    chroma = canonical_json(
        {
            name: [
                [row_id, document, metadata, base64.b64encode(vector).decode()]
                for row_id, document, metadata, vector in records
            ]
            for name, records in stored.items()
        }
    )
    assert _sha256(journal.path.read_bytes()) == JOURNAL_SHA256
    assert _sha256(checkpoint.path.read_bytes()) == CHECKPOINT_SHA256
    assert b"Code 42." not in journal.path.read_bytes()
    assert _sha256(chroma.encode()) == CHROMA_SHA256
    assert replay(journal.path) == {
        "entries": 5,
        "ok": True,
        "first_mismatch": None,
        "reason": None,
        "redacted": 1,  # the remembered "Code 42." was forgotten: its entry is a tombstone
        "unverified": 0,
    }
