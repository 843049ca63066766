"""Shared model infrastructure, plain Python: the Ollama call wrappers and the JSON schema type."""
