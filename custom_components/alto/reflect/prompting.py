"""How the passes show turns and ledger lines to the model, and the byte budgets they fit in.

Untrusted text (what a person or Alto said, a ledger line) is shown as a compact JSON string
with both channel marker characters removed (`channel.markers.neutralized`), so it can neither
break the prompt's layout nor open a channel in what the model reads. A turn is a block::

    T12 (2026-05-15 10:42)
    person: "Turn off the kitchen light. I'll call the plumber tomorrow."
    alto: "Done, the kitchen light is off."
    effector: executed light.turn_off light.kitchen

Sizes are UTF-8 bytes of the message contents (Ollama's chat template is outside the count).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..channel.markers import neutralized
from ..model.calls import Message
from .records import LedgerEntry, Turn, minute


def quoted(text: str) -> str:
    """`text` as a compact JSON string, without channel markers."""
    return json.dumps(neutralized(text), ensure_ascii=False)


def turn_block(turn: Turn) -> str:
    """The block the model reads for one turn."""
    effector = "; ".join(
        " ".join(filter(None, (o.verdict, o.service, o.entity_id))) for o in turn.outcomes
    )
    return (
        f"T{turn.n} ({minute(turn.at)})\n"
        f"person: {quoted(turn.utterance)}\n"
        f"alto: {quoted(turn.reply)}\n"
        f"effector: {effector or 'nothing'}"
    )


def ledger_block(entry: LedgerEntry) -> str:
    """``L7 commitments [2026-05-15 10:42] "content" (T3, T5)``."""
    cites = ", ".join(f"T{n}" for n in entry.turns)
    return f"L{entry.id} {entry.ledger} [{minute(entry.at)}] {quoted(entry.content)} ({cites})"


def size(messages: Sequence[Message]) -> int:
    """UTF-8 bytes of all message contents."""
    return sum(len(m["content"].encode("utf-8")) for m in messages)


def fitting(blocks: Sequence[str], budget: int) -> int:
    """How many of `blocks`, from the first, fit in `budget` bytes joined by blank lines."""
    used = 0
    for count, block in enumerate(blocks):
        used += len(block.encode("utf-8")) + 2
        if used > budget:
            return count
    return len(blocks)


def messages(instruction: str, user: str) -> list[Message]:
    """The system instruction and the user content of one call."""
    return [{"role": "system", "content": instruction}, {"role": "user", "content": user}]
