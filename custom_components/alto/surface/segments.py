"""Unicode word segments (UAX #29, via uniseg) of a text, through a cache of its words.

Segmenting is pure Python, about 20 µs a character, and the Surfacer segments the same words
again and again: an utterance's common words, a memory phrase each turn it is cued, an extractive
render made of its phrases' words. A run of spaces is always a segment of its own (rules WB3d
and WB999; no other rule looks across a space), so the text between runs segments on its own,
and each such piece is segmented once. Text where a piece after a space opens with a non-ASCII
character, which could be an Extend joining that space (WB4), is segmented whole.
"""

from __future__ import annotations

import re
from functools import lru_cache

from uniseg.wordbreak import words

_SPACES = re.compile(r"( +)")


def segments(text: str) -> list[str]:
    """The UAX #29 word segments of `text`, exactly as `uniseg.wordbreak.words` gives them."""
    parts = _SPACES.split(text)
    if any(part[:1] and not part[0].isascii() for part in parts[2::2]):
        return list(words(text))
    out: list[str] = []
    for n, part in enumerate(parts):
        if n % 2:
            out.append(part)
        elif part:
            out += _segmented(part)
    return out


@lru_cache(maxsize=8192)
def _segmented(part: str) -> tuple[str, ...]:
    return tuple(words(part))
