"""The manifest declares every third-party package the integration imports."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "custom_components" / "alto"
# Shipped with Home Assistant itself, or a dependency of a manifest requirement (chromadb → numpy).
PROVIDED = {"homeassistant", "voluptuous", "numpy", "httpx", "aiohttp"}
# Optional, imported lazily and guarded: the GPU backend falls back to numpy without it.
OPTIONAL = {"pycuda"}


def imported_packages() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names}


def test_every_third_party_import_is_a_requirement() -> None:
    manifest = json.loads((PACKAGE / "manifest.json").read_text(encoding="utf-8"))
    required = {re.split(r"[<>=!~ ]", req)[0].lower() for req in manifest["requirements"]}
    missing = imported_packages() - required - PROVIDED - OPTIONAL - {"custom_components"}
    assert missing == set()


def test_pycuda_is_never_a_requirement() -> None:
    manifest = json.loads((PACKAGE / "manifest.json").read_text(encoding="utf-8"))
    assert not any(req.lower().startswith("pycuda") for req in manifest["requirements"])
