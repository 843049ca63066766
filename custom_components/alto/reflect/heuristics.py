"""The deterministic half of N+1: Verify on every pass, commitments and hedges as the fallback.

`verify` runs on every pass, model or not: a reply sentence that reports a device action as done
(`channel.speech_gate.claims_done`, every language's patterns the speech gate withholds by) when no
effector acted in that turn is a high-urgency observation; when something acted but another
action of the turn failed, was refused or declined, a medium one.

`fallback` is what N+1 notes when the model fails, times out or answers malformed: `verify`,
plus commitments (a sentence of the person's with "I'll", "I will", "I'm going to", "I need
to", "I have to", "remind me", "don't let me forget", "tomorrow I", or the like in another
language; a sentence of Alto's with "I'll"/"I will", "ich werde", "ik zal", ... when no effector
acted that turn) at medium urgency, plus a low-urgency note when Alto's reply hedges densely (at
least `HEDGE_MIN` hedge phrases and at least `HEDGE_DENSITY` of its words). The phrases are
PHRASES, one entry per language Alto speaks, read together: a turn does not record its language,
and no phrase of one language is a phrase of another. A quoted sentence is cut at `MAX_QUOTED`
characters.

`gives_work` is what makes a pass worth its model call: a turn in which the effector acted or
tried, Alto claimed or promised an action, the person promised something or asked to be
reminded, or the person's words tell something (`memory.informative`: a sentence that is not a
question, an acknowledgement or a command, the rule that keeps such turns out of the memory
block). Small talk (a greeting, "how are you", thanks, good night, a request for a joke) gives
none, in every language Alto speaks, by the same lists as everything else here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from ..channel.speech_gate import claims_done
from ..memory.informative import is_informative
from .records import Mandate, Turn, Urgency

HEDGE_MIN: Final = 2
MAX_QUOTED: Final = 160  # characters of a sentence an observation quotes
HEDGE_DENSITY: Final = 0.05
_UNDONE: Final = frozenset({"failed", "refused", "declined", "awaiting_confirmation"})
_SENTENCES: Final = re.compile(r"[^.!?…\n]+[.!?…]*")
_WORDS: Final = re.compile(r"\w+(?:['’]\w+)?")


@dataclass(frozen=True, slots=True)
class Phrases:
    """One language's phrases, as regular expressions matched whole words, case aside."""

    person: tuple[str, ...]  # the person says something will be done later
    alto: tuple[str, ...]  # Alto says it will do something
    hedges: tuple[str, ...]  # Alto is unsure


_APOSTROPHE = "['’]"
PHRASES: Final[Mapping[str, Phrases]] = MappingProxyType(
    {
        "en": Phrases(
            person=(
                rf"i(?:{_APOSTROPHE}ll| will| am going to|{_APOSTROPHE}m going to)",
                "i need to", "i have to",
                "remind me", rf"don{_APOSTROPHE}t let me forget", "tomorrow i",
            ),
            alto=(rf"i(?:{_APOSTROPHE}ll| will)",),
            hedges=(
                "maybe", "perhaps", "possibly", "probably", "might", "i think", "i believe",
                "i guess", "not sure", "it seems", "seems to", "could be",
                rf"i{_APOSTROPHE}m not certain",
            ),
        ),
        "de": Phrases(
            person=(
                "ich werde", "ich muss", "ich habe vor", "ich hab vor", "erinnere? mich",
                "lass mich nicht vergessen", r"morgen \w+ ich",
            ),
            alto=("ich werde", "werde ich"),
            hedges=(
                "vielleicht", "wahrscheinlich", "möglicherweise", "eventuell", "ich glaube",
                "ich denke", "scheint", "könnte sein", "nicht sicher",
            ),
        ),
        "fr": Phrases(
            person=(
                "je vais", "je dois", "il faut que je", "rappelle[- ]moi", "fais[- ]moi penser",
                rf"n{_APOSTROPHE}oublie pas de me", "demain je",
            ),
            alto=("je vais",),
            hedges=(
                "peut-être", "probablement", "sans doute", "je pense", "je crois", "il semble",
                "semble", "pas sûr", "pourrait",
            ),
        ),
        "es": Phrases(
            person=(
                "voy a", "tengo que", "necesito", "recuérdame", "no me dejes olvidar",
                "mañana (?:voy|tengo)",
            ),
            alto=("voy a", "lo haré"),
            hedges=(
                "quizás?", "tal vez", "probablemente", "posiblemente", "creo que", "parece",
                "no estoy segur[oa]", "podría",
            ),
        ),
        "nl": Phrases(
            person=(
                "ik zal", "ik ga", "ik moet", "herinner me", "herinner mij",
                "laat me niet vergeten", r"morgen \w+ ik",
            ),
            alto=("ik zal", "ik ga"),
            hedges=(
                "misschien", "waarschijnlijk", "mogelijk", "wellicht", "ik denk", "ik geloof",
                "lijkt", "zou kunnen", "niet zeker",
            ),
        ),
        "it": Phrases(
            person=(
                "devo", "ho bisogno di", "sto per", "ricordami", "non farmi dimenticare",
                "domani (?:devo|vado)",
            ),
            alto=("lo farò", "farò"),
            hedges=(
                "forse", "probabilmente", "possibilmente", "penso", "credo", "sembra",
                "non sono sicur[oa]", "potrebbe",
            ),
        ),
    }
)  # fmt: skip


def _any(part: str) -> re.Pattern[str]:
    """One pattern matching a phrase of `part` ("person", "alto", "hedges") of any language."""
    found = (p for phrases in PHRASES.values() for p in getattr(phrases, part))
    return re.compile(r"\b(?:" + "|".join(found) + r")\b", re.IGNORECASE)


_PERSON_COMMITMENT: Final = _any("person")
_ALTO_COMMITMENT: Final = _any("alto")
_HEDGES: Final = _any("hedges")


@dataclass(frozen=True, slots=True)
class Draft:
    """An observation before it gets an id and a box."""

    mandate: Mandate
    turns: tuple[int, ...]
    content: str
    urgency: Urgency
    source: str = "heuristic"  # or "model"


def _quoted(sentence: str) -> str:
    return sentence if len(sentence) <= MAX_QUOTED else sentence[: MAX_QUOTED - 1] + "…"


def sentences(text: str) -> list[str]:
    """`text` cut after ., !, ?, … or a line break; each piece stripped, blanks dropped."""
    return [s.strip() for s in _SENTENCES.findall(text) if s.strip()]


def verify(turn: Turn) -> list[Draft]:
    """Alto's spoken claims of a completed action against the effector's record of the turn."""
    claims = [s for s in sentences(turn.reply) if claims_done(s)]
    if not claims:
        return []
    if not any(o.acted for o in turn.outcomes):
        return [
            Draft(
                Mandate.VERIFY,
                (turn.n,),
                f'Alto said "{_quoted(claims[0])}" but no action succeeded.',
                Urgency.HIGH,
            )
        ]
    undone = [o for o in turn.outcomes if o.verdict in _UNDONE]
    if not undone:
        return []
    what = ", ".join(f"{o.service or 'action'} {o.entity_id or ''}".strip() for o in undone)
    return [
        Draft(
            Mandate.VERIFY,
            (turn.n,),
            f'Alto said "{_quoted(claims[0])}" but {what} did not succeed ({undone[0].verdict}).',
            Urgency.MEDIUM,
        )
    ]


def commitments(turn: Turn) -> list[Draft]:
    """Things the person or Alto said would be done later."""
    found = [
        Draft(Mandate.COMPLETE, (turn.n,), f'The person said: "{_quoted(s)}"', Urgency.MEDIUM)
        for s in sentences(turn.utterance)
        if _PERSON_COMMITMENT.search(s)
    ]
    if not any(o.acted for o in turn.outcomes):
        found += [
            Draft(Mandate.COMPLETE, (turn.n,), f'Alto said: "{_quoted(s)}"', Urgency.MEDIUM)
            for s in sentences(turn.reply)
            if _ALTO_COMMITMENT.search(s)
        ]
    return found


def hedging(turn: Turn) -> list[Draft]:
    """A note when Alto's reply hedges densely enough to be worth checking."""
    words = len(_WORDS.findall(turn.reply))
    hedges = len(_HEDGES.findall(turn.reply))
    if hedges < HEDGE_MIN or hedges < HEDGE_DENSITY * words:
        return []
    return [
        Draft(
            Mandate.SURFACE,
            (turn.n,),
            f"Alto's reply hedged {hedges} times in {words} words; it may need checking.",
            Urgency.LOW,
        )
    ]


def fallback(turns: list[Turn]) -> list[Draft]:
    """Every deterministic observation of the turns, in turn order."""
    return [d for t in turns for d in (*verify(t), *commitments(t), *hedging(t))]


def gives_work(turn: Turn) -> bool:
    """Whether a pass has anything to read in the turn (see the module docstring)."""
    return bool(turn.outcomes or verify(turn) or commitments(turn)) or is_informative(
        turn.utterance
    )
