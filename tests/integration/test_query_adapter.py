"""The memory organ's queries are mapped by their model's query adapter; documents never are."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import numpy as np
import ollama
import pytest

from custom_components.alto.memory.query_adapter import ADAPTERS
from custom_components.alto.memory.question_form import without_form
from custom_components.alto.memory_organ.embedding import Embedder

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama, embed_text

E5 = "multilingual-e5-small:latest"
ASKED = "When do the bins go out?"


@pytest.fixture
async def server(socket_enabled: None) -> AsyncGenerator[FakeOllama]:
    """Ollama serving e5's name and nomic-embed-text's, both at e5's size (384)."""
    fake = FakeOllama(models=(CHAT_MODEL, EMBED_MODEL, E5), embed_dim=384)
    await fake.start()
    yield fake
    await fake.stop()


async def test_a_query_is_mapped_after_its_form_is_taken_out(server: FakeOllama) -> None:
    """multilingual-e5-small: the question less its form (`question_form`), then q·W."""
    embedder = Embedder(ollama.AsyncClient(host=server.url), E5)
    [mapped] = await embedder.queries([ASKED])
    asked, form = (embed_text(f"query: {text}", 384) for text in (ASKED, "When do the"))
    expected = ADAPTERS["multilingual-e5-small"](without_form(asked, form))
    assert np.allclose(mapped, expected, atol=1e-6)
    assert not np.allclose(mapped, without_form(asked, form), atol=1e-3)


async def test_documents_are_stored_as_the_model_embeds_them(server: FakeOllama) -> None:
    """Only queries are mapped: stored memories stay the model's, nothing needs embedding again."""
    embedder = Embedder(ollama.AsyncClient(host=server.url), E5)
    [stored] = await embedder.documents(["The bins go out on Thursday"])
    assert stored == pytest.approx(embed_text("passage: The bins go out on Thursday", 384))


async def test_a_model_without_an_adapter_queries_as_it_embeds(server: FakeOllama) -> None:
    """nomic-embed-text at the same size: no map learnt for it, the question less its form only."""
    embedder = Embedder(ollama.AsyncClient(host=server.url), EMBED_MODEL)
    [asked] = await embedder.queries([ASKED])
    raw, form = (embed_text(f"search_query: {text}", 384) for text in (ASKED, "When do the"))
    assert asked == pytest.approx(without_form(raw, form))
