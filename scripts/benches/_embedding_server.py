"""Serve a sentence-transformers model folder behind Ollama's embedding API, for the recall bench.

    python scripts/benches/_embedding_server.py MODEL_DIR NAME [--port 11434]

Measures an embedding model Ollama would serve (`ollama pull NAME`) where there is no Ollama
but there are the model's weights in the sentence-transformers layout: `bench_recall.py
--embedding-model NAME --embedding-url http://127.0.0.1:PORT`. It answers `/api/version`,
`/api/tags` (the one model, as NAME), `/api/show` and `/api/embed` as Ollama does for an
embedding model: each text embedded exactly as given (no prompt added: Alto adds its model's
instructions itself, `memory/instructions.py`), L2-normalized. On 127.0.0.1 only.

Needs torch and sentence-transformers, which the project does not install: run it with a Python
that has them (e.g. a virtual environment of its own). Not a bench itself (`scripts/bench` skips
files whose names start with an underscore).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import torch  # type: ignore[import-not-found]
from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

OLLAMA_VERSION = "0.12.6"


def serve(folder: str, name: str, port: int) -> None:
    """Answer Ollama's embedding API for the model in `folder`, called `name`, until killed."""
    model = SentenceTransformer(folder, device="cpu")
    size = model.get_sentence_embedding_dimension()
    lock = threading.Lock()
    named = name if ":" in name else f"{name}:latest"
    details = {"format": "safetensors", "family": "", "families": [], "parameter_size": ""}
    entry = {
        "name": named,
        "model": named,
        "modified_at": "2026-11-01T10:00:00Z",
        "size": 0,
        "digest": hashlib.sha256(named.encode()).hexdigest(),
        "details": details,
    }

    def embed(texts: list[str]) -> dict[str, Any]:
        with lock, torch.inference_mode():
            vectors = model.encode(texts, normalize_embeddings=True, batch_size=32)
        return {"model": named, "embeddings": vectors.tolist()}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: no line per request
            return

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/api/tags":
                self._reply(200, {"models": [entry]})
            elif self.path == "/api/version":
                self._reply(200, {"version": OLLAMA_VERSION})
            else:
                self._reply(404, {"error": "not found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or "{}")
            asked = str(body.get("model") or body.get("name") or "")
            if (asked if ":" in asked else f"{asked}:latest") != named:
                self._reply(404, {"error": f"model '{asked}' not found"})
            elif self.path == "/api/show":
                info = {"general.architecture": "sentence-transformers", "embedding_length": size}
                shown = {"details": details, "capabilities": ["embedding"], "model_info": info}
                self._reply(200, {"modelfile": "", "parameters": "", "template": "", **shown})
            elif self.path == "/api/embed":
                given = body.get("input")
                texts = [given] if isinstance(given, str) else given
                if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                    self._reply(400, {"error": "input must be a string or a list of strings"})
                else:
                    self._reply(200, embed(texts))
            else:
                self._reply(404, {"error": "not found"})

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="the model's sentence-transformers folder")
    parser.add_argument("name", help="the name Ollama gives the model, e.g. embeddinggemma")
    parser.add_argument("--port", type=int, default=11434)
    arguments = parser.parse_args()
    serve(arguments.folder, arguments.name, arguments.port)
