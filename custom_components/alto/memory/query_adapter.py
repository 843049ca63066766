"""A linear map, learnt for one embedding model, that moves a query's embedding nearer its answer.

A small embedding model places a question near memories that share its words and its kind more
than near the memory that answers it in other words ("Wann kommt die Müllabfuhr?" for "Die
Restmülltonne wird dienstags geleert"). A matrix W learnt on households' questions and the
memories that answer them maps each query's embedding q to q·W before it is compared with the
stored memories, which stay as the model embeds them: nothing is embedded again, and a store moves
between models as before. W is learnt by `scripts/query_adapter` from the households in
`scripts/benches/adapter_data/` (written apart from every recall bench set, so every set measures
it), held near the identity so that what the model knows stays. A model no map was learnt for is
read as it embeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .instructions import learnt_for

FOLDER = Path(__file__).with_name("query_adapters")


class QueryAdapter:
    """q ↦ q·W / |q·W| for the vectors of one model (others are left as they are)."""

    def __init__(self, matrix: npt.NDArray[np.float32]) -> None:
        """Map with `matrix` (d × d, float32)."""
        self._matrix = matrix

    def __call__(self, vector: Sequence[float]) -> list[float]:
        """`vector` mapped and of unit length; as it is when of another size or mapped to zero."""
        if len(vector) != self._matrix.shape[0]:
            return list(vector)
        mapped = np.asarray(vector, np.float32) @ self._matrix
        length = float(np.linalg.norm(mapped))
        return (mapped / length).tolist() if length > 0 else list(vector)


def _load(file: str) -> QueryAdapter:
    return QueryAdapter(np.load(FOLDER / file).astype(np.float32))


# A fragment of the model's bare name (Ollama's namespaces and tags vary: "multilingual-e5-small",
# "jeffh/intfloat-multilingual-e5-small:f16") → its map, read once when the module is imported
# (Home Assistant imports an integration off the event loop).
ADAPTERS: dict[str, QueryAdapter] = {
    "multilingual-e5-small": _load("multilingual-e5-small.npy"),
}


def adapter_for(model: str) -> QueryAdapter | None:
    """The map learnt for `model` ("namespace/name:tag" as configured), None if there is none."""
    return learnt_for(ADAPTERS, model)
