"""Deterministic yes/no match of the user's reply to a confirm-first question.

Only a whole short utterance counts: after normalization it must be one or two phrases of the
same table (``yes, do it``), optionally wrapped in a politeness phrase (``yes please``, ``no
thanks``). Anything else, including a yes with more words after it, is ``None`` and declines
the held call. No model is involved, so no model output can ever confirm.
"""

import unicodedata
from dataclasses import dataclass

# Phrases compared after ``_normalize``; longer utterances are never a confirmation.
_MAX_WORDS = 8
_APOSTROPHES = "'’ʼ"


def _normalize(text: str) -> str:
    """NFC, casefold, apostrophes dropped (``don't`` -> ``dont``), other punctuation as spaces."""
    chars = []
    for char in unicodedata.normalize("NFC", text).casefold():
        if char in _APOSTROPHES:
            continue
        chars.append(" " if unicodedata.category(char)[0] in "PSZC" else char)
    return " ".join("".join(chars).split())


@dataclass(frozen=True, slots=True)
class _Table:
    yes: frozenset[str]
    no: frozenset[str]
    polite: frozenset[str]


def _table(yes: str, no: str, polite: str) -> _Table:
    """A table from ``|``-separated phrases, normalized like the utterances they are matched to."""

    def norm(phrases: str) -> frozenset[str]:
        return frozenset(_normalize(phrase) for phrase in phrases.split("|"))

    return _Table(norm(yes), norm(no), norm(polite))


_TABLES = {
    "en": _table(
        yes="yes|yeah|yep|yup|sure|do it|go ahead|confirm|confirmed|ok|okay|of course|affirmative",
        no="no|nope|cancel|don't|do not|don't do it|stop|never mind|nevermind|abort|no way"
        "|negative",
        polite="please|thanks|thank you",
    ),
    "de": _table(
        yes="ja|jawohl|jep|klar|sicher|mach es|mach das|mach's|los|bestätigen|bestätige|ok|okay"
        "|in ordnung|gerne|genau",
        no="nein|nee|abbrechen|stopp|stop|lass es|lass das|vergiss es|auf keinen fall|bloß nicht",
        polite="bitte|danke|danke schön",
    ),
    "fr": _table(
        yes="oui|ouais|d'accord|vas-y|allez-y|confirme|confirmer|ok|okay|bien sûr|fais-le",
        no="non|annule|annuler|arrête|stop|laisse tomber|pas question|surtout pas|ne le fais pas",
        polite="s'il te plaît|s'il vous plaît|merci",
    ),
    "es": _table(
        yes="sí|si|claro|vale|hazlo|adelante|confirmo|confirmar|ok|okay|de acuerdo|por supuesto"
        "|dale",
        no="no|cancela|cancelar|para|detente|déjalo|olvídalo|ni hablar",
        polite="por favor|gracias",
    ),
    "nl": _table(
        yes="ja|jazeker|jep|zeker|doe maar|doe het|ga je gang|ga door|bevestig|bevestigen|ok|oké"
        "|okay|prima|goed",
        no="nee|neen|annuleer|annuleren|stop|stoppen|laat maar|laat maar zitten|niet doen",
        polite="alsjeblieft|alstublieft|graag|dank je|dank u|bedankt",
    ),
    "it": _table(
        yes="sì|si|certo|fallo|vai|procedi|conferma|confermo|ok|okay|va bene|d'accordo|certamente",
        no="no|annulla|annullare|ferma|fermati|lascia stare|lascia perdere|non farlo",
        polite="per favore|grazie",
    ),
}


def _table_for(language: str | None) -> _Table:
    """The table of the primary language subtag (``de-CH`` -> ``de``); English otherwise."""
    primary = language.replace("_", "-").partition("-")[0].casefold() if language else "en"
    return _TABLES.get(primary, _TABLES["en"])


def _is_phrases(words: list[str], phrases: frozenset[str], limit: int = 2) -> bool:
    """Whether ``words`` is 1..``limit`` phrases of ``phrases`` back to back."""
    if " ".join(words) in phrases:
        return True
    return limit > 1 and any(
        " ".join(words[:cut]) in phrases and _is_phrases(words[cut:], phrases, limit - 1)
        for cut in range(1, len(words))
    )


def _strip_polite(words: list[str], polite: frozenset[str]) -> list[str]:
    """Drop one politeness phrase from each end (``please cancel``, ``yes thank you``)."""
    for size in range(len(words) - 1, 0, -1):
        if " ".join(words[-size:]) in polite:
            words = words[:-size]
            break
    for size in range(len(words) - 1, 0, -1):
        if " ".join(words[:size]) in polite:
            words = words[size:]
            break
    return words


def parse_confirmation(text: object, language: str | None = "en") -> bool | None:
    """True for a whole-utterance yes, False for a no, None for anything else (a non-string too)."""
    if not isinstance(text, str):
        return None
    words = _normalize(text).split()
    if not words or len(words) > _MAX_WORDS:
        return None
    table = _table_for(language if isinstance(language, str) else None)
    words = _strip_polite(words, table.polite)
    if _is_phrases(words, table.yes):
        return True
    if _is_phrases(words, table.no):
        return False
    return None
