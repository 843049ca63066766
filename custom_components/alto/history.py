"""Turn buffers, one per conversation and speaker: what the model sees of earlier turns.

Two people (or a user and a satellite) in one conversation id never share a buffer, so nothing
one of them said reaches the other's prompt. A buffer left idle as long as Home Assistant keeps
a chat session alive (five minutes) is gone, as HA's own session is.

A forget reaches every buffer (`TurnBuffers.forget`): a memory is a verbatim quote of what
someone said, so the entries that still hold a forgotten text leave the next prompt, and with a
user's utterance goes the whole turn that answered it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Literal

type Role = Literal["user", "assistant"]

# Conversations kept in memory at once; the least recently used one is dropped past this.
MAX_CONVERSATIONS = 64
# Seconds a buffer may stay unused (Home Assistant's chat sessions expire after five minutes).
IDLE_EXPIRY_S = 300.0
# `max_history` 0 keeps "all" turns, up to this many, so no buffer grows without bound.
MAX_KEPT_TURNS = 200


def normalized(text: str) -> str:
    """`text` as forgetting compares it: case folded, every run of whitespace one space."""
    return " ".join(text.casefold().split())


def trim_step(kept: int) -> int:
    """How many turns the history may grow past `kept` before it is trimmed back to `kept`."""
    return max(1, kept // 4)


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

    def messages(self, viewer: str | None) -> list[dict[str, str]]:
        """The kept turns as chat messages, as the speaker `viewer` may see them.

        Another user's private thoughts are left out.
        """
        return [
            {"role": e.role, "content": e.content}
            for e in self.entries
            if e.private_to is None or e.private_to == viewer
        ]

    def trim(self, max_history: int) -> None:
        """Keep the last `max_history` user turns and what followed them, trimming in steps.

        Between trims the history only grows, so the prompt's prefix stays the same from one
        turn to the next and the model server can reuse what it computed for it; a trim comes
        every `trim_step` turns instead of every turn. The model sees between `max_history`
        and `max_history + trim_step(max_history)` earlier turns (0: all, up to MAX_KEPT_TURNS).
        """
        kept = max_history if 0 < max_history < MAX_KEPT_TURNS else MAX_KEPT_TURNS
        user_positions = [i for i, e in enumerate(self.entries) if e.kind == "user"]
        if len(user_positions) > kept + trim_step(kept):
            del self.entries[: user_positions[-kept]]

    def forget(self, needles: Collection[str]) -> int:
        """Drop what holds one of `needles` (`normalized` texts); return how many entries went.

        An entry goes when its normalized content contains a needle. When it is a user's
        utterance, its whole turn goes with it: the thoughts and noticings added for it before
        it, and the reply and breadcrumbs after it, which answered it and may repeat it.
        """
        kept: list[BufferEntry] = []
        for turn in self._turns():
            if any(e.kind == "user" and _holds(e, needles) for e in turn):
                continue
            kept.extend(e for e in turn if not _holds(e, needles))
        dropped = len(self.entries) - len(kept)
        self.entries[:] = kept
        return dropped

    def _turns(self) -> Iterator[list[BufferEntry]]:
        """The entries by turn, in order.

        A turn is a user utterance, what was added before it since the previous turn (its
        thoughts and noticings: `turn` adds them first), and the reply and breadcrumbs right
        after it. A settled call's breadcrumb, added at the start of the next turn, stays with
        the turn that asked for the call.
        """
        turn: list[BufferEntry] = []
        answered = False
        for entry in self.entries:
            if answered and entry.kind not in ("reply", "breadcrumb"):
                yield turn
                turn, answered = [], False
            turn.append(entry)
            answered |= entry.kind == "user"
        if turn:
            yield turn


def _holds(entry: BufferEntry, needles: Collection[str]) -> bool:
    content = normalized(entry.content)
    return any(needle in content for needle in needles)


type Speaker = tuple[str | None, str | None]  # (HA user id, device id)


class TurnBuffers:
    """Turn buffers by conversation and speaker.

    Idle ones expire, the least recently used go first past the capacity.
    """

    def __init__(
        self,
        capacity: int = MAX_CONVERSATIONS,
        idle_s: float = IDLE_EXPIRY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Keep at most `capacity` buffers, each until `idle_s` seconds (of `clock`) unused."""
        self._capacity = capacity
        self._idle_s = idle_s
        self._clock = clock
        self._buffers: OrderedDict[tuple[str, Speaker], tuple[float, TurnBuffer]] = OrderedDict()

    def get(self, conversation_id: str, speaker: Speaker) -> TurnBuffer:
        """The buffer of this speaker in this conversation, created when new or expired."""
        now = self._clock()
        while self._buffers:  # the oldest first: drop those idle too long
            _key, (used, _buffer) = next(iter(self._buffers.items()))
            if now - used <= self._idle_s:
                break
            self._buffers.popitem(last=False)
        key = (conversation_id, speaker)
        _used, buffer = self._buffers.pop(key, (now, TurnBuffer()))
        self._buffers[key] = (now, buffer)
        while len(self._buffers) > self._capacity:
            self._buffers.popitem(last=False)
        return buffer

    def forget(self, texts: Collection[str]) -> int:
        """Drop every entry of every buffer holding a forgotten text (`TurnBuffer.forget`).

        Returns how many entries went.
        """
        needles = {needle for needle in map(normalized, texts) if needle}
        if not needles:
            return 0
        return sum(buffer.forget(needles) for _used, buffer in self._buffers.values())

    def __len__(self) -> int:
        """The number of buffers kept."""
        return len(self._buffers)
