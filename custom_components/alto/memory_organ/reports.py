"""What a memory write reports: `IntakeReport`, its events and its log lines.

A report is what services, the todo list and the `alto_memory_admitted` /
`alto_memory_refused` events see of an `intake` result: ids, mode, status and a reason that
is either a `memory.reasons.Reason` value or one of the organ's own (the store failed, or the
journal is damaged). A refused turn is logged in one line, never with its text.

A write refused for room (`memory_full`, or `user_memory_full`: the writer's own share) says so
in the caller's language: the reason is the translation key of a `HomeAssistantError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError

from ..const import DOMAIN, LOGGER
from ..memory import intake
from ..memory.pipeline import IntakeInput
from ..memory.reasons import Reason, Refusal, Status
from ..memory.records import HOUSEHOLD

EVENT_ADMITTED = "alto_memory_admitted"
EVENT_REFUSED = "alto_memory_refused"
STORE_ERROR = "store_error"  # nothing was written
STORE_PENDING = "store_pending"  # journaled; the store catches up before the next write
JOURNAL_DAMAGED = "journal_damaged"  # the journal does not verify: nothing is written
EMBEDDING_FAILED = "embedding_failed"  # re-embedding: the embedding model failed
EMBEDDING_DIMENSION = "embedding_dimension"  # re-embedding: the model's vectors changed size
REEMBED_RUNNING = "reembed_running"  # re-embedding: already running


# Refusals that are no fault of the request: each is its own translated error, keyed by itself.
_OWN_ERROR = frozenset(
    {
        STORE_ERROR,
        STORE_PENDING,
        JOURNAL_DAMAGED,
        Reason.MEMORY_FULL.value,
        Reason.USER_MEMORY_FULL.value,
    }
)


@dataclass(slots=True)
class IntakeReport:
    """What a write did, for services and events; `op` is the write that was asked for."""

    admitted: bool
    ids: list[int]
    mode: str | None
    status: int
    reason: str | None
    op: str = "remember"

    def raise_if_refused(self) -> None:
        """The translated error a refused write gives a service call or the todo list."""
        if self.admitted:
            return
        if self.reason in _OWN_ERROR:
            raise HomeAssistantError(translation_domain=DOMAIN, translation_key=self.reason)
        if self.op == "forget" and self.reason == Reason.UNKNOWN_ID:
            raise ServiceValidationError(translation_domain=DOMAIN, translation_key="not_found")
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="forget_refused" if self.op == "forget" else "memory_refused",
            translation_placeholders={"reason": self.reason or "unknown"},
        )


@dataclass(frozen=True, slots=True)
class ReembedReport:
    """What re-embedding did: memories embedded again of those stored, and why it stopped."""

    reembedded: int
    total: int
    reason: str | None = None  # None: every memory was embedded again

    def raise_if_stopped(self) -> dict[str, int]:
        """The service's response, or the translated error of a re-embedding that stopped."""
        if self.reason is None:
            return {"reembedded": self.reembedded}
        if self.reason in (STORE_ERROR, STORE_PENDING, JOURNAL_DAMAGED, REEMBED_RUNNING):
            raise HomeAssistantError(translation_domain=DOMAIN, translation_key=self.reason)
        # The model failed or answered another size (a value intake refuses counts as failed).
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="reembed_dimension"
            if self.reason == EMBEDDING_DIMENSION
            else "reembed_failed",
            translation_placeholders={"done": str(self.reembedded), "total": str(self.total)},
        )


def report_of(result: intake.IntakeResult, position: int = 0, *, op: str) -> IntakeReport:
    """One input's part of an intake result."""
    return IntakeReport(
        admitted=result.admitted,
        ids=list(result.ids[position]) if result.admitted and result.ids else [],
        mode=result.mode.name.lower() if result.mode is not None else None,
        status=int(result.status),  # events and services carry the bare number
        reason=result.refusal.reason.value if result.refusal is not None else None,
        op=op,
    )


def failed(reason: str, op: str) -> IntakeReport:
    """A write refused by the organ itself.

    `STORE_ERROR`, `STORE_PENDING`, `JOURNAL_DAMAGED`, or no room (`Reason.MEMORY_FULL`,
    `Reason.USER_MEMORY_FULL`).
    """
    return IntakeReport(False, [], None, int(Status.REFUSED), reason, op)


def describe(refusal: Refusal) -> str:
    """A refusal's reason and detail, for a log line."""
    return refusal.reason.value + (f": {refusal.detail}" if refusal.detail else "")


@callback
def fire_report(
    hass: HomeAssistant, report: IntakeReport, item: IntakeInput | None, actor: str | None = None
) -> None:
    """The admitted or refused event of one write (of `item`, or a forget by `actor`)."""
    hass.bus.async_fire(
        EVENT_ADMITTED if report.admitted else EVENT_REFUSED,
        {
            "ids": report.ids,
            "mode": report.mode,
            "status": report.status,
            "reason": report.reason,
            "source_id": item.source_id if item is not None else None,
            "actor": item.actor if item is not None else actor,
        },
    )


def log_refused_turn(item: IntakeInput, reason: str | None, detail: str) -> None:
    """One line for every turn whose memory is refused: never its text."""
    LOGGER.warning(
        "Memory of a turn refused (%s%s): source %s, %s scope",
        reason,
        f": {detail}" if detail else "",
        item.source_id,
        "household" if item.scope == HOUSEHOLD else "private",
    )
