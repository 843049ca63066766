"""One layering rule: organ packages are plain Python; the Home Assistant adapters sit beside them.

An organ (`channel/`, `act/`, `memory/`, `surface/`, `gpu/`, `reflect/`) imports no
`homeassistant` and nothing from the HA layer above it (the package's root modules); it may use
another organ.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "custom_components" / "alto"
ORGANS = ("channel", "act", "memory", "surface", "gpu", "reflect")


def layer_violations(package: Path, organs: tuple[str, ...]) -> list[str]:
    """`path:line module` for every import of HA, or of a root module, inside an organ."""
    found = []
    for organ in organs:
        for path in sorted((package / organ).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    module = node.module or ""
                    if node.level == 0:
                        names = [module]
                    elif node.level >= 2:  # `from ..x` leaves the organ: only organs may follow
                        target = module.split(".")[0] if module else ""
                        names = [] if target in organs else [f"{'.' * node.level}{module}"]
                bad = [n for n in names if n.startswith((".", "homeassistant"))]
                where = path.relative_to(package).as_posix()
                found += [f"{where}:{node.lineno} {name}" for name in bad]
    return found


def test_organs_import_no_home_assistant_and_nothing_above_them() -> None:
    """The rule holds for every organ."""
    assert layer_violations(PACKAGE, ORGANS) == []


def test_the_scan_finds_both_kinds_of_violation(tmp_path: Path) -> None:
    """An HA import and an upward import are reported; an organ-to-organ import is not."""
    (tmp_path / "act").mkdir()
    (tmp_path / "act" / "bad.py").write_text(
        "from homeassistant.core import HomeAssistant\n"
        "from ..prompt import EntityLine\n"
        "from ..memory.records import Row\n"
        "import homeassistant.helpers\n"
    )
    assert layer_violations(tmp_path, ("act", "memory")) == [
        "act/bad.py:1 homeassistant.core",
        "act/bad.py:2 ..prompt",
        "act/bad.py:4 homeassistant.helpers",
    ]
