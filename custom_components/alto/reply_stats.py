"""How often the model ignores the marks protocol, and a repair issue when it mostly does.

With the marks channel, a reply without marks is spoken through the plain-reply fallback; a
model that does this most of the time never reaches the action organ. After enough replies, a
repair issue suggests the JSON answer channel, which holds any model to the three channels.
"""

from __future__ import annotations

from dataclasses import dataclass

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir

from .const import DOMAIN

MIN_REPLIES = 10  # replies seen before a verdict on the model
MOSTLY = 0.5  # share of fallback replies that raises the issue


@dataclass(slots=True)
class ReplyStats:
    """Counts of one entry's replies since setup."""

    replies: int = 0
    fallback: int = 0

    @property
    def mostly_fallback(self) -> bool:
        """Enough replies, most of them without marks."""
        return self.replies >= MIN_REPLIES and self.fallback > self.replies * MOSTLY


def issue_id(entry_id: str) -> str:
    """The repair issue of one entry."""
    return f"model_ignores_marks_{entry_id}"


@callback
def async_record(
    hass: HomeAssistant, entry_id: str, stats: ReplyStats, *, model: str, used_fallback: bool
) -> None:
    """Count one reply; raise the issue when the model mostly ignores the marks."""
    stats.replies += 1
    stats.fallback += used_fallback
    if stats.mostly_fallback:
        ir.async_create_issue(
            hass,
            DOMAIN,
            issue_id(entry_id),
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="model_ignores_marks",
            translation_placeholders={
                "model": model,
                "fallback": str(stats.fallback),
                "replies": str(stats.replies),
            },
        )
