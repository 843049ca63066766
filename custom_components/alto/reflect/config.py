"""The reflect organ's limits and intervals; the integration maps its options onto them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReflectConfig:
    """The organ's limits and intervals (turn counts are per scope)."""

    retention: int = 500  # turns kept per scope
    n1_batch: int = 3  # most unread turns one N+1 pass reads
    reflection_interval: int = 25
    reflection_batch: int = 50  # most turns one reflection reads
    synthesis_interval: int = 100
    pressure_tier: int = 80  # the warning tier at which pressure makes a synthesis due
    pressure_min_new: int = 5  # turns since the last synthesis before pressure triggers again
    stale_after_s: int = 30 * 86400  # an open commitment older than this is resolved as stale
    # UTF-8 bytes of turn blocks one reflection or synthesis shows (about 4,000 tokens of
    # English): with the instruction, the ledger lines and the answer, it fits num_ctx 8192.
    prompt_budget: int = 16384
    call_timeout_s: float = 120.0
    compact_every: int = 512  # entries in a file before it is compacted
