"""The memory organ's reads: the memory block of a user's turn, and recall for everyone else.

Every read ranks one way, the turn's block's (`MemoryReader._async_ranked`): `alto.recall`, the
panel's search (which runs that service's handler) and the `alto__RecallMemories` tool keep only
their own limit and fields, so what they return is what a turn with room for as many memories
would read, in the same order. Reads take no writer lock: the store's locked methods read its
resident state while a write goes on. People are named in the turn's block by their Home
Assistant user names; a question that calls someone by an alias of their person ("Grandma") is
read as naming them, by both scores: the words it is searched with and the text it is embedded as;
so is one that calls someone by a word of family the household's family gives ("my wife", "Mum"
asked by a child, "Oma": `memory.kin`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from functools import partial
from types import MappingProxyType

from homeassistant.components.person import ATTR_USER_ID
from homeassistant.components.person import DOMAIN as PERSON_DOMAIN
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er
from homeassistant.util import dt as dt_util

from ..const import DOMAIN, LOGGER
from ..memory import recall
from ..memory.kin import Family, meant
from ..memory.lexical import WORD, with_names
from ..memory.pipeline import embedding_codes
from ..memory.records import Row
from ..memory.references import MAX_REFERENCE_BYTES, MAX_REFERENCES
from ..memory.store import MemoryStore
from ..prompt import memory_block
from .embedding import Embedder, async_user_names

# Recall's results have no byte budget: a caller's `limit` alone bounds them.
_NO_BUDGET = sys.maxsize


@callback
def _async_read_as(
    hass: HomeAssistant, family: Family, names: Mapping[str, str], asker: str | None, text: str
) -> str:
    """`text` followed by the names of the people it calls by an alias or a word of family.

    A person (Settings → People) is called by their name and by their entity's voice aliases
    ("Grandma"); their names are the person's and, for one linked to a user, the user's, which
    is how what they said is read (`lexical.with_names`). Never by the `asker`'s aliases (a user
    id): no one calls themselves by what the household calls them, so "When is my mum's
    birthday?" asked by the person the children call Mum is about her mother. A word of family
    means whom `family` (by person entity id) makes it mean to the asker's person
    (`memory.kin.meant`), a person's name read in the text by each of its words ("Megan's dad"
    for Megan Hill).
    """
    registry = er.async_get(hass)
    aliases: dict[str, str] = {}
    known: dict[str, str] = {}
    called: dict[str, str] = {}
    whose = None
    for state in hass.states.async_all(PERSON_DOMAIN):
        user = state.attributes.get(ATTR_USER_ID)
        said = [n for n in (state.name, names.get(user or "")) if n]
        known[state.entity_id] = " ".join(dict.fromkeys(said))
        for word in WORD.findall(" ".join(said).casefold()):
            called.setdefault(word, state.entity_id)
        if asker is not None and user == asker:
            whose = state.entity_id
            continue
        calls = {state.name}
        if (entry := registry.async_get(state.entity_id)) is not None:
            calls.update(er.async_get_entity_aliases(hass, entry))
        aliases.update((alias, known[state.entity_id]) for alias in calls if alias)
    words = with_names(text, aliases)
    kin = sorted({known[p] for p in meant(text, whose, family, called) if known.get(p)})
    return " ".join([words, *kin])


class MemoryReader:
    """The memories one entry's store offers for a text, ranked one way for every reader."""

    def __init__(
        self,
        hass: HomeAssistant,
        *,
        store: MemoryStore,
        embedder: Embedder,
        family: Family = MappingProxyType({}),
    ) -> None:
        """Read `store`, embedding queries with `embedder`, with the household's `family`."""
        self._hass = hass
        self._store = store
        self._embedder = embedder
        self._family = family

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

    async def _async_ranked(
        self, text: str, viewer: str | None, *, limit: int, max_bytes: int
    ) -> tuple[list[Row], Callable[[Row], str]]:
        """The memories `viewer` may see for `text`, best first, and each one's line.

        The one ranking every reader shares: `memory.recall.turn_block` (informative rows only,
        cosine fused with BM25, newer first, a text said again once) over the store as
        `MemoryStore.turn_block` offers it, with the query read, and embedded, as naming the
        people it calls by an alias (`lexical.with_names`). The first `limit` of them (at most
        `recall.CONSIDERED`) whose lines (`recall.memory_line`) fit `max_bytes` together. A
        model whose vectors are of another size than the stored memories' finds none of them: a
        translated error says so.
        """
        names = await async_user_names(self._hass)
        line = partial(recall.memory_line, now=int(dt_util.utcnow().timestamp()), names=names)
        if not self._store.has_rows():
            return [], line
        # Both scores read the query with the names of those it calls by an alias or a word of
        # family: "When is Grandma's birthday?" is embedded, as it is read for words, with "Rosa"
        # after it, and "When is my wife's birthday?" asked by Gary with "Lisa".
        words = _async_read_as(self._hass, self._family, names, viewer, text)
        codes = embedding_codes((await self._embedder.queries([words]))[0])
        if (size := self._store.dim) is not None and codes.size != size:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="recall_size_differs",
                translation_placeholders={"model_size": str(codes.size), "store_size": str(size)},
            )
        rows: list[Row] = await self._hass.async_add_executor_job(
            partial(
                self._store.turn_block,
                codes,
                viewer,
                words,
                line,
                names,
                link=self._embedder.link,
                max_refs=limit,
                max_bytes=max_bytes,
            )
        )
        return rows, line

    async def async_recall(self, query: str, *, viewer: str | None, limit: int) -> list[Row]:
        """The first `limit` memories for `query` the viewer may see, ranked as a turn's block.

        What the turn's block would show with room for `limit` rows of any length (at most
        `recall.CONSIDERED`); raises as `_async_ranked` does.
        """
        rows, _line = await self._async_ranked(query, viewer, limit=limit, max_bytes=_NO_BUDGET)
        return rows

    async def async_turn_block(self, text: str, *, viewer: str | None) -> list[str]:
        """The lines of a user's turn's memory block, most relevant first.

        The first `MAX_REFERENCES` memories of the ranking whose lines fit
        `MAX_REFERENCE_BYTES` together, each a `memory.recall.memory_line`.
        """
        rows, line = await self._async_ranked(
            text, viewer, limit=MAX_REFERENCES, max_bytes=MAX_REFERENCE_BYTES
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
