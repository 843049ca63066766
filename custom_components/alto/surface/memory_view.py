"""What the Surfacer may read of memory: the contract a store adapter implements.

Everything is scoped to a viewer (the HA user of the turn, or None when the speaker is unknown):
an adapter answers only from memories that viewer may see, so a cue can never reach another
user's private memory. Phrases are exact quotes of stored memory, never paraphrases, because the
verifier licenses a render word by word against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Phrase:
    """An exact memory quote licensed for one entity, and the id of the memory it quotes."""

    text: str
    source_id: str


@runtime_checkable
class MemoryView(Protocol):
    """The cued read: names the viewer's memories mention, and the phrases licensed for each."""

    async def known_names(self, viewer: str | None) -> list[str]:
        """Participant and task mentions and entity names of the memories `viewer` may see."""
        ...

    async def phrases(self, name: str, viewer: str | None) -> list[Phrase]:
        """Exact quotes licensed for the entity `name`, from memories `viewer` may see."""
        ...


@runtime_checkable
class RecallView(MemoryView, Protocol):
    """A view that also offers the second, semantic retriever (used only when recall is on)."""

    async def recall(
        self, utterance: str, viewer: str | None, limit: int
    ) -> list[tuple[str, Phrase]]:
        """Up to `limit` (entity name, phrase) pairs semantically near `utterance`."""
        ...
