"""The JSON channel: the same three channels as the markers, carried by a constrained answer.

With Ollama's `format` set to `SCHEMA`, the model can only produce one JSON object
`{"speech": "...", "actions": ["...", ...], "thought": "..."}`: separation holds by construction,
whatever the model (a small one ignores markers it is merely asked to write). `speech` comes first
so it can stream: `JsonChannel.feed` decodes the speech string as its characters arrive (escapes
included), before the object is complete. The actions are read only from the whole object, parsed
strictly at the end; an object that does not parse yields no action. `thought` is never emitted.
"""

from __future__ import annotations

import json
from typing import Any, Final

SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "speech": {"type": "string"},
        "actions": {"type": "array", "items": {"type": "string"}},
        "thought": {"type": "string"},
    },
    "required": ["speech", "actions", "thought"],
}
_SPEECH_KEY: Final = "speech"
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


class JsonChannel:
    """Feed raw deltas of a `SCHEMA` answer; emit the speech as it decodes, collect actions."""

    def __init__(self) -> None:
        """Start before the answer's first delta."""
        self._raw: list[str] = []
        self._depth = 0  # object/array nesting outside strings
        self._in_string = False
        self._escape = ""  # an escape sequence read so far ("\\", "\\u12", ...)
        self._string: list[str] = []  # the string being read, when it is a key
        self._last_key: str | None = None  # the last top-level key read
        self._after_colon = False  # the next value belongs to `_last_key`
        self._speaking = False  # inside the top-level speech string
        self._high_surrogate = ""
        self._spoken = False
        self.actions: list[str] = []
        self.used_fallback = False  # the constrained answer has no unmarked fallback

    @property
    def spoke(self) -> bool:
        """Whether any speech was emitted."""
        return self._spoken

    def feed(self, delta: str) -> str:
        """Consume one raw delta; return the speech text decoded from it (maybe empty)."""
        self._raw.append(delta)
        out: list[str] = []
        for char in delta:
            if self._in_string:
                out.append(self._string_char(char))
            else:
                self._structure_char(char)
        speech = "".join(out)
        self._spoken = self._spoken or bool(speech)
        return speech

    def finalize(self) -> str:
        """End of stream: read the actions from the whole object; nothing more is spoken."""
        try:
            answer = json.loads("".join(self._raw))
        except ValueError:
            return ""
        actions = answer.get("actions") if isinstance(answer, dict) else None
        if isinstance(actions, list):
            self.actions = [a.strip() for a in actions if isinstance(a, str) and a.strip()]
        return ""

    def _structure_char(self, char: str) -> None:
        if char == '"':
            self._in_string = True
            self._string = []
            self._speaking = (
                self._depth == 1 and self._after_colon and (self._last_key == _SPEECH_KEY)
            )
        elif char in "{[":
            self._depth += 1
            self._after_colon = False
        elif char in "}]":
            self._depth -= 1
        elif char == ":":
            self._after_colon = True
        elif char == ",":
            self._after_colon = False

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
            self._close_string()
            return ""
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
            return text
        if self._depth == 1 and not self._after_colon:
            self._string.append(text)
        return ""

    def _close_string(self) -> None:
        self._in_string = False
        if self._speaking:
            self._speaking = False
        elif self._depth == 1 and not self._after_colon:
            self._last_key = "".join(self._string)
        if self._depth == 1:  # a top-level key or value ended: no value is pending
            self._after_colon = False
