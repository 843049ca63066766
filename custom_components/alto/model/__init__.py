"""Shared model infrastructure, plain Python, beneath `memory/` and `reflect/` (it imports neither).

`calls`: what a model call is (the chat message, the call and embed callables); `ollama_io`:
those callables over an Ollama client; `schemas`: the `format` JSON schemas; `digest`: a model
digest's normal form; `strict_json`: the strict reader of a complete model answer.
"""
