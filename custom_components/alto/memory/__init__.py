"""Alto's memory: what the household said, kept exactly, recalled by exact integer scores.

Plain Python, no Home Assistant import; the integration wires it into services, entities and the
turn (`memory_organ/`). Module map (each module's docstring carries its own contract):

- `spans`: UAX #29 source spans with UTF-8 byte offsets, and source-text admission.
- `profile`: the processor contract, both call instructions and the processor digest.
- `prompts`, `parse`: the two bounded model calls (statement labels, then classification) and
  the strict parser of complete responses; their Ollama `format` schemas are `model.schemas`.
- `records`: rows, mutations and the in-memory state that store and replay share.
- `references`, `corrections`: the turn's reference selection and the correction table.
- `pipeline`: the pure per-input stages that intake runs live and replay runs from the journal.
- `pending`: accepted sources not yet interpreted.
- `journal`, `journal_tail`, `replay`: the hash-chained write-ahead journal, reading it from its
  end, offline replay and reconciliation.
- `redaction`, `erasure`: forgetting erases, from the journal and from Chroma's files.
- `retention`: how many memories an entry keeps, and which go first.
- `store`, `server`, `paging`, `checkpoint`: the ChromaDB store (blocking; run it in an
  executor), a Chroma server as its durable copy, paged reads, and the verified checkpoint.
- `intake`: `accept`, `run_intake`, `remember`, `forget`, `reembed`: the only writers.
- `qualification`, `acceptance`: modes, qualified model/processor pairs and the acceptance matrix.
- `reasons`: the stable refusal codes.
- `matrix`, `selection`, `scoring`, `onnx_graph`: the resident int8 code matrix, exact integer
  top-k (the reference every backend matches) and its onnxruntime and numpy scorers.
- `recall`, `corpus`, `lexical`, `informative`, `instructions`: the turn's memory block, what it
  keeps of each row, the exact BM25, which texts compete, and embedding role prefixes.
"""
