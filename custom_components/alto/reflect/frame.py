"""Frame of mind: how warm the conversation is, from the time since the scope's last message.

Present under 5 minutes, Warm under an hour, Cool under a day, Cold beyond (or with no earlier
message). `frame_line` is the one line the system prompt carries.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

PRESENT_S: Final = 5 * 60
WARM_S: Final = 60 * 60
COOL_S: Final = 24 * 60 * 60


class Frame(StrEnum):
    """The posture the time since the last message suggests."""

    PRESENT = "present"
    WARM = "warm"
    COOL = "cool"
    COLD = "cold"


def frame_for(elapsed: float | None) -> Frame:
    """The frame for `elapsed` seconds since the last message (None: there was none)."""
    if elapsed is None:
        return Frame.COLD
    if elapsed < PRESENT_S:
        return Frame.PRESENT
    if elapsed < WARM_S:
        return Frame.WARM
    return Frame.COOL if elapsed < COOL_S else Frame.COLD


def _ago(elapsed: float) -> str:
    seconds = max(0, int(elapsed))
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "moments ago"


def frame_line(elapsed: float | None) -> str:
    """The frame-of-mind line for the time since the last exchange.

    For example ``Frame of mind: warm (the last exchange was 12 minutes ago).``
    """
    frame = frame_for(elapsed)
    if elapsed is None:
        return f"Frame of mind: {frame} (no earlier exchange is remembered)."
    return f"Frame of mind: {frame} (the last exchange was {_ago(elapsed)})."
