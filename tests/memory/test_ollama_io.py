"""The Ollama adapters over the real client and wire format (fake server on 127.0.0.1)."""

from __future__ import annotations

import json

import ollama

from custom_components.alto.memory.intake import run_intake
from custom_components.alto.memory.journal import Journal
from custom_components.alto.memory.pipeline import IntakeInput
from custom_components.alto.memory.profile import processor_digest
from custom_components.alto.memory.qualification import Mode, QualificationTable
from custom_components.alto.memory.replay import replay
from custom_components.alto.memory.store import MemoryStore
from custom_components.alto.model.ollama_io import call_model_for, embed_for, model_digest

from ..fake_ollama import CHAT_MODEL, EMBED_MODEL, FakeOllama, digest_of


async def test_adapters_speak_the_ollama_api(fake_ollama: FakeOllama) -> None:
    """Adapters speak the ollama api."""
    client = ollama.AsyncClient(host=fake_ollama.url)
    assert await model_digest(client, "llama3.2") == digest_of(CHAT_MODEL)
    assert await model_digest(client, "missing-model") is None
    vectors = await embed_for(client, EMBED_MODEL)(["one", "two"])
    assert len(vectors) == 2
    assert len(vectors[0]) == fake_ollama.embed_dim
    fake_ollama.reply('[["Hi.","statement"]]')
    schema = {"type": "array", "prefixItems": []}
    raw = await call_model_for(client, CHAT_MODEL, num_ctx=8192)(
        [{"role": "user", "content": "x"}], schema
    )
    assert raw == '[["Hi.","statement"]]'
    body = fake_ollama.chat_requests[-1]
    assert body["format"] == schema
    assert body["stream"] is False
    assert not body.get("tools")
    assert body["options"]["temperature"] == 0
    assert body["options"]["num_predict"] == 4096
    assert body["options"]["num_ctx"] == 8192  # the turn's window: no reload between calls


async def test_intake_through_the_wire(
    fake_ollama: FakeOllama, store: MemoryStore, journal: Journal
) -> None:
    """Intake through the wire."""
    client = ollama.AsyncClient(host=fake_ollama.url)
    digest = await model_digest(client, CHAT_MODEL)
    table = QualificationTable(frozenset({(digest, processor_digest())}))
    text = "The boiler is serviced in May. Turn the heating down."
    fake_ollama.reply(
        json.dumps(
            [["The boiler is serviced in May.", "statement"], ["Turn the heating down.", "request"]]
        )
    )
    fake_ollama.reply('[[3, "The boiler is serviced in May."], [2, "serviced"]]')
    result = await run_intake(
        [IntakeInput(text, "wire/1")],
        mode=2,
        store=store,
        journal=journal,
        embed=embed_for(client, EMBED_MODEL),
        call_model=call_model_for(client, CHAT_MODEL, num_ctx=8192),
        model_digest=digest,
        table=table,
    )
    assert result.admitted
    assert result.mode is Mode.AUTOMATIC
    assert [row.kind for row in store.get(list(result.ids[0]))] == ["source", 3, 2]
    assert replay(journal.path)["ok"]
