r"""Strict reading of one complete model answer as RFC 8259 JSON: refused, never repaired.

Memory's parser (arrays of call-1 and call-2 items) and the reflect passes (objects of exact
shapes) both read a model's whole answer with `read`; what the value must then be is each
caller's own grammar, and so is the refusal reason each `Fault` becomes. `json.loads` is not
used: it cannot bound whitespace runs, cannot say whether a string was written with escapes, and
accepts NaN, Infinity and lone surrogates.

Rules every reading shares, each failure a `JsonFault`:

- the answer is a `str` with no lone surrogate (`NOT_TEXT`) of at most `max_bytes` UTF-8 bytes
  (`TOO_LARGE`);
- it is exactly one JSON value with optional whitespace (space, TAB, CR, LF) around it; anything
  after that value is `TRAILING` (typically prose after the answer);
- every other departure from RFC 8259 is `SYNTAX`: NaN and Infinity, raw control characters in a
  string, unknown escapes, a ``\u`` escape of a lone surrogate (strings decode to Unicode scalar
  values only), a number such as ``01``, ``1.`` or ``-``;
- a number's literal, already checked against the RFC grammar, goes to the caller's `number`,
  which returns the value to keep or raises its own exception to refuse the answer (a
  `ValueError`, an integer too long for `int`, is `SYNTAX`); each string value goes to `string`
  with whether its raw form used an escape (object keys are plain `str`);
- optional bounds, off unless asked for: the longest whitespace run outside strings
  (`WHITESPACE_RUN`), the nesting depth (`TOO_DEEP`, as a container opens), duplicate keys
  (`DUPLICATE_KEY`, as their object closes).

Faults are raised in reading order, the first one wins. The reader keeps open containers on a
list instead of recursing, so hostile nesting cannot reach Python's recursion limit, and scans
plain string runs and whitespace with regular expressions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

_WS = re.compile(r"[ \t\r\n]+")
_PLAIN = re.compile(r'[^"\\\x00-\x1f]+')
_DIGITS = re.compile(r"[0-9]+")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS = (("true", True), ("false", False), ("null", None))


class Fault(StrEnum):
    """Which shared rule an answer broke (see the module docstring)."""

    NOT_TEXT = "not_text"
    TOO_LARGE = "too_large"
    SYNTAX = "syntax"
    TRAILING = "trailing"
    WHITESPACE_RUN = "whitespace_run"
    TOO_DEEP = "too_deep"
    DUPLICATE_KEY = "duplicate_key"


class JsonFault(Exception):
    """An answer that is not one strictly read JSON value: the rule broken and where."""

    def __init__(self, fault: Fault, detail: str) -> None:
        """Fault `fault`; `detail` says where (a character offset) or how much."""
        super().__init__(f"{fault}: {detail}")
        self.fault = fault
        self.detail = detail


def _plain_string(text: str, escaped: bool) -> str:
    return text


@dataclass(slots=True)
class _Open:
    """A container being read: its keys (an object's) and values so far."""

    closer: str
    keys: list[str] = field(default_factory=list)
    values: list[object] = field(default_factory=list)


class _Reader:
    def __init__(
        self,
        text: str,
        *,
        number: Callable[[str], object],
        string: Callable[[str, bool], object],
        max_gap: int | None,
        max_depth: int | None,
        unique_keys: bool,
    ) -> None:
        self.text = text
        self.pos = 0
        self.number_value = number
        self.string_value = string
        self.max_gap = max_gap
        self.max_depth = max_depth
        self.unique_keys = unique_keys

    def fail(self, what: str) -> JsonFault:
        return JsonFault(Fault.SYNTAX, f"{what} at {self.pos}")

    def document(self) -> object:
        value = self.value()
        self.gap()
        if self.pos != len(self.text):
            raise JsonFault(Fault.TRAILING, f"at {self.pos}")
        return value

    def gap(self) -> None:
        start = self.pos
        if run := _WS.match(self.text, start):
            self.pos = run.end()
        if self.max_gap is not None and self.pos - start > self.max_gap:
            raise JsonFault(Fault.WHITESPACE_RUN, f"{self.pos - start} bytes at {start}")

    def value(self) -> object:
        """One value; each container stays open on `stack` until its closer is read."""
        stack: list[_Open] = []
        while True:
            self.gap()
            char = self.text[self.pos : self.pos + 1]
            value: object
            if char in ("[", "{"):
                if self.max_depth is not None and len(stack) >= self.max_depth:
                    raise JsonFault(
                        Fault.TOO_DEEP, f"nesting deeper than {self.max_depth} at {self.pos}"
                    )
                self.pos += 1
                opened = _Open("]" if char == "[" else "}")
                self.gap()
                if not self.text.startswith(opened.closer, self.pos):
                    stack.append(opened)
                    if opened.closer == "}":
                        self.key(opened)
                    continue
                self.pos += 1
                value = self.close(opened)
            else:
                value = self.scalar(char)
            while stack:  # the value ends an item; a closer after it ends its container too
                current = stack[-1]
                current.values.append(value)
                self.gap()
                if self.text.startswith(",", self.pos):
                    self.pos += 1
                    if current.closer == "}":
                        self.key(current)
                    break
                if not self.text.startswith(current.closer, self.pos):
                    raise self.fail(f"expected , or {current.closer}")
                self.pos += 1
                stack.pop()
                value = self.close(current)
            else:
                return value

    def key(self, current: _Open) -> None:
        self.gap()
        if not self.text.startswith('"', self.pos):
            raise self.fail("expected key")
        current.keys.append(self.string()[0])
        self.gap()
        if not self.text.startswith(":", self.pos):
            raise self.fail("expected :")
        self.pos += 1

    def close(self, done: _Open) -> object:
        if done.closer == "]":
            return done.values
        result = dict(zip(done.keys, done.values, strict=True))
        if self.unique_keys and len(result) != len(done.keys):
            raise JsonFault(Fault.DUPLICATE_KEY, f"in the object ending at {self.pos - 1}")
        return result

    def scalar(self, char: str) -> object:
        if not char:
            raise self.fail("unexpected end")
        if char == '"':
            return self.string_value(*self.string())
        if char == "-" or char in "0123456789":
            return self.number()
        for word, literal in _LITERALS:
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        raise self.fail("unexpected character")

    def number(self) -> object:
        start = self.pos
        text = self.text
        if text.startswith("-", self.pos):
            self.pos += 1
        first = self.pos
        self.digits()
        if text[first] == "0" and self.pos - first > 1:
            raise self.fail("bad number")
        if text.startswith(".", self.pos):
            self.pos += 1
            self.digits()
        if text.startswith(("e", "E"), self.pos):
            self.pos += 1
            if text.startswith(("+", "-"), self.pos):
                self.pos += 1
            self.digits()
        try:
            return self.number_value(text[start : self.pos])
        except ValueError as err:
            raise self.fail("number out of range") from err

    def digits(self) -> None:
        run = _DIGITS.match(self.text, self.pos)
        if run is None:
            raise self.fail("bad number")
        self.pos = run.end()

    def string(self) -> tuple[str, bool]:
        """The decoded string at `pos` and whether its raw form used an escape."""
        self.pos += 1
        parts: list[str] = []
        escaped = False
        text = self.text
        while True:
            if run := _PLAIN.match(text, self.pos):
                parts.append(run.group())
                self.pos = run.end()
            if self.pos >= len(text):
                raise self.fail("unterminated string")
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                return "".join(parts), escaped
            if char != "\\":
                raise self.fail("raw control character in string")
            escaped = True
            code = text[self.pos + 1 : self.pos + 2]
            if code in _ESCAPES:
                parts.append(_ESCAPES[code])
                self.pos += 2
            elif code == "u":
                parts.append(self.unicode_escape())
            else:
                raise self.fail("bad escape")

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


def read(
    raw: object,
    max_bytes: int,
    *,
    number: Callable[[str], object],
    string: Callable[[str, bool], object] = _plain_string,
    max_gap: int | None = None,
    max_depth: int | None = None,
    unique_keys: bool = False,
) -> object:
    """The one JSON value `raw` holds, strictly read, or `JsonFault` (see the module docstring).

    `number(literal)` and `string(text, escaped)` give the value kept for each number and each
    string value; `max_gap` bounds whitespace runs, `max_depth` nesting, and `unique_keys`
    refuses an object that names a key twice.
    """
    if not isinstance(raw, str):
        raise JsonFault(Fault.NOT_TEXT, "not text")
    try:
        size = len(raw.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise JsonFault(Fault.NOT_TEXT, "not valid UTF-8") from err
    if size > max_bytes:
        raise JsonFault(Fault.TOO_LARGE, f"{size} bytes")
    reader = _Reader(
        raw,
        number=number,
        string=string,
        max_gap=max_gap,
        max_depth=max_depth,
        unique_keys=unique_keys,
    )
    return reader.document()
