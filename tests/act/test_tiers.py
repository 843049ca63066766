"""Consent tiers per domain, options overrides, and the guarded-cover floor."""

import pytest

from custom_components.alto.act.allowlist import ALLOWLIST
from custom_components.alto.act.model import ExposedEntity
from custom_components.alto.act.tiers import DEFAULT_TIERS, READ_TIER, Tier, tier_for


def entity(entity_id: str, device_class: str | None = None) -> ExposedEntity:
    """An exposed entity named by its id."""
    return ExposedEntity(entity_id, entity_id, device_class=device_class)


@pytest.mark.parametrize(
    ("entity_id", "tier"),
    [
        ("light.a", Tier.AUTONOMOUS),
        ("switch.a", Tier.AUTONOMOUS),
        ("fan.a", Tier.AUTONOMOUS),
        ("input_boolean.a", Tier.AUTONOMOUS),
        ("media_player.a", Tier.AUTONOMOUS),
        ("scene.a", Tier.AUTONOMOUS),
        ("climate.a", Tier.ACT_AND_NOTIFY),
        ("cover.a", Tier.ACT_AND_NOTIFY),
        ("vacuum.a", Tier.ACT_AND_NOTIFY),
        ("script.a", Tier.CONFIRM_FIRST),  # a script can do anything: ask unless lowered
        ("humidifier.a", Tier.ACT_AND_NOTIFY),
        ("lock.a", Tier.CONFIRM_FIRST),
        ("alarm_control_panel.a", Tier.CONFIRM_FIRST),
        ("valve.a", Tier.CONFIRM_FIRST),
        ("siren.a", Tier.CONFIRM_FIRST),  # no default row: ask
    ],
)
def test_default_tiers(entity_id: str, tier: Tier) -> None:
    """Every domain has its default tier; a domain without one asks first."""
    assert tier_for(entity(entity_id)) is tier


def test_every_allowlisted_domain_has_a_default_tier() -> None:
    """Every allowlisted domain has a default tier."""
    assert set(DEFAULT_TIERS) == set(ALLOWLIST)


def test_reads_are_autonomous() -> None:
    """Reading a state needs no consent."""
    assert READ_TIER is Tier.AUTONOMOUS


@pytest.mark.parametrize("device_class", ["garage", "gate", "door"])
def test_guarded_covers_are_confirm_first_whatever_the_override(device_class: str) -> None:
    """Garage doors, gates and doors ask first, whatever the cover override says."""
    cover = entity("cover.x", device_class)
    assert tier_for(cover) is Tier.CONFIRM_FIRST
    assert tier_for(cover, {"cover": "autonomous"}) is Tier.CONFIRM_FIRST
    assert tier_for(cover, {"cover": "act_and_notify"}) is Tier.CONFIRM_FIRST


@pytest.mark.parametrize("device_class", [None, "blind", "shade", "curtain", "awning", "Garage"])
def test_ordinary_covers_follow_the_cover_tier(device_class: str | None) -> None:
    """Other covers (device class matched exactly) follow the cover tier and its override."""
    cover = entity("cover.x", device_class)
    assert tier_for(cover) is Tier.ACT_AND_NOTIFY
    assert tier_for(cover, {"cover": "autonomous"}) is Tier.AUTONOMOUS


def test_a_garage_device_class_outside_covers_is_not_special() -> None:
    """A garage device class on a non-cover changes nothing."""
    assert tier_for(entity("light.garage", "garage")) is Tier.AUTONOMOUS


def test_overrides_apply_per_domain() -> None:
    """Overrides, as strings or tiers, apply to their own domain only; locks always ask."""
    overrides = {"lock": "act_and_notify", "light": "confirm_first", "climate": Tier.AUTONOMOUS}
    assert tier_for(entity("lock.a"), overrides) is Tier.CONFIRM_FIRST
    assert tier_for(entity("light.a"), overrides) is Tier.CONFIRM_FIRST
    assert tier_for(entity("climate.a"), overrides) is Tier.AUTONOMOUS
    assert tier_for(entity("valve.a"), overrides) is Tier.CONFIRM_FIRST
    assert tier_for(entity("siren.a"), {"siren": "autonomous"}) is Tier.AUTONOMOUS


@pytest.mark.parametrize("value", ["", "Autonomous", "auto", "tier1", None, 1, ["autonomous"]])
def test_invalid_override_values_are_ignored(value: object) -> None:
    """An override that is not exactly a tier's name is ignored."""
    assert tier_for(entity("lock.a"), {"lock": value}) is Tier.CONFIRM_FIRST  # type: ignore[dict-item]


def test_tier_values_are_the_option_strings() -> None:
    """The tiers' values are the strings the options store."""
    assert [str(tier) for tier in Tier] == ["autonomous", "act_and_notify", "confirm_first"]
