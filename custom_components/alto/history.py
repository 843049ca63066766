"""Per-conversation turn buffers: what the model sees of earlier turns."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

type Role = Literal["user", "assistant"]

# Conversations kept in memory at once; the least recently used one is dropped past this.
MAX_CONVERSATIONS = 64


@dataclass(frozen=True, slots=True)
class BufferEntry:
    """One entry of a turn buffer.

    kind says what produced it: a user utterance, a spoken reply, a surfaced thought or an action
    breadcrumb. Only spoken replies and user utterances count as a turn for `max_history`.
    """

    role: Role
    content: str
    kind: Literal["user", "reply", "thought", "breadcrumb"]
    # A thought drawn from a user's private memories is shown to that user's turns only.
    private_to: str | None = None


@dataclass
class TurnBuffer:
    """The recent history of one conversation."""

    entries: list[BufferEntry] = field(default_factory=list)

    def add(self, *entries: BufferEntry) -> None:
        """Append entries in order."""
        self.entries.extend(entries)

    def episode(self) -> list[str]:
        """What was said in this conversation (utterances and spoken replies), oldest first."""
        return [e.content for e in self.entries if e.kind in ("user", "reply")]

    def _start(self, max_history: int) -> int:
        """Index of the first entry within the last `max_history` user turns (0 keeps all)."""
        user_positions = [i for i, e in enumerate(self.entries) if e.kind == "user"]
        if max_history > 0 and len(user_positions) > max_history:
            return user_positions[-max_history]
        return 0

    def messages(self, max_history: int, viewer: str | None) -> list[dict[str, str]]:
        """Chat messages for the last `max_history` user turns and what followed them, as the
        speaker `viewer` may see them (another user's private thoughts left out)."""
        return [
            {"role": e.role, "content": e.content}
            for e in self.entries[self._start(max_history) :]
            if e.private_to is None or e.private_to == viewer
        ]

    def trim(self, max_history: int) -> None:
        """Drop what `messages` would no longer show, so buffers stay bounded."""
        del self.entries[: self._start(max_history)]


class TurnBuffers:
    """Turn buffers by conversation id, least recently used dropped first."""

    def __init__(self, capacity: int = MAX_CONVERSATIONS) -> None:
        self._capacity = capacity
        self._buffers: OrderedDict[str, TurnBuffer] = OrderedDict()

    def get(self, conversation_id: str) -> TurnBuffer:
        """The buffer of a conversation, created when new."""
        buffer = self._buffers.pop(conversation_id, None) or TurnBuffer()
        self._buffers[conversation_id] = buffer
        while len(self._buffers) > self._capacity:
            self._buffers.popitem(last=False)
        return buffer

    def __len__(self) -> int:
        return len(self._buffers)
