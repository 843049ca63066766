"""Value types of the action organ and the registry the guard resolves entities against.

The registry is the trusted side: it is built from what Home Assistant exposes, and a model's
words only ever select one of its entries, never describe a new one.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

CALL_SERVICE_TOOL = "call_ha_service"
STATE_QUERY_TOOL = "get_device_state"
NO_TOOL = "none"

# Longest entity text the registry will look at; HA ids and names are far shorter, and a cap keeps
# the guard's work bounded whatever the model emits.
MAX_ENTITY_TEXT = 255


class GuardReason(StrEnum):
    """Stable refusal codes; events and traces carry these strings, so never rename one.

    - ``malformed_proposal``: the executor's output is not one JSON object of the expected shape.
    - ``unknown_tool``: the tool is not the one the validator handles (or not a tool at all).
    - ``bad_arguments``: the arguments are not a mapping, a required one is missing, one has the
      wrong type, an unexpected top-level key is present, or the arguments cannot be read.
    - ``unknown_entity``: the entity text names no exposed entity (no fuzzy or lookalike match).
    - ``ambiguous_entity``: the entity text names more than one exposed entity.
    - ``entity_smuggled``: a second target rides along: the entity text names several entities,
      or the arguments or service data carry a targeting key (``entity_id``, ``target``, ...).
    - ``service_not_allowed``: the service is not allowlisted for the entity's registry domain,
      including a ``domain.service`` form whose domain differs from the entity's.
    - ``bad_data_key``: service data has a key the service's schema does not allow, lacks a
      required one, or combines mutually exclusive keys.
    - ``bad_data_value``: a service data value has the wrong type or is out of range.
    """

    MALFORMED_PROPOSAL = "malformed_proposal"
    UNKNOWN_TOOL = "unknown_tool"
    BAD_ARGUMENTS = "bad_arguments"
    UNKNOWN_ENTITY = "unknown_entity"
    AMBIGUOUS_ENTITY = "ambiguous_entity"
    ENTITY_SMUGGLED = "entity_smuggled"
    SERVICE_NOT_ALLOWED = "service_not_allowed"
    BAD_DATA_KEY = "bad_data_key"
    BAD_DATA_VALUE = "bad_data_value"


@dataclass(frozen=True, slots=True)
class GuardRefusal:
    """Why a proposal was not accepted: a stable ``reason`` code and a human-readable detail."""

    reason: GuardReason
    detail: str


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class Target:
    """An entity that a scene, script, group or switch wrapper drives, exposed to Assist or not.

    Carries what its consent tier depends on, the same facts an `ExposedEntity` carries.
    """

    entity_id: str
    name: str
    device_class: str | None = None
    aliases: tuple[str, ...] = ()
    # Every other text Home Assistant keeps for it (registry and original names, device name).
    texts: tuple[str, ...] = ()
    # The device classes of its device's entities (its own among them).
    device_classes: tuple[str, ...] = ()
    # Home Assistant shows a switch as this entity (switch_as_x): it drives what the switch does.
    wraps_switch: bool = False

    def __post_init__(self) -> None:
        """Freeze the collections the caller passed."""
        for name in ("aliases", "texts", "device_classes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def domain(self) -> str:
        """The entity's domain, from its entity id."""
        return self.entity_id.partition(".")[0]


@dataclass(frozen=True, slots=True)
class ExposedEntity:
    """One entity exposed to the conversation assistant, as the registry knows it."""

    entity_id: str
    name: str
    aliases: tuple[str, ...] = ()
    area: str | None = None
    device_class: str | None = None
    # Excluded from the hash because a mapping is unhashable; equality still compares it.
    attributes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    # Everything it drives, transitively (a script's scene's lock), exposed or not: its consent
    # tier is the strictest of its own and theirs.
    targets: tuple[Target, ...] = ()
    # Read for the consent tier only; as on `Target`.
    texts: tuple[str, ...] = ()
    device_classes: tuple[str, ...] = ()
    wraps_switch: bool = False

    def __post_init__(self) -> None:
        """Freeze the collections the caller passed."""
        # Copy so a caller mutating its dict or list later cannot change a registry entry.
        for name in ("aliases", "targets", "texts", "device_classes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "attributes", _frozen(self.attributes))

    @property
    def domain(self) -> str:
        """The entity's domain, from its entity id."""
        return self.entity_id.partition(".")[0]


@dataclass(frozen=True, slots=True)
class Proposal:
    """What the executor proposed: a tool name and its arguments, none of it trusted yet."""

    tool: str
    arguments: object  # an object of the model's, checked by the guard before any use


@dataclass(frozen=True, slots=True)
class ValidatedCall:
    """A service call the guard accepted; its domain always comes from the registry."""

    domain: str
    service: str
    entity_id: str
    data: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)

    def __post_init__(self) -> None:
        """Freeze the data the caller passed."""
        object.__setattr__(self, "data", _frozen(self.data))

    def as_dict(self) -> dict[str, Any]:
        """The call as a plain dict (domain, service, entity_id, data)."""
        return {
            "domain": self.domain,
            "service": self.service,
            "entity_id": self.entity_id,
            "data": dict(self.data),
        }


@dataclass(frozen=True, slots=True)
class StateQuery:
    """A read of one exposed entity's state, accepted by the guard."""

    entity_id: str


def clip(value: object, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters, so a refusal detail stays short whatever it quotes."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def normalize_key(text: str) -> str:
    """Casefold and collapse whitespace; deliberately no accent, width or confusable folding."""
    return " ".join(text.split()).casefold()


# Splits a text that failed to resolve whole, to tell a smuggled second target from a plain
# unknown name. Conjunctions cover the confirmation languages; a hit only changes the reason code.
_SEPARATORS = re.compile(r"\s*(?:[,;&|+/]|\b(?:and|or|plus|und|oder|et|ou|y|o|e|en)\b)\s*")
_ENTITY_ID_SHAPE = re.compile(r"[a-z0-9_]+\.[a-z0-9_]+")


class _Ambiguous:
    """Index marker for a key that names two different entities."""


_AMBIGUOUS = _Ambiguous()


class Registry:
    """The exposed entities, indexed by normalized entity id, name and alias for O(1) lookup."""

    __slots__ = ("_by_id", "_index")

    def __init__(self, entities: Iterable[ExposedEntity]) -> None:
        """Index `entities`; ValueError on a duplicate entity id."""
        self._by_id: dict[str, ExposedEntity] = {}
        self._index: dict[str, ExposedEntity | _Ambiguous] = {}
        for entity in entities:
            if entity.entity_id in self._by_id:
                raise ValueError(f"duplicate entity id {entity.entity_id!r}")
            self._by_id[entity.entity_id] = entity
        for entity in self._by_id.values():
            for text in (entity.entity_id, entity.name, *entity.aliases):
                key = normalize_key(text)
                if not key:
                    continue
                known = self._index.get(key)
                if known is None or known is entity:
                    self._index[key] = entity
                else:
                    self._index[key] = _AMBIGUOUS

    def __len__(self) -> int:
        """The number of exposed entities."""
        return len(self._by_id)

    @property
    def entity_ids(self) -> tuple[str, ...]:
        """Every entity id, sorted."""
        return tuple(sorted(self._by_id))

    def entities(self) -> tuple[ExposedEntity, ...]:
        """All entries, ordered by entity id."""
        return tuple(self._by_id[entity_id] for entity_id in self.entity_ids)

    def get(self, entity_id: str) -> ExposedEntity | None:
        """The entry with exactly this entity id, or None."""
        return self._by_id.get(entity_id)

    def resolve(self, text: object) -> ExposedEntity | GuardRefusal:
        """The one entity whose id, name or alias equals ``text`` after normalization.

        ``text`` comes from a model's proposal, so its type is checked, not assumed.
        """
        if not isinstance(text, str):
            return GuardRefusal(GuardReason.BAD_ARGUMENTS, "entity must be a string")
        if len(text) > MAX_ENTITY_TEXT:
            return GuardRefusal(
                GuardReason.BAD_ARGUMENTS, f"entity longer than {MAX_ENTITY_TEXT} chars"
            )
        key = normalize_key(text)
        found = self._index.get(key)
        if isinstance(found, ExposedEntity):
            return found
        if found is _AMBIGUOUS:
            return GuardRefusal(
                GuardReason.AMBIGUOUS_ENTITY, f"{clip(text)} names more than one entity"
            )
        if self._names_several(key):
            return GuardRefusal(
                GuardReason.ENTITY_SMUGGLED, f"{clip(text)} names more than one target"
            )
        return GuardRefusal(GuardReason.UNKNOWN_ENTITY, f"{clip(text)} is not an exposed entity")

    def _names_several(self, key: str) -> bool:
        """Whether an unresolved key is a list of targets rather than one unknown name."""
        parts = [part for part in _SEPARATORS.split(key) if part]
        if len(parts) >= 2:
            return any(self._names_a_target(part) for part in parts)
        return sum(self._names_a_target(word) for word in key.split()) >= 2

    def _names_a_target(self, part: str) -> bool:
        return part in self._index or _ENTITY_ID_SHAPE.fullmatch(part) is not None
