"""Pytest setup for the HA-based benchmark in this folder (bench_turn.py).

The repository root goes on `sys.path` so the bench can import `custom_components` and `tests`
however pytest is started, and importing `custom_components.alto` here makes the project's package
the one HA's loader finds (the harness puts its own test config dir's `custom_components` first).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import custom_components.alto  # noqa: E402, F401
