"""Streaming marker channel over the model's raw deltas.

`¦…¦` (U+00A6) is speech and streams out as it arrives; `¤…¤` (U+00A4) is an action span,
captured whole and stripped; everything outside a pair is thought and is discarded.
Markers do not nest: a `¤` inside speech closes the speech and opens an action (an action is
never spoken), and a `¦` inside an action span is dropped (speech is never acted on).
"""

from __future__ import annotations

from enum import Enum, auto

SPEECH_MARK = "\u00a6"
ACTION_MARK = "\u00a4"


def neutralized(text: str) -> str:
    """`text` without either marker character.

    Untrusted text quoted into a prompt (a remembered sentence, an entity's name or state, a
    thought) could otherwise open or close a channel in what the model reads and copies.
    """
    return text.replace(SPEECH_MARK, "").replace(ACTION_MARK, "")


class _State(Enum):
    THOUGHT = auto()
    SPEECH = auto()
    ACTION = auto()


class MarkerChannel:
    """Three-state machine; feed raw deltas, emit speech text, collect action spans."""

    def __init__(self, *, plain_reply_fallback: bool = True) -> None:
        """Start in thought; `plain_reply_fallback` speaks an answer that has no marks."""
        self._fallback = plain_reply_fallback
        self._state = _State.THOUGHT
        self._action: list[str] = []
        self._pending_space = ""  # whitespace held back until more speech follows it
        self._span_started = False  # the current speech span has emitted a non-space char
        self._spoke = False  # some speech was emitted in this reply
        self._raw: list[str] = []  # kept only until the first marker, for the fallback
        self.actions: list[str] = []
        self.saw_marker = False
        self.used_fallback = False

    def feed(self, delta: str) -> str:
        """Consume one raw delta; return the speech text to emit now (maybe empty)."""
        if not self.saw_marker:
            self._raw.append(delta)
        out: list[str] = []
        for char in delta:
            if char == SPEECH_MARK:
                self.saw_marker = True
                self._on_speech_mark()
            elif char == ACTION_MARK:
                self.saw_marker = True
                self._on_action_mark()
            elif self._state is _State.SPEECH:
                out.append(self._speak(char))
            elif self._state is _State.ACTION:
                self._action.append(char)
        if self.saw_marker:
            self._raw.clear()
        return "".join(out)

    def finalize(self) -> str:
        """End of stream: capture a span left open; return any last speech (the fallback)."""
        if self._state is _State.ACTION:
            self._close_action()
        self._state = _State.THOUGHT
        if self.saw_marker or not self._fallback:
            return ""
        text = "".join(self._raw).strip()
        self._raw.clear()
        if text:
            self.used_fallback = True
            self._spoke = True
        return text

    @property
    def spoke(self) -> bool:
        """Whether any speech was emitted."""
        return self._spoke

    def _on_speech_mark(self) -> None:
        if self._state is _State.THOUGHT:
            self._state = _State.SPEECH
            self._span_started = False
            self._pending_space = ""
        elif self._state is _State.SPEECH:
            self._state = _State.THOUGHT
        # Inside an action span the speech mark is dropped.

    def _on_action_mark(self) -> None:
        if self._state is _State.ACTION:
            self._close_action()
            self._state = _State.THOUGHT
        else:
            self._state = _State.ACTION
            self._action = []

    def _speak(self, char: str) -> str:
        if char.isspace():
            if self._span_started:
                self._pending_space += char
            return ""
        prefix = ""
        if not self._span_started:
            self._span_started = True
            # Consecutive speech spans are joined with exactly one space.
            prefix = " " if self._spoke else ""
        else:
            prefix, self._pending_space = self._pending_space, ""
        self._spoke = True
        return prefix + char

    def _close_action(self) -> None:
        span = "".join(self._action).strip()
        self._action = []
        if span:
            self.actions.append(span)
