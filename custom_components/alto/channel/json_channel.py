"""The JSON channel: the same three channels as the markers, carried by a constrained answer.

With Ollama's `format` set to `SCHEMA`, the model can only produce one JSON object
`{"speech": "...", "actions": ["...", ...], "thought": "..."}`: separation holds by construction,
whatever the model (a small one ignores markers it is merely asked to write). `speech` comes first
so it can stream: `JsonChannel.feed` decodes the speech string as its characters arrive (escapes
included), before the object is complete. The actions are read only from the whole object, parsed
strictly at the end; an object that does not parse yields no action. `thought` is never emitted,
and is bounded (THOUGHT_CHARS): the reply's end waits for it.

Not every model holds to `format` (some ignore it, a thinking model may weaken it), so the
answer is read as whatever it turns out to be, and no character of an object's syntax is ever
emitted:

- text before any object is plain speech: the model ignored the format (`plain` says so);
- an object after such text is still read for its speech; what follows the answer object is
  dropped;
- a code fence's backticks and info line ("```json") and a `<think>…</think>` block are dropped;
- actions are read only when the whole answer is the object (fenced or not, after a think block
  or not): an object wrapped in prose yields no action;
- the speech string is read the same way, one level down, so a model that writes an answer
  object inside its speech (an escaped `{"speech": "Hi"}` as the speech's text) speaks "Hi", and
  one whose speech is a lone "{" speaks nothing.
"""

from __future__ import annotations

import json
from enum import Enum, auto
from typing import Any, Final

THOUGHT_CHARS: Final = 160  # a sentence or two; what a constrained model may write there
SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "speech": {"type": "string"},
        "actions": {"type": "array", "items": {"type": "string"}},
        # Last and bounded: the turn ends when the answer does, and the thought is never heard.
        "thought": {"type": "string", "maxLength": THOUGHT_CHARS},
    },
    "required": ["speech", "actions", "thought"],
}
_SPEECH_KEY: Final = "speech"
_KEYS: Final = frozenset(SCHEMA["properties"])
_ESCAPES: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_THINK_OPEN: Final = "<think>"
_THINK_CLOSE: Final = "</think>"
_FENCE: Final = 3  # backticks that open a code fence; fewer are inline code marks
# Answers read inside speech strings, at most: each level doubles the escapes, so a deeper one
# is noise; its text is still spoken, through the gate that scrubs what syntax is left.
_LEVELS: Final = 3


class _Mode(Enum):
    START = auto()  # nothing but whitespace so far
    PROSE = auto()  # plain text: the model ignored the format
    FENCE = auto()  # the rest of a code fence's opening line
    THINK = auto()  # inside <think>…</think>
    OBJECT = auto()  # inside a JSON value
    AFTER = auto()  # the answer object has closed


class JsonChannel:
    """Feed raw deltas of a `SCHEMA` answer; emit the speech as it decodes, collect actions."""

    def __init__(self, *, _level: int = 0) -> None:
        """Start before the answer's first delta."""
        self._level = _level
        self._mode = _Mode.START
        self._resume = _Mode.START  # where a fence line or a think block returns to
        self._hold = ""  # the start of a fence or a think tag, not decided yet
        self._object: list[str] = []  # the raw text of the answer object
        self._stack: list[str] = []  # open containers, outside strings
        self._in_string = False
        self._escape = ""  # an escape sequence read so far ("\\", "\\u12", ...)
        self._key: list[str] | None = None  # the string being read, when it is a key
        self._last_key: str | None = None  # the last top-level key read
        self._after_colon = False  # the next value belongs to `_last_key`
        self._speaking = False  # inside the top-level speech string
        self._inner: JsonChannel | None = None  # reads the speech string, one level down
        self._answered = False  # the object has one of the answer's keys
        self._high_surrogate = ""
        self._extra = False  # text outside the object: its actions are not trusted
        self._spoken = False
        self.actions: list[str] = []
        self.plain = False  # text outside any object was spoken
        self.used_fallback = False  # the constrained answer has no unmarked fallback

    @property
    def spoke(self) -> bool:
        """Whether any speech was emitted."""
        return self._spoken

    def feed(self, delta: str) -> str:
        """Consume one raw delta; return the speech text decoded from it (maybe empty)."""
        speech = "".join(map(self._char, delta))
        self._spoken = self._spoken or bool(speech)
        return speech

    def finalize(self) -> str:
        """End of stream: read the actions from the whole object; return any speech held back.

        Held back: a "<" that might have begun a think tag. An unfinished fence or think block is
        dropped.
        """
        tail = ""
        if self._mode in (_Mode.START, _Mode.PROSE) and self._hold.strip("`"):
            tail = self._plain(self._hold)
        self._hold = ""
        if self._speaking and self._inner is not None:  # the stream ended inside the speech
            tail += self._inner.finalize()
        if self._mode is _Mode.AFTER and not self._extra:
            self._read_actions()
        self._spoken = self._spoken or bool(tail)
        return tail

    def _read_actions(self) -> None:
        try:
            answer = json.loads("".join(self._object))
        except ValueError:
            return
        actions = answer.get("actions") if isinstance(answer, dict) else None
        if isinstance(actions, list):
            self.actions = [a.strip() for a in actions if isinstance(a, str) and a.strip()]

    # -- outside the object ---------------------------------------------------------------------
    def _char(self, char: str) -> str:
        mode = self._mode
        if mode is _Mode.OBJECT:
            return self._object_char(char)
        if mode is _Mode.AFTER:
            self._extra = self._extra or not (char.isspace() or char == "`")
            return ""
        if mode is _Mode.FENCE:
            if char == "\n":
                self._mode = self._resume
            return ""
        if mode is _Mode.THINK:
            self._hold = (self._hold + char)[-len(_THINK_CLOSE) :]
            if self._hold == _THINK_CLOSE:
                self._hold, self._mode = "", self._resume
            return ""
        if self._hold or char in "`<":
            return self._held(char)
        if char == "{" or (char == "[" and mode is _Mode.START and not self._level):
            self._mode, self._stack, self._object = _Mode.OBJECT, [char], [char]
            self._answered = False
            return ""
        return self._plain(char)

    def _held(self, char: str) -> str:
        """A character after a "`" or "<": a fence, a think tag, or plain text after all."""
        self._hold += char
        hold = self._hold
        if _THINK_OPEN.startswith(hold):
            if hold == _THINK_OPEN:
                self._hold, self._resume, self._mode = "", self._mode, _Mode.THINK
            return ""
        if not hold.strip("`"):
            return ""
        self._hold = ""
        if hold[0] == "`":
            if len(hold) - 1 < _FENCE or char in "{[":  # inline code marks, or a one-line fence
                return self._char(char)
            if char != "\n":
                self._resume, self._mode = self._mode, _Mode.FENCE
            return ""
        return self._plain(hold[:-1]) + self._char(char)

    def _plain(self, text: str) -> str:
        if self._mode is _Mode.START:
            text = text.lstrip()
            if not text:
                return ""
        self._mode = _Mode.PROSE
        self._extra = True
        self.plain = True
        return text

    # -- inside the object ----------------------------------------------------------------------
    def _object_char(self, char: str) -> str:
        self._object.append(char)
        if self._in_string:
            return self._string_char(char)
        if char == '"':
            self._open_string()
        elif char in "{[":
            self._stack.append(char)
            self._after_colon = False
        elif char in "}]":
            self._stack.pop()
            if not self._stack:
                # Not an answer ("{name}" in plain text): the plain text goes on.
                self._mode = _Mode.AFTER if self._answered else _Mode.PROSE
        elif char == ":":
            self._after_colon = True
        elif char == ",":
            self._after_colon = False
        return ""

    def _open_string(self) -> None:
        self._in_string = True
        top = self._stack == ["{"]
        self._key = [] if top and not self._after_colon else None
        self._speaking = top and self._after_colon and self._last_key == _SPEECH_KEY
        if self._speaking:
            level = self._level + 1
            self._inner = JsonChannel(_level=level) if level < _LEVELS else None

    def _string_char(self, char: str) -> str:
        """One character inside a string; the decoded speech it adds, if any."""
        if self._escape:
            self._escape += char
            decoded = self._decode_escape()
            if decoded is None:
                return ""
            self._escape = ""
            return self._emit(decoded)
        if char == "\\":
            self._escape = "\\"
            return ""
        if char == '"':
            return self._close_string()
        return self._emit(char)

    def _decode_escape(self) -> str | None:
        """The text of a complete escape, or None while it is incomplete."""
        escape = self._escape
        if escape[1] != "u":
            return _ESCAPES.get(escape[1], "")
        if len(escape) < 6:
            return None
        code = int(escape[2:], 16) if all(c in "0123456789abcdefABCDEF" for c in escape[2:]) else 0
        if 0xD800 <= code < 0xDC00:  # the first half of a pair: wait for the second
            self._high_surrogate = chr(code)
            return ""
        if 0xDC00 <= code < 0xE000 and self._high_surrogate:
            pair = (self._high_surrogate + chr(code)).encode("utf-16", "surrogatepass")
            self._high_surrogate = ""
            return pair.decode("utf-16")
        return chr(code) if code and not 0xD800 <= code < 0xE000 else ""

    def _emit(self, text: str) -> str:
        if self._speaking:
            return self._inner.feed(text) if self._inner is not None else text
        if self._key is not None:
            self._key.append(text)
        return ""

    def _close_string(self) -> str:
        self._in_string = False
        tail = ""
        if self._speaking:
            self._speaking = False
            if self._inner is not None:
                tail, self._inner = self._inner.finalize(), None
        elif self._key is not None:
            self._last_key = "".join(self._key)
            self._answered = self._answered or self._last_key in _KEYS
        self._key = None
        if self._stack == ["{"]:  # a top-level key or value ended: no value is pending
            self._after_colon = False
        return tail
