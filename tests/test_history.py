"""Turn buffers: one per conversation and speaker, idle ones expire, nothing grows unbounded."""

from __future__ import annotations

import itertools

from custom_components.alto.history import (
    IDLE_EXPIRY_S,
    MAX_KEPT_TURNS,
    BufferEntry,
    TurnBuffer,
    TurnBuffers,
    trim_step,
)

ALICE = ("alice-user-id", None)
BOB = ("bob-user-id", None)
KITCHEN = (None, "kitchen-satellite")


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        """Start at 1000 seconds."""
        self.now = 1000.0

    def __call__(self) -> float:
        """The current time."""
        return self.now


def test_two_speakers_in_one_conversation_never_share_a_buffer() -> None:
    """Alice's PIN does not reach Bob's (or a satellite's) history in the same conversation."""
    buffers = TurnBuffers()
    buffers.get("c1", ALICE).add(BufferEntry("user", "my bank PIN is 4821", "user"))
    assert buffers.get("c1", BOB).messages("bob-user-id") == []
    assert buffers.get("c1", KITCHEN).messages(None) == []
    assert buffers.get("c1", ALICE).messages("alice-user-id")[0]["content"].endswith("4821")


def test_an_idle_buffer_expires_like_a_chat_session() -> None:
    """Unused for longer than HA keeps a chat session, a buffer starts empty again."""
    clock = Clock()
    buffers = TurnBuffers(clock=clock)
    buffers.get("c1", ALICE).add(BufferEntry("user", "hello", "user"))
    clock.now += IDLE_EXPIRY_S - 1
    assert len(buffers.get("c1", ALICE).entries) == 1  # still alive, and touched again
    clock.now += IDLE_EXPIRY_S + 1
    assert buffers.get("c1", ALICE).entries == []
    assert len(buffers) == 1


def test_capacity_drops_the_least_recently_used() -> None:
    """Past the capacity, the oldest conversation goes first."""
    buffers = TurnBuffers(capacity=2)
    buffers.get("a", ALICE).add(BufferEntry("user", "a", "user"))
    buffers.get("b", ALICE)
    buffers.get("a", ALICE)
    buffers.get("c", ALICE)
    assert len(buffers) == 2
    assert buffers.get("a", ALICE).entries  # kept: used more recently than "b"


def test_keep_all_history_is_still_bounded() -> None:
    """`max_history` 0 keeps every turn up to MAX_KEPT_TURNS (plus a step), then trims."""
    buffer = TurnBuffer()
    for n in range(MAX_KEPT_TURNS + 10):
        buffer.add(BufferEntry("user", f"u{n}", "user"), BufferEntry("assistant", f"a{n}", "reply"))
    buffer.trim(0)
    users = [e for e in buffer.entries if e.kind == "user"]
    assert len(users) == MAX_KEPT_TURNS + 10  # within the step: not trimmed yet
    buffer.add(BufferEntry("user", "more", "user"))
    for _ in range(trim_step(MAX_KEPT_TURNS)):
        buffer.add(BufferEntry("user", "more", "user"))
    buffer.trim(0)
    assert len([e for e in buffer.entries if e.kind == "user"]) == MAX_KEPT_TURNS


def test_history_is_trimmed_in_steps_so_the_prefix_stays_put() -> None:
    """Between trims every prompt extends the previous one; a trim comes once per step."""
    buffer = TurnBuffer()
    prompts = []
    for n in range(40):
        buffer.add(BufferEntry("user", f"u{n}", "user"), BufferEntry("assistant", f"a{n}", "reply"))
        buffer.trim(20)
        prompts.append([m["content"] for m in buffer.messages(None)])
    kept = [len(p) // 2 for p in prompts]
    assert min(kept[20:]) == 20
    assert max(kept) == 20 + trim_step(20)
    changed_prefix = sum(
        1 for before, after in itertools.pairwise(prompts) if after[0] != before[0]
    )
    assert changed_prefix <= 40 // trim_step(20)  # not every turn, as a sliding window would
