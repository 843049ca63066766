"""The manifest declares every third-party package the integration imports."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "custom_components" / "alto"
# Shipped with Home Assistant itself, or a dependency of a manifest requirement (chromadb → numpy),
# or a requirement of a component in the manifest's dependencies (conversation → hassil).
PROVIDED = {"homeassistant", "probatio", "numpy", "httpx", "aiohttp", "hassil"}
# Optional, imported lazily and guarded: the GPU backend falls back to numpy without it.
OPTIONAL = {"pycuda"}


def imported_packages() -> set[str]:
    """The top-level third-party packages the integration imports."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names}


def test_every_third_party_import_is_a_requirement() -> None:
    """Every third-party package imported is a manifest requirement, provided by HA or optional."""
    manifest = json.loads((PACKAGE / "manifest.json").read_text(encoding="utf-8"))
    required = {re.split(r"[<>=!~ ]", req)[0].lower() for req in manifest["requirements"]}
    missing = imported_packages() - required - PROVIDED - OPTIONAL - {"custom_components"}
    assert missing == set()


def test_pycuda_is_never_a_requirement() -> None:
    """PyCUDA stays optional: the manifest never requires it."""
    manifest = json.loads((PACKAGE / "manifest.json").read_text(encoding="utf-8"))
    assert not any(req.lower().startswith("pycuda") for req in manifest["requirements"])


def test_requirements_hold_for_the_versions_the_suite_runs() -> None:
    """Every manifest range admits the version installed here, which is what the tests ran on."""
    from importlib.metadata import version

    from packaging.requirements import Requirement

    manifest = json.loads((PACKAGE / "manifest.json").read_text(encoding="utf-8"))
    for line in manifest["requirements"]:
        requirement = Requirement(line)
        assert version(requirement.name) in requirement.specifier, line


def test_hacs_minimum_is_the_home_assistant_ci_runs() -> None:
    """hacs.json declares as minimum exactly the Home Assistant release the suite is pinned to."""
    from homeassistant.const import __version__ as running

    root = PACKAGE.parents[1]
    hacs = json.loads((root / "hacs.json").read_text(encoding="utf-8"))
    pinned = re.search(
        r"^homeassistant==(\S+)$", (root / "requirements.txt").read_text(), re.MULTILINE
    )
    assert pinned is not None
    assert hacs["homeassistant"] == pinned.group(1) == running
