"""The panel's script and its strings agree: every key it shows exists, and every string is used.

`frontend/alto-panel.js` reads its strings through `this.t(key)` from the `panel_` keys of
`strings.json` (without the prefix, `alto/strings`). A key is named in the script as a literal
(`this.t("forget")`, or either side of a `cond ? "a" : "b"` argument) or as a template whose
variable part the server names (`source_${type}`: each of `memories.SOURCE_TYPES` and "other";
`kind_${kind}`: each of `memories.KIND_KEYS`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from custom_components.alto.panel.memories import KIND_KEYS, SOURCE_TYPES

PACKAGE = Path(__file__).parents[2] / "custom_components" / "alto"
SCRIPT = (PACKAGE / "frontend" / "alto-panel.js").read_text(encoding="utf-8")
PREFIX = "panel_"
STRINGS = {
    key.removeprefix(PREFIX)
    for key in json.loads((PACKAGE / "strings.json").read_text(encoding="utf-8"))["common"]
    if key.startswith(PREFIX)
}
# The first argument of each `this.t(...)`: a literal, a choice between literals, or a template.
_CALL = re.compile(r"this\.t\(\s*([^,)]*)")
_LITERAL = re.compile(r'^\s*"([a-z_]+)"\s*$')
_CHOICE = re.compile(r'\?\s*"([a-z_]+)"\s*:\s*"([a-z_]+)"')
_TEMPLATE = re.compile(r"`([a-z_]+)\$\{")


def named_keys(script: str) -> tuple[set[str], set[str]]:
    """The keys `script` names as literals, and the prefixes it names as templates."""
    literals: set[str] = set()
    prefixes: set[str] = set()
    for argument in _CALL.findall(script):
        literals.update(_LITERAL.findall(argument))
        literals.update(key for pair in _CHOICE.findall(argument) for key in pair)
        prefixes.update(_TEMPLATE.findall(argument))
    return literals, prefixes


def test_every_key_the_panel_shows_has_a_string() -> None:
    """Each literal key, and each key a template can make from what the server sends, exists."""
    literals, prefixes = named_keys(SCRIPT)
    made = {f"source_{kind}" for kind in (*SOURCE_TYPES, "other")}
    made |= {f"kind_{kind}" for kind in KIND_KEYS.values() if kind != "source"}
    assert {"source_", "kind_"} <= prefixes
    assert sorted((literals | made) - STRINGS) == []


def test_every_string_is_shown_somewhere() -> None:
    """No panel string is left that the script never names (a literal or a template's prefix)."""
    literals, prefixes = named_keys(SCRIPT)
    unused = {
        key
        for key in STRINGS - literals
        if not any(key.startswith(prefix) for prefix in prefixes) and f'"{key}"' not in SCRIPT
    }
    assert sorted(unused) == []


def test_the_check_finds_a_missing_key() -> None:
    """A key the script names that has no string is found, in each way a key is named."""
    script = 'this.t("no_such_key"); this.t(x ? "forget" : "other_missing"); this.t(`kind_${k}`)'
    literals, prefixes = named_keys(script)
    assert literals - STRINGS == {"no_such_key", "other_missing"}
    assert prefixes == {"kind_"}
