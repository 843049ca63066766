"""Tests that run Alto inside a real Home Assistant, against the fake Ollama over HTTP."""

import pytest

# The shared helpers assert too: pytest rewrites their asserts as it does a test module's.
pytest.register_assert_rewrite("tests.integration.helpers")
