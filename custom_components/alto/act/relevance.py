"""Which exposed entities and services a span is about, most likely first.

The executor is shown its entities and services in this order, in its prompt and in its schema's
enums, and a small model picks early from a list (SmolLM2-135M answers with the first value it is
offered), so the order is part of the decision. Entities come

1. first those whose domain can do what the span's verb asks ("unlock" is only a lock's
   service), when the span says a service's verb at all: a read, or a span in another language,
   says none, and then no domain is put back;
2. then by how many of the span's words name them (entity id, name, aliases);
3. then, among those it names, by how few words of their name (or of their closest alias) the
   span leaves unsaid, so "the bedroom" is the media player named Bedroom before the Bedroom
   lamp;
4. then by how many of the span's words name their area;
5. then those in the speaker's area;
6. then by entity id, so the order is the same every time.

Services come by how many of their words the span says ("turn off" puts `turn_off` before
`turn_on`), then by name. Words are `ways_in.words` (NFKC, casefolded, accents folded, split at
anything not a letter or digit, at camelCase and between letters and digits): "front_door",
"Front Door" and "frontDoor" are the same two words.
"""

from collections.abc import Iterable
from functools import lru_cache
from typing import Final

from .allowlist import ALLOWLIST, services_for
from .model import ExposedEntity
from .ways_in import words

# Words of service names that say how or where, not what is done ("turn_on", "return_to_base",
# "alarm_arm_home"): a span says them about anything.
_NOT_VERBS: Final = frozenset({"on", "off", "to", "base", "home", "away"})


@lru_cache(maxsize=64)
def _verbs(domain: str) -> frozenset[str]:
    """The words of what `domain`'s allowlisted services do."""
    return frozenset(word for service in services_for(domain) for word in words(service))


_EVERY_VERB: Final = frozenset().union(*map(_verbs, ALLOWLIST)) - _NOT_VERBS


@lru_cache(maxsize=8192)
def _names(entity: ExposedEntity) -> frozenset[str]:
    """The words that name `entity`: its entity id, name and aliases."""
    return frozenset(words(" ".join((entity.entity_id, entity.name, *entity.aliases))))


@lru_cache(maxsize=8192)
def _each_name(entity: ExposedEntity) -> tuple[frozenset[str], ...]:
    """The words of `entity`'s name and of each alias, one set each."""
    return tuple(frozenset(words(name)) for name in (entity.name, *entity.aliases))


def ranked_entities(
    entities: Iterable[ExposedEntity], span: str, area: str | None
) -> list[ExposedEntity]:
    """`entities`, the ones `span` is most likely about first (the module's order)."""
    said = frozenset(words(span))
    asked = said & _EVERY_VERB

    def key(entity: ExposedEntity) -> tuple[bool, int, int, int, bool, str]:
        unable = bool(asked) and asked.isdisjoint(_verbs(entity.domain))
        named = len(said & _names(entity))
        unsaid = min(len(name - said) for name in _each_name(entity)) if named else 0
        in_area = len(said.intersection(words(entity.area))) if entity.area else 0
        local = area is not None and entity.area == area
        return (unable, -named, unsaid, -in_area, not local, entity.entity_id)

    return sorted(entities, key=key)


def ranked_services(services: Iterable[str], span: str) -> list[str]:
    """`services`, those whose words `span` says most first, then by name."""
    said = frozenset(words(span))
    return sorted(services, key=lambda service: (-len(said.intersection(words(service))), service))
