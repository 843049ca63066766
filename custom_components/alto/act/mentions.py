"""Whether a span names something in the home, or opens with a command.

The conversational model sometimes writes small talk, an opinion or a fact as an action. Each
span costs the executor a model call, and a span that names nothing it can act on ends in "none"
anyway, so the action organ asks first whether the span names anything at all. The names are the
household's own (entity names, aliases, entity ids, areas), in whatever language it named them,
so the check carries over languages without a word list.

A name is said when the span says all its words, or at least two of its words of `_STEM` letters
or more ("unlock the front door" names the lock "Front Door Lock", while "de la" does not name
"Luz de la cocina"); an area when the span says all its words. Words are
`ways_in.words` (casefolded, accents folded), and a word is said in an inflection or a compound
too when one of the two begins with the other and the shorter has at least `_STEM` letters
("light" says "Lights", "Küchenlicht" says "Küche"). Shorter words ("the", "de", "tv") must be
said as they are.

A span written in another language than the household's names ("mach das Bettlicht an" for
"Bed Light") names nothing; it still names an action when it opens with a device command
(`opens_with_a_command`): the imperatives the memory already reads commands by, in every
language Alto speaks (`memory.languages`), after any courtesy ("bitte", "please").
"""

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Final

from ..memory.languages import union
from .model import ExposedEntity
from .ways_in import words

_COMMANDS: Final = frozenset(word.casefold() for word in union("commands"))
_COURTESIES: Final = frozenset(word.casefold() for word in union("courtesies"))
# A word as the memory's lists write it: letters, an inner apostrophe ("tais-toi" is two words).
_WORD: Final = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")

# Letters a word must have before it is said by a longer word that begins with it.
_STEM: Final = 4
# Longer words of a name that say it: two of them are rarely said by chance.
_ENOUGH: Final = 2


def _said(word: str, said: AbstractSet[str]) -> bool:
    if word in said:
        return True
    if len(word) < _STEM:
        return False
    return any(
        len(other) >= _STEM and (other.startswith(word) or word.startswith(other)) for other in said
    )


def _says(name: tuple[str, ...], said: frozenset[str]) -> bool:
    """Whether all of `name`'s words are said, or `_ENOUGH` of its longer ones.

    Counted in the span's words, so one word ("lights") does not say two ("light", "lights").
    """
    if all(_said(word, said) for word in name):
        return True
    longer = [word for word in name if len(word) >= _STEM]
    return sum(any(_said(word, {other}) for word in longer) for other in said) >= _ENOUGH


class Mentions:
    """The names of a set of exposed entities and of their areas, to test spans against."""

    __slots__ = ("_areas", "_names")

    def __init__(self, entities: Iterable[ExposedEntity]) -> None:
        """Index the words of every name, alias, object id and area of `entities`."""
        names: set[tuple[str, ...]] = set()
        areas: set[tuple[str, ...]] = set()
        for entity in entities:
            # The object id only: the domain ("light") is not the entity's name.
            object_id = entity.entity_id.partition(".")[2]
            for text in (entity.name, object_id, *entity.aliases):
                if name := tuple(dict.fromkeys(words(text))):
                    names.add(name)
            if entity.area and (area := tuple(dict.fromkeys(words(entity.area)))):
                areas.add(area)
        self._names = tuple(names)
        self._areas = tuple(areas)

    def names_something(self, span: str) -> bool:
        """Whether `span` says a name or an alias of an entity, or an area (the module's rule)."""
        said = frozenset(words(span))
        if not said:
            return False
        return any(_says(name, said) for name in self._names) or any(
            all(_said(word, said) for word in area) for area in self._areas
        )

    def part_of_a_name(self, text: str) -> bool:
        """Whether every word of `text` is a word of one name or area ("tv": "Living Room TV").

        For a name Home Assistant's recognizer could not match whole; an empty text is no name.
        """
        asked = tuple(words(text))
        if not asked:
            return False
        return any(
            all(_said(word, frozenset(name)) for word in asked) for name in self._names
        ) or any(all(_said(word, frozenset(area)) for word in asked) for area in self._areas)


def opens_with_a_command(span: str) -> bool:
    """Whether `span`'s first word after any courtesies is a device command, in any language."""
    for word in _WORD.findall(span.casefold()):
        if word not in _COURTESIES:
            return word in _COMMANDS
    return False
