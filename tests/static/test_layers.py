"""The package's layout as rules: what each kind of module may import, and what sits at the root.

Alto's package holds four kinds of module, each leaning only on the kinds below it:

- **pure packages** (`channel act memory surface reflect gpu model`) are plain Python, tested
  without Home Assistant: they import no `homeassistant` and nothing outside the pure packages.
  `model/` is the shared model infrastructure beneath `memory/` and `reflect/`, so it imports
  neither of them.
- **adapters** (`act_organ memory_organ surface_organ reflect_organ panel`) are the organs' Home
  Assistant side. They import no platform and none of the entry points HA loads by name
  (`__init__ config_flow diagnostics repairs services`): those are built on the adapters, and an
  adapter reaching up into one ties its own loading to theirs.
- **platforms** (`binary_sensor conversation event sensor todo`) reach an organ through the
  entry's runtime: they name an organ class (an adapter class with `build` or `async_build`) in
  annotations only, so no platform builds a second organ beside the entry's. An adapter's
  vocabulary (its signals, state records, enums and keys) they may import at run time: it is the
  adapter's published interface, and moving it to a neutral module would hide the dependency,
  not remove it. (Demanding type-only imports of adapters would force exactly that move.)
- **the root** holds what HA looks up by name plus a short list of shared modules; the exact set
  is spelt out below, so a new root module, or a new package, is placed on purpose.

Across the whole package no module imports another module's private name (`_x`: a sideways
dependency on what its owner may change freely), and no import cycle exists. The cycle graph
counts imports inside functions (a deferred import hides a cycle, it does not remove it) and
leaves out imports under `if TYPE_CHECKING:` (they never run).

Every rule has a companion test running its scan on a small tree that breaks it, so a scan that
silently finds nothing fails.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "custom_components" / "alto"
PREFIX = "custom_components.alto"

PURE = ("channel", "act", "memory", "surface", "reflect", "gpu", "model")
BENEATH = {"model": ("memory", "reflect")}  # a pure package, and the pure packages it serves
ADAPTERS = ("act_organ", "memory_organ", "surface_organ", "reflect_organ", "panel")
PLATFORMS = ("binary_sensor", "conversation", "event", "llm", "sensor", "todo")
ENTRY_POINTS = ("__init__", "config_flow", "diagnostics", "repairs", "services")
SHARED = (
    "const",
    "coordinator",
    "entity",
    "errors",
    "history",
    "memory_actions",
    "model_client",
    "options",
    "prompt",
    "reply_stats",
    "settings",
    "turn",
)

# --- the scan ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Import:
    """One imported module, seen from the module that imports it.

    `target` is the dotted module inside the package ("" is the package's `__init__`) when
    `internal`, else the absolute module name.
    """

    path: str  # the importing file, relative to the package
    line: int
    target: str
    internal: bool
    names: tuple[str, ...]  # the names of a `from … import`; () for a plain `import`
    deferred: bool  # inside a function
    type_only: bool  # under `if TYPE_CHECKING:`

    @property
    def top(self) -> str:
        """The root module or package the target lies in."""
        return self.target.split(".")[0]

    def key(self, name: str = "") -> str:
        """`path target[.name]`: how a finding is reported and allowed."""
        return f"{self.path} {self.target}{'.' + name if name else ''}"


def module_name(package: Path, path: Path) -> str:
    """The dotted name of `path` inside the package; the package's own `__init__` is `__init__`."""
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts == ["__init__"]:
        return "__init__"
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_in(package: Path, path: Path, modules: set[str]) -> Iterator[Import]:
    """Every import in one file, resolved to the package's `modules` where it names one.

    `from pkg import mod` imports the module `pkg.mod`, one `Import` per such module.
    """
    where = path.relative_to(package).as_posix()
    home = where.split("/")[:-1]  # the package the file's relative imports start from

    def resolve(level: int, module: str) -> tuple[str, bool]:
        if level == 0:
            inside = module == PREFIX or module.startswith(PREFIX + ".")
            return (module[len(PREFIX) + 1 :] if inside else module), inside
        base = home[: len(home) - (level - 1)]
        return ".".join([*base, *([module] if module else [])]) or "__init__", True

    def visit(node: ast.AST, deferred: bool, type_only: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                target, internal = resolve(0, alias.name)
                yield Import(where, node.lineno, target, internal, (), deferred, type_only)
        elif isinstance(node, ast.ImportFrom):
            target, internal = resolve(node.level, node.module or "")
            names = [alias.name for alias in node.names]
            prefix = "" if target == "__init__" else f"{target}."
            subs = [
                f"{prefix}{name}" for name in names if internal and f"{prefix}{name}" in modules
            ]
            for sub in subs:
                yield Import(where, node.lineno, sub, internal, (), deferred, type_only)
            rest = tuple(n for n in names if f"{prefix}{n}" not in subs)
            if rest:
                yield Import(where, node.lineno, target, internal, rest, deferred, type_only)
        elif isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.body:
                yield from visit(child, deferred, True)
            for child in node.orelse:
                yield from visit(child, deferred, type_only)
        else:
            inner = deferred or isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            for child in ast.iter_child_nodes(node):
                yield from visit(child, inner, type_only)

    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    yield from visit(tree, False, False)


def scan(package: Path, tops: tuple[str, ...] | None = None) -> list[Import]:
    """The imports of every module under `package` (only under the `tops` given, if any)."""
    paths = sorted(package.rglob("*.py"))
    modules = {module_name(package, path) for path in paths}
    found = []
    for path in paths:
        if tops is None or module_name(package, path).split(".")[0] in tops:
            found += imports_in(package, path, modules)
    return found


# --- the rules ---------------------------------------------------------------------------------


def pure_violations(package: Path) -> list[str]:
    """Imports of HA, of a module outside the pure packages, or of a package a pure one serves."""
    found = []
    for imp in scan(package, PURE):
        served = BENEATH.get(imp.path.split("/")[0], ())
        upward = imp.internal and (imp.top not in PURE or imp.top in served)
        if upward or imp.top == "homeassistant":
            found.append(imp.key())
    return found


def adapter_violations(package: Path) -> list[str]:
    """Imports of a platform or an entry point inside an adapter package."""
    upward = {*PLATFORMS, *ENTRY_POINTS}
    return [imp.key() for imp in scan(package, ADAPTERS) if imp.internal and imp.top in upward]


def private_imports(package: Path) -> list[str]:
    """Private names (`_x`, not dunders) imported from another module of the package."""
    return [
        imp.key(name)
        for imp in scan(package)
        if imp.internal
        for name in imp.names
        if name.startswith("_") and not name.startswith("__")
    ]


def organ_classes(package: Path) -> set[str]:
    """Adapter classes with a `build` or `async_build`: the organs the entry builds once."""
    found = set()
    for adapter in ADAPTERS:
        for path in sorted((package / adapter).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and any(
                    isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                    and item.name in {"build", "async_build"}
                    for item in node.body
                ):
                    found.add(node.name)
    return found


def annotation_nodes(tree: ast.AST) -> set[int]:
    """The ids of every node inside an annotation."""
    roots: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            roots.append(node.returns)
    return {id(inner) for root in roots for inner in ast.walk(root)}


def organ_uses_in_platforms(package: Path) -> list[str]:
    """`path:line name` for every use of an organ class in a platform outside annotations."""
    organs = organ_classes(package)
    found = []
    for platform in PLATFORMS:
        path = package / f"{platform}.py"
        if not path.exists():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        local = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
            if alias.name in organs
        }
        typed = annotation_nodes(tree)
        for node in ast.walk(tree):
            named = (isinstance(node, ast.Name) and node.id in local) or (
                isinstance(node, ast.Attribute) and node.attr in organs
            )
            if named and id(node) not in typed:
                found.append(f"{platform}.py:{node.lineno} {ast.unparse(node)}")
    return sorted(found)


def import_cycles(package: Path) -> list[list[str]]:
    """The package's import cycles, each as its modules' files (type-only imports left out)."""
    files = {
        module_name(package, p): p.relative_to(package).as_posix() for p in package.rglob("*.py")
    }
    graph: dict[str, set[str]] = {name: set() for name in files}
    for imp in scan(package):
        if not imp.internal or imp.type_only:
            continue
        source = module_name(package, package / imp.path)
        if imp.target in files and imp.target != source:
            graph[source].add(imp.target)
    return [sorted(files[name] for name in cycle) for cycle in strongly_connected(graph)]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one member, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def root_modules(package: Path) -> set[str]:
    """The modules at the package's root."""
    return {path.stem for path in package.glob("*.py")}


def subpackages(package: Path) -> set[str]:
    """The package's direct subpackages (folders with an `__init__.py`)."""
    return {path.parent.name for path in package.glob("*/__init__.py")}


# --- the rules hold -----------------------------------------------------------------------------


def test_pure_packages_import_no_home_assistant_and_nothing_above_them() -> None:
    """Pure packages import no HA, only one another, and `model/` neither memory/ nor reflect/."""
    assert pure_violations(PACKAGE) == []


def test_adapters_import_no_platform_and_no_entry_point() -> None:
    """No adapter imports a platform or `__init__ config_flow diagnostics repairs services`."""
    assert adapter_violations(PACKAGE) == []


def test_no_module_imports_a_private_name_from_another() -> None:
    """Private names stay in their module."""
    assert private_imports(PACKAGE) == []


def test_platforms_name_an_organ_class_in_annotations_only() -> None:
    """Platforms get organs from the runtime; the organ classes are found, so the scan looks."""
    assert organ_classes(PACKAGE) >= {"ActOrgan", "MemoryOrgan", "SurfaceOrgan", "ReflectOrgan"}
    assert organ_uses_in_platforms(PACKAGE) == []


def test_no_import_cycle() -> None:
    """The import graph (deferred imports in, type-only imports out) has no cycle."""
    assert import_cycles(PACKAGE) == []


def test_the_root_holds_what_ha_looks_up_by_name_and_the_shared_modules() -> None:
    """Every root module is an HA name or a listed shared module; every package has its kind."""
    assert root_modules(PACKAGE) == {*PLATFORMS, *ENTRY_POINTS, *SHARED}
    assert subpackages(PACKAGE) == {*PURE, *ADAPTERS}


# --- the scans find what breaks them -----------------------------------------------------------


def write(root: Path, files: dict[str, str]) -> Path:
    """A package tree under `root` from relative paths and sources; returns `root`."""
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return root


def test_the_pure_scan_finds_ha_upward_and_beneath_imports(tmp_path: Path) -> None:
    """HA, root modules, adapters and memory-from-model are found; pure-to-pure is not."""
    package = write(
        tmp_path,
        {
            "act/bad.py": (
                "from homeassistant.core import HomeAssistant\n"
                "from ..prompt import EntityLine\n"
                "from ..memory.records import Row\n"
                "import homeassistant.helpers\n"
                "from custom_components.alto.act_organ.organ import ActOrgan\n"
                "from .. import const\n"
                "import numpy\n"
            ),
            "model/io.py": "from ..memory.prompts import Message\nfrom .schemas import Schema\n",
            "memory/ok.py": "from ..model.schemas import Schema\n",
            "reflect/late.py": "def f():\n    from ..history import BufferEntry\n",
        },
    )
    assert pure_violations(package) == [
        "act/bad.py homeassistant.core",
        "act/bad.py prompt",
        "act/bad.py homeassistant.helpers",
        "act/bad.py act_organ.organ",
        "act/bad.py __init__",
        "model/io.py memory.prompts",
        "reflect/late.py history",
    ]


def test_the_adapter_scan_finds_platforms_and_entry_points(tmp_path: Path) -> None:
    """Platform, entry-point and `__init__` imports are found; shared modules and organs are not."""
    package = write(
        tmp_path,
        {
            "panel/bad.py": (
                "from ..sensor import MODE_STATES\n"
                "from ..const import DOMAIN\n"
                "from .. import services\n"
                "from .. import DOMAIN\n"
                "from ..memory_organ.organ import MemoryOrgan\n"
                "from custom_components.alto.config_flow import Flow\n"
            ),
            "act_organ/late.py": "if True:\n    def f():\n        from ..repairs import fix\n",
            "services.py": "",
        },
    )
    assert adapter_violations(package) == [
        "act_organ/late.py repairs",
        "panel/bad.py sensor",
        "panel/bad.py services",
        "panel/bad.py __init__",
        "panel/bad.py config_flow",
    ]


def test_the_private_scan_finds_sideways_private_names(tmp_path: Path) -> None:
    """A private name from another module is found; dunders and third-party names are not."""
    package = write(
        tmp_path,
        {
            "panel/ws.py": "from ..services import _handler, SCHEMA\nfrom . import __version__\n",
            "gpu/x.py": "from numpy import _private\nfrom .plan import _rows\n",
        },
    )
    assert private_imports(package) == ["gpu/x.py gpu.plan._rows", "panel/ws.py services._handler"]


def test_the_platform_scan_finds_an_organ_used_at_run_time(tmp_path: Path) -> None:
    """An organ class named at run time is found; in annotations, or its vocabulary, it is not."""
    package = write(
        tmp_path,
        {
            "memory_organ/organ.py": (
                "class MemoryOrgan:\n    @classmethod\n    def build(cls): ...\n"
                "class MemoryState: ...\n"
            ),
            "memory_organ/__init__.py": "",
            "todo.py": (
                "from .memory_organ.organ import MemoryOrgan, MemoryState\n"
                "from .memory_organ import organ\n"
                "def f(memory: MemoryOrgan) -> list[MemoryOrgan]:\n"
                "    x: MemoryOrgan | None = None\n"
                "    MemoryState()\n"
                "    return MemoryOrgan.build()\n"
                "def g():\n"
                "    return organ.MemoryOrgan\n"
            ),
        },
    )
    assert organ_classes(package) == {"MemoryOrgan"}
    assert organ_uses_in_platforms(package) == [
        "todo.py:6 MemoryOrgan",
        "todo.py:8 organ.MemoryOrgan",
    ]


def test_the_cycle_scan_counts_deferred_imports_and_not_type_only_ones(tmp_path: Path) -> None:
    """A cycle closed inside a function is found; one closed under TYPE_CHECKING is not."""
    package = write(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from .b import x\n",
            "b.py": "def f():\n    from . import a\n",
            "c.py": "from .d import y\n",
            "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import z\n",
            "gpu/__init__.py": "from .backend import Backend\n",
            "gpu/backend.py": "from . import plan\n",
            "gpu/plan.py": "from custom_components.alto.gpu.backend import Backend\n",
        },
    )
    assert import_cycles(package) == [["a.py", "b.py"], ["gpu/backend.py", "gpu/plan.py"]]


def test_the_root_scan_sees_a_new_module_and_a_new_package(tmp_path: Path) -> None:
    """A root module or package not on the lists makes the sets differ."""
    package = write(
        tmp_path,
        {"const.py": "", "helpers.py": "", "extra/__init__.py": "", "extra/inner.py": ""},
    )
    assert root_modules(package) == {"const", "helpers"}
    assert subpackages(package) == {"extra"}
