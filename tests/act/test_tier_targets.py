"""Tiers that depend on more than the domain: scene targets and names that say a way in."""

import pytest

from custom_components.alto.act.model import ExposedEntity, Target
from custom_components.alto.act.tiers import Tier, tier_for


def scene(*targets: Target) -> ExposedEntity:
    """A scene setting `targets`."""
    return ExposedEntity("scene.evening", "Evening", targets=targets)


def test_scene_takes_the_strictest_tier_of_what_it_sets() -> None:
    """A scene that unlocks a lock asks first, even though scenes are autonomous."""
    lights_only = scene(Target("light.lamp", "Lamp"))
    assert tier_for(lights_only) is Tier.AUTONOMOUS
    with_lock = scene(Target("light.lamp", "Lamp"), Target("lock.front", "Front"))
    assert tier_for(with_lock) is Tier.CONFIRM_FIRST
    with_blind = scene(Target("cover.blind", "Blind", "shade"))
    assert tier_for(with_blind) is Tier.ACT_AND_NOTIFY
    with_garage = scene(Target("cover.big", "Big", "garage"))
    assert tier_for(with_garage) is Tier.CONFIRM_FIRST


def test_scene_targets_follow_the_overrides_of_their_domains() -> None:
    """Lowering blinds lowers a scene setting one, raising scenes raises all; locks always ask."""
    with_blind = scene(Target("cover.blind", "Blind", "shade"))
    assert tier_for(with_blind, {"cover": "autonomous"}) is Tier.AUTONOMOUS
    assert tier_for(scene(), {"scene": "confirm_first"}) is Tier.CONFIRM_FIRST
    with_lock = scene(Target("lock.front", "Front"))
    assert tier_for(with_lock, {"lock": "autonomous"}) is Tier.CONFIRM_FIRST


@pytest.mark.parametrize(
    ("entity", "tier"),
    [
        (ExposedEntity("switch.relay_1", "Garage opener"), Tier.CONFIRM_FIRST),
        (ExposedEntity("switch.relay_2", "Relay 2", aliases=("garden gate",)), Tier.CONFIRM_FIRST),
        (ExposedEntity("switch.r3", "Garagentor"), Tier.CONFIRM_FIRST),
        (ExposedEntity("cover.c1", "Porte du garage"), Tier.CONFIRM_FIRST),
        (ExposedEntity("cover.c2", "Back door"), Tier.CONFIRM_FIRST),
        (ExposedEntity("switch.doorbell_chime", "Doorbell chime"), Tier.AUTONOMOUS),
        (ExposedEntity("switch.kettle", "Kettle"), Tier.AUTONOMOUS),
        (ExposedEntity("cover.kitchen", "Kitchen window"), Tier.ACT_AND_NOTIFY),
        (ExposedEntity("light.garage", "Garage light"), Tier.AUTONOMOUS),
    ],
)
def test_switches_and_covers_named_as_a_way_in_ask_first(entity: ExposedEntity, tier: Tier) -> None:
    """In any confirmation language; a light in the garage is still a light."""
    assert tier_for(entity) is tier


def test_a_way_in_cannot_be_lowered_by_a_domain_override() -> None:
    """Lowering switches does not lower the garage relay."""
    relay = ExposedEntity("switch.relay_1", "Garage opener")
    assert tier_for(relay, {"switch": "autonomous"}) is Tier.CONFIRM_FIRST
