"""Whether stored memories are embedded as a new memory is, and the repair issue when not.

A memory's vector is made once, when it is stored. A store written by an earlier version (before
the model's role prefixes or the speaker's name were embedded, or their words for themselves
read as it), with another embedding model of
the same size, or by users renamed since, has questions compared with memories embedded another
way, and recall suffers until `alto.reembed` embeds them again. After each start Alto embeds a
few stored memories again, spread over the store from the oldest to the newest, and compares the
codes with those stored; if any sampled memory's cosine is below `ALIKE`, a repair issue offers
to embed every memory again. `scripts/benches/embedding_forms.py` measures the margin: with
multilingual-e5-small, one text embedded alone and in a batch gives identical codes, while the
ways an older store embedded it fall to 0.96 at most (as said) and to a median of 0.975 (with
the prefix, without the name). A user renamed since is caught only when the name changes enough
(one letter: a median of 0.992); the margin above identical is for an Ollama whose answers
differ a little with the batch. A model that answers vectors of another size than the store's
raises an issue that says so, with both sizes (intake refuses those vectors until then, and new
memories wait); its fix is the same, since `alto.reembed` moves the whole store to that size. A
model that does not answer is left for the next start.

A rename is caught when it happens instead (`Renames`): a user renamed in Home Assistant while
Alto runs, who said some of its memories, gets an issue of their own with the same fix. It
persists across restarts (no sample finds it again), until a re-embedding finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from homeassistant.auth import EVENT_USER_UPDATED
from homeassistant.core import CALLBACK_TYPE, Event, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir

from ..const import DOMAIN, LOGGER
from ..memory.pipeline import embedding_codes, said_by
from ..memory.store import MemoryStore
from .embedding import Embedder, async_user_names

ISSUE_EMBEDDED_OTHERWISE = "memories_embedded_otherwise"
ISSUE_EMBEDDING_SIZE = "embedding_size_changed"
ISSUE_RENAMED = "memories_of_renamed_user"
SAMPLE = 8  # memories embedded again after a start
ALIKE = 0.99  # cosine of two codes of one text, one model (see the module docstring)


@dataclass(frozen=True, slots=True)
class Freshness:
    """How many sampled memories are embedded otherwise than a new one would be."""

    checked: int
    otherwise: int
    model_size: int | None = None  # the model's vector size, when it is not the store's
    store_size: int | None = None


def spread(ids: Sequence[int], count: int = SAMPLE) -> list[int]:
    """Up to `count` of `ids`, evenly spaced from the first to the last."""
    if len(ids) <= count:
        return list(ids)
    step = (len(ids) - 1) / (count - 1)
    return [ids[round(index * step)] for index in range(count)]


def alike(stored: np.ndarray, fresh: np.ndarray) -> bool:
    """Whether two int8 code vectors are one text embedded the same way."""
    a, b = stored.astype(np.float64), fresh.astype(np.float64)
    return float(a @ b) >= ALIKE * float(np.linalg.norm(a) * np.linalg.norm(b))


async def async_check(
    hass: HomeAssistant, store: MemoryStore, embedder: Embedder
) -> Freshness | None:
    """Embed a sample of stored memories again and compare; None when the model failed."""
    ids = await hass.async_add_executor_job(store.ids)
    if not ids:
        return Freshness(0, 0)
    rows, stored = await hass.async_add_executor_job(store.codes_of, spread(ids))
    names = await async_user_names(hass)
    try:
        vectors = await embedder.documents(
            [said_by(row.document, row.actor, names) for row in rows]
        )
    except Exception as err:  # noqa: BLE001 - checked again at the next start
        LOGGER.debug("Stored embeddings not checked: the embedding model failed: %r", err)
        return None
    size = stored.shape[1]
    if any(len(vector) != size for vector in vectors):
        return Freshness(len(rows), len(rows), len(vectors[0]), size)
    otherwise = sum(
        not alike(codes, embedding_codes(vector))
        for codes, vector in zip(stored, vectors, strict=True)
    )
    return Freshness(len(rows), otherwise)


@callback
def report(hass: HomeAssistant, entry_id: str, found: Freshness) -> None:
    """Raise the entry's issue for what `async_check` found, or clear it."""
    issue = f"{ISSUE_EMBEDDED_OTHERWISE}_{entry_id}"
    if not found.otherwise:
        ir.async_delete_issue(hass, DOMAIN, issue)
        return
    if found.model_size is not None:
        LOGGER.warning(
            "The embedding model gives vectors of %d dimensions, the stored memories have %d: "
            "new memories wait until every memory is embedded again (alto.reembed)",
            found.model_size,
            found.store_size,
        )
        ir.async_create_issue(
            hass,
            DOMAIN,
            issue,
            is_fixable=True,
            severity=ir.IssueSeverity.ERROR,
            translation_key=ISSUE_EMBEDDING_SIZE,
            translation_placeholders={
                "model_size": str(found.model_size),
                "store_size": str(found.store_size),
            },
            data={"entry_id": entry_id},
        )
        return
    ir.async_create_issue(
        hass,
        DOMAIN,
        issue,
        is_fixable=True,
        severity=ir.IssueSeverity.WARNING,
        translation_key=ISSUE_EMBEDDED_OTHERWISE,
        translation_placeholders={"otherwise": str(found.otherwise), "checked": str(found.checked)},
        data={"entry_id": entry_id},
    )


@callback
def clear(hass: HomeAssistant, entry_id: str) -> None:
    """Every memory is embedded as a new one is: clear the entry's issues."""
    ir.async_delete_issue(hass, DOMAIN, f"{ISSUE_EMBEDDED_OTHERWISE}_{entry_id}")
    renamed = f"{ISSUE_RENAMED}_{entry_id}_"
    for domain, issue in list(ir.async_get(hass).issues):
        if domain == DOMAIN and issue.startswith(renamed):
            ir.async_delete_issue(hass, DOMAIN, issue)


class Renames:
    """Raises an issue when a user whose memories are stored is renamed."""

    def __init__(self, hass: HomeAssistant, entry_id: str, store: MemoryStore) -> None:
        """Watch the users of `store`'s memories; `async_start` starts it."""
        self._hass = hass
        self._entry_id = entry_id
        self._store = store
        self._names: dict[str, str] = {}
        self._unsub: CALLBACK_TYPE | None = None

    async def async_start(self) -> None:
        """Read the users' names now, then follow every change."""
        self._names = await async_user_names(self._hass)
        self._unsub = self._hass.bus.async_listen(EVENT_USER_UPDATED, self._async_updated)

    @callback
    def stop(self) -> None:
        """Stop following."""
        if self._unsub is not None:
            self._unsub()
            self._unsub = None

    async def _async_updated(self, event: Event) -> None:
        user_id = str(event.data.get("user_id", ""))
        user = await self._hass.auth.async_get_user(user_id)
        old, new = self._names.get(user_id), user.name if user is not None else None
        if new:
            self._names[user_id] = new
        if not old or not new or old == new:  # a name given or removed is left to a start
            return
        issue = f"{ISSUE_RENAMED}_{self._entry_id}_{user_id}"
        # Renamed again before a re-embedding: the memories still hold the first name.
        if (raised := ir.async_get(self._hass).async_get_issue(DOMAIN, issue)) is not None:
            old = (raised.translation_placeholders or {}).get("old", old)
        if old == new:  # renamed back
            ir.async_delete_issue(self._hass, DOMAIN, issue)
            return
        count = await self._hass.async_add_executor_job(self._store.count_said_by, user_id)
        if not count:
            return
        ir.async_create_issue(
            self._hass,
            DOMAIN,
            issue,
            is_fixable=True,
            is_persistent=True,
            severity=ir.IssueSeverity.WARNING,
            translation_key=ISSUE_RENAMED,
            translation_placeholders={"old": old, "new": new, "count": str(count)},
            data={"entry_id": self._entry_id},
        )
