"""How forgetting finds a forgotten text in what something else kept of it.

A memory is a verbatim quote of what someone said, so wherever the words were kept (a turn
buffer, a service call's data, a debug trace) the quote is found inside a kept text: compared as
`history.normalized` compares (case folded, whitespace runs one space), so spacing or capitals
added on the way do not hide it. A paraphrase is not found: it is not the quote.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

from ..history import normalized

_WORD = re.compile(r"[^\W_]+")
_ASCII_WORD = re.compile(r"[0-9A-Za-z]+")
_MAX_DEPTH = 32  # nested records deeper than this are not searched (none of HA's are)


@dataclass(frozen=True, slots=True)
class Forgotten:
    """Forgotten texts, as forgetting looks for them."""

    needles: frozenset[str]
    # One word of each text, for a database to preselect the rows that may hold it.
    probes: tuple[str, ...]

    @classmethod
    def of(cls, texts: Collection[str]) -> Forgotten:
        """The forgotten `texts` (blank ones are not looked for)."""
        needles = frozenset(needle for needle in map(normalized, texts) if needle)
        return cls(needles, tuple(sorted({_probe(text) for text in texts if normalized(text)})))

    def held_in(self, value: object) -> bool:
        """Whether a string anywhere in `value` holds a forgotten text.

        `value` is a string, or mappings (keys and values), lists, tuples, sets and dataclasses
        of them, nested; anything else holds no text.
        """
        return any(
            needle in normalized(text) for text in _strings(value, 0) for needle in self.needles
        )


def _probe(text: str) -> str:
    """The longest word of `text`, to preselect rows with ("" for none: every row).

    Made of ASCII letters and digits where `text` has some: a database compares those whatever
    their case.
    """
    for pattern in (_ASCII_WORD, _WORD):
        if words := [word.group() for word in pattern.finditer(text)]:
            return max(words, key=len)
    return ""


def _strings(value: object, depth: int) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth >= _MAX_DEPTH:
        return
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, depth + 1)
            yield from _strings(item, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _strings(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _strings(getattr(value, field.name), depth + 1)
