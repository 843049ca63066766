"""The options table is the one source: strings, README, settings and forms all follow it."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import probatio
import pytest
from homeassistant.data_entry_flow import section
from homeassistant.helpers.selector import NumberSelector

from custom_components.alto import options as opt
from custom_components.alto.act.tiers import ALWAYS_ASKED, DEFAULT_TIERS, Tier
from custom_components.alto.memory.kin import Kin
from custom_components.alto.settings import AltoSettings

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "custom_components" / "alto"
STRINGS = [PACKAGE / "strings.json", *sorted((PACKAGE / "translations").glob("*.json"))]
BEGIN, END = "<!-- options:begin -->\n", "<!-- options:end -->"
CHAT = "chat:latest"
DATA = {"url": "http://ollama:11434", opt.MODEL.key: CHAT, "embedding_model": "embed:latest"}

DECLARED = [v for v in vars(opt).values() if isinstance(v, opt.Row | opt.ServedModel)]
IN_REFLECT = set(opt.REFLECT.fields)
EVERY_OPTION = [*opt.OPTION_FIELDS, *opt.REFLECT.fields]
# The options menu: the settings form, the per-entity consent list and the family.
MENU = {"settings", opt.ENTITY_CONSENT.key, opt.FAMILY.key}
# Empty, these fall back to the chat model.
CHAT_MODEL_WHEN_EMPTY = {
    opt.SURFACER_MODEL,
    opt.N1_MODEL,
    opt.REFLECTION_MODEL,
    opt.SYNTHESIS_MODEL,
}


def load(path: Path) -> dict[str, Any]:
    """A strings file."""
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def label_problems(strings: Mapping[str, Any]) -> list[str]:
    """Where a strings file labels other fields than the table shows, or a choice not offered."""
    steps = strings["options"]["step"]
    form = steps["settings"]
    plain = {o.key for o in opt.OPTION_FIELDS if not isinstance(o, opt.Section | opt.Consent)}
    reflect = {o.key for o in opt.REFLECT.fields}
    models = {o.key for o in opt.MODEL_FIELDS}
    expected: list[tuple[str, Any, set[str]]] = [
        ("options.step", steps, {"init", "settings", *MENU, "family_member"}),
        ("options.step.family.data", steps[opt.FAMILY.key]["data"], {"person"}),
        (
            "options.step.family_member.data",
            steps["family_member"]["data"],
            {*opt.KIN_PEOPLE, "sex"},
        ),
        ("selector.sex", strings["selector"]["sex"]["options"], set(opt.SEXES)),
        ("options.step.init.menu_options", steps["init"]["menu_options"], MENU),
        ("options.step.settings.data", form["data"], {o.key for o in opt.OPTION_FIELDS}),
        ("options.step.settings.data_description", form["data_description"], plain),
        ("options.step.settings.sections", form["sections"], {opt.CONSENT.key, opt.REFLECT.key}),
        ("sections.consent.data", form["sections"]["consent"]["data"], set(opt.OFFERED_DOMAINS)),
        ("sections.reflect.data", form["sections"]["reflect"]["data"], reflect),
        (
            "sections.reflect.data_description",
            form["sections"]["reflect"]["data_description"],
            reflect,
        ),
        ("selector.tier", strings["selector"]["tier"]["options"], {t.value for t in Tier}),
    ]
    for step in ("models", "reconfigure_models"):
        labels = strings["config"]["step"][step]
        expected += [
            (f"config.step.{step}.data", labels["data"], models),
            (f"config.step.{step}.data_description", labels["data_description"], models),
        ]
    expected += [
        (f"selector.{o.key}", strings["selector"][o.key]["options"], set(o.choices))
        for o in EVERY_OPTION
        if isinstance(o, opt.Choice)
    ]
    found = []
    for where, labelled, keys in expected:
        found += [f"{where}: no label for {key}" for key in sorted(keys - labelled.keys())]
        found += [f"{where}: stray {key}" for key in sorted(labelled.keys() - keys)]
    return found


@pytest.mark.parametrize("path", STRINGS, ids=lambda p: p.name)
def test_each_form_labels_exactly_the_table_s_fields(path: Path) -> None:
    """strings.json and every translation label each field the table shows there, and no other."""
    assert label_problems(load(path)) == []


def test_the_label_check_finds_a_missing_and_a_stray_label() -> None:
    """A label dropped and one left over are both reported."""
    strings = copy.deepcopy(load(PACKAGE / "strings.json"))
    del strings["options"]["step"]["settings"]["sections"]["reflect"]["data"]["breather"]
    strings["config"]["step"]["models"]["data"]["old_model"] = "Old"
    assert label_problems(strings) == [
        "sections.reflect.data: no label for breather",
        "config.step.models.data: stray old_model",
    ]


def test_every_declared_option_has_one_place_and_its_own_key() -> None:
    """Each option of the module sits in exactly one form, section or step; no key is used twice."""
    places = [
        *opt.MODEL_FIELDS,
        *opt.OPTION_FIELDS,
        *opt.REFLECT.fields,
        opt.ENTITY_CONSENT,
        opt.FAMILY,
    ]
    assert sorted(map(id, places)) == sorted(map(id, DECLARED))
    keys = [o.key for o in places]
    assert len(keys) == len(set(keys))


def test_the_readme_table_is_the_rendered_one() -> None:
    """The README's options table, between its markers, is exactly `render_markdown`'s output."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert BEGIN in readme, "the README lacks the options table's markers"
    table = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    assert table == opt.render_markdown(load(PACKAGE / "strings.json"))


def setting(settings: AltoSettings, option: opt.Row) -> object:
    """What `settings` holds for `option`, as the option's own value."""
    passes = {"n1": settings.n1, "reflection": settings.reflection, "synthesis": settings.synthesis}
    name, _, field = option.key.rpartition("_")
    if name in passes and field in ("enabled", "model"):
        return getattr(passes[name], field)
    if option is opt.KEEP_ALIVE:
        return settings.keep_alive_s
    if option is opt.REPLY_CHANNEL:
        return settings.reply_channel_option
    if option is opt.MEMORY_MODE:
        return str(settings.memory_mode)
    return getattr(settings, option.key)


def table_default(option: opt.Row) -> object:
    """The value the table says an unset option has."""
    if option in CHAT_MODEL_WHEN_EMPTY:
        return CHAT
    if isinstance(option, opt.Consent | opt.EntityConsent | opt.Family):
        return {}
    return getattr(option, "default", None)


def other_value(option: opt.Row) -> object:
    """A value of `option` that is not its default (a number's maximum)."""
    match option:
        case opt.Toggle():
            return not option.default
        case opt.Number():
            return option.maximum
        case opt.Choice():
            return next(c for c in option.choices if c != option.default)
        case opt.Consent():
            return {"light": Tier.CONFIRM_FIRST.value}
        case opt.EntityConsent():
            return {"light.kitchen": Tier.CONFIRM_FIRST.value}
        case opt.Family():
            return {"person.megan": Kin(mother="person.lisa", father="person.gary", sex="f")}
    return "something:typed"


def as_stored(value: object) -> object:
    """`value` as an entry's options hold it: a family's people as mappings of what was said."""
    if isinstance(value, dict) and all(isinstance(v, Kin) for v in value.values()):
        return {p: {k: v for k, v in asdict(kin).items() if v} for p, kin in value.items()}
    return value


def placed(option: opt.Row, value: object) -> dict[str, object]:
    """Entry values setting `option` to `value`, inside its section when it has one."""
    return {opt.REFLECT.key: {option.key: value}} if option in IN_REFLECT else {option.key: value}


SETTABLE: list[opt.Row] = [
    *(o for o in EVERY_OPTION if not isinstance(o, opt.Section)),
    opt.ENTITY_CONSENT,
    opt.FAMILY,
]


@pytest.mark.parametrize("option", SETTABLE, ids=lambda o: o.key)
def test_settings_default_to_the_table(option: opt.Row) -> None:
    """An entry without options has each setting at the table's default."""
    assert setting(AltoSettings.from_mapping(DATA), option) == table_default(option)


@pytest.mark.parametrize("option", SETTABLE, ids=lambda o: o.key)
def test_settings_read_each_option_under_its_key(option: opt.Row) -> None:
    """A value set under the option's key (in its section) is the setting."""
    value = other_value(option)
    settings = AltoSettings.from_mapping({**DATA, **placed(option, as_stored(value))})
    assert setting(settings, option) == value


def form_fields(schema: probatio.Schema) -> Iterator[tuple[probatio.Marker, Any]]:
    """(marker, validator) of every field of a form, a section's fields after the section's."""
    for marker, validator in schema.schema.items():
        yield marker, validator
        if isinstance(validator, section):
            yield from form_fields(validator.schema)


FORM = dict((str(m), (m, v)) for m, v in form_fields(opt.options_schema(DATA)))


def test_the_form_shows_every_option_once() -> None:
    """The settings form's fields are the table's options, consent's domains and nothing else."""
    assert sorted(FORM) == sorted([*(o.key for o in EVERY_OPTION), *opt.OFFERED_DOMAINS])


def test_the_consent_section_offers_every_domain_but_those_always_asked() -> None:
    """Every domain with a default tier has a list, except a lock's and an alarm panel's."""
    assert DEFAULT_TIERS.keys() >= ALWAYS_ASKED
    assert set(opt.OFFERED_DOMAINS) == DEFAULT_TIERS.keys() - ALWAYS_ASKED
    assert all(FORM[domain][0].default() == DEFAULT_TIERS[domain] for domain in opt.OFFERED_DOMAINS)


@pytest.mark.parametrize(
    "option", [o for o in EVERY_OPTION if isinstance(o, opt.Number)], ids=lambda o: o.key
)
def test_each_number_box_has_the_table_s_bounds_and_default(option: opt.Number[Any]) -> None:
    """A number's box is bounded and stepped as the table says and starts at its default."""
    marker, validator = FORM[option.key]
    assert isinstance(validator, NumberSelector)
    config = validator.config
    assert (config["min"], config["max"], config["step"]) == (
        option.minimum,
        option.maximum,
        option.step,
    )
    assert marker.default() == option.default


def test_a_stored_family_keeps_only_what_reads_as_one() -> None:
    """Anything else stored under the family's key, or inside it, is left out, not an error."""
    assert opt.FAMILY.read({opt.FAMILY.key: "Lisa"}) == {}
    stored = {
        "person.megan": {"mother": "person.lisa", "father": 7, "partner": "", "sex": "x"},
        "person.leo": "son",
    }
    assert opt.FAMILY.read({opt.FAMILY.key: stored}) == {"person.megan": Kin(mother="person.lisa")}
