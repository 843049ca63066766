"""The two call prompts, their byte accounting and output reservations.

Call 1 (statement labels). System: `profile.STATEMENT_INSTRUCTION`. User::

    actor: <32 lowercase hex | unknown>
    <source>
    1: "first span, JSON-escaped"
    2: "second span"
    </source>

Its response is one JSON array with one item per span, in order, repeats included::

    [["first span, JSON-escaped", "statement"], ["second span", "request"]]

Labels are the exact unescaped literals ``"statement"`` (kind 3) and ``"request"`` (kind 0).

Call 2 (classification of the accepted statements). System:
`profile.CLASSIFICATION_INSTRUCTION`. User::

    actor: <actor>
    <corrections>
    1. source="conv-1/turn-3" version=1 actor=unknown quote="The bins go out on Tuesday."
    </corrections>
    <statements>
    1: "Actually the bins go out on Wednesday."
    </statements>

Its response is one JSON array: first one required item per accepted statement, in order,
``[3, quote]`` (assertion) or ``[4, quote, target]`` (correction of table entry `target`,
1-based), then optional ``[1, quote]`` (participant mention) and ``[2, quote]`` (task mention)
items whose quote occurs exactly once in the original source, inside an accepted statement.
An empty accepted list skips call 2 (its recorded response is ``[]``).

Spans are escaped as compact JSON strings (quote, backslash, TAB and LF are the only escapes
admitted text can need; other UTF-8 bytes stay raw). Prompt size is the UTF-8 byte count of all
message contents, bounded by `MAX_PROMPT_BYTES`; the model's chat-template wrap is Ollama's and
outside this count. Reservations use E, the total compact escaped bytes of the quotes without
their quote marks, and K, their count: call 1 reserves ``1 + E + 17*K`` (``[`` then per item
``["…","statement"]`` plus a separator or the closing ``]``), call 2 ``1 + E + 10*K``
(``[4,"…",16],`` at most), zero spans reserve 2 (``[]``). Over `MAX_RESPONSE_BYTES` refuses
before the call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..model.calls import Message
from .records import TableEntry

MAX_PROMPT_BYTES = 6144
MAX_RESPONSE_BYTES = 4096
MAX_ITEMS = 512
MAX_TABLE_ENTRIES = 16
MAX_TABLE_BYTES = 4096


def escape(text: str) -> str:
    """Compact JSON string literal of `text`, non-ASCII kept as raw UTF-8."""
    return json.dumps(text, ensure_ascii=False)


def _escaped_bytes(quotes: Sequence[str]) -> int:
    return sum(len(escape(quote).encode("utf-8")) - 2 for quote in quotes)


def statement_reservation(spans: Sequence[str]) -> int:
    """Call 1 output reservation: 1 + E + 17K, or 2 for zero spans."""
    return 1 + _escaped_bytes(spans) + 17 * len(spans) if spans else 2


def classification_reservation(statements: Sequence[str]) -> int:
    """Call 2 output reservation for its required items: 1 + E + 10K, or 2 for none."""
    return 1 + _escaped_bytes(statements) + 10 * len(statements) if statements else 2


def prompt_bytes(messages: Sequence[Message]) -> int:
    """Exact UTF-8 bytes of every message content."""
    return sum(len(message["content"].encode("utf-8")) for message in messages)


def _numbered(lines: Sequence[str]) -> str:
    return "".join(f"{number}: {escape(line)}\n" for number, line in enumerate(lines, 1))


def statement_messages(instruction: str, actor: str, spans: Sequence[str]) -> list[Message]:
    """Call 1 messages: actor before <source>, numbered escaped spans before </source>."""
    user = f"actor: {actor}\n<source>\n{_numbered(spans)}</source>\n"
    return [{"role": "system", "content": instruction}, {"role": "user", "content": user}]


def render_table_entry(entry: TableEntry) -> str:
    """One correction-table line: index, source reference, source actor, exact quote."""
    return (
        f"{entry.index}. source={escape(entry.source_id)} version={entry.source_version} "
        f"actor={entry.actor} quote={escape(entry.quote)}\n"
    )


def table_bytes(entries: Sequence[TableEntry]) -> int:
    """Rendered bytes of a correction table."""
    return sum(len(render_table_entry(entry).encode("utf-8")) for entry in entries)


def classification_messages(
    instruction: str, actor: str, statements: Sequence[str], table: Sequence[TableEntry]
) -> list[Message]:
    """Call 2 messages: actor, correction table, numbered escaped accepted statements."""
    rendered = "".join(render_table_entry(entry) for entry in table)
    user = (
        f"actor: {actor}\n<corrections>\n{rendered}</corrections>\n"
        f"<statements>\n{_numbered(statements)}</statements>\n"
    )
    return [{"role": "system", "content": instruction}, {"role": "user", "content": user}]


def table_capacity(instruction: str, actor: str, statements: Sequence[str]) -> int:
    """Bytes left for the correction table after every fixed call-2 byte; negative: no room."""
    fixed = prompt_bytes(classification_messages(instruction, actor, statements, ()))
    return min(MAX_TABLE_BYTES, MAX_PROMPT_BYTES - fixed)
