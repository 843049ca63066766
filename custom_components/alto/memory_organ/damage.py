"""The repair issues of a damaged memory journal and of a Chroma server that disagrees with it.

A journal that does not verify at open (`Journal.damage`), or a store that cannot reconcile
with it, leaves the organ serving recall but refusing every write (`writer`), with a
repair issue that says how to recover.

A Chroma server whose rows differ from the journal's (`MemoryStore.check_server`: rows Alto
never wrote, changed or missing) had none of them read; its copy was rebuilt from the journal,
and a repair issue says so, persistent until dismissed: a server that changed under Alto is worth
a look. A server that cannot be used at setup (unreachable, token refused, certificate not
verified) is an issue too, cleared by the next setup that reaches it.
"""

from __future__ import annotations

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir

from ..const import DOMAIN, LOGGER
from ..memory.journal import Journal
from ..memory.store import ServerCheck

ISSUE_JOURNAL_DAMAGED = "journal_damaged"
ISSUE_SERVER_MISMATCH = "chroma_server_mismatch"
ISSUE_SERVER_UNAVAILABLE = "chroma_server_unavailable"


@callback
def report_journal_damage(hass: HomeAssistant, entry_id: str, journal: Journal) -> None:
    """A repair issue while the journal is damaged (one error line); none otherwise."""
    issue = f"{ISSUE_JOURNAL_DAMAGED}_{entry_id}"
    damage = journal.damage
    if damage is None:
        ir.async_delete_issue(hass, DOMAIN, issue)
        return
    LOGGER.error(
        "Memory journal %s is damaged at entry %d (%s): Alto recalls what it stored but "
        "writes no new memory until the journal is repaired",
        journal.path,
        damage.sequence,
        damage.reason,
    )
    ir.async_create_issue(
        hass,
        DOMAIN,
        issue,
        is_fixable=False,
        severity=ir.IssueSeverity.ERROR,
        translation_key=ISSUE_JOURNAL_DAMAGED,
        translation_placeholders={
            "entry": str(damage.sequence),
            "reason": damage.reason,
            "path": str(journal.path),
        },
    )


@callback
def report_server_mismatch(
    hass: HomeAssistant, entry_id: str, host: str, check: ServerCheck
) -> None:
    """A repair issue (and one warning) for a server whose rows disagreed with the journal."""
    LOGGER.warning(
        "Chroma server %s held rows that the memory journal does not (%d foreign, %d changed, "
        "%d missing): none were read, and its copy was rebuilt from the journal",
        host,
        check.foreign,
        check.changed,
        check.missing,
    )
    ir.async_create_issue(
        hass,
        DOMAIN,
        f"{ISSUE_SERVER_MISMATCH}_{entry_id}",
        is_fixable=False,
        is_persistent=True,
        severity=ir.IssueSeverity.WARNING,
        translation_key=ISSUE_SERVER_MISMATCH,
        translation_placeholders={
            "host": host,
            "foreign": str(check.foreign),
            "changed": str(check.changed),
            "missing": str(check.missing),
        },
    )


@callback
def report_server_unavailable(
    hass: HomeAssistant, entry_id: str, host: str, reason: str | None
) -> None:
    """A repair issue while the entry's Chroma server cannot be used (None: it can).

    The issue names why (`server.ServerError.reason`): the server unreachable, the token
    refused, or the certificate not verified; Alto then talks without memory.
    """
    issue = f"{ISSUE_SERVER_UNAVAILABLE}_{entry_id}"
    if reason is None:
        ir.async_delete_issue(hass, DOMAIN, issue)
        return
    ir.async_create_issue(
        hass,
        DOMAIN,
        issue,
        is_fixable=False,
        severity=ir.IssueSeverity.ERROR,
        translation_key=f"chroma_{reason}",
        translation_placeholders={"host": host},
    )
