"""The memory organ's reads: recall for services, and the memory block of a user's turn.

Reads take no writer lock: the store's locked methods read its resident state while a write
goes on, and the selection backend scores its own snapshot of the codes. People are named in
the turn's block by their Home Assistant user names; a question that calls someone by an alias
of their person ("Grandma") is read as naming them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from homeassistant.components.person import ATTR_USER_ID
from homeassistant.components.person import DOMAIN as PERSON_DOMAIN
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er
from homeassistant.util import dt as dt_util

from ..const import DOMAIN, LOGGER
from ..gpu.backend import SelectionBackend
from ..memory import recall
from ..memory.lexical import with_names
from ..memory.pipeline import embedding_codes
from ..memory.records import CURRENT, Row, visible_to
from ..memory.store import MemoryStore
from ..prompt import memory_block
from .embedding import Embedder, async_user_names


@callback
def _async_aliases(hass: HomeAssistant, names: Mapping[str, str]) -> dict[str, str]:
    """What the household calls each person -> their names (`lexical.with_names`).

    A person (Settings → People) is called by their name and by their entity's voice aliases
    ("Grandma"); their names are the person's and, for one linked to a user, the user's, which
    is how what they said is read.
    """
    registry = er.async_get(hass)
    aliases: dict[str, str] = {}
    for state in hass.states.async_all(PERSON_DOMAIN):
        called = {state.name}
        if (entry := registry.async_get(state.entity_id)) is not None:
            called.update(er.async_get_entity_aliases(hass, entry))
        user_name = names.get(state.attributes.get(ATTR_USER_ID) or "")
        known = " ".join(dict.fromkeys(n for n in (state.name, user_name) if n))
        aliases.update((alias, known) for alias in called if alias)
    return aliases


class MemoryReader:
    """Recall and the turn's block over one entry's store."""

    def __init__(
        self,
        hass: HomeAssistant,
        *,
        store: MemoryStore,
        selection: SelectionBackend,
        embedder: Embedder,
    ) -> None:
        """Read `store` (the turn's block) and `selection` (recall)."""
        self._hass = hass
        self._store = store
        self._selection = selection
        self._embedder = embedder

    @callback
    def warm(self, entry_id: str) -> None:
        """Index every memory once as a turn will, in the background after a start.

        After a start from a checkpoint that carries the words this has nothing left to do;
        otherwise (no checkpoint, or one from an earlier version) it stems the rows the first
        turn would (about 3 s at 100,000 memories).
        """

        async def warm() -> None:
            await self._hass.async_add_executor_job(self._store.warm_recall)

        self._hass.async_create_background_task(warm(), f"alto_warm_recall_{entry_id}")

    async def async_recall(self, query: str, *, viewer: str | None, limit: int) -> list[Row]:
        """The best `limit` current memories for `query` the viewer may see (exact scores).

        The backend selects among the rows its snapshot's tags let the viewer see; a row that
        changed since (forgotten, superseded) is dropped against the current state. A model
        whose vectors are of another size than the stored memories' finds none of them: a
        translated error says so, rather than an empty answer.
        """
        codes = embedding_codes((await self._embedder.queries([query]))[0])
        if (size := self._store.dim) is not None and codes.size != size:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="recall_size_differs",
                translation_placeholders={"model_size": str(codes.size), "store_size": str(size)},
            )
        allowed = self._store.visibility(viewer)
        hits = await self._selection.async_top_k(codes, limit, allowed=allowed)
        found = self._store.get([row_id for row_id, _score in hits])
        return [row for row in found if row.status == CURRENT and visible_to(row, viewer)]

    async def async_turn_block(self, text: str, *, viewer: str | None) -> list[str]:
        """The lines of a user's turn's memory block, most relevant first.

        The block is `memory.recall.turn_block`, each line a `memory.recall.memory_line`.
        """
        if not self._store.has_rows():
            return []
        names = await async_user_names(self._hass)
        line = partial(recall.memory_line, now=int(dt_util.utcnow().timestamp()), names=names)
        codes = embedding_codes((await self._embedder.queries([text]))[0])
        words = with_names(text, _async_aliases(self._hass, names))
        rows: list[Row] = await self._hass.async_add_executor_job(
            self._store.turn_block, codes, viewer, words, line, names
        )
        return [line(row) for row in rows]

    async def async_turn_context(self, text: str, *, viewer: str | None) -> str | None:
        """The turn's memory block as the model reads it, or None without one. Never raises."""
        try:
            lines = await self.async_turn_block(text, viewer=viewer)
        except Exception as err:  # noqa: BLE001 - the turn goes on without its memory block
            LOGGER.warning("Memory selection for the turn failed: %s", err)
            return None
        return memory_block(lines) if lines else None
