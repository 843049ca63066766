"""The conversational model never holds a tool: an AST scan of the integration's source."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "custom_components" / "alto"
ACTION_ORGAN = PACKAGE / "act"


def chat_calls_with_tools(root: Path) -> list[str]:
    """`path:line` of every chat or generate call that passes `tools` (or `**kwargs`)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in {"chat", "chat_stream", "generate"}:
                continue
            if any(k.arg == "tools" or k.arg is None for k in node.keywords):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_chat_call_passes_tools_outside_the_action_organ() -> None:
    """No chat call outside the action organ passes tools."""
    offenders = [
        site
        for site in chat_calls_with_tools(PACKAGE)
        if not (PACKAGE / site.split(":")[0]).is_relative_to(ACTION_ORGAN)
    ]
    assert offenders == []


def test_the_scan_finds_a_tools_argument(tmp_path: Path) -> None:
    """The scan finds both an explicit `tools=` and a `**kwargs` that could carry one."""
    (tmp_path / "bad.py").write_text(
        "async def f(c):\n    await c.chat(model='m', messages=[], tools=[{}])\n"
        "async def g(c, kw):\n    await c.chat(**kw)\n"
    )
    assert chat_calls_with_tools(tmp_path) == ["bad.py:2", "bad.py:4"]


def test_the_turn_does_call_chat() -> None:
    """The turn does call chat, so the scan looks where the calls are."""
    # Guard against the scan passing because it looks in the wrong place.
    assert "client.chat(" in (PACKAGE / "turn.py").read_text(encoding="utf-8")
