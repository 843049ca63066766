"""Stable refusal reason codes shared by every memory stage.

A refusal is a value, never an exception: the parser, the limits, admission and publication all
return a `Refusal` so the caller can report it and leave the store and journal untouched. The
string values are stable API (services and events expose them); add codes, never rename them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum


class Status(IntEnum):
    """The numeric status of a write (journaled as the bare integer, as `Mode` is)."""

    OK = 0
    REFUSED = 1
    # An unknown or changed model/processor pair (decided before any model call).
    UNQUALIFIED = 12


class Reason(StrEnum):
    """Why a batch, a response or a request was refused."""

    # Admission of the request itself.
    BATCH_SIZE = "batch_size"
    EMPTY_SOURCE = "empty_source"
    SOURCE_TOO_LARGE = "source_too_large"
    INVALID_TEXT = "invalid_text"
    INVALID_ACTOR = "invalid_actor"
    INVALID_SCOPE = "invalid_scope"
    INVALID_SOURCE_ID = "invalid_source_id"
    DUPLICATE_SOURCE = "duplicate_source"
    UNQUALIFIED = "unqualified"
    MODE_DISABLED = "mode_disabled"
    # Capacity, checked before each call.
    PROMPT_TOO_LARGE = "prompt_too_large"
    RESERVATION_EXCEEDED = "reservation_exceeded"
    # Complete-response parsing.
    RESPONSE_TOO_LARGE = "response_too_large"
    MALFORMED_JSON = "malformed_json"
    TRAILING_DATA = "trailing_data"
    WHITESPACE_RUN = "whitespace_run"
    NOT_ARRAY = "not_array"
    TOO_MANY_ITEMS = "too_many_items"
    BAD_ITEM = "bad_item"
    BAD_LABEL = "bad_label"
    BAD_KIND = "bad_kind"
    ITEM_COUNT = "item_count"
    QUOTE_MISMATCH = "quote_mismatch"
    ORDER = "order"
    QUOTE_NOT_UNIQUE = "quote_not_unique"
    QUOTE_OUTSIDE_STATEMENT = "quote_outside_statement"
    DUPLICATE_MENTION = "duplicate_mention"
    INVALID_TARGET = "invalid_target"
    # Publication.
    DUPLICATE_TARGET = "duplicate_target"
    STALE_TARGET = "stale_target"
    STALE_REFERENCE = "stale_reference"
    REFERENCE_LIMIT = "reference_limit"
    UNKNOWN_ID = "unknown_id"
    NOT_VISIBLE = "not_visible"
    # Retention limits (`retention.refusals`): an authored memory that no room can be made for.
    MEMORY_FULL = "memory_full"  # the store is full of what the writer may not forget
    USER_MEMORY_FULL = "user_memory_full"  # the user's own share is full of authored memories
    # Substrate.
    MODEL_CALL_FAILED = "model_call_failed"
    EMBEDDING_FAILED = "embedding_failed"


# Refusals that say nothing about the input, only that a model failed: an accepted turn's
# source stays pending and is tried again (`intake`), and no `refuse` entry may name them.
TRANSIENT = frozenset({Reason.EMBEDDING_FAILED, Reason.MODEL_CALL_FAILED})


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refused batch: the reason, the offending input (0-based) if one, and a short detail."""

    reason: Reason
    input_index: int | None = None
    detail: str = ""

    @property
    def status(self) -> Status:
        """Numeric status: 12 for an unqualified pair, 1 for every other refusal."""
        return Status.UNQUALIFIED if self.reason is Reason.UNQUALIFIED else Status.REFUSED

    def at(self, index: int) -> Refusal:
        """The same refusal attributed to input `index`."""
        return Refusal(self.reason, index, self.detail)
