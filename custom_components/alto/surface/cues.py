"""Cues: which names the store knows does the heard utterance contain.

A cue is a reference the speaker actually made, so matching is literal: casefolded whole words on
Unicode word boundaries (UAX #29, via uniseg), never a substring ("Tom" is not in "tomorrow") and
never a stem. A possessive or other clitic is not part of the word ("Maria's" names Maria), and a
name's leading article is optional ("our boiler" names "the boiler").
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from uniseg.wordbreak import words

from .lexicon import CLITICS, DETERMINERS

_Word = tuple[int, int, str]  # start, end, casefolded word without its clitic


def find_cues(utterance: str, names: Iterable[str], limit: int = 3) -> list[str]:
    """At most `limit` names found in `utterance`, longest matched span first.

    Each place in the utterance cues one name: where names overlap the longest span wins, so a
    longer name containing a shorter one takes its place. Ties in length keep utterance order, then
    the order of `names`. A name is returned once, as given.
    """
    if limit <= 0 or not isinstance(utterance, str):
        return []
    said = _words(utterance)
    found: list[tuple[int, int, int, str]] = []  # -length, start, name order, name
    for order, name in enumerate(n for n in names if isinstance(n, str)):
        for key in _keys(name):
            for i in range(len(said) - len(key) + 1):
                if tuple(w for _, _, w in said[i : i + len(key)]) == key:
                    start, end = said[i][0], said[i + len(key) - 1][1]
                    found.append((start - end, start, order, name))
    taken: list[tuple[int, int]] = []
    cues: list[str] = []
    for negative_length, start, _, name in sorted(found, key=lambda f: f[:3]):
        end = start - negative_length
        if name in cues or any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        cues.append(name)
        if len(cues) == limit:
            break
    return cues


def _keys(name: str) -> list[tuple[str, ...]]:
    """The word sequences that cue `name`: as given, and without a leading article."""
    key = tuple(w for _, _, w in _words(name))
    if len(key) > 1 and key[0] in DETERMINERS:
        return [key, key[1:]]
    return [key] if key else []


def _words(text: str) -> list[_Word]:
    found: list[_Word] = []
    pos = 0
    for piece in words(text):
        start, pos = pos, pos + len(piece)
        if not any(c.isalnum() for c in piece):
            continue
        cut = max(piece.rfind(q) for q in "'’ʼ")
        if cut > 0 and piece[cut + 1 :].casefold() in CLITICS:
            found.append((start, start + cut, _fold(piece[:cut])))
        else:
            found.append((start, pos, _fold(piece)))
    return found


def _fold(word: str) -> str:
    """Caseless and composed, so "ZOË", "zoë" and "zoe" + combining diaeresis are one word."""
    return unicodedata.normalize("NFC", word.casefold())
