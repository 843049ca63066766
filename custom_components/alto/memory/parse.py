r"""Strict, complete parsing of both call responses.

Each parser takes the COMPLETE raw response and returns either a parse or a `Refusal`; it never
raises and never repairs. The response is RFC 8259 JSON read by `model.strict_json.read` (which
also says whether a string was written with escapes), with these bounds, checked before any item
is interpreted:

- at most `MAX_RESPONSE_BYTES` UTF-8 bytes (a string with lone surrogates is malformed);
- exactly one JSON value, an array; anything after it is `TRAILING_DATA` (prose); any other
  departure from JSON (NaN included) is `MALFORMED_JSON`;
- at most 8 consecutive whitespace bytes (space, TAB, CR, LF) outside strings;
- arrays nested at most two deep (deeper is a bad item);
- strings: JSON escapes, UTF-16 surrogate pairs in ``\u`` escapes, decoded text made of scalar
  values only; numbers: plain non-negative integers (anything else is a bad item);
- at most `MAX_ITEMS` items.

Call 1 (`parse_statements`): one ``[quote, label]`` pair per span in order; quote decodes to the
exact span; label is written exactly ``"statement"`` or ``"request"`` (no escape forms).

Call 2 (`parse_classification`): first one item per accepted statement in order, ``[3, quote]``
or ``[4, quote, target]`` with target in 1..table size; then ``[1, quote]``/``[2, quote]``
mentions whose UTF-8 quote occurs exactly once in the original source and lies inside an accepted
statement span, each (kind, quote) once. A required kind after a mention is `ORDER`.

Passing the parser proves coverage and exact quoting, not that a label is right or an assertion
true.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model.strict_json import Fault, JsonFault, read
from .prompts import MAX_ITEMS, MAX_RESPONSE_BYTES
from .reasons import Reason, Refusal
from .records import INFERRED_ASSERTIONS, MENTIONS, Kind

MAX_GAP = 8
# Our shapes nest two arrays deep; deeper input is a bad item.
MAX_DEPTH = 2
REQUEST = 0  # call 1's "request" label; a "statement" is kind 3, an assertion
LABELS: dict[str, int] = {"statement": Kind.ASSERTION, "request": REQUEST}
# What each shared reading rule's fault is here; the reader's depth bound is our item shape.
_REASONS = {
    Fault.NOT_TEXT: Reason.MALFORMED_JSON,
    Fault.TOO_LARGE: Reason.RESPONSE_TOO_LARGE,
    Fault.SYNTAX: Reason.MALFORMED_JSON,
    Fault.TRAILING: Reason.TRAILING_DATA,
    Fault.WHITESPACE_RUN: Reason.WHITESPACE_RUN,
    Fault.TOO_DEEP: Reason.BAD_ITEM,
    Fault.DUPLICATE_KEY: Reason.MALFORMED_JSON,
}


class _Str(str):
    """A decoded JSON string that remembers whether its raw form used escapes."""

    __slots__ = ("escaped",)
    escaped: bool


def _string(text: str, escaped: bool) -> _Str:
    result = _Str(text)
    result.escaped = escaped
    return result


class _Bad(Exception):
    """Internal control flow of the parser; always turned into a `Refusal`."""

    def __init__(self, reason: Reason, detail: str = "") -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class _NotInt:
    """A valid JSON number that is not a plain non-negative integer."""


def _number(literal: str) -> int | _NotInt:
    """A plain non-negative integer literal's value; any other number is a bad item later."""
    return int(literal) if literal.isdigit() else _NotInt()


def _items(response: object) -> list[object]:
    """The top-level array of a complete response, or raise _Bad."""
    try:
        # No object is an item of ours, so duplicate keys are not looked for: any object is
        # refused as NOT_ARRAY or as a bad item.
        value = read(
            response,
            MAX_RESPONSE_BYTES,
            number=_number,
            string=_string,
            max_gap=MAX_GAP,
            max_depth=MAX_DEPTH,
        )
    except JsonFault as fault:
        raise _Bad(_REASONS[fault.fault], fault.detail) from None
    if not isinstance(value, list):
        raise _Bad(Reason.NOT_ARRAY)
    if len(value) > MAX_ITEMS:
        raise _Bad(Reason.TOO_MANY_ITEMS, f"{len(value)} items")
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Statements:
    """Call-1 result: the kind of every span in order (3 statement, 0 request)."""

    kinds: tuple[int, ...]

    @property
    def accepted(self) -> tuple[int, ...]:
        """Positions of the statement spans."""
        return tuple(i for i, kind in enumerate(self.kinds) if kind == Kind.ASSERTION)


def parse_statements(response: object, spans: Sequence[str]) -> Statements | Refusal:
    """Parse call 1 against the exact ordered spans."""
    try:
        items = _items(response)
        if len(items) != len(spans):
            raise _Bad(Reason.ITEM_COUNT, f"{len(items)} items for {len(spans)} spans")
        kinds = []
        for position, (item, span) in enumerate(zip(items, spans, strict=True)):
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], _Str)):
                raise _Bad(Reason.BAD_ITEM, f"item {position}")
            if item[0] != span:
                raise _Bad(Reason.QUOTE_MISMATCH, f"item {position}")
            label = item[1]
            if not isinstance(label, _Str) or label.escaped or label not in LABELS:
                raise _Bad(Reason.BAD_LABEL, f"item {position}")
            kinds.append(LABELS[label])
        return Statements(tuple(kinds))
    except _Bad as bad:
        return Refusal(bad.reason, detail=bad.detail)


@dataclass(frozen=True, slots=True)
class Mention:
    """An optional quote: kind 1 or 2, its text and its UTF-8 offset in the original source."""

    kind: Kind
    quote: str
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class Classification:
    """Call-2 result: per accepted statement (kind 3 or 4, 1-based target or 0), then mentions."""

    required: tuple[tuple[Kind, int], ...]
    mentions: tuple[Mention, ...]


def _unique_offset(source: bytes, quote: bytes) -> int | None:
    """Offset of the only occurrence of `quote` in `source` (overlaps counted), else None."""
    first = source.find(quote)
    if not quote or first < 0 or source.find(quote, first + 1) >= 0:
        return None
    return first


def _required(item: object, statement: str, table_size: int, position: int) -> tuple[Kind, int]:
    if not (isinstance(item, list) and item and _is_int(item[0])):
        raise _Bad(Reason.BAD_ITEM, f"item {position}")
    kind = item[0]
    if kind in MENTIONS:
        raise _Bad(Reason.ITEM_COUNT, f"mention at {position} before every statement")
    if kind not in INFERRED_ASSERTIONS or len(item) != (2 if kind == Kind.ASSERTION else 3):
        bad = Reason.BAD_KIND if kind not in INFERRED_ASSERTIONS else Reason.BAD_ITEM
        raise _Bad(bad, f"item {position}")
    if not isinstance(item[1], _Str):
        raise _Bad(Reason.BAD_ITEM, f"item {position}")
    if item[1] != statement:
        raise _Bad(Reason.QUOTE_MISMATCH, f"item {position}")
    if kind == Kind.ASSERTION:
        return (Kind.ASSERTION, 0)
    target = item[2]
    if not _is_int(target) or not 1 <= target <= table_size:
        raise _Bad(Reason.INVALID_TARGET, f"item {position}")
    return (Kind.CORRECTION, target)


def parse_classification(
    response: object,
    source: str,
    statements: Sequence[tuple[int, int]],
    table_size: int,
) -> Classification | Refusal:
    """Parse call 2 against the original source, the accepted (start, end) spans and the table."""
    data = source.encode("utf-8")
    texts = [data[start:end].decode("utf-8") for start, end in statements]
    try:
        items = _items(response)
        if len(items) < len(texts):
            raise _Bad(Reason.ITEM_COUNT, f"{len(items)} items for {len(texts)} statements")
        required = tuple(
            _required(item, text, table_size, position)
            for position, (item, text) in enumerate(zip(items, texts, strict=False))
        )
        mentions: list[Mention] = []
        seen: set[tuple[int, str]] = set()
        for position, item in enumerate(items[len(texts) :], len(texts)):
            if not (isinstance(item, list) and len(item) == 2 and _is_int(item[0])):
                raise _Bad(Reason.BAD_ITEM, f"item {position}")
            kind, quote = item
            if kind in INFERRED_ASSERTIONS:
                raise _Bad(Reason.ORDER, f"required kind at {position}")
            if kind not in MENTIONS:
                raise _Bad(Reason.BAD_KIND, f"item {position}")
            if not isinstance(quote, _Str):
                raise _Bad(Reason.BAD_ITEM, f"item {position}")
            if (kind, quote) in seen:
                raise _Bad(Reason.DUPLICATE_MENTION, f"item {position}")
            seen.add((kind, quote))
            encoded = quote.encode("utf-8")
            offset = _unique_offset(data, encoded)
            if offset is None:
                raise _Bad(Reason.QUOTE_NOT_UNIQUE, f"item {position}")
            end = offset + len(encoded)
            if not any(start <= offset and end <= stop for start, stop in statements):
                raise _Bad(Reason.QUOTE_OUTSIDE_STATEMENT, f"item {position}")
            mentions.append(Mention(Kind(kind), str(quote), offset, len(encoded)))
        return Classification(required, tuple(mentions))
    except _Bad as bad:
        return Refusal(bad.reason, detail=bad.detail)
