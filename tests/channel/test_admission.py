"""Input admission refusals and acceptances."""

from __future__ import annotations

import pytest

from custom_components.alto.channel.admission import MAX_INPUT_BYTES, Inadmissible, admit


@pytest.mark.parametrize(
    "text",
    ["hello", "tab\there", "two\nlines", "émoji 🙂 ok", "ü" * (MAX_INPUT_BYTES // 2)],
)
def test_accepts(text: str) -> None:
    """Ordinary text, tabs, newlines, emoji and multi-byte text within the limit are admitted."""
    assert admit(text) is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("nul\x00", Inadmissible.CONTROL_CHARACTER),
        ("carriage\rreturn", Inadmissible.CONTROL_CHARACTER),
        ("del\x7f", Inadmissible.CONTROL_CHARACTER),
        ("bell\x07", Inadmissible.CONTROL_CHARACTER),
        ("escape\x1b[31m", Inadmissible.CONTROL_CHARACTER),
        ("c1\x85next line", Inadmissible.CONTROL_CHARACTER),
        ("c1\x9f", Inadmissible.CONTROL_CHARACTER),
        ("x" * (MAX_INPUT_BYTES + 1), Inadmissible.TOO_LONG),
        ("ü" * (MAX_INPUT_BYTES // 2 + 1), Inadmissible.TOO_LONG),
        ("lone \udc80 surrogate", Inadmissible.INVALID_UTF8),
        (b"bad \xff bytes", Inadmissible.INVALID_UTF8),
        ("   \n\t ", Inadmissible.EMPTY),
    ],
)
def test_refuses(text: str | bytes, reason: Inadmissible) -> None:
    """Control characters, oversize text, invalid UTF-8 and blank text are refused as such."""
    assert admit(text) is reason


def test_exact_limit_is_accepted() -> None:
    """Text of exactly the byte limit is admitted."""
    assert admit("x" * MAX_INPUT_BYTES) is None
