r"""Strict, complete parsing of both call responses.

Each parser takes the COMPLETE raw response and returns either a parse or a `Refusal`; it never
raises and never repairs. The grammar is RFC 8259 JSON read by a small reader of our own because
`json.loads` cannot say whether a label was written with escapes, accepts NaN, and cannot bound
whitespace runs. Rules checked before any item is interpreted:

- at most `MAX_RESPONSE_BYTES` UTF-8 bytes (a string with lone surrogates is malformed);
- exactly one JSON value, an array; anything after it is `TRAILING_DATA` (prose);
- at most 8 consecutive whitespace bytes (space, TAB, CR, LF) outside strings;
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

from .prompts import MAX_ITEMS, MAX_RESPONSE_BYTES
from .reasons import Reason, Refusal
from .records import INFERRED_ASSERTIONS, MENTIONS, Kind

MAX_GAP = 8
# Our shapes nest two arrays deep; deeper input is a bad item, and bounding depth keeps the
# recursive reader far from Python's recursion limit on hostile output like 4,096 brackets.
MAX_DEPTH = 2
REQUEST = 0  # call 1's "request" label; a "statement" is kind 3, an assertion
LABELS: dict[str, int] = {"statement": Kind.ASSERTION, "request": REQUEST}
_WS = " \t\r\n"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class _Str(str):
    """A decoded JSON string that remembers whether its raw form used escapes."""

    __slots__ = ("escaped",)
    escaped: bool


class _Bad(Exception):
    """Internal control flow of the parser; always turned into a `Refusal`."""

    def __init__(self, reason: Reason, detail: str = "") -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class _NotInt:
    """A valid JSON number that is not a plain non-negative integer."""


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def fail(self, detail: str) -> _Bad:
        return _Bad(Reason.MALFORMED_JSON, f"{detail} at {self.pos}")

    def gap(self) -> None:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in _WS:
            self.pos += 1
        if self.pos - start > MAX_GAP:
            raise _Bad(Reason.WHITESPACE_RUN, f"{self.pos - start} bytes at {start}")

    def value(self) -> object:
        self.gap()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end")
        char = self.text[self.pos]
        if char in "[{":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _Bad(Reason.BAD_ITEM, f"nesting deeper than {MAX_DEPTH} at {self.pos}")
            result = self.array() if char == "[" else self.obj()
            self.depth -= 1
            return result
        if char == '"':
            return self.string()
        if char == "-" or char.isdigit():
            return self.number()
        for word, literal in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        raise self.fail("unexpected character")

    def array(self) -> list[object]:
        self.pos += 1
        items: list[object] = []
        self.gap()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return items
        while True:
            items.append(self.value())
            self.gap()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif self.text.startswith("]", self.pos):
                self.pos += 1
                return items
            else:
                raise self.fail("expected , or ]")

    def obj(self) -> dict[str, object]:
        self.pos += 1
        result: dict[str, object] = {}
        self.gap()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return result
        while True:
            self.gap()
            if not self.text.startswith('"', self.pos):
                raise self.fail("expected key")
            key = self.string()
            self.gap()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected :")
            self.pos += 1
            result[key] = self.value()
            self.gap()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif self.text.startswith("}", self.pos):
                self.pos += 1
                return result
            else:
                raise self.fail("expected , or }")

    def number(self) -> int | _NotInt:
        start = self.pos
        text = self.text
        if text.startswith("-", self.pos):
            self.pos += 1
        digits = self.pos
        while self.pos < len(text) and text[self.pos] in "0123456789":
            self.pos += 1
        if self.pos == digits or (text[digits] == "0" and self.pos - digits > 1):
            raise self.fail("bad number")
        plain = text[start] != "-"
        if text.startswith(".", self.pos):
            plain = False
            self.pos += 1
            self.digits()
        if self.pos < len(text) and text[self.pos] in "eE":
            plain = False
            self.pos += 1
            if self.pos < len(text) and text[self.pos] in "+-":
                self.pos += 1
            self.digits()
        return int(text[start : self.pos]) if plain else _NotInt()

    def digits(self) -> None:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in "0123456789":
            self.pos += 1
        if self.pos == start:
            raise self.fail("bad number")

    def string(self) -> _Str:
        self.pos += 1
        parts: list[str] = []
        escaped = False
        text = self.text
        while True:
            if self.pos >= len(text):
                raise self.fail("unterminated string")
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                break
            if ord(char) < 0x20:
                raise self.fail("raw control character in string")
            if char != "\\":
                parts.append(char)
                self.pos += 1
                continue
            escaped = True
            code = text[self.pos + 1 : self.pos + 2]
            if code in _ESCAPES:
                parts.append(_ESCAPES[code])
                self.pos += 2
            elif code == "u":
                parts.append(self.unicode_escape())
            else:
                raise self.fail("bad escape")
        result = _Str("".join(parts))
        result.escaped = escaped
        return result

    def hex4(self) -> int:
        digits = self.text[self.pos + 2 : self.pos + 6]
        if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise self.fail("bad \\u escape")
        self.pos += 6
        return int(digits, 16)

    def unicode_escape(self) -> str:
        high = self.hex4()
        if 0xDC00 <= high <= 0xDFFF:
            raise self.fail("lone low surrogate")
        if not 0xD800 <= high <= 0xDBFF:
            return chr(high)
        if not self.text.startswith("\\u", self.pos):
            raise self.fail("lone high surrogate")
        low = self.hex4()
        if not 0xDC00 <= low <= 0xDFFF:
            raise self.fail("bad surrogate pair")
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def _items(response: object) -> list[object]:
    """The top-level array of a complete response, or raise _Bad."""
    if not isinstance(response, str):
        raise _Bad(Reason.MALFORMED_JSON, "response is not text")
    try:
        size = len(response.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise _Bad(Reason.MALFORMED_JSON, "response is not valid UTF-8") from err
    if size > MAX_RESPONSE_BYTES:
        raise _Bad(Reason.RESPONSE_TOO_LARGE, f"{size} bytes")
    reader = _Reader(response)
    value = reader.value()
    reader.gap()
    if reader.pos != len(response):
        raise _Bad(Reason.TRAILING_DATA, f"at {reader.pos}")
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
