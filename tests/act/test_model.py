"""Registry resolution: exact after casefold and whitespace, never fuzzy, ambiguity refuses."""

import ast
import dataclasses
from pathlib import Path

import pytest

from custom_components.alto.act.model import (
    MAX_ENTITY_TEXT,
    ExposedEntity,
    GuardReason,
    GuardRefusal,
    Registry,
    ValidatedCall,
)

from . import HOME, home

ACT_DIR = Path(__file__).parents[2] / "custom_components" / "alto" / "act"
# The pure modules; the Home Assistant wiring lives beside them in other files.
PURE_MODULES = ("__init__", "model", "allowlist", "guard", "tiers", "confirm", "proposal")


def reason(result: object) -> GuardReason | None:
    """The reason of a refusal, None for anything else."""
    return result.reason if isinstance(result, GuardRefusal) else None


def test_the_pure_modules_import_nothing_from_home_assistant() -> None:
    """The pure modules of the action organ import nothing from Home Assistant."""
    for path in (ACT_DIR / f"{module}.py" for module in PURE_MODULES):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(name.split(".")[0] == "homeassistant" for name in names), path.name


def test_entity_domain_and_frozen_copies() -> None:
    """An entity derives its domain, copies aliases and attributes, and is frozen and hashable."""
    attributes = {"min_temp": 5}
    aliases = ["Heater"]
    entity = ExposedEntity("climate.x", "X", aliases=aliases, attributes=attributes)  # type: ignore[arg-type]
    attributes["min_temp"] = 99
    aliases.append("Other")
    assert entity.domain == "climate"
    assert entity.aliases == ("Heater",)
    assert entity.attributes == {"min_temp": 5}
    with pytest.raises(TypeError):
        entity.attributes["min_temp"] = 1  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        entity.name = "Y"  # type: ignore[misc]
    assert hash(entity) == hash(ExposedEntity("climate.x", "X", aliases=("Heater",)))


def test_registry_basics() -> None:
    """The registry holds every entity once, sorted by id, and looks ids up exactly."""
    registry = home()
    assert len(registry) == len(HOME)
    assert registry.entity_ids == tuple(sorted(entity.entity_id for entity in HOME))
    assert registry.get("light.kitchen") is HOME[0]
    assert registry.get("Light.Kitchen") is None
    assert registry.entities()[0].entity_id == registry.entity_ids[0]


def test_duplicate_entity_ids_are_a_build_error() -> None:
    """Two entities with one id cannot make a registry."""
    with pytest.raises(ValueError, match=r"light\.a"):
        Registry([ExposedEntity("light.a", "A"), ExposedEntity("light.a", "B")])


@pytest.mark.parametrize(
    ("text", "entity_id"),
    [
        ("light.kitchen", "light.kitchen"),
        ("LIGHT.KITCHEN", "light.kitchen"),
        ("Kitchen light", "light.kitchen"),
        ("  kitchen\t\n LIGHT ", "light.kitchen"),
        ("kitchen lamp", "light.kitchen"),
        ("CEILING", "light.kitchen"),
        ("Telly", "media_player.tv"),
        ("sensor.outside_temperature", "sensor.outside_temperature"),
    ],
)
def test_resolves_id_name_and_alias(text: str, entity_id: str) -> None:
    """Ids, names and aliases resolve after case folding and whitespace collapsing."""
    resolved = home().resolve(text)
    assert isinstance(resolved, ExposedEntity)
    assert resolved.entity_id == entity_id


def test_unicode_case_folding_is_case_folding_only() -> None:
    """Unicode case folding applies ("STRASSE" finds "Straße"), nothing more."""
    registry = Registry([ExposedEntity("light.strasse", "Straße")])
    resolved = registry.resolve("STRASSE")
    assert isinstance(resolved, ExposedEntity)
    assert resolved.entity_id == "light.strasse"


@pytest.mark.parametrize(
    "text",
    [
        "light.kltchen",  # l for i
        "light.kitchem",
        "light.kitche",
        "light.kitchens",
        "light.kitchen_",
        "light.kitсhen",  # Cyrillic es
        "light.kitchеn",  # Cyrillic ie
        "lіght.kitchen",  # Ukrainian i
        "light.kit\u200bchen",  # zero-width space
        "ｌｉｇｈｔ.ｋｉｔｃｈｅｎ",  # fullwidth: no NFKC folding
        "light kitchen",
        "light_kitchen",
        "kitchen",
        "Kitchen lights",
        "",
        "   ",
        "light.",
        ".kitchen",
    ],
)
def test_lookalikes_and_near_misses_are_unknown(text: str) -> None:
    """Look-alike characters, near misses and partial names are unknown, never fuzzily matched."""
    assert reason(home().resolve(text)) is GuardReason.UNKNOWN_ENTITY


def test_capital_i_is_not_a_lowercase_l() -> None:
    """A capital I standing in for a lowercase l is unknown; a real case difference resolves."""
    registry = Registry([ExposedEntity("light.hall", "Hall")])
    assert reason(registry.resolve("light.haII")) is GuardReason.UNKNOWN_ENTITY
    assert reason(registry.resolve("HaII")) is GuardReason.UNKNOWN_ENTITY
    # ...while a real case difference still resolves.
    assert isinstance(registry.resolve("HALL"), ExposedEntity)


def test_a_key_naming_two_entities_is_ambiguous() -> None:
    """A name, alias or id shared by two entities is ambiguous."""
    registry = Registry(
        [
            ExposedEntity("light.desk", "Lamp", area="Office"),
            ExposedEntity("light.bedside", "Bedside", aliases=("lamp",)),
            ExposedEntity("light.other", "light.desk"),
        ]
    )
    assert reason(registry.resolve("lamp")) is GuardReason.AMBIGUOUS_ENTITY
    assert reason(registry.resolve("  LAMP ")) is GuardReason.AMBIGUOUS_ENTITY
    # An entity id that another entity uses as its name is ambiguous too.
    assert reason(registry.resolve("light.desk")) is GuardReason.AMBIGUOUS_ENTITY
    assert isinstance(registry.resolve("bedside"), ExposedEntity)


def test_a_name_repeated_as_alias_of_the_same_entity_is_not_ambiguous() -> None:
    """One entity naming itself twice is not ambiguous."""
    registry = Registry([ExposedEntity("light.desk", "Desk", aliases=("desk", "DESK "))])
    assert isinstance(registry.resolve("desk"), ExposedEntity)


def test_empty_names_and_aliases_are_not_keys() -> None:
    """Empty or blank names and aliases resolve nothing."""
    registry = Registry(
        [ExposedEntity("light.a", "", aliases=(" ",)), ExposedEntity("light.b", "")]
    )
    assert reason(registry.resolve("")) is GuardReason.UNKNOWN_ENTITY
    assert isinstance(registry.resolve("light.a"), ExposedEntity)


@pytest.mark.parametrize(
    "text",
    [
        "light.kitchen, lock.front_door",
        "light.kitchen;lock.front_door",
        "light.kitchen & light.hall",
        "light.kitchen and lock.front_door",
        "Kitchen light AND Front door",
        "light.kitchen lock.front_door",
        "light.kitchen light.nonexistent",
        "kitchen light + hall light",
        "light.kitchen | lock.front_door",
        "light.kitchen/lock.front_door",
        "lock.front_door, garbage",
        "Licht kitchen light und hall light",
        "Ceiling light.hall",
    ],
)
def test_a_second_target_in_the_entity_text_is_smuggling(text: str) -> None:
    """Entity text that names a second target, by any separator or language, is smuggling."""
    assert reason(home().resolve(text)) is GuardReason.ENTITY_SMUGGLED


def test_a_whole_name_with_a_separator_still_resolves() -> None:
    """A name containing a separator resolves; unknown words around one are only unknown."""
    registry = Registry([ExposedEntity("light.sp", "Salt & Pepper"), ExposedEntity("light.x", "X")])
    resolved = registry.resolve("salt & pepper")
    assert isinstance(resolved, ExposedEntity)
    assert resolved.entity_id == "light.sp"
    # Separators around unknown words are just an unknown name, not smuggling.
    assert reason(registry.resolve("salt and vinegar")) is GuardReason.UNKNOWN_ENTITY


@pytest.mark.parametrize("text", [None, 3, ["light.kitchen"], b"light.kitchen", {"a": 1}])
def test_non_string_entity_text_is_bad_arguments(text: object) -> None:
    """Entity text that is not a string is bad arguments."""
    assert reason(home().resolve(text)) is GuardReason.BAD_ARGUMENTS  # type: ignore[arg-type]


def test_overlong_entity_text_is_refused_before_lookup() -> None:
    """Text over the length limit is refused before lookup; padding within it still resolves."""
    registry = home()
    assert reason(registry.resolve("x" * (MAX_ENTITY_TEXT + 1))) is GuardReason.BAD_ARGUMENTS
    padded = "light.kitchen" + " " * (MAX_ENTITY_TEXT - len("light.kitchen"))
    assert isinstance(registry.resolve(padded), ExposedEntity)


def test_validated_call_as_dict_is_a_detached_copy() -> None:
    """A validated call copies its data in, and `as_dict` copies it out."""
    data = {"brightness_pct": 40}
    call = ValidatedCall("light", "turn_on", "light.kitchen", data)
    data["brightness_pct"] = 100
    as_dict = call.as_dict()
    assert as_dict == {
        "domain": "light",
        "service": "turn_on",
        "entity_id": "light.kitchen",
        "data": {"brightness_pct": 40},
    }
    as_dict["data"]["brightness_pct"] = 1
    assert call.data == {"brightness_pct": 40}


def test_reason_codes_are_stable_strings() -> None:
    """The refusal reasons are exactly the stable strings events and services report."""
    assert {str(code) for code in GuardReason} == {
        "malformed_proposal",
        "unknown_tool",
        "bad_arguments",
        "unknown_entity",
        "ambiguous_entity",
        "entity_smuggled",
        "service_not_allowed",
        "bad_data_key",
        "bad_data_value",
    }
