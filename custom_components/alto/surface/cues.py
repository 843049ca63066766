"""Cues: which names the store knows does the heard utterance contain.

A cue is a reference the speaker actually made, so matching is literal: casefolded whole words on
Unicode word boundaries (UAX #29, via uniseg), never a substring ("Tom" is not in "tomorrow") and
never a stem. A possessive or other clitic is not part of the word ("Maria's" names Maria), nor is
an elision before it ("d'Anna" names Anna); in an utterance read as German or Dutch, a genitive
written without an apostrophe names its name ("Omas Geburtstag" names Oma); and a name's leading
article, in any language Alto speaks, is optional ("our boiler" names "the boiler", "unser Kessel"
names "der Kessel").

Segmentation is pure Python (about 20 µs a character), and a home knows thousands of names, so a
`CueIndex` segments each name once and is reused turn after turn: `CueIndex.build` takes the
earlier indexes and segments only the names they do not hold. Matching looks each utterance word
up among the names' first words, so its cost follows the utterance, not the number of names.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .readings import READINGS, reading_of
from .segments import segments

_Word = tuple[int, int, str]  # start, end, casefolded word without its clitic
type Key = tuple[str, ...]  # the casefolded words that cue a name, in order

_DETERMINERS = frozenset().union(*(lex.determiners for lex in READINGS.values()))
_CLITICS = frozenset().union(*(lex.clitics for lex in READINGS.values()))
_ELIDED = frozenset().union(*(lex.elisions for lex in READINGS.values()))


def find_cues(utterance: str, names: Iterable[str], limit: int = 3) -> list[str]:
    """At most `limit` names found in `utterance`, longest matched span first.

    Each place in the utterance cues one name: where names overlap the longest span wins, so a
    longer name containing a shorter one takes its place. Ties in length keep utterance order, then
    the order of `names`. A name is returned once, as given.
    """
    return CueIndex.build(names).find(utterance, limit)


@dataclass(frozen=True, slots=True)
class CueIndex:
    """Names with the word sequences that cue each, segmented once (see the module docstring).

    `names` are the strings given, in order; `keys` maps each to its cue keys (what `build` reuses);
    `by_first` maps a key's first word to (name order, key, name), in name order. Immutable once
    built, so a thread may match with it while the event loop holds it.
    """

    names: tuple[str, ...]
    keys: Mapping[str, tuple[Key, ...]]
    by_first: Mapping[str, tuple[tuple[int, Key, str], ...]]

    @classmethod
    def build(cls, names: Iterable[str], *earlier: CueIndex) -> CueIndex:
        """An index of the `str` items of `names`, taking the keys an `earlier` index holds."""
        given = tuple(n for n in names if isinstance(n, str))
        keys = {name: _known_keys(name, earlier) for name in given}
        by_first: dict[str, list[tuple[int, Key, str]]] = {}
        for order, name in enumerate(given):
            for key in keys[name]:
                by_first.setdefault(key[0], []).append((order, key, name))
        return cls(given, keys, {word: tuple(found) for word, found in by_first.items()})

    def find(self, utterance: str, limit: int = 3) -> list[str]:
        """`find_cues(utterance, self.names, limit)`."""
        if limit <= 0 or not isinstance(utterance, str):
            return []
        said = _words(utterance)
        readings = [[w for _, _, w in said]]
        if reading_of([utterance]).genitive:  # "Omas Katze": the name without its "s" too
            readings.append([w[:-1] if len(w) > 2 and w[-1] == "s" else w for w in readings[0]])
        found: list[tuple[int, int, int, str]] = []  # -length, start, name order, name
        for said_words in readings:
            for i, word in enumerate(said_words):
                for order, key, name in self.by_first.get(word, ()):
                    if tuple(said_words[i : i + len(key)]) == key:
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


def _known_keys(name: str, earlier: Iterable[CueIndex]) -> tuple[Key, ...]:
    """The keys of `name` from the first earlier index that has them, else segmented now."""
    for index in earlier:
        if (keys := index.keys.get(name)) is not None:
            return keys
    return _keys(name)


def _keys(name: str) -> tuple[Key, ...]:
    """The word sequences that cue `name`: as given, and without a leading article."""
    key = tuple(w for _, _, w in _words(name))
    if len(key) > 1 and key[0] in _DETERMINERS:
        return (key, key[1:])
    return (key,) if key else ()


def _words(text: str) -> list[_Word]:
    found: list[_Word] = []
    pos = 0
    for piece in segments(text):
        start, pos = pos, pos + len(piece)
        if not any(c.isalnum() for c in piece):
            continue
        cut = max(piece.rfind(q) for q in "'’ʼ")
        first = min((i for q in "'’ʼ" if (i := piece.find(q)) > 0), default=0)
        if cut > 0 and piece[cut + 1 :].casefold() in _CLITICS:
            found.append((start, start + cut, _fold(piece[:cut])))
        elif first and piece[:first].casefold() in _ELIDED:
            found.append((start + first + 1, pos, _fold(piece[first + 1 :])))
        else:
            found.append((start, pos, _fold(piece)))
    return found


def _fold(word: str) -> str:
    """Caseless and composed, so "ZOË", "zoë" and "zoe" + combining diaeresis are one word."""
    return unicodedata.normalize("NFC", word.casefold())
