"""Every setting of an Alto entry, declared once: key, default, bounds, choices, and its form.

The model step of the config flow shows `MODEL_FIELDS`; the options flow's settings form shows
`OPTION_FIELDS`, two of them sections (`CONSENT`, `REFLECT`) of their own fields, and its own step
shows `ENTITY_CONSENT`, one tier list per exposed entity. `AltoSettings` reads each value through
its declaration, the flows build their forms from them, `strings.json` labels exactly the fields
shown here, and the README's options table is `render_markdown`'s output.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any

import probatio
from homeassistant.data_entry_flow import section
from homeassistant.helpers.selector import (
    BooleanSelector,
    EntitySelector,
    EntitySelectorConfig,
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)

from .act.allowlist import services_for
from .act.model import ExposedEntity
from .act.tiers import ALWAYS_ASKED, DEFAULT_TIERS, Tier, own_tier, tier_for
from .memory.kin import Kin

type Values = Mapping[str, Any]
type Field = tuple[probatio.Marker, Any]
# How a field with a default is marked: optional at the top of a form, required in a section.
type MarkerKind = type[probatio.Optional] | type[probatio.Required]


class ReplyChannel(StrEnum):
    """How the conversational model separates speech, actions and thought."""

    JSON = "json"  # a constrained JSON answer (Ollama `format`): holds for any model
    MARKERS = "markers"  # ¦speech¦ and ¤action¤ marks the model is asked to write


class Capability(StrEnum):
    """What a served model must be able to do for its field (Ollama's capability names)."""

    CHAT = "completion"
    EMBED = "embedding"


@dataclass(frozen=True, slots=True, kw_only=True)
class ServedModel:
    """One of the models the config flow offers from those the Ollama server serves.

    Required models default to the first one able to do the job; an optional one stays empty
    (then the chat model does its job).
    """

    key: str
    needs: Capability
    required: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Row(ABC):
    """One option as the README's options table shows it.

    `meaning` is the README's text; a number's bounds are added to it when it is rendered.
    """

    key: str
    meaning: str

    @abstractmethod
    def shown_default(self) -> str:
        """The default as the README's table shows it."""

    def bounds(self) -> str:
        """The README's words for a number's bounds; empty for any other option."""
        return ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Option(Row):
    """One field of the options flow's settings form."""

    @abstractmethod
    def field(self, values: Values, marker: MarkerKind) -> Field:
        """The form's field for this option, showing its setting in `values`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Toggle(Option):
    """On or off."""

    default: bool

    def read(self, values: Values) -> bool:
        """The setting in `values`."""
        return bool(values.get(self.key, self.default))

    def field(self, values: Values, marker: MarkerKind) -> Field:
        """A switch defaulting to the setting."""
        return marker(self.key, default=self.read(values)), BooleanSelector()

    def shown_default(self) -> str:
        """On or off."""
        return "on" if self.default else "off"


@dataclass(frozen=True, slots=True, kw_only=True)
class Number[N: (int, float)](Option):
    """A number between two bounds; a whole number when the default is an `int`.

    The form sends floats, so a value is converted to the default's type when it is read.
    """

    default: N
    minimum: float
    maximum: float
    step: float = 1

    def read(self, values: Values) -> N:
        """The setting in `values` (the default when missing or None)."""
        value = values.get(self.key)
        return self.default if value is None else type(self.default)(value)

    def field(self, values: Values, marker: MarkerKind) -> Field:
        """A box bounded like the option, defaulting to the setting."""
        config = NumberSelectorConfig(
            min=self.minimum, max=self.maximum, step=self.step, mode=NumberSelectorMode.BOX
        )
        return marker(self.key, default=self.read(values)), NumberSelector(config)

    def shown_default(self) -> str:
        """The default number."""
        return _number(self.default)

    def bounds(self) -> str:
        """From the minimum to the maximum, and the step when it is not 1."""
        text = f"From {_number(self.minimum)} to {_number(self.maximum)}"
        return text if self.step == 1 else f"{text}, in steps of {_number(self.step)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice(Option):
    """One of a few values, each labelled under `selector.<key>` in `strings.json`."""

    default: str
    choices: tuple[str, ...]

    def read(self, values: Values) -> str:
        """The setting in `values`, as text (a stored number too)."""
        return str(values.get(self.key, self.default))

    def field(self, values: Values, marker: MarkerKind) -> Field:
        """A list of the choices, defaulting to the setting."""
        config = SelectSelectorConfig(
            options=list(self.choices), translation_key=self.key, mode=SelectSelectorMode.LIST
        )
        return marker(self.key, default=self.read(values)), SelectSelector(config)

    def shown_default(self) -> str:
        """The default value."""
        return self.default


@dataclass(frozen=True, slots=True, kw_only=True)
class Text(Option):
    """A text with a default; `shown` is how the README names a default too long to show."""

    default: str
    shown: str

    def read(self, values: Values) -> str:
        """The setting in `values`."""
        return str(values.get(self.key, self.default))

    def field(self, values: Values, marker: MarkerKind) -> Field:
        """A multi-line box defaulting to the setting."""
        return (
            marker(self.key, default=self.read(values)),
            TextSelector(TextSelectorConfig(multiline=True)),
        )

    def shown_default(self) -> str:
        """The README's name for the default."""
        return self.shown


@dataclass(frozen=True, slots=True, kw_only=True)
class Blank(Option):
    """A text whose empty value means something (no name, the embedded store, the chat model)."""

    password: bool = False

    def read(self, values: Values) -> str | None:
        """The setting in `values`; None when empty."""
        value = values.get(self.key)
        return str(value) if value else None

    def field(self, values: Values, marker: MarkerKind) -> Field:
        """Always optional, showing the option as typed as a suggestion, never as a default.

        A default would show what the empty field resolves to, and saving the form would then
        store it.
        """
        config = TextSelectorConfig(type=TextSelectorType.PASSWORD) if self.password else None
        key = probatio.Optional(self.key, description={"suggested_value": values.get(self.key)})
        return key, TextSelector(config)

    def shown_default(self) -> str:
        """Empty."""
        return "empty"


# The domains the consent section offers, with their default tiers: nothing lowers a lock or an
# alarm panel below confirm-first, so their tier is no choice.
OFFERED_DOMAINS: Mapping[str, Tier] = MappingProxyType(
    {domain: tier for domain, tier in DEFAULT_TIERS.items() if domain not in ALWAYS_ASKED}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Consent(Option):
    """The consent tier of each domain the action organ can touch, in a collapsed section."""

    def read(self, values: Values) -> dict[str, str]:
        """The chosen tiers by domain (the others keep their default tier)."""
        return dict(values.get(self.key) or {})

    def field(self, values: Values, marker: MarkerKind) -> Field:
        """A required section with one tier list per offered domain, defaulting to its tier."""
        tier = SelectSelector(
            SelectSelectorConfig(
                options=[t.value for t in Tier],
                translation_key="tier",
                mode=SelectSelectorMode.LIST,
            )
        )
        chosen = self.read(values)
        schema = probatio.Schema(
            {
                probatio.Required(domain, default=chosen.get(domain, default.value)): tier
                for domain, default in OFFERED_DOMAINS.items()
            }
        )
        return probatio.Required(self.key), section(schema, {"collapsed": True})

    def shown_default(self) -> str:
        """The README lists the default tiers below the table."""
        return "see below"


@dataclass(frozen=True, slots=True, kw_only=True)
class Section(Option):
    """A collapsed section of the form holding its own fields under its key."""

    fields: tuple[Option, ...]
    shown: str

    def read(self, values: Values) -> Values:
        """The section's values in `values`."""
        inner: Values = values.get(self.key) or {}
        return inner

    def field(self, values: Values, marker: MarkerKind) -> Field:
        """Optional, so a form sent without it keeps every setting in it as it is."""
        inner = self.read(values)
        schema = probatio.Schema(dict(f.field(inner, probatio.Required) for f in self.fields))
        return probatio.Optional(self.key, default={}), section(schema, {"collapsed": True})

    def shown_default(self) -> str:
        """Where the README explains the section."""
        return self.shown


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityTier:
    """One entity of the per-entity consent list, and the tiers it has and may be given.

    `judged` is its own tier as Alto judges it without the user (a way into the home, else its
    domain's tier); `own` is that with the user's choice for it; `shown` is what a call on it gets
    (`tier_for`: its own and everything it drives). `lowest` is the least the user may choose:
    confirm-first for a lock or an alarm panel, else the strictest of what it drives (a scene
    that opens the gate asks however it is set itself).
    """

    entity_id: str
    label: str
    judged: Tier
    own: Tier
    shown: Tier
    lowest: Tier

    def offered(self) -> list[str]:
        """The tiers the user may choose, from `lowest` up (`Tier` lists the least asked first)."""
        tiers = list(Tier)
        return [tier.value for tier in tiers[tiers.index(self.lowest) :]]


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityConsent(Row):
    """The user's tier of single entities, by entity id: only where they changed Alto's judgement.

    Its form (the options flow's own step) lists every exposed entity of a domain the action
    organ can act on, one tier list each, labelled with the entity's name and id (Home Assistant
    shows a field's key when it has no translation). An entity that is no longer listed keeps its
    stored tier, so exposing it again brings the choice back.
    """

    def read(self, values: Values) -> dict[str, Tier]:
        """The chosen tiers by entity id; a stored value that is no tier is left out."""
        stored: Values = values.get(self.key) or {}
        return {str(e): Tier(t) for e, t in stored.items() if isinstance(t, str) and t in Tier}

    def rows(
        self,
        entities: Iterable[ExposedEntity],
        domain_tiers: Mapping[str, object],
        chosen: Mapping[str, Tier],
    ) -> list[EntityTier]:
        """The entities the form lists, by label, with their tiers under these settings."""
        listed = [
            EntityTier(
                entity_id=entity.entity_id,
                label=_label(entity),
                judged=own_tier(entity, domain_tiers, {}),
                own=own_tier(entity, domain_tiers, chosen),
                shown=tier_for(entity, domain_tiers, overrides=chosen),
                lowest=tier_for(
                    entity, domain_tiers, overrides={**chosen, entity.entity_id: Tier.AUTONOMOUS}
                ),
            )
            for entity in entities
            if services_for(entity.domain)
        ]
        return sorted(listed, key=lambda row: (row.label.casefold(), row.entity_id))

    def schema(self, rows: Iterable[EntityTier]) -> probatio.Schema:
        """One required tier list per row, keyed by its label, offering only its allowed tiers."""
        return probatio.Schema(
            {
                probatio.Required(row.label, default=row.shown.value): SelectSelector(
                    SelectSelectorConfig(
                        options=row.offered(),
                        translation_key="tier",
                        mode=SelectSelectorMode.DROPDOWN,
                    )
                )
                for row in rows
            }
        )

    def chosen(
        self, rows: Sequence[EntityTier], sent: Values, stored: Mapping[str, Tier]
    ) -> dict[str, str]:
        """The tiers to store after the form in `rows` was sent, by entity id.

        A list left at the tier it showed keeps the entity's own tier; another tier becomes it.
        Only an own tier other than Alto's judgement is stored (so a lock's lower value, which
        never counted, goes); unlisted entities keep theirs.
        """
        listed = {row.entity_id for row in rows}
        kept = {e: t.value for e, t in stored.items() if e not in listed}
        for row in rows:
            picked = Tier(sent[row.label])
            own = row.own if picked is row.shown else picked
            if own is not row.judged:
                kept[row.entity_id] = own.value
        return kept

    def shown_default(self) -> str:
        """No entity's tier is changed."""
        return "none"


# A person's family as the form asks it: the three people it names, and their sex.
KIN_PEOPLE = ("mother", "father", "partner")
SEXES = ("f", "m")


@dataclass(frozen=True, slots=True, kw_only=True)
class Family(Row):
    """Each person's mother, father and partner (person entity ids) and sex, by person entity id.

    Its steps (the options flow's own) pick a person, then ask those four of them, each optional;
    the rest of the family follows from them (`memory.kin`). A person with nothing said is not
    stored.
    """

    def read(self, values: Values) -> dict[str, Kin]:
        """Each stored person's `Kin`; a value that is no person or sex is left out."""
        stored = values.get(self.key)
        if not isinstance(stored, Mapping):
            return {}
        family = {}
        for person, said in stored.items():
            if not isinstance(said, Mapping):
                continue
            people = {k: v for k in KIN_PEOPLE if isinstance(v := said.get(k), str) and v}
            sex = said.get("sex") if said.get("sex") in SEXES else None
            family[str(person)] = Kin(**people, sex=sex)
        return family

    def person_schema(self, people: Iterable[str]) -> probatio.Schema:
        """The first step: which person (of `people`, person entity ids) to tell about."""
        return probatio.Schema(
            {
                probatio.Required("person"): EntitySelector(
                    EntitySelectorConfig(domain="person", include_entities=list(people))
                )
            }
        )

    def kin_schema(self, person: str, kin: Kin) -> probatio.Schema:
        """The second step: `person`'s mother, father and partner (other people), and sex."""
        others = EntitySelector(EntitySelectorConfig(domain="person", exclude_entities=[person]))
        fields: dict[probatio.Marker, Any] = {
            probatio.Optional(key, description={"suggested_value": getattr(kin, key)}): others
            for key in KIN_PEOPLE
        }
        fields[probatio.Optional("sex", description={"suggested_value": kin.sex})] = SelectSelector(
            SelectSelectorConfig(
                options=list(SEXES), translation_key="sex", mode=SelectSelectorMode.LIST
            )
        )
        return probatio.Schema(fields)

    def chosen(self, stored: Values, person: str, sent: Values) -> dict[str, dict[str, str]]:
        """Every person's stored family after `person`'s form was sent as `sent`."""
        kept = {k: dict(v) for k, v in (stored.get(self.key) or {}).items() if k != person}
        said = {k: str(v) for k in (*KIN_PEOPLE, "sex") if (v := sent.get(k)) and v != person}
        if said:
            kept[person] = said
        return kept

    def shown_default(self) -> str:
        """No family is told."""
        return "none"


def _label(entity: ExposedEntity) -> str:
    """How the consent list names an entity: "Kitchen light (light.kitchen)"."""
    if entity.name == entity.entity_id:
        return entity.entity_id
    return f"{entity.name} ({entity.entity_id})"


def _number(value: float) -> str:
    """A number as the README writes it: 1.5, 2, 8192, 100,000."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:g}"
    return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))


def _pass_model(key: str, name: str) -> Blank:
    return Blank(
        key=key,
        meaning=f"The Ollama model of the {name}; a smaller one is fine. Empty: the chat model.",
    )


def _pass_enabled(key: str, name: str) -> Toggle:
    return Toggle(
        key=key,
        default=True,
        meaning=(
            f"Whether the {name} runs in the background. Off, its service still runs it on demand."
        ),
    )


MODEL = ServedModel(key="model", needs=Capability.CHAT, required=True)
EMBEDDING_MODEL = ServedModel(key="embedding_model", needs=Capability.EMBED, required=True)
ACTION_MODEL = ServedModel(key="action_model", needs=Capability.CHAT, required=False)
MODEL_FIELDS: tuple[ServedModel, ...] = (MODEL, EMBEDDING_MODEL, ACTION_MODEL)

PROMPT = Text(
    key="prompt",
    default=(
        "You are a warm, concise voice assistant for the people who live in this home. "
        "Answer briefly, the way a thoughtful housemate would."
    ),
    shown="a short housemate persona",
    meaning=(
        "Who Alto is (a Home Assistant template). The answer protocol, the home's devices and "
        "the time are appended."
    ),
)
ASSISTANT_NAME = Blank(
    key="assistant_name",
    meaning="The name the household gave Alto; empty, Alto says nobody has named it yet.",
)
MAX_HISTORY = Number(
    key="max_history",
    default=20,
    minimum=0,
    maximum=200,
    meaning=(
        "Earlier turns of one speaker's conversation the model sees; 0 keeps all. The history is "
        "trimmed in steps of a quarter of this (at least one), so the prompt's beginning stays "
        "the same between trims and the model server can reuse its work: the model sees between "
        "this many and a quarter more earlier turns."
    ),
)
NUM_CTX = Number(
    key="num_ctx",
    default=8192,
    minimum=2048,
    maximum=131072,
    step=1024,
    meaning="Passed to Ollama as `num_ctx`.",
)
KEEP_ALIVE = Number(
    key="keep_alive",
    default=-1,
    minimum=-1,
    maximum=86400,
    meaning="Seconds Ollama keeps the model in memory; -1 forever.",
)
REQUEST_TIMEOUT = Number(
    key="request_timeout",
    default=60.0,  # the ollama client itself never times out
    minimum=5,
    maximum=600,
    meaning="Seconds a model call may take before Alto gives up and says so.",
)
REPLY_CHANNEL = Choice(
    key="reply_channel",
    default="auto",
    choices=("auto", *ReplyChannel),
    meaning=(
        "How the model keeps speech, actions and private thought apart. *JSON answer*: the chat "
        'call is constrained by Ollama\'s `format` to `{"speech", "actions", "thought"}`, and '
        "the speech streams as it decodes; any model holds to it. *Marks*: the model is asked to "
        "write `¦speech¦` and `¤action¤`. *Auto* is the JSON answer, unless the chat model "
        "wrote text outside it on most of its replies, 10 or more: then marks, for that model, "
        "kept across restarts (diagnostics say which and why; see *Alto with a real model*)."
    ),
)
THINK = Toggle(
    key="think",
    default=False,
    meaning=(
        "Passed to Ollama as `think`. On, a thinking model (qwen3, gpt-oss, deepseek-r1) thinks "
        "before it answers; its thinking is Alto's private thought, never spoken, stored or "
        "shown. Off, `think: false`: a model that would think answers at once (gpt-oss thinks "
        "anyway, unheard). A model that cannot think refuses it on, and Alto says so."
    ),
)
PLAIN_REPLY_FALLBACK = Toggle(
    key="plain_reply_fallback",
    default=True,
    meaning=(
        "Marks channel only: a reply with no marks at all is spoken as plain text; the trace "
        "records it, and when marks are chosen and most replies have none, a repair issue "
        "suggests the JSON answer."
    ),
)
MEMORY_MODE = Choice(
    key="memory_mode",
    default="2",  # falls back to 1 until the model/processor pair is qualified
    choices=("0", "1", "2"),
    meaning=(
        "0 explicit only, 1 source text, 2 automatic (needs a qualified model, see *Memory*)."
    ),
)
CHROMA_HOST = Blank(
    key="chroma_host",
    meaning=(
        "Empty: the embedded store under the config folder. Set it to use a Chroma server (see "
        "*Security and privacy*); saving the options checks the server first."
    ),
)
CHROMA_PORT = Number(
    key="chroma_port", default=8000, minimum=1, maximum=65535, meaning="The Chroma server's port."
)
CHROMA_TOKEN = Blank(
    key="chroma_token",
    password=True,
    meaning=(
        "Sent with every request as `Authorization: Bearer …` and `X-Chroma-Token`, for the "
        "proxy in front of the server."
    ),
)
CHROMA_TLS = Toggle(
    key="chroma_tls",
    default=False,
    meaning="https; the certificate and host name are always verified.",
)
CHROMA_CA_FILE = Blank(
    key="chroma_ca_file",
    meaning=(
        "A PEM file (relative to the config folder, or absolute) trusted instead of the usual "
        "authorities: a private CA, or a self-signed server's own certificate."
    ),
)
MAX_MEMORIES = Number(
    key="max_memories",
    default=100_000,
    minimum=100,
    maximum=10_000_000,
    meaning="Rows this entry keeps, every scope together; see *Security and privacy*.",
)
USER_MEMORY_SHARE = Number(
    key="user_memory_share",
    default=25,  # a quarter: one person leaves three quarters to the household and the others
    minimum=1,
    maximum=100,
    meaning=(
        "Per cent of the rows above that one person's private memories may take (at least one "
        "row). No one's memories make room for anyone else's; see *Security and privacy*."
    ),
)
SURFACER_ENABLED = Toggle(
    key="surfacer_enabled", default=True, meaning="The Surfacer (see *Thoughts*)."
)
SURFACER_RECALL = Toggle(
    key="surfacer_recall",
    default=False,
    meaning="Add memories close in meaning to those found by name.",
)
SURFACER_WAIT = Number(
    key="surfacer_wait",
    default=1.5,
    minimum=0,
    maximum=10,
    step=0.1,
    meaning="Seconds a reply may wait for a thought.",
)
SURFACER_MODEL = Blank(
    key="surfacer_model",
    meaning="The model that renders thoughts; empty uses the chat model.",
)
GPU = Choice(
    key="gpu",
    default="auto",
    choices=("auto", "off"),
    meaning=(
        "`auto`: CUDA through PyCUDA when installed, else the CPU (onnxruntime's integer GEMM, "
        "numpy without it); `off`: the CPU."
    ),
)
CONSENT = Consent(
    key="consent",
    meaning=(
        "Per-domain consent tier of the action organ; locks and alarm panels always ask first, "
        "so they are not offered."
    ),
)
ENTITY_CONSENT = EntityConsent(
    key="entity_consent",
    meaning=(
        "A step of its own in the options: every exposed entity Alto can act on, at the tier "
        "Alto judges (ways into the home ask first, see *Acting on devices*) or the one you "
        "set. Only the entities you changed are stored; nothing lowers a lock or an alarm "
        "panel below confirm-first."
    ),
)
FAMILY = Family(
    key="family",
    meaning=(
        "A step of its own in the options: each person's mother, father and partner (other "
        "people of the home) and sex, all optional (two mothers or two fathers: name one, and "
        "their partner of the same sex is the other). Memory then reads a question's words of "
        'family as the people they mean to whoever asks ("my wife", "Mum", "Oma", '
        '"Megan\'s dad"); see *Memory*.'
    ),
)

N1_ENABLED = _pass_enabled("n1_enabled", "N+1 pass (noticing after every reply)")
N1_MODEL = _pass_model("n1_model", "N+1 pass")
REFLECTION_ENABLED = _pass_enabled("reflection_enabled", "reflection pass")
REFLECTION_INTERVAL = Number(
    key="reflection_interval",
    default=25,
    minimum=5,
    maximum=500,
    meaning="Messages of one scope between two reflections.",
)
REFLECTION_MODEL = _pass_model("reflection_model", "reflection pass")
SYNTHESIS_ENABLED = _pass_enabled("synthesis_enabled", "synthesis pass")
SYNTHESIS_INTERVAL = Number(
    key="synthesis_interval",
    default=100,
    minimum=10,
    maximum=1000,
    meaning="Messages of one scope between two syntheses; context pressure brings one sooner.",
)
SYNTHESIS_MODEL = _pass_model("synthesis_model", "synthesis pass")
BREATHER = Number(
    key="breather",
    default=2.0,
    minimum=0,
    maximum=60,
    step=0.5,
    meaning="Seconds after a turn ends before a background pass starts.",
)
REFLECT = Section(
    key="reflect",
    shown="see *Between turns*",
    meaning="A section with the options below, per pass.",
    fields=(
        N1_ENABLED,
        N1_MODEL,
        REFLECTION_ENABLED,
        REFLECTION_INTERVAL,
        REFLECTION_MODEL,
        SYNTHESIS_ENABLED,
        SYNTHESIS_INTERVAL,
        SYNTHESIS_MODEL,
        BREATHER,
    ),
)

OPTION_FIELDS: tuple[Option, ...] = (
    PROMPT,
    ASSISTANT_NAME,
    MAX_HISTORY,
    NUM_CTX,
    KEEP_ALIVE,
    REQUEST_TIMEOUT,
    REPLY_CHANNEL,
    THINK,
    PLAIN_REPLY_FALLBACK,
    MEMORY_MODE,
    CHROMA_HOST,
    CHROMA_PORT,
    CHROMA_TOKEN,
    CHROMA_TLS,
    CHROMA_CA_FILE,
    MAX_MEMORIES,
    USER_MEMORY_SHARE,
    SURFACER_ENABLED,
    SURFACER_RECALL,
    SURFACER_WAIT,
    SURFACER_MODEL,
    GPU,
    CONSENT,
    REFLECT,
)


def options_schema(values: Values) -> probatio.Schema:
    """The settings form, each field showing its setting in `values` (an entry's data + options)."""
    return probatio.Schema(dict(f.field(values, probatio.Optional) for f in OPTION_FIELDS))


def _rows(strings: Mapping[str, Any]) -> Iterator[tuple[str, Row]]:
    """(English label, option) of every option in the form's order, a section's after it.

    The per-entity consent and the family come last, labelled as the options menu names their
    steps.
    """
    steps = strings["options"]["step"]
    form = steps["settings"]
    for option in OPTION_FIELDS:
        yield form["data"][option.key], option
        if isinstance(option, Section):
            labels = form["sections"][option.key]["data"]
            yield from ((labels[inner.key], inner) for inner in option.fields)
    yield steps["init"]["menu_options"][ENTITY_CONSENT.key], ENTITY_CONSENT
    yield steps["init"]["menu_options"][FAMILY.key], FAMILY


def render_markdown(strings: Mapping[str, Any]) -> str:
    """The README's options table, labelled in English from `strings` (`strings.json`)."""
    lines = ["| option | key | default | meaning |", "|---|---|---|---|"]
    for label, option in _rows(strings):
        bounds = option.bounds()
        meaning = f"{option.meaning} {bounds}." if bounds else option.meaning
        lines.append(f"| {label} | `{option.key}` | {option.shown_default()} | {meaning} |")
    return "\n".join(lines) + "\n"
