"""Alto's memory: what the household said, kept exactly, recalled by exact integer scores.

Plain Python, no Home Assistant import; the integration wires it into services, entities and the
turn. Module map (each module's docstring carries its own contract):

- `spans`: UAX #29 source spans with UTF-8 byte offsets, and source-text admission.
- `profile`: the processor contract, both call instructions and the processor digest.
- `prompts`, `schemas`, `parse`: the two bounded model calls (statement labels, then
  classification), their Ollama `format` schemas and the strict parser of complete responses.
- `records`: rows, mutations and the in-memory state that store and replay share.
- `references`, `corrections`: the turn's reference selection and the correction table.
- `pipeline`: the pure per-input stages that intake runs live and replay runs from the journal.
- `journal`, `replay`: the hash-chained write-ahead journal, offline replay and reconciliation.
- `store`: the ChromaDB store (blocking; run it in an executor).
- `intake`: `run_intake`, `remember`, `forget` — the only writers.
- `qualification`, `acceptance`: modes, qualified model/processor pairs and the acceptance matrix.
- `ollama_io`: adapters from an `ollama.AsyncClient` to the callables intake takes.
- `selection` (owned separately): int8 quantization and exact integer top-k.
"""
