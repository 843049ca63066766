"""The query adapter: which models have one, and what it does to a query's embedding."""

from __future__ import annotations

import numpy as np
import pytest

from custom_components.alto.memory.query_adapter import (
    ADAPTERS,
    FOLDER,
    QueryAdapter,
    adapter_for,
)


@pytest.mark.parametrize(
    "model",
    [
        "multilingual-e5-small",
        "multilingual-e5-small:latest",
        "jeffh/intfloat-multilingual-e5-small:f16",
        "yxchia/Multilingual-E5-Small:q8_0",
    ],
)
def test_multilingual_e5_small_has_its_adapter_under_any_namespace_and_tag(model: str) -> None:
    """Ollama's names for the model vary by who published it; the bare name decides."""
    assert adapter_for(model) is ADAPTERS["multilingual-e5-small"]


@pytest.mark.parametrize(
    "model",
    [
        "nomic-embed-text",
        "embeddinggemma:latest",
        "mxbai-embed-large",
        "e5-small-v2",  # the English e5: another model with the same size of vector
        "multilingual-e5-large",
        "small-e5",
    ],
)
def test_another_model_is_read_as_it_embeds(model: str) -> None:
    """A map learnt for one model's space means nothing in another's."""
    assert adapter_for(model) is None


def test_the_shipped_map_is_the_model_s_size_and_stays_near_the_identity() -> None:
    """384 × 384 (multilingual-e5-small's vectors), finite, learnt, and held near W = I.

    A query keeps most of what the model made of it.
    """
    stored = np.load(FOLDER / "multilingual-e5-small.npy")
    assert stored.shape == (384, 384)
    assert stored.dtype == np.float16
    assert np.isfinite(stored).all()
    identity = np.eye(384)
    assert np.linalg.norm(stored - identity) < np.linalg.norm(identity)
    assert not np.allclose(stored, identity)  # a map was learnt, not left at its start


def test_a_mapped_query_is_of_unit_length_and_mostly_itself() -> None:
    """Mapped by the shipped matrix, a unit vector stays a unit vector near where it was."""
    adapter = ADAPTERS["multilingual-e5-small"]
    vectors = np.random.default_rng(7).normal(size=(20, 384))
    for vector in vectors / np.linalg.norm(vectors, axis=1, keepdims=True):
        mapped = np.asarray(adapter(vector.tolist()))
        assert np.isclose(np.linalg.norm(mapped), 1.0, atol=1e-5)
        assert mapped @ vector > 0.5


def test_the_map_is_applied_as_q_times_w() -> None:
    """q·W, then made of unit length."""
    w = np.array([[1.0, 1.0], [0.0, 2.0]], np.float32)
    mapped = QueryAdapter(w)([0.6, 0.8])
    expected = np.array([0.6, 0.6 + 1.6])
    assert np.allclose(mapped, expected / np.linalg.norm(expected))


def test_a_vector_of_another_size_or_mapped_to_nothing_is_left_as_it_is() -> None:
    """A store of another model under the same name, or a map with a null direction: no error."""
    adapter = QueryAdapter(np.array([[1.0, 0.0], [0.0, 0.0]], np.float32))
    assert adapter([0.1, 0.2, 0.3]) == [0.1, 0.2, 0.3]
    assert adapter([0.0, 1.0]) == [0.0, 1.0]
