"""Input admission: what text a turn accepts before anything else sees it."""

from __future__ import annotations

from enum import StrEnum

MAX_INPUT_BYTES = 4096


class Inadmissible(StrEnum):
    """Why an utterance was refused; each value is a translation key."""

    INVALID_UTF8 = "input_invalid_utf8"
    CONTROL_CHARACTER = "input_control_character"
    TOO_LONG = "input_too_long"
    EMPTY = "input_empty"


def _forbidden(char: str) -> bool:
    # C0 controls other than TAB and LF (so NUL and CR too), DEL, and C1 controls.
    code = ord(char)
    if char in "\t\n":
        return False
    return code < 0x20 or code == 0x7F or 0x80 <= code <= 0x9F


def admit(text: str | bytes) -> Inadmissible | None:
    """Return None when the text may enter a turn, else the reason it is refused."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            return Inadmissible.INVALID_UTF8
    try:
        # Lone surrogates cannot be encoded: the text was not valid UTF-8 to begin with.
        size = len(text.encode("utf-8", errors="strict"))
    except UnicodeEncodeError:
        return Inadmissible.INVALID_UTF8
    if size > MAX_INPUT_BYTES:
        return Inadmissible.TOO_LONG
    if any(_forbidden(char) for char in text):
        return Inadmissible.CONTROL_CHARACTER
    if not text.strip():
        return Inadmissible.EMPTY
    return None
