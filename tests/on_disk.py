"""What is left on disk: the files under a folder that still hold a forgotten text.

A needle of digits ("4821" of a PIN) counts only where no hexadecimal or base64 character is
beside it, and not inside a UUID: journal hashes, ids and encoded vectors are long runs of
those, and any four digits turn up in them by chance (a journal hash once held
"…764748214de8…", a Chroma segment id "3165a814-595b-4821-966e-…", its digits between
dashes). In what people said the digits stand apart, so the forgotten number is still found
wherever the text is.
"""

from __future__ import annotations

import re
from pathlib import Path

_ENCODED = rb"[0-9A-Za-z+/=]"
_UUID = re.compile(rb"[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}")


def _pattern(needle: str) -> re.Pattern[bytes]:
    found = re.escape(needle.encode())
    if needle.isdigit():
        return re.compile(rb"(?<!" + _ENCODED + rb")" + found + rb"(?!" + _ENCODED + rb")")
    return re.compile(found)


def holding(root: Path, needles: tuple[str, ...]) -> dict[str, list[str]]:
    """Every file under `root` (all bytes, recursively) that holds one of `needles`, with them."""
    patterns = [(needle, _pattern(needle)) for needle in needles]
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            without_ids = _UUID.sub(lambda uuid: b"-" * len(uuid[0]), data)
            held = [
                needle
                for needle, pattern in patterns
                if pattern.search(without_ids if needle.isdigit() else data)
            ]
            if held:
                found[str(path.relative_to(root))] = held
    return found
