"""Input admission refusals and acceptances."""

from __future__ import annotations

import pytest

from custom_components.alto.channel.admission import MAX_INPUT_BYTES, Refusal, admit


@pytest.mark.parametrize(
    "text",
    ["hello", "tab\there", "two\nlines", "émoji 🙂 ok", "ü" * (MAX_INPUT_BYTES // 2)],
)
def test_accepts(text: str) -> None:
    assert admit(text) is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("nul\x00", Refusal.CONTROL_CHARACTER),
        ("carriage\rreturn", Refusal.CONTROL_CHARACTER),
        ("del\x7f", Refusal.CONTROL_CHARACTER),
        ("bell\x07", Refusal.CONTROL_CHARACTER),
        ("escape\x1b[31m", Refusal.CONTROL_CHARACTER),
        ("c1\x85next line", Refusal.CONTROL_CHARACTER),
        ("c1\x9f", Refusal.CONTROL_CHARACTER),
        ("x" * (MAX_INPUT_BYTES + 1), Refusal.TOO_LONG),
        ("ü" * (MAX_INPUT_BYTES // 2 + 1), Refusal.TOO_LONG),
        ("lone \udc80 surrogate", Refusal.INVALID_UTF8),
        (b"bad \xff bytes", Refusal.INVALID_UTF8),
        ("   \n\t ", Refusal.EMPTY),
    ],
)
def test_refuses(text: str | bytes, reason: Refusal) -> None:
    assert admit(text) is reason


def test_exact_limit_is_accepted() -> None:
    assert admit("x" * MAX_INPUT_BYTES) is None
