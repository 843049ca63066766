"""What says a device action is done, in every language Alto speaks: one record per language.

A claim is said a handful of ways in every language, and each `ClaimWords` lists its words for
them: "I have" or "I" with a past form ("I've switched off", "ich habe … ausgeschaltet", "apagué"),
a passive ("has been locked", "wurde geöffnet", "a été réglé", "è stata chiusa"), a state with a
word for "now" ("is now on", "ist jetzt offen", "staat nu open", "ya están apagadas"), something
running now ("läuft jetzt", "ya suena"), a word of completion opening the sentence ("Done",
"Erledigt", "C'est fait", "Listo", "Klaar", "Fatto"), and where a participle alone reports it
("Ventilador encendido.", "Scena attivata."), that. The completed forms are those of the verbs of
device control, with their prefixes ("heruntergefahren", "op slot gedaan") and their endings
for gender and number ("cerradas", "spente").

A state without "now" is a report, not a claim ("The porch light is on."), and so is an
intention ("I'll turn it off"). A claim with a negation before it in its clause is none ("I
haven't turned it on", "Ich habe die Heizung noch nicht eingeschaltet", "Non ho acceso"):
`negated` tells, every language's negations read together. A turn reads English's patterns and
its own language's (`patterns`): a model answers in either.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Final

import regex


@dataclass(frozen=True, slots=True)
class ClaimWords:
    """One language's words of a claim, each a regular expression alternation."""

    done: str  # completed forms of device verbs: participles, and past forms where they differ
    i_did: str  # what says "I (have)" before a completed form
    passive: str  # what says "has been" before a completed form
    be: str  # "is", "are"
    now: str  # "now", "already"
    states: str  # what a device is once acted on
    running: str  # what a device does once started
    completion: str  # a word that reports completion when it opens a sentence
    negations: str
    succeeded: str = ""  # "I managed to": success said of any action
    after: str = ""  # what follows a completed form to make it a passive ("… geöffnet worden")
    terse: bool = False  # a completed form alone reports it ("Ventilador encendido.")
    preterite: str = ""  # a first-person past form that says "I did" alone ("apagué")


_EN_DONE = (
    r"turned|switched|set|locked|unlocked|opened|closed|shut|started|stopped|dimmed|brightened|"
    r"changed|activated|deactivated|armed|disarmed|enabled|disabled|adjusted|raised|lowered|"
    r"muted|unmuted|paused|resumed|put|played|launched|restarted|rebooted|reset|lit|drawn|"
    r"rolled|boosted|reduced|increased|decreased|preheated|powered|cut|killed|retracted|extended|"
    r"drew|fired\s+up|started\s+up|kicked\s+off|nudged|bumped|topped\s+up"
)

ENGLISH: Final = ClaimWords(
    done=_EN_DONE,
    i_did=r"(?:i(?:'ve|’ve| have)?|we(?:'ve|’ve| have))(?:\s+(?:just|now|already))?",
    passive=r"(?:has|have|'s|’s)\s+(?:now\s+|just\s+|already\s+)?been|got|was|were",
    be=r"is|are|'s|’s|'re|’re",
    now=r"now|already",
    states=(
        rf"on|off|up|down|locked|unlocked|open|opened|closed|shut|armed|disarmed|running|playing|"
        rf"muted|"
        rf"brewing|heating|cooling|cleaning|vacuuming|charging|recording|spinning|at\s+\d+|"
        rf"{_EN_DONE}"
    ),
    running=r"playing|running|brewing|heating|cleaning|vacuuming|charging|recording|spinning",
    completion=rf"done|all done|all set|there you go|sorted|{_EN_DONE}",
    negations=r"not|n't|n’t|never|no longer|unable|failed",
    succeeded=r"managed\s+to|(?:has|have)\s+(?:just\s+)?started",
)

_DE_DONE = (
    r"\w*(?:geschaltet|gestellt|gedreht|gefahren|gelassen|geschlossen|gesperrt|geöffnet|gedimmt|"
    r"gestartet|gestoppt|aktiviert|deaktiviert|reduziert|erhöht|verringert|geregelt|gesetzt|"
    r"pausiert|verriegelt|entriegelt|geheizt|gekühlt|gesenkt|angehoben|gedrosselt|gespielt|"
    r"programmiert|abgeschlossen|aufgeschlossen)|"
    r"(?:an|aus|auf|zu|ab|hoch|runter|lauter|leiser|heller|dunkler)gemacht"
)

GERMAN: Final = ClaimWords(
    done=_DE_DONE,
    i_did=r"ich\s+habe?|habe?\s+ich|habe?|hab's|wir\s+haben|haben\s+wir",
    passive=r"wurden?",
    after=r"worden",
    be=r"ist|sind|steht|stehen",
    now=r"jetzt|nun|bereits|schon|soeben|inzwischen",  # "gerade" is as often "at the moment"
    states=(
        rf"an|aus|ein|offen|zu|auf|unten|oben|scharf|unscharf|eingeschaltet|ausgeschaltet|"
        rf"auf\s+\d+|{_DE_DONE}"
    ),
    running=r"läuft|laufen|spielt|spielen|heizt|saugt|lädt",
    completion=(
        r"(?:schon\s+|alles\s+)?(?:erledigt|passiert)|fertig|gemacht|geschafft|ist\s+erledigt|"
        r"wurde\s+erledigt"
    ),
    negations=r"nicht|kein|keine|keinen|nie|niemals",
    succeeded=(
        r"(?:habe?|hab's)\s+(?:ich\s+)?(?:es\s+)?geschafft|"
        r"(?:habe?\s+ich|ich\s+habe?)\s+(?:es\s+|das\s+)?(?:gemacht|erledigt)|"
        # a perfect with "sein": a motion or a start ("ist losgefahren", "ist angesprungen")
        r"(?:ist|sind)\s+(?:\w+\s+){0,3}?(?:\w*gefahren|\w*gestartet|angesprungen|angegangen|"
        r"ausgegangen|losgelaufen)"
    ),
    terse=True,
    preterite=(
        r"(?:ich\s+)?(?:schaltete|machte|stellte|drehte|öffnete|schloss|startete|stoppte|"
        r"senkte|dimmte|aktivierte|deaktivierte)(?:\s+ich)?"
    ),
)

_NL_DONE = (
    r"\w*(?:gezet|gedraaid|geschakeld|gedimd|gesloten|geopend|grendeld|gesteld|gestart|gestopt|"
    r"gepauzeerd|geactiveerd|gedeactiveerd|verlaagd|verhoogd|gelaten|getrokken)|begonnen|"
    r"(?:uit|aan|open|dicht|omlaag|omhoog|weg)\s?(?:gedaan|gegaan)|op\s+slot\s+gedaan"
)

DUTCH: Final = ClaimWords(
    done=_NL_DONE,
    i_did=r"ik\s+heb|heb\s+ik|we\s+hebben|hebben\s+we",
    passive=r"is|zijn|werd|werden",
    be=r"is|zijn|staat|staan|zit|zitten",
    now=r"nu|al|zojuist|net|inmiddels|intussen|weer",
    states=(
        rf"aan|uit|open|dicht|op\s+slot|gesloten|geopend|vergrendeld|ontgrendeld|ingeschakeld|"
        rf"uitgeschakeld|gedimd|omlaag|omhoog|neer|op\s+scherp|scherp|op\s+\d+|{_NL_DONE}"
    ),
    running=r"speelt|spelen|draait|draaien|loopt|lopen|brandt|branden|zuigt",
    completion=r"klaar|gedaan|geregeld|voor\s+elkaar|dat\s+is\s+gelukt|gelukt|is\s+gebeurd",
    negations=r"niet|geen|nooit",
    succeeded=r"(?:is|het\s+is)\s+(?:me\s+)?gelukt",
    terse=True,
    preterite=(
        r"ik\s+(?:zette|deed|draaide|schakelde|opende|sloot|startte|stopte|dimde|activeerde)"
    ),
)

_FR_DONE = (
    r"(?:allum|verrouill|déverrouill|régl|baiss|abaiss|mont|remont|lev|activ|désactiv|réactiv|"
    r"lanc|relanc|démarr|redémarr|arrêt|coup|tamis|augment|diminu|programm|enclench|arm|désarm|"
    r"ferm|referm|branch|débranch|rallum|rentr|chauff|mis\s+en\s+march|mis\s+en\s+rout)"
    r"(?:é|ée|és|ées)|éteinte?s?|r?ouverte?s?|mise?s?|descendue?s?|repartie?s?"
)

FRENCH: Final = ClaimWords(
    done=_FR_DONE,
    i_did=r"j'ai|j’ai|je\s+l'ai|je\s+l’ai|je\s+les\s+ai|nous\s+avons|on\s+a|je\s+viens\s+d[e'’]",
    passive=(r"(?:a|ont)\s+(?:bien\s+)?été|vient\s+d'être|viennent\s+d'être|s'est|s’est|se\s+sont"),
    be=r"est|sont|c'est|c’est",
    now=r"maintenant|désormais|déjà|à\s+présent",
    states=rf"en\s+marche|en\s+route|à\s+\d+|{_FR_DONE}",
    running=r"tourne|tournent|joue|jouent|chauffe|fonctionne|fonctionnent|marche|a\s+démarré",
    completion=(r"c'est\s+fait|c’est\s+fait|c'est\s+réglé|voilà|et\s+voilà|fait|terminé|effectué"),
    negations=r"ne|n'|n’|pas|jamais|plus|rien",
    succeeded=(
        r"j'ai\s+réussi|j’ai\s+réussi|(?:a|ont)\s+(?:bien\s+)?(?:démarré|commencé|redémarré)|"
        r"(?:est|sont)\s+passée?s?\s+(?:à|en)|(?:est|sont)\s+(?:re)?partie?s?|"
        rf"c['’]est\s+(?:{_FR_DONE})|"
        r"je\s+viens\s+d['’e]\s*(?:l['’]\s*|les\s+)?(?:allumer|éteindre|ouvrir|fermer|"
        r"verrouiller|déverrouiller|régler|baisser|monter|lever|activer|désactiver|lancer|"
        r"démarrer|arrêter|couper|mettre|tamiser|augmenter|diminuer|programmer|remonter)"
    ),
    terse=True,
)

_ES_DONE = (
    r"(?:encendid|apagad|abiert|cerrad|bloquead|desbloquead|ajustad|activad|desactivad|puest|"
    r"bajad|subid|armad|desarmad|atenuad|iniciad|arrancad|parad|detenid|programad|configurad|"
    r"cambiad|regulad|silenciad|pausad|reanudad|conectad|desconectad|empezad|comenzad|recogid|"
    r"extendid|plegad|desplegad|quitad|enchufad|desenchufad|preparad)[oa]s?"
)

SPANISH: Final = ClaimWords(
    done=_ES_DONE,
    i_did=r"(?:ya\s+)?(?:(?:te|lo|la|los|las|le|les)\s+)?(?:he|hemos)",
    passive=(
        r"(?:ha|han)\s+sido|fue|fueron|se\s+(?:ha|han)|quedó|quedaron|queda|quedan|"
        r"(?:ha|han)\s+quedado"
    ),
    be=r"está|están|queda|quedan",
    now=r"ahora|ya",
    states=rf"en\s+marcha|funcionando|sonando|a\s+\d+|{_ES_DONE}",
    running=(
        r"suena|suenan|está\s+sonando|funciona|está\s+funcionando|está\s+en\s+marcha|gira|giran"
    ),
    completion=r"listo|hecho|ya\s+está|todo\s+listo",
    negations=r"no|nunca|todavía|aún|jamás",
    succeeded=(
        r"he\s+conseguido|he\s+logrado|logré|conseguí|"
        r"(?:ha|han)\s+(?:empezado|comenzado|arrancado)|"
        r"acabo\s+de\s+(?:abrir|cerrar|encender|apagar|bajar|subir|poner|activar|desactivar|"
        r"ajustar|bloquear|desbloquear|armar|desarmar|atenuar|iniciar|parar|programar|quitar)"
    ),
    terse=True,
    preterite=(
        r"apagué|encendí|abrí|cerré|bajé|subí|puse|activé|desactivé|armé|desarmé|ajusté|"
        r"bloqueé|desbloqueé|atenué|paré|inicié|arranqué|programé|configuré|cambié|regulé|"
        r"silencié|pausé|conecté|desconecté|corté|recogí|quité|enchufé|desenchufé|preparé"
    ),
)

_IT_DONE = (
    r"(?:acces|spent|apert|chius|bloccat|sbloccat|impostat|attivat|disattivat|abbassat|alzat|"
    r"avviat|fermat|mess|regolat|attenuat|armat|disarmat|inserit|disinserit|silenziat|"
    r"aumentat|diminuit|programmat|ritirat|cambiat)[oaie]"
)

ITALIAN: Final = ClaimWords(
    done=_IT_DONE,
    i_did=r"(?:l'|l’|li\s+|le\s+|gliel'|ti\s+)?ho|abbiamo",
    passive=r"(?:è|sono)\s+stat[oaie]|si\s+(?:è|sono)|viene|vengono",
    be=r"è|sono",
    now=r"ora|adesso|già|ormai",
    states=rf"in\s+funzione|a\s+\d+|{_IT_DONE}",
    running=r"suona|suonano|sta\s+suonando|funziona|è\s+in\s+funzione|gira|girano",
    completion=r"fatto|ecco\s+fatto|tutto\s+fatto|sistemato",
    negations=r"non|mai",
    succeeded=(
        r"sono\s+riuscit[oa]|ce\s+l'ho\s+fatta|ce\s+l’ho\s+fatta|"
        r"(?:è|sono)\s+(?:\w+\s+){0,2}?(?:ri)?partit[oaie]"  # a perfect with "essere": it started
    ),
    terse=True,
)

LANGUAGES: Final = MappingProxyType(
    {"en": ENGLISH, "de": GERMAN, "nl": DUTCH, "fr": FRENCH, "es": SPANISH, "it": ITALIAN}
)

# Words a terse report never opens with: a finite verb makes it a sentence about someone ("Tu as
# éteint", "hai spento tu", "risulta aperto").
_AUXILIARIES: Final = (
    r"has|have|had|is|are|was|were|seems|remains|stays|hat|habe|hab|hast|habt|ist|sind|war|"
    r"scheint|bleibt|heeft|heb|hebt|hebben|lijkt|blijft|a|ai|as|avons|avez|ont|est|sont|"
    r"était|semble|reste|paraît|ha|han|he|habéis|hemos|es|son|era|parece|sigue|queda|è|ho|"
    r"hai|abbiamo|avete|hanno|sono|risulta|resta|rimane|sembra|pare|would|hätte|wäre|zou|"
    r"aurais|aurait|habría|hubiera|hubiese|avrei|avrebbe"
)


def _patterns(words: ClaimWords, *, terse: bool) -> list[str]:
    """The claim patterns of one language (see the module docstring)."""
    done, now, states = words.done, words.now, words.states
    between = r"(?:\W+\w+){0,10}?\W+"  # the words a clause puts between an auxiliary and its verb
    found = [
        rf"\b(?:{words.i_did})\b{between}(?:{done})\b",
        rf"\b(?:{words.passive})\b{between}(?:{done})\b",
        rf"\b(?:{words.be})\s+(?:\w+\s+)?(?:{now})\s+(?:\w+\s+){{0,3}}(?:{states})\b",
        rf"\b(?:{now})\s+(?:\w+\s+){{0,4}}(?:{words.be})\s+(?:{states})\b",
        rf"\b(?:{words.be})\s+(?:{states})(?:\s+\w+){{0,3}}?\s+(?:{now})\b",
        rf"\b(?:{words.running})\b(?:\s+\w+){{0,4}}?\s+(?:{now})\b",
        rf"\b(?:{now})\s+(?:{words.running})\b",
        rf"^\W*(?:{words.completion})\b",
    ]
    found += [rf"\b(?:{form})\b" for form in (words.preterite, words.succeeded) if form]
    if words.after:
        found.append(rf"\b(?:{done})\s+(?:{words.after})\b")
    if terse and words.terse:
        found.append(rf"^\W*(?:(?!(?:{_AUXILIARIES})\b)\w+\W*\s+\W*){{0,3}}(?:{done})\b")
    return found


@cache
def patterns(language: str = "") -> tuple[regex.Pattern[str], ...]:
    """The claim patterns a turn in `language` (Home Assistant's, "de-CH" as "de") is read by.

    English's and the language's own, a terse report included; with no language Alto speaks,
    every language's, terse reports aside. A terse report is read only in its own language
    because its pattern holds back the first words of every sentence while it streams (they
    could still be one), which an English reply should not wait for.
    """
    code = language.split("-", maxsplit=1)[0].lower()
    chosen = {"en": ENGLISH, code: LANGUAGES[code]} if code in LANGUAGES else dict(LANGUAGES)
    return tuple(
        regex.compile(pattern, regex.IGNORECASE)
        for words in chosen.values()
        for pattern in _patterns(words, terse=code in LANGUAGES)
    )


CLAIMS: Final = patterns()
_NEGATED: Final = regex.compile(
    "|".join(
        [rf"(?:^|\W)(?:{words.negations})(?:\W|$)" for words in LANGUAGES.values()]
        + [r"n't|n’t"]  # English writes it onto its verb
    ),
    regex.IGNORECASE,
)
_CLAUSE_START: Final = regex.compile(
    r"[,;:–—]|\b(?:but|aber|mais|pero|ma|maar)\b", regex.IGNORECASE
)


def negated(sentence: str, start: int, end: int) -> bool:
    """Whether a negation stands in the clause of a claim found at `start:end`, before its end."""
    clause = max((m.end() for m in _CLAUSE_START.finditer(sentence, 0, start)), default=0)
    return _NEGATED.search(sentence, clause, end) is not None
