"""Whether an entity is a way into the home, judged from what it is and every text HA keeps for it.

A way in is what lets someone into the home when it opens: a door, gate, garage, entrance, portal
or barrier, and any lock. Alto asks before acting on one, so the judgement reads what an entity
can do and what it is called in any of Alto's six languages, not how one name happens to be spelt.

The rule:

1. An entity *can open* something when its domain can (``OPENING_DOMAINS``: switches, covers,
   buttons, the boolean and button helpers, valves, locks) or when Home Assistant shows a switch
   as it (``switch_as_x``: a "light" or "fan" that is really a relay). A native light, fan or
   media player opens nothing: a light named "Garage" is the light in the garage.
2. It *is a way in* when it can open something and
   - its own device class says so (a cover of class door, gate or garage), or
   - one of its texts names a way in (below): name, aliases, registry and original names, the
     device's name before its original name, the object id of its entity id, or
   - another entity of its device is a garage door or gate (a cover of class garage or gate, a
     binary sensor of class garage_door) and its own name is not about something that opens
     nothing (the opener's light). A plain ``door`` sibling is no hint: cars and fridges have
     door sensors.
3. A text *names a way in* when one of its words is an entry word of one of the languages and
   the text's head is not a thing that opens nothing ("Porch door *light*", "Door*bell*").
   - Words: NFKC, then split at anything not a letter or digit (space, ``_ - . /``), at a
     camelCase hump and between letters and digits, then casefolded and stripped of accents
     (entity ids never have them: "Haustür" is ``switch.haustur``).
   - A listed word matches inflected: same Snowball stem in its language, the word at most
     as many letters longer as the language's inflections add ("gates", "Türen", "deuren",
     "puertas", Italian "porte" but not "portata"; never shorter: "port" is not "porte").
   - In English, German and Dutch an entry word also matches as a part of a closed compound
     ("Hoftore", "Einfahrtstor", "voordeur", "Garagedoor", "Türöffner"): what comes before it is
     nothing or a part of at least ``MIN_PART`` letters, what comes after is nothing, an
     inflection or a part of at least ``MIN_PART`` letters. French, Spanish and Italian write no
     closed compounds of these words (Italian "porta-" ones mean "holder": portasciugamani), so
     there words match whole.
   - Lookalikes are masked first: spellings that contain an entry word and mean something else
     ("outdoor", "navigate", "Motor", "Ventilator", "Schaltaktor", "puerto").
   - The head is the last word in English, German and Dutch (there, the last part of a compound)
     and the first in French, Spanish and Italian, skipping numbers, single letters and words
     that only say how a thing is switched ("switch", "relay", "Schalter", "interrupteur"...).

Errors go one way: a name that mentions a way in and has any other head asks first ("Garage door
opener", "Gate relay 2", "Garage"), so an unknown word costs a question, never an opening.
Italian "porta" is also a network port and Spanish "entrada" an input: such names ask too.
"""

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Final

import snowballstemmer

from .model import ExposedEntity, Target

# Domains whose entities can drive an opening: a garage relay is often a plain switch, a button
# or a helper an automation watches; a lock always is one.
OPENING_DOMAINS: Final = frozenset(
    {"switch", "cover", "button", "input_button", "input_boolean", "valve", "lock"}
)
# An entity's own device class that makes it a way in (Home Assistant's cover classes).
WAY_IN_CLASSES: Final = frozenset({"door", "gate", "garage"})
# A device class of another entity of the same device that makes the device a door controller.
DEVICE_HINTS: Final = frozenset({"garage", "gate", "garage_door"})
MIN_PART: Final = 3


@dataclass(frozen=True, slots=True)
class Lexicon:
    """How one language names ways in, and the words that decide what a name is about."""

    stemmer: str  # the Snowball algorithm
    ways_in: tuple[str, ...]  # doors, gates, garages, entrances, barriers
    opens_nothing: tuple[str, ...]  # heads that make a name about something else
    carriers: tuple[str, ...]  # words that say how a thing is switched, not what it is
    lookalikes: tuple[str, ...] = ()  # regexes of spellings that contain an entry word
    inflection: int = 2  # the most letters an inflection adds (plural, case): "Türen", "doors"
    head_first: bool = False  # the head of a name is its first word, not its last
    compounds: bool = False  # entry words also count as parts of a closed compound


# Casefolded; compared without accents (`fold`); one entry per language, nowhere else.
LEXICONS: Final[Mapping[str, Lexicon]] = MappingProxyType(
    {
        "en": Lexicon(
            "english",
            ways_in=("door", "gate", "garage", "entrance", "gateway", "portal", "barrier"),
            opens_nothing=(
                "light", "lamp", "bulb", "led", "lighting", "lantern", "sconce", "chandelier",
                "strip", "bell", "chime", "camera", "cam", "sensor", "detector", "plug",
                "socket", "outlet", "heater", "heating", "fan", "speaker", "tv", "television",
                "radio", "monitor", "display", "screen", "charger", "thermostat", "radiator",
            ),
            carriers=("switch", "relay", "power", "channel", "output", "button", "control"),
            lookalikes=(r"outdoor", r"[aiou]gate", r"(?:gr|l)egate"),  # navigate, delegate
            compounds=True,
        ),
        "de": Lexicon(
            "german",
            ways_in=("tür", "tuer", "tor", "pforte", "garage", "eingang", "schranke"),
            opens_nothing=(
                "licht", "lampe", "leuchte", "beleuchtung", "birne", "strahler", "spot", "led",
                "klingel", "gong", "kamera", "sensor", "melder", "steckdose", "stecker",
                "heizung", "heizkörper", "lüfter", "ventilator", "lautsprecher", "fernseher",
                "radio", "monitor", "bildschirm", "radiator",
            ),
            carriers=("schalter", "relais", "taster", "knopf", "kanal", "ausgang", "aktor"),
            # Latin agent nouns end in -tor (Motor, Monitor, Ventilator, Aktor, Detektor).
            # and -tur is Latin too once "tür" lost its umlaut (Temperatur, Struktur, Kultur).
            lookalikes=(r"[aiou]tor", r"[ck]tor", r"[ai]tur", r"ktur", r"ultur", r"turkis"),
            compounds=True,
        ),
        "fr": Lexicon(
            "french",
            ways_in=("porte", "portail", "portillon", "garage", "entrée", "barrière"),
            opens_nothing=(
                "lumière", "lampe", "éclairage", "ampoule", "spot", "applique", "lustre", "led",
                "ruban", "guirlande", "sonnette", "carillon", "caméra", "capteur", "détecteur",
                "prise", "chauffage", "radiateur", "ventilateur", "enceinte", "télé",
                "télévision", "tv", "écran",
            ),
            carriers=("interrupteur", "relais", "bouton", "commande", "canal", "sortie"),
            lookalikes=(r"^port(?:er|ee|ees)$",),
            head_first=True,
        ),
        "es": Lexicon(
            "spanish",
            ways_in=(
                "puerta", "portón", "portal", "garaje", "entrada", "cancela", "verja", "portillo",
                "barrera",
            ),
            opens_nothing=(
                "luz", "luces", "lámpara", "bombilla", "foco", "aplique", "plafón", "led", "tira",
                "iluminación", "timbre", "cámara", "sensor", "detector", "enchufe", "toma",
                "calefacción", "calefactor", "radiador", "ventilador", "altavoz", "tele",
                "televisión", "tv", "pantalla",
            ),
            carriers=("interruptor", "relé", "botón", "pulsador", "canal"),
            lookalikes=(r"^puertos?$",),
            head_first=True,
        ),
        "nl": Lexicon(
            "dutch",
            ways_in=("deur", "poort", "garage", "ingang", "hek", "slagboom"),
            opens_nothing=(
                "lamp", "licht", "verlichting", "spot", "led", "ledstrip", "bel", "camera",
                "sensor", "melder", "stekker", "stopcontact", "verwarming", "radiator",
                "ventilator", "speaker", "luidspreker", "tv", "televisie", "scherm", "monitor",
            ),
            carriers=("schakelaar", "relais", "knop", "drukknop", "kanaal", "uitgang"),
            compounds=True,
        ),
        "it": Lexicon(
            "italian",
            ways_in=(
                "porta", "portone", "portoncino", "cancello", "cancelletto", "garage",
                "ingresso", "entrata", "portale", "basculante", "sbarra",
            ),
            opens_nothing=(
                "luce", "luci", "lampada", "lampadina", "faretto", "applique", "plafoniera",
                "lampadario", "led", "striscia", "illuminazione", "campanello", "telecamera",
                "sensore", "rilevatore", "presa", "spina", "riscaldamento", "termosifone",
                "radiatore", "stufa", "ventilatore", "altoparlante", "cassa", "tv", "televisore",
                "schermo",
            ),
            carriers=("interruttore", "relè", "pulsante", "tasto", "canale", "uscita"),
            lookalikes=(r"^port[io]$",),
            inflection=0,  # a final vowel changes: porta, porte
            head_first=True,
        ),
    }
)  # fmt: skip


def fold(word: str) -> str:
    """``word`` without its accents (ü → u, é → e): entity ids never have them, users often not."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def _folded(entries: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(map(fold, entries)))


_STEMMERS: Final = {lang: snowballstemmer.stemmer(lex.stemmer) for lang, lex in LEXICONS.items()}
_WAYS_IN: Final = {lang: _folded(lex.ways_in) for lang, lex in LEXICONS.items()}
_OPENS_NOTHING: Final = {lang: _folded(lex.opens_nothing) for lang, lex in LEXICONS.items()}
_CARRIERS: Final = {lang: _folded(lex.carriers) for lang, lex in LEXICONS.items()}
_LOOKALIKES: Final = re.compile(
    "|".join(f"(?:{p})" for x in LEXICONS.values() for p in x.lookalikes)
)
_HEAD_LAST: Final = tuple(lang for lang, lex in LEXICONS.items() if not lex.head_first)
_HEAD_FIRST: Final = tuple(lang for lang, lex in LEXICONS.items() if lex.head_first)


@lru_cache(maxsize=16384)
def _stem(lang: str, word: str) -> str:
    stem: str = _STEMMERS[lang].stemWord(word)
    return stem


def words(text: str) -> tuple[str, ...]:
    """The words of a text, casefolded and folded: split at non-alphanumerics, camelCase, digits."""
    found: list[str] = []
    current = ""
    for char in unicodedata.normalize("NFKC", text):
        if not char.isalnum():
            found.append(current)
            current = ""
            continue
        if current and (
            (current[-1].islower() and char.isupper()) or current[-1].isdigit() != char.isdigit()
        ):
            found.append(current)
            current = ""
        current += char
    found.append(current)
    return tuple(fold(word.casefold()) for word in found if word)


def _inflects(lang: str, word: str, entry: str) -> bool:
    """Whether ``word`` is ``entry`` or one of its inflections in ``lang``."""
    # Snowball changes endings only: a word and its entry share their first letters, and the
    # check is cheap before the stemmer runs.
    return word == entry or (
        len(entry) <= len(word) <= len(entry) + LEXICONS[lang].inflection
        and word[:2] == entry[:2]
        and _stem(lang, word) == _stem(lang, entry)
    )


def _part_of(lang: str, word: str, entry: str, *, at_end: bool) -> bool:
    """Whether ``entry`` is a compound part of ``word`` (its last part when ``at_end``)."""
    start = word.rfind(entry) if at_end else word.find(entry)
    while start >= 0:
        before, after = word[:start], word[start + len(entry) :]
        if (not before or len(before) >= MIN_PART) and (
            not after
            or (len(after) >= MIN_PART and not at_end)
            or _inflects(lang, entry + after, entry)
        ):
            return True
        start = -1 if at_end else word.find(entry, start + 1)
    return False


@lru_cache(maxsize=16384)
def _mentions_a_way_in(word: str) -> bool:
    for piece in _LOOKALIKES.split(word):
        for lang, lex in LEXICONS.items():
            for entry in _WAYS_IN[lang]:
                if _inflects(lang, piece, entry) or (
                    lex.compounds and _part_of(lang, piece, entry, at_end=False)
                ):
                    return True
    return False


def _is_carrier(word: str, langs: tuple[str, ...]) -> bool:
    return any(_inflects(lang, word, carrier) for lang in langs for carrier in _CARRIERS[lang])


def _head_opens_nothing(text_words: tuple[str, ...]) -> bool:
    """Whether the text's head (last word, or first in a head-first language) opens nothing."""
    content = [word for word in text_words if len(word) > 1 and not word.isdigit()]
    last = [word for word in content if not _is_carrier(word, _HEAD_LAST)]
    first = [word for word in content if not _is_carrier(word, _HEAD_FIRST)]
    if last:
        head = last[-1]
        for carrier in (c for lang in _HEAD_LAST for c in _CARRIERS[lang]):
            if head.endswith(carrier) and len(head) - len(carrier) >= MIN_PART:
                head = head.removesuffix(carrier)  # "Lichtschalter" is about the light
                break
        if any(
            _part_of(lang, head, entry, at_end=True)
            for lang in _HEAD_LAST
            for entry in _OPENS_NOTHING[lang]
        ):
            return True
    return bool(first) and any(
        _inflects(lang, first[0], entry) for lang in _HEAD_FIRST for entry in _OPENS_NOTHING[lang]
    )


@lru_cache(maxsize=16384)
def names_a_way_in(text: str) -> bool:
    """Whether a text names a way in: an entry word, and a head that is not something else."""
    text_words = words(text)
    return any(map(_mentions_a_way_in, text_words)) and not _head_opens_nothing(text_words)


def is_way_in(entity: ExposedEntity | Target) -> bool:
    """Whether acting on ``entity`` may open a way into the home (the module's rule)."""
    if entity.domain not in OPENING_DOMAINS and not entity.wraps_switch:
        return False
    if entity.device_class in WAY_IN_CLASSES:
        return True
    object_id = entity.entity_id.partition(".")[2]
    if any(map(names_a_way_in, (entity.name, *entity.aliases, *entity.texts, object_id))):
        return True
    return not DEVICE_HINTS.isdisjoint(entity.device_classes) and not _head_opens_nothing(
        words(entity.name)
    )
