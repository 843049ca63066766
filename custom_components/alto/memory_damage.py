"""The repair issue of a damaged memory journal.

A journal that does not verify at open (`Journal.damage`), or a store that cannot reconcile
with it, leaves the organ serving recall but refusing every write (`memory_writer`), with a
repair issue that says how to recover.
"""

from __future__ import annotations

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir

from .const import DOMAIN, LOGGER
from .memory.journal import Journal

ISSUE_JOURNAL_DAMAGED = "journal_damaged"


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
