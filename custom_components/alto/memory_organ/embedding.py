"""The memory organ's embeddings: the model's role prefixes and a cache of recent texts.

Stored documents and queries are embedded with the embedding model's own role prefixes
(`memory.instructions`); a stored text after its speaker's Home Assistant user name
(`memory.pipeline.said_by`, `async_user_names`). One utterance is embedded for the turn's
context, the Surfacer's recall and intake: the model's answer for a text is kept for a few
texts, so it is asked once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import ollama
from homeassistant.core import HomeAssistant

from ..memory.instructions import instructions_for
from ..memory.query_adapter import adapter_for
from ..memory.question_form import question_form, without_form
from ..memory.update_link import link_for
from ..model.calls import Embed
from ..model.ollama_io import embed_for

RECENT_VECTORS = 16  # embeddings kept per organ (a turn needs one; a batch up to 64 once)


async def async_user_names(hass: HomeAssistant) -> dict[str, str]:
    """User id -> name, for the users that have one."""
    users = await hass.auth.async_get_users()
    return {user.id: user.name for user in users if user.name}


class Embedder:
    """Embeddings of one entry's embedding model, recent texts answered once."""

    def __init__(self, client: ollama.AsyncClient, model: str) -> None:
        """Embed with `model` on `client`, with the role prefixes that model expects."""
        self._embed_model = embed_for(client, model)
        self._instructions = instructions_for(model)
        self._adapter = adapter_for(model)
        self.link = link_for(model)  # how step 3 links this model's memories (`update_link`)
        self._recent_vectors: OrderedDict[str, list[float]] = OrderedDict()

    async def documents(self, texts: list[str], *, anew: bool = False) -> list[list[float]]:
        """Embeddings of `texts` as stored documents (what intake embeds).

        `anew` asks the model even for recent texts: re-embedding wants its answer now, which
        differs from a recent one when the model changed under the same name.
        """
        return await self._embed(self._instructions.document, texts, anew=anew)

    async def queries(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of `texts` as queries (what recall and the turn's selection embed).

        Each with what its form draws taken out (`memory.question_form`), then mapped by the
        model's query adapter where one was learnt for it (`memory.query_adapter`): the texts and
        their forms are embedded in one request.
        """
        forms = [question_form(text) for text in texts]
        vectors = await self._embed(self._instructions.query, [*texts, *filter(None, forms)])
        formed = iter(vectors[len(texts) :])
        asked = [
            without_form(vector, next(formed)) if form else vector
            for vector, form in zip(vectors[: len(texts)], forms, strict=True)
        ]
        return asked if self._adapter is None else [self._adapter(vector) for vector in asked]

    async def _embed(
        self, prefix: str, texts: list[str], *, anew: bool = False
    ) -> list[list[float]]:
        """Embeddings of `prefix` + each text, recent ones answered once unless `anew`."""
        texts = [prefix + text for text in texts]
        # Read before waiting: another caller may push these out of the recent texts meanwhile.
        recent = {} if anew else self._recent_vectors
        known = {t: recent[t] for t in texts if t in recent}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            known.update(zip(missing, await self._embed_model(missing), strict=True))
        for text in texts:
            self._recent_vectors[text] = known[text]
            self._recent_vectors.move_to_end(text)
        while len(self._recent_vectors) > RECENT_VECTORS:
            self._recent_vectors.popitem(last=False)
        return [known[text] for text in texts]

    async def prefetch(self, texts: Sequence[str]) -> Embed:
        """Embed `texts` as documents now.

        An `intake` embed function that answers them without a request (a failure now is its
        failure; a text not fetched is asked for then).
        """
        found: dict[str, list[float]] = {}
        failure: Exception | None = None
        if texts:
            try:
                found = dict(zip(texts, await self.documents(list(texts)), strict=True))
            except Exception as err:  # noqa: BLE001 - intake turns it into its refusal
                failure = err

        async def fetched(wanted: list[str]) -> list[list[float]]:
            if failure is not None and any(text not in found for text in wanted):
                raise failure
            missing = [text for text in wanted if text not in found]
            if missing:
                found.update(zip(missing, await self.documents(missing), strict=True))
            return [found[text] for text in wanted]

        return fetched
