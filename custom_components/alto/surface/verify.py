"""The extractive verifier: the deterministic backstop behind the Surfacer's render.

A render passes only when every content-bearing word traces to a licensed source phrase of the
entity its clause is about, and when each clause, read as a sequence, points at one licensed
phrase: its content words, negators and quantifiers included, occur in that phrase in the same
order (gaps allowed) with the same polarity and the same quantifiers. Word tracing catches invented
words; the alignment catches the source's own words given another meaning: a negation dropped or
added, roles or values swapped ("Ana drives Ben" -> "Ben drives Ana"), a quantifier weakened
("every Sunday" -> "some Sundays"). The check re-derives this from the same fragment the model
saw, with no model in the loop, so it cannot be argued with; and it fails toward dropping: a
verifier that cannot run returns a failing verdict rather than waving the render through.

Words are segmented by Unicode word boundaries (UAX #29, via uniseg) so accents, apostrophes and
decimal numbers split the way the standard says rather than the way a regex guesses. A render and
its fragment are read in one language Alto speaks, the one their words tell (`readings`): its
function words, negators, quantifiers, framing and elisions, and its Snowball stemmer, which is
deterministic, pure Python, needs no model or dictionary download, and folds the regular
inflections an extractive render legitimately changes ("walks" -> "walking") while leaving
different words different. Its over-stemming only ever matters within one small fragment.
Irregular English forms it cannot relate (told/tell, broke/break) go through a fixed table in
`lexicon` first. Where a language says its verb last in a subordinate clause and second in a
main one (German, Dutch), a clause may align with its verb moved back (`_rearranged`); where a
negation follows the verb it negates, it covers its whole clause (`_scopes`). Segmentation is
the cost that matters (pure Python), so a licensed phrase is segmented and analysed once per
process and the render once per call.
"""

from __future__ import annotations

import itertools
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal, TypeGuard

import snowballstemmer

from . import lexicon as lx
from .lexicon import ENGLISH, Reading
from .readings import READINGS, reading_of
from .segments import segments

Mode = Literal[
    "untraceable",
    "misattributed",
    "precise",
    "echo",
    "framing",
    "autobiography",
    "polarity",
    "quantifier",
    "swapped",
]


@dataclass(frozen=True, slots=True)
class Failure:
    """One reason to drop a render: its mode and the offending words as the render has them."""

    mode: Mode
    span: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """The verifier's decision; `ok` only when there is no failure at all."""

    ok: bool
    failures: tuple[Failure, ...] = ()

    @property
    def modes(self) -> frozenset[str]:
        """The failure modes, once each."""
        return frozenset(f.mode for f in self.failures)

    @property
    def untraceable_spans(self) -> tuple[str, ...]:
        """Distinct failing spans in render order, to name in the one regenerate prompt."""
        return tuple(dict.fromkeys(f.span for f in self.failures if f.span))


@dataclass(frozen=True, slots=True)
class Token:
    """One token of a text, with what tracing reads of it."""

    kind: Literal["word", "number", "clause", "sentence"]
    norm: str = ""  # casefolded word, or the number normalized ("3rd" -> "3", "7.30" -> "7:30")
    key: str = ""  # what tracing compares: the stem for words, the normalized number otherwise
    start: int = 0
    end: int = 0
    capital: bool = False
    initial: bool = False  # first word of a sentence, where a capital says nothing about names
    framing: bool = False  # part of extractive framing (`Reading.framing`): form, not content
    lang: str = "en"  # the language it is read in (a key of `readings.READINGS`)


_Group = tuple[str, ...]
_Names = tuple[tuple[str, tuple[str, ...]], ...]  # (entity, name key), hashable for the caches

_STEMMERS = {code: snowballstemmer.stemmer(lex.stemmer) for code, lex in READINGS.items()}
_STEM_LOCK = threading.Lock()  # Snowball stemmers keep per-call state on the instance
_NUMBER = re.compile(r"(\d[\d,]*(?:[:/.\-]\d+)*)(st|nd|rd|th|am|pm)?")
_HOUR = re.compile(r"(\d{1,2})([a-z])(\d{2})?")  # "16h30": the hour, its mark, the minutes
_CLOCK_DOT = re.compile(r"\d{1,2}\.\d{2}")
_MERIDIEM = frozenset({"am", "pm"})
_HYPHENS = frozenset({"-", "\u2010", "\u2011"})


@lru_cache(maxsize=8192)
def _stem(word: str, code: str = "en") -> str:
    with _STEM_LOCK:
        return str(_STEMMERS[code].stemWord(READINGS[code].irregular.get(word, word)))


def _stems(forms: frozenset[str], code: str = "en") -> frozenset[str]:
    return frozenset(_key(w, READINGS[code], False) for w in forms)


def _key(norm: str, lex: Reading, noun: bool) -> str:
    """What tracing compares a word by: its stem, less a verb's person "t" where it stays on.

    `noun`: written with a capital (a name's, a noun's, a sentence's first word), so not taken
    for a verb.
    """
    key = _stem(norm, lex.code)
    if lex.person_t and not noun and len(key) > 3 and key[-1] == "t":
        return key[:-1]  # German's stemmer keeps "spielt" whole beside "spiel" for "spielen"
    return key


@dataclass(frozen=True, slots=True)
class _Known:
    """What a `Reading`'s lists become once: stems, joined lists, framing phrases by first word."""

    negators: frozenset[str]  # its own, and every other language's that is not a stopword here
    clause_negators: frozenset[str]  # those of languages whose negators negate the whole clause
    quantifiers: frozenset[str]
    evaluative: frozenset[str]  # stems
    framing: frozenset[str]  # stems of the one-word framings
    phrases: dict[str, list[tuple[str, ...]]]  # by first word, longest first
    units: frozenset[str]  # the number words a tens word may join with a hyphen

    @classmethod
    def of(cls, lex: Reading) -> _Known:
        everyone = frozenset().union(*(r.negators for r in READINGS.values()))
        negators = lex.negators | (everyone - lex.stopwords)
        framing = [f.casefold() for f in lex.framing]
        phrases: dict[str, list[tuple[str, ...]]] = {}
        for phrase in sorted(
            (tuple(f.split()) for f in framing if " " in f), key=len, reverse=True
        ):
            phrases.setdefault(phrase[0], []).append(phrase)
        return cls(
            negators,
            negators
            & frozenset().union(*(r.negators for r in READINGS.values() if r.clause_negation)),
            lex.universal | lex.restricting,
            _stems(lex.evaluative, lex.code),
            _stems(frozenset(f for f in framing if " " not in f), lex.code),
            phrases,
            frozenset(w for w, v in lex.number_words.items() if v.isdigit() and 0 < int(v) < 10),
        )


_KNOWN = {code: _Known.of(lex) for code, lex in READINGS.items()}
_LIFE_VERBS = _stems(lx.LIFE_VERBS)
_LIFE_STATES = _stems(lx.LIFE_STATES)
_LIFE_NOUNS = _stems(lx.LIFE_NOUNS)


def _lex(tok: Token) -> Reading:
    return READINGS[tok.lang]


def verify_render(
    fragment: Mapping[str, Sequence[str]], render: str, *, utterance: str = ""
) -> Verdict:
    """Judge `render` against the licensed phrases in `fragment`; never raises."""
    try:
        failures = _failures(fragment, render, utterance)
    except Exception:  # noqa: BLE001 - a verifier that cannot run drops the render
        failures = None
    if failures is None:
        return Verdict(False, (Failure("untraceable", render if isinstance(render, str) else ""),))
    return Verdict(not failures, tuple(failures))


def _failures(fragment: object, render: object, utterance: object) -> list[Failure] | None:
    if not (_valid_fragment(fragment) and isinstance(render, str) and isinstance(utterance, str)):
        return None
    lex = reading_of([render, *(p for phrases in fragment.values() for p in phrases)])
    toks = tokens(render, lex)
    if not any(t.kind == "word" for t in toks):
        return None
    names: _Names = tuple((name, _name_key(name, lex.code)) for name in fragment)
    spans = _spans(fragment, names, lex.code)
    licences = _licences(spans, [name for name, _ in names])
    if lex.particles:
        toks = _particles_apart(toks, frozenset().union(*licences.values()), lex)
    text = _read(toks, names)
    groups = _attribute(text)
    found = _word_failures(text, render, groups, licences, utterance)
    failed = {i for i, _ in found}
    found += _clause_failures(_sequences(text), render, groups, failed, spans)
    found.sort(key=lambda item: toks[item[0]].start)  # render order, for the regenerate prompt
    life = _autobiography(toks, render)
    if lex.pro_drop and not text.mention_at and not life:
        life = [Failure("autobiography", render)]  # its verbs may say "I": it names no one else
    return [f for _, f in found] + life


def _valid_fragment(fragment: object) -> TypeGuard[Mapping[str, Sequence[str]]]:
    return isinstance(fragment, Mapping) and all(
        isinstance(name, str)
        and isinstance(phrases, Sequence)
        and not isinstance(phrases, str | bytes)
        and all(isinstance(p, str) for p in phrases)
        for name, phrases in fragment.items()
    )


def _word_failures(
    text: _Read,
    render: str,
    groups: list[_Group | None],
    licences: dict[str, frozenset[str]],
    utterance: str,
) -> list[tuple[int, Failure]]:
    """Each content word traced to its clause's entities; failures with their token index."""
    everywhere = frozenset().union(*licences.values())
    name_tokens = {k for i, (_, end) in text.mention_at.items() for k in range(i, end)}
    name_tokens |= text.floating
    scopes: dict[_Group, frozenset[str]] = {}
    echo: frozenset[str] | None = None  # the utterance is segmented only if a word fails to trace
    found: list[tuple[int, Failure]] = []
    for i, (tok, group) in enumerate(zip(text.toks, groups, strict=True)):
        if i in name_tokens or not is_content(tok):
            continue
        if group is not None and group not in scopes:
            scopes[group] = frozenset.intersection(*(licences[e] for e in group))
        if tok.key in (everywhere if group is None else scopes[group]):
            continue
        if echo is None:
            echo = frozenset(t.key for t in tokens(utterance, _lex(tok)))
        found.append((i, Failure(_judge(tok, everywhere, echo), render[tok.start : tok.end])))
    return found


def tokens(text: str, lex: Reading | None = None) -> list[Token]:
    """The words and numbers of `text` as the verifier sees them (shared with the Surfacer).

    Read in `lex`, or in the language its own words tell (`readings.reading_of`).
    """
    lex = lex or reading_of((text,))
    toks: list[Token] = []
    initial = True
    pieces = _pieces(text, lex)
    for n, (start, piece) in enumerate(pieces):
        end = start + len(piece)
        if not any(c.isalnum() for c in piece):
            if _inside_word(pieces, n) or _ordinal_dot(lex, toks, pieces, n):
                continue
            if "\n" in piece or any(c in lx.SENTENCE_PUNCT for c in piece):
                toks.append(Token("sentence", start=start, end=end))
                initial = True
            elif any(c in lx.CLAUSE_PUNCT for c in piece):
                toks.append(Token("clause", start=start, end=end))
            continue
        folded = unicodedata.normalize("NFC", piece.casefold()).replace("’", "'").replace("ʼ", "'")
        number = _number(folded, lex)
        if number is not None:
            toks.append(Token("number", number, number, start, end, initial=initial, lang=lex.code))
        else:
            for n_clitic, norm in enumerate(_split_clitics(folded, lex)):
                capital = n_clitic == 0 and piece[0].isupper()
                key = _key(norm, lex, capital)
                toks.append(Token("word", norm, key, start, end, capital, initial, lang=lex.code))
        initial = False
    return _mark_framing(_join_hours(_join_meridiem(toks, lex), lex), lex)


def _particles_apart(toks: list[Token], traced: frozenset[str], lex: Reading) -> list[Token]:
    """A separable verb joined in the render ("abholt") as the particle and the verb apart.

    Only where the joined word traces to nothing and both its parts do ("holt … ab"), so a word
    that merely begins like a particle ("mittwochs") stays whole.
    """
    out: list[Token] = []
    for tok in toks:
        out += [tok] if tok.kind != "word" or tok.key in traced else _apart(tok, traced, lex)
    return out


def _apart(tok: Token, traced: frozenset[str], lex: Reading) -> list[Token]:
    for particle in sorted(lex.particles, key=len, reverse=True):
        rest = tok.norm.removeprefix(particle)
        if len(rest) < 3 or rest == tok.norm:
            continue
        first, second = _key(particle, lex, False), _key(rest, lex, tok.capital)
        if first in traced and second in traced:
            return [replace(tok, norm=particle, key=first), replace(tok, norm=rest, key=second)]
    return [tok]


def _ordinal_dot(lex: Reading, toks: list[Token], pieces: list[tuple[int, str]], n: int) -> bool:
    """The dot of a day before its month ("am 12. März"), where the language writes one."""
    if not (lex.ordinal_dot and pieces[n][1] == "." and toks and _is_day(toks[-1])):
        return False
    after = next((p for _, p in pieces[n + 1 :] if not p.isspace()), "")
    return after.casefold() in lex.months


def _inside_word(pieces: list[tuple[int, str]], n: int) -> bool:
    """A hyphen joining two words ("gluten-free") is part of a compound, not clause punctuation."""
    if pieces[n][1] not in _HYPHENS or n == 0 or n + 1 == len(pieces):
        return False
    return pieces[n - 1][1][-1:].isalnum() and pieces[n + 1][1][:1].isalnum()


@lru_cache(maxsize=4096)
def _known_tokens(text: str, code: str) -> tuple[Token, ...]:
    """`tokens` of a licensed phrase or entity name: these recur turn after turn, renders do not."""
    return tuple(tokens(text, READINGS[code]))


def _pieces(text: str, lex: Reading) -> list[tuple[int, str]]:
    """UAX #29 words with offsets, re-joining numbers it splits: 7:30, 3/4, twenty-five."""
    raw: list[tuple[int, str]] = []
    pos = 0
    for piece in segments(text):
        raw.append((pos, piece))
        pos += len(piece)
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(raw):
        start, piece = raw[i]
        while i + 2 < len(raw) and _joins(piece, raw[i + 1][1], raw[i + 2][1], lex):
            piece += raw[i + 1][1] + raw[i + 2][1]
            i += 2
        out.append((start, piece))
        i += 1
    return out


def _joins(left: str, sep: str, right: str, lex: Reading) -> bool:
    if sep in (":", "/", "-") and left[-1:].isdigit() and right[:1].isdigit():
        return True
    return sep == "-" and left.casefold() in lex.tens and right.casefold() in _KNOWN[lex.code].units


def _number(folded: str, lex: Reading) -> str | None:
    words = lex.number_words
    if folded in words:
        return words[folded]
    tens, _, unit = folded.partition("-")
    if tens in lex.tens and unit in _KNOWN[lex.code].units:
        return str(int(words[tens]) + int(words[unit]))
    match = _NUMBER.fullmatch(folded)
    if match is None:
        return None
    body, suffix = match.group(1).replace(",", ""), match.group(2)
    if _CLOCK_DOT.fullmatch(body):  # "7.30" is how British speakers write 7:30
        body = body.replace(".", ":")
    value = "".join(str(int(p)) if p.isdigit() else p for p in re.split(r"([:/.\-])", body))
    return value + suffix if suffix in _MERIDIEM else value


def _split_clitics(folded: str, lex: Reading) -> list[str]:
    """Split a clitic off: can't -> can, not; I'm -> i, am; Maria's -> maria, is (form).

    Before an apostrophe, an elision is the word it stands for: n'aime -> ne, aime.
    """
    if folded in lex.contractions:
        return list(lex.contractions[folded])
    if lex.negated_bases and folded.endswith("n't") and len(folded) > 3:
        base = folded[:-3]
        return [lex.negated_bases.get(base, base), "not"]
    head, sep, tail = folded.partition("'")
    if sep and tail and head in lex.elisions:
        return [lex.elisions[head], *_split_clitics(tail, lex)]
    head, sep, tail = folded.rpartition("'")
    if sep and head and tail in lex.clitics:
        return [head, lex.clitics[tail]]
    return [folded.strip("'")]


def _join_meridiem(toks: list[Token], lex: Reading) -> list[Token]:
    """'7 pm' compares as '7pm': the half of the day is part of the time, not a separate word."""
    out: list[Token] = []
    for tok in toks:
        prev = out[-1] if out else None
        if tok.kind == "word" and tok.norm in lex.meridiem and prev and prev.kind == "number":
            value = prev.norm + tok.norm
            out[-1] = replace(prev, norm=value, key=value, end=tok.end)
        else:
            out.append(tok)
    return out


def _join_hours(toks: list[Token], lex: Reading) -> list[Token]:
    """'16 h 30', '16h30' and '16 h' compare as '16:30' and '16:00', where a language writes so."""
    if not lex.hour_mark:
        return toks
    out: list[Token] = []
    i = 0
    while i < len(toks):
        tok, after = toks[i], toks[i + 1 : i + 3]
        joined = _HOUR.fullmatch(tok.norm) if tok.kind == "word" else None
        if joined and joined.group(2) == lex.hour_mark:
            value = f"{int(joined.group(1))}:{joined.group(3) or '00'}"
            out.append(replace(tok, kind="number", norm=value, key=value, capital=False))
        elif (
            tok.kind == "number" and tok.norm.isdigit() and after and after[0].norm == lex.hour_mark
        ):
            minutes = after[1] if len(after) > 1 and after[1].kind == "number" else None
            value = f"{int(tok.norm)}:{minutes.norm.zfill(2) if minutes else '00'}"
            out.append(replace(tok, norm=value, key=value, end=(minutes or after[0]).end))
            i += 2 if minutes else 1
        else:
            out.append(tok)
        i += 1
    return out


def _mark_framing(toks: list[Token], lex: Reading) -> list[Token]:
    """Flag the words of extractive framing, phrases first so "as far as I know" goes whole."""
    out = list(toks)
    known = _KNOWN[lex.code]
    i = 0
    while i < len(toks):
        length = _framing_at(toks, i, known)
        for k in range(i, i + length):
            out[k] = replace(toks[k], framing=True)
        i += max(length, 1)
    return out


def _framing_at(toks: list[Token], i: int, known: _Known) -> int:
    """How many tokens of extractive framing start at `i` (0 when none)."""
    if toks[i].kind != "word":
        return 0
    for phrase in known.phrases.get(toks[i].norm, ()):
        if tuple(t.norm for t in toks[i : i + len(phrase)]) == phrase:
            return len(phrase)
    # Read as a verb even with a capital: "Erwähnt, ..." opens a sentence.
    return 1 if _key(toks[i].norm, _lex(toks[i]), False) in known.framing else 0


@lru_cache(maxsize=1024)
def _name_key(name: str, code: str) -> tuple[str, ...]:
    """The keys a render must contain to mention an entity; a leading article is optional."""
    keys = [(t.norm, t.key) for t in _known_tokens(name, code) if t.kind in ("word", "number")]
    while len(keys) > 1 and keys[0][0] in READINGS[code].determiners:
        keys.pop(0)
    return tuple(key for _, key in keys)


def _mentions(toks: Sequence[Token], names: _Names) -> dict[int, tuple[str, int]]:
    """Token index where a name starts -> (entity, index after it); longest name wins a position."""
    by_length = sorted((k for k in names if k[1]), key=lambda item: -len(item[1]))
    found: dict[int, tuple[str, int]] = {}
    i = 0
    while i < len(toks):
        for entity, key in by_length:
            if tuple(t.key for t in toks[i : i + len(key)]) == key:
                found[i] = (entity, i + len(key))
                i += len(key)
                break
        else:
            i += 1
    return found


def _licences(spans: Sequence[_Span], entities: Sequence[str]) -> dict[str, frozenset[str]]:
    """Each entity's traceable keys: its own phrases, and other entities' phrases naming it."""
    keys: dict[str, set[str]] = {name: set() for name in entities}
    for span in spans:
        for entity in {span.owner} | span.named:
            keys[entity] |= span.words
    return {name: frozenset(k) for name, k in keys.items()}


@dataclass(frozen=True, slots=True)
class _Clause:
    """A clause: its words (token indices, names aside) and where each of its names starts."""

    words: tuple[int, ...]
    named: tuple[tuple[int, _Group], ...]  # coordinated names ("Maria and Tom") form one group


@dataclass(frozen=True, slots=True)
class _Read:
    """A text read against the fragment's names, once, for every check that follows."""

    toks: tuple[Token, ...]
    mention_at: dict[int, tuple[str, int]]  # where a name starts -> (entity, index after it)
    clauses: tuple[_Clause, ...]
    floating: frozenset[int]  # floating quantifiers of coordinated names ("both"), which are form


def _read(toks: Sequence[Token], names: _Names) -> _Read:
    mention_at = _mentions(toks, names)
    return _Read(
        tuple(toks),
        mention_at,
        tuple(_clauses(toks, mention_at)),
        _floating(toks, mention_at),
    )


def _clauses(toks: Sequence[Token], mention_at: dict[int, tuple[str, int]]) -> list[_Clause]:
    """Split at punctuation and clause conjunctions; "and"/"or" between two names coordinates.

    A fronted adjunct set off by a comma ("Every morning, Maria ...") stays with the clause it
    modifies: on its own it would align anywhere and carry a value away from its clause.
    """
    clauses: list[_Clause] = []
    words_: list[int] = []
    named: list[tuple[int, _Group]] = []
    i, coordinating = 0, False
    while i < len(toks):
        if i in mention_at:
            entity, end = mention_at[i]
            if coordinating and named:
                named[-1] = (named[-1][0], (*named[-1][1], entity))
            else:
                named.append((i, (entity,)))
            i, coordinating = end, False
            if i < len(toks) and toks[i].norm in _lex(toks[i]).coordinators and i + 1 in mention_at:
                i, coordinating = i + 1, True
            continue
        if toks[i].kind == "clause" and not named and _adjunct_comma(toks, words_):
            pass  # the comma after a fronted adjunct
        elif toks[i].kind in ("clause", "sentence") or _opens_clause(toks[i]):
            if words_ or named:
                clauses.append(_Clause(tuple(words_), tuple(named)))
            words_, named = [], []
        else:
            words_.append(i)
        i += 1
    if words_ or named:
        clauses.append(_Clause(tuple(words_), tuple(named)))
    return clauses


def _attribute(text: _Read) -> list[_Group | None]:
    """The entity group each token's clause is about.

    A clause is about the names it mentions (words before its first name belong to that name); one
    that mentions none continues the previous clause's last name, as a pronoun would. Names joined
    by "and"/"or" form one group whose every member the words must trace to. Tokens with nothing
    before them take the render's first group; with no name anywhere the group is None, meaning
    any entity of the fragment.
    """
    groups: list[_Group | None] = [None] * len(text.toks)
    carry: _Group | None = None
    first: _Group | None = None
    for clause in text.clauses:
        for i in clause.words:
            before = [g for start, g in clause.named if start < i]
            groups[i] = before[-1] if before else (clause.named[0][1] if clause.named else carry)
        if clause.named:
            carry = clause.named[-1][1]
            first = first or clause.named[0][1]
    return [g if g is not None or first is None else first for g in groups]


def _opens_clause(tok: Token) -> bool:
    return tok.norm in _lex(tok).clause_conjunctions


def is_content(tok: Token) -> bool:
    """Whether a token carries content (not a stopword, first person or extractive framing)."""
    if tok.kind == "number":
        return True
    if tok.kind != "word" or tok.framing or tok.norm in _lex(tok).first_person:
        return False
    if tok.capital and not tok.initial:  # a mid-sentence capital is a name even if it is "May"
        return True
    return tok.norm not in _lex(tok).stopwords


def _role(tok: Token) -> _Role:
    known = _KNOWN[tok.lang]
    return (
        "negator"
        if tok.norm in known.negators
        else "quantifier"
        if tok.norm in known.quantifiers
        else ""
    )


def _judge(tok: Token, everywhere: frozenset[str], echo: frozenset[str]) -> Mode:
    """Why a content word that its clause's entities do not license fails."""
    if tok.kind == "number" or (tok.capital and not tok.initial):
        return "precise"  # numbers, dates, times and names stay exact or are dropped
    if role := _role(tok):
        return "polarity" if role == "negator" else "quantifier"
    if tok.key in everywhere:
        return "misattributed"
    if tok.key in _KNOWN[tok.lang].evaluative:
        return "framing"
    if tok.key in echo:
        return "echo"
    return "untraceable"


# The structural check. Each clause becomes a sequence of units (content words, numbers, dates,
# entity mentions), each carrying its polarity and the quantifier bound to it; a render clause
# must align with one licensed phrase's units in order.

_Role = Literal["", "negator", "quantifier"]
_Relaxed = frozenset[Literal["negation", "quantifier"]]
_STRICT: _Relaxed = frozenset()
_RELAXED_ROLE: dict[str, _Role] = {"negation": "negator", "quantifier": "quantifier"}
_MENTION = "@"  # key prefix of a mention unit; no word key has it (UAX #29 words are alphanumeric)


@dataclass(frozen=True, slots=True)
class _Unit:
    """One item of a clause as the alignment compares it."""

    key: str  # stem, number, "<month> <day>", or "@entity"; "" for a coordinated mention
    role: _Role = ""
    members: _Group = ()  # the entities of a coordinated mention ("Maria and Tom")
    negated: int = 0  # how many negations cover it (`_scopes`)
    quant: str = ""  # the quantifier bound to this unit, as written
    universal: bool = False  # that quantifier may be left out ("every")
    restricting: bool = False  # a quantifier that may not be left out ("some"), the word itself
    capital: bool = False  # a word written with a capital inside its sentence (a name or noun)
    clause: int = 0  # which clause of its text the unit is in
    first: bool = False  # first unit of its clause
    subject: bool = False  # its clause names an entity of its own
    start: int = 0  # character offsets in its text
    end: int = 0


@dataclass(frozen=True, slots=True)
class _Seq:
    """A clause's units, and whether it opens with a fronted adjunct ("Every Sunday, ...")."""

    units: tuple[_Unit, ...]
    fronted: bool
    words: tuple[int, ...]  # the clause's token indices, names aside
    lex: Reading = ENGLISH  # the language it is read in: how its words may move
    after_framing: bool = False  # it follows framing with no "that" between ("volgens mij staat")


@dataclass(frozen=True, slots=True)
class _Span:
    """A licensed phrase, analysed once: its owner, units, clauses and the keys it licenses."""

    owner: str
    units: tuple[_Unit, ...]  # coordinated mentions expanded, one unit per entity
    clauses: tuple[tuple[int, int, bool], ...]  # (begin, end, fronted) ranges into `units`
    keys: frozenset[str]  # unit keys, for a cheap "cannot align" test before the alignment
    words: frozenset[str]  # every token key, for word tracing
    named: frozenset[str]  # entities the phrase mentions


def _spans(fragment: Mapping[str, Sequence[str]], names: _Names, code: str) -> list[_Span]:
    return [
        _span(phrase, owner, names, code)
        for owner, phrases in fragment.items()
        for phrase in phrases
    ]


@lru_cache(maxsize=4096)
def _span(phrase: str, owner: str, names: _Names, code: str) -> _Span:
    text = _read(_known_tokens(phrase, code), names)
    units: list[_Unit] = []
    ranges: list[tuple[int, int, bool]] = []
    for seq in _sequences(text):
        begin = len(units)
        for unit in seq.units:
            units += [replace(unit, key=_MENTION + m, members=()) for m in unit.members] or [unit]
        ranges.append((begin, len(units), seq.fronted))
    return _Span(
        owner,
        tuple(units),
        tuple(ranges),
        frozenset(u.key for u in units),
        frozenset(t.key for t in text.toks if t.key),
        frozenset(entity for entity, _ in text.mention_at.values()),
    )


def _sequences(text: _Read) -> list[_Seq]:
    """The clauses as unit sequences; a clause with no units is left out."""
    negated, quant = _scopes(text)
    dates = _dates(text.toks)
    seqs: list[_Seq] = []
    for c, clause in enumerate(text.clauses):
        units: list[_Unit] = []
        taken: set[int] = set()
        items = sorted([(i, ()) for i in clause.words] + list(clause.named))
        for i, group in items:
            if i in text.floating:
                continue
            unit = _unit(text, i, group, dates, taken)
            if unit is not None:
                universal = quant[i] in READINGS[text.toks[i].lang].universal
                unit = replace(unit, negated=negated[i], quant=quant[i], universal=universal)
                units.append(replace(unit, clause=c))
        if units:
            subject = any(_is_name(u) for u in units)
            units = [replace(u, first=n == 0, subject=subject) for n, u in enumerate(units)]
            fronted = _opener_led(text.toks, clause.words)
            lex = READINGS[text.toks[0].lang]
            seqs.append(
                _Seq(tuple(units), fronted, clause.words, lex, _after_framing(text, clause))
            )
    return seqs


def _after_framing(text: _Read, clause: _Clause) -> bool:
    """Whether the clause's first item follows framing, with no "that" or content between."""
    starts = [i for i in clause.words if is_content(text.toks[i])] + [i for i, _ in clause.named]
    k = min(starts, default=0) - 1
    while k >= 0:
        tok = text.toks[k]
        if tok.framing:
            return True
        if tok.kind == "word" and (is_content(tok) or tok.norm in _lex(tok).subordinators):
            return False
        k -= 1
    return False


def _unit(
    text: _Read, i: int, group: _Group, dates: dict[int, tuple[str, int]], taken: set[int]
) -> _Unit | None:
    """The unit starting at token `i`, or None for a token that is not one (or already taken)."""
    toks = text.toks
    tok = toks[i]
    if group:
        end = text.mention_at[i][1]
        if len(group) == 1 and end < len(toks) and toks[end].framing:
            return None  # "Maria told me": the reporter is framing, not what the clause is about
        key, members = (_MENTION + group[0], ()) if len(group) == 1 else ("", group)
        return _Unit(key, members=members, start=tok.start, end=toks[end - 1].end)
    if i in taken or not is_content(tok):
        return None
    if i in dates:
        key, last = dates[i]
        taken.add(last)
        return _Unit(key, start=tok.start, end=toks[last].end)
    capital = tok.capital and not tok.initial
    restricting = tok.norm in _lex(tok).restricting
    return _Unit(
        tok.key, _role(tok), capital=capital, restricting=restricting, start=tok.start, end=tok.end
    )


def _scopes(text: _Read) -> tuple[list[int], list[str]]:
    """Per token: how many negations cover it, and the quantifier bound to it.

    A negator's scope runs to the end of its clause, across "or"/"nor"; a quantifier binds the next
    content word or name ("some of the kids" binds "kids"). A negator of a verb-second language
    ("nicht", "niet") negates its whole clause, since it follows the verb it negates, and there
    two of them say something else than one ("kan niet slapen zonder" is not "kan slapen zonder").
    """
    negated = [0] * len(text.toks)
    quant = [""] * len(text.toks)
    neg, whole, pending = 0, 0, ""
    clause: list[int] = []  # the current clause's items, for a negator of the whole clause
    i = 0
    while i < len(text.toks):
        tok = text.toks[i]
        if i in text.mention_at:  # a name is one item, whatever words it is made of
            negated[i], quant[i], pending = whole or neg, pending, ""
            clause.append(i)
            i = text.mention_at[i][1]
            continue
        if tok.kind in ("clause", "sentence") or (
            _opens_clause(tok) and tok.norm not in _lex(tok).scope_continuers
        ):
            neg, whole, pending, clause = 0, 0, "", []
        elif is_content(tok) and i not in text.floating:
            negated[i] = whole or neg
            clause.append(i)
            role = _role(tok)
            if role == "negator":
                neg = 1
                if tok.norm in _KNOWN[tok.lang].clause_negators:
                    whole += 1
                    for k in clause:
                        negated[k] = whole
            elif role == "quantifier":
                pending = tok.norm
            else:
                quant[i], pending = pending, ""
        i += 1
    return negated, quant


def _floating(toks: Sequence[Token], mention_at: dict[int, tuple[str, int]]) -> frozenset[int]:
    """Floating quantifiers of coordinated names.

    Just before the first, just after the last, or after one function word ("Mia and Leo are
    both"). Each member is checked on its own, which is all they assert, so they are form.
    """
    found: set[int] = set()
    reach = 0  # where the last chain of coordinated names ended; its later members are inside it
    for start in sorted(mention_at):
        end = mention_at[start][1]
        last = end
        while (
            last + 1 < len(toks)
            and toks[last].norm in _lex(toks[last]).coordinators
            and last + 1 in mention_at
        ):
            last = mention_at[last + 1][1]
        if start < reach or last == end:
            continue
        reach = last
        after = (
            last + 1 if last < len(toks) and toks[last].norm in _lex(toks[last]).stopwords else last
        )
        found |= {
            k
            for k in (start - 1, last, after)
            if 0 <= k < len(toks) and toks[k].norm in _lex(toks[k]).floating
        }
    return frozenset(found)


def _dates(toks: Sequence[Token]) -> dict[int, tuple[str, int]]:
    """Day and month as one unit however they are ordered: "March 3", "the 3rd of March"."""
    found: dict[int, tuple[str, int]] = {}
    i = 0
    while i < len(toks):
        if _is_month(toks[i]):
            j = _skip(toks, i + 1, _lex(toks[i]).before_day, 1)
            if j < len(toks) and _is_day(toks[j]):
                found[i] = (f"{toks[i].norm} {toks[j].norm}", j)
                i = j
        elif _is_day(toks[i]):
            j = _skip(toks, i + 1, _lex(toks[i]).before_month, 2)
            if j < len(toks) and _is_month(toks[j]):
                found[i] = (f"{toks[j].norm} {toks[i].norm}", j)
                i = j
        i += 1
    return found


def _is_month(tok: Token) -> bool:
    # "may" is a month only with its capital; otherwise it is the modal
    months = _lex(tok).months
    return tok.kind == "word" and tok.norm in months and (tok.norm != "may" or tok.capital)


def _is_day(tok: Token) -> bool:
    return tok.kind == "number" and tok.norm.isdigit() and 1 <= int(tok.norm) <= 31


def _adjunct_comma(toks: Sequence[Token], words_: Sequence[int]) -> bool:
    """Whether a comma ends a fronted adjunct; German and Dutch set none off ("Morgens trinkt")."""
    return bool(words_) and not _lex(toks[words_[0]]).verb_moves and _opener_led(toks, words_)


def _opener_led(toks: Sequence[Token], words_: Sequence[int]) -> bool:
    """Whether an adjunct opener ("on", "every", "yesterday") comes before any other content."""
    for i in words_:
        if toks[i].norm in _lex(toks[i]).openers and not toks[i].framing:
            return True
        if is_content(toks[i]):
            return False
    return False


def _clause_failures(
    seqs: Sequence[_Seq],
    render: str,
    groups: list[_Group | None],
    failed: set[int],
    spans: Sequence[_Span],
) -> list[tuple[int, Failure]]:
    """Clauses whose words all trace but that no single licensed phrase says in that order."""
    found: list[tuple[int, Failure]] = []
    for seq in seqs:
        if any(i in failed for i in seq.words) or all(_is_name(u) for u in seq.units):
            continue  # already failed word by word, or only names: nothing to misalign
        group = groups[seq.words[0]]  # words exist: a clause of names alone was skipped
        text = render[seq.units[0].start : seq.units[-1].end]
        found += [(seq.words[0], Failure(m, text)) for m in _misaligned(seq, group, spans)]
    return found


def _names(units: Sequence[_Unit]) -> set[str]:
    return {u.key for u in units if _is_name(u)}


def _is_name(unit: _Unit) -> bool:
    return bool(unit.members) or unit.key.startswith(_MENTION)


def _misaligned(seq: _Seq, group: _Group | None, spans: Sequence[_Span]) -> tuple[Mode, ...]:
    """() when the clause aligns; else why: what relaxing polarity or quantifiers would fix."""
    if _aligned(seq, group, spans, _STRICT):
        return ()
    for relaxed, modes in _DIAGNOSES:
        if _aligned(
            _without(seq, relaxed), group, [_span_without(s, relaxed) for s in spans], relaxed
        ):
            return modes
    return ("swapped",)


_DIAGNOSES: tuple[tuple[_Relaxed, tuple[Mode, ...]], ...] = (
    (frozenset({"negation"}), ("polarity",)),
    (frozenset({"quantifier"}), ("quantifier",)),
    (frozenset({"negation", "quantifier"}), ("polarity", "quantifier")),
)


def _aligned(seq: _Seq, group: _Group | None, spans: Sequence[_Span], relaxed: _Relaxed) -> bool:
    """Every reading of the clause aligns with some licensed phrase.

    A coordinated mention is read once per member ("Maria and Tom are allergic" must hold of each).
    A clause that names nobody is about its attributed group, every member of which needs a phrase
    of its own; with no group, any phrase may license it.
    """
    readings = _readings(seq.units)
    if any(_is_name(u) for u in readings[0]):
        return all(any(_fits(r, s, seq, relaxed) for s in spans) for r in readings)
    owners: Sequence[str | None] = group or (None,)
    return all(
        any(_fits(readings[0], s, seq, relaxed) for s in spans if _about(s, owner))
        for owner in owners
    )


def _readings(units: tuple[_Unit, ...]) -> list[tuple[_Unit, ...]]:
    options = [
        [replace(u, key=_MENTION + m, members=()) for m in u.members] if u.members else [u]
        for u in units
    ]
    return list(itertools.product(*options))


def _about(span: _Span, owner: str | None) -> bool:
    return owner is None or span.owner == owner or owner in span.named


def _fits(units: Sequence[_Unit], span: _Span, seq: _Seq, relaxed: _Relaxed) -> bool:
    """Whether the clause's units align with this phrase, straight or rearranged.

    Rearranged: an adjunct fronted, or (where the language moves its verb) one word moved inside
    one clause of the phrase. A mention of the phrase's owner may go unmatched when the phrase
    does not name its owner ("the car is due for its MOT" kept under Maria), or, where a subject
    may follow its verb, when it is the only name on either side; any other mention must align
    like a word.
    """
    own = _MENTION + span.owner
    alone = seq.lex.subject_moves and span.named <= {span.owner} and _names(units) == {own}
    units = [u for u in units if u.key != own or (own in span.keys and not alone)]
    if not {u.key for u in units} <= span.keys or _restriction_left_out(units, span, relaxed):
        return False
    match = _matcher(relaxed)
    return (
        _in_order(units, span.units, match, seq.lex.adjunct_first)
        or _refronted(units, span, seq, match)
        or (seq.lex.verb_moves and _rearranged(units, span, seq.fronted, seq.after_framing, match))
    )


def _restriction_left_out(units: Sequence[_Unit], span: _Span, relaxed: _Relaxed) -> bool:
    """Whether the units leave out, word and all, the restriction of a clause they draw on.

    "Hannah works from home on some days" never becomes "Hannah works from home": it claims more.
    """
    if "quantifier" in relaxed:
        return False
    keys = {u.key for u in units if not _is_name(u)}
    said = {u.key for u in units if u.role == "quantifier"}
    clauses = [span.units[begin:end] for begin, end, _ in span.clauses]
    return any(
        keys & {u.key for u in clause if not _is_name(u) and not u.role}
        and any(u.restricting and u.key not in said for u in clause)
        for clause in clauses
    )


def _rearranged(
    units: Sequence[_Unit],
    span: _Span,
    fronted: bool,
    after_framing: bool,
    match: Callable[[_Unit, _Unit], bool],
) -> bool:
    """The clause aligns inside one clause of the phrase once its verb is back in second place.

    A verb-second language moves its verb to the end of a subordinate clause ("dass Jonas keine
    Nüsse isst"), to the front after framing ("soweit ich weiß, isst Jonas ..."), and behind a
    fronted adjunct ("Mittwochs hat Lena ..."), which then comes from anywhere in the clause. The
    verb moved is never a name, a number, a date, a negator or a quantifier, nothing else moves,
    and all of it stays inside one source clause, so neither roles nor values change places.
    """
    keys = {u.key for u in units}
    clauses = [
        span.units[begin:end]
        for begin, end, _ in span.clauses
        if keys <= {u.key for u in span.units[begin:end]}
    ]
    if not clauses or len(units) > _MOST_REARRANGED:
        return False
    orders = _verb_second(units, fronted, after_framing)
    return any(_in_order(order, clause, match) for clause in clauses for order in orders)


# A longer clause is read only in its own order: the orders to try grow with the cube of its length.
_MOST_REARRANGED = 12


def _verb_second(
    units: Sequence[_Unit], fronted: bool, after_framing: bool = False
) -> list[list[_Unit]]:
    """The orders the clause may have had with its verb second (see `_rearranged`).

    The verb is taken from the clause's first or second place (after a fronted adjunct, of what
    follows it) and put back first or second, where a main clause has it (first when its subject
    is the speaker, left out); or from its last place (a subordinate clause), or its first right
    after framing ("volgens mij staat het wachtwoord …"), and put back anywhere, since a subject
    may be more than one word. The adjunct then goes back anywhere.
    """
    blocks: list[tuple[list[_Unit], list[_Unit]]] = [([], list(units))]
    if fronted:
        blocks += [(list(units[:k]), list(units[k:])) for k in _cuts(units)]
    orders: list[list[_Unit]] = []
    for block, rest in blocks:
        bases = [rest]
        for m in sorted({0, 1, len(rest) - 1}):
            if len(rest) < 2 or not _plain(rest[m]):
                continue
            others = [*rest[:m], *rest[m + 1 :]]
            anywhere = m == len(rest) - 1 or (m == 0 and after_framing and not block)
            places = range(len(others) + 1) if anywhere else (0, 1)
            bases += [[*others[:p], rest[m], *others[p:]] for p in places]
        orders += (
            [[*b[:p], *block, *b[p:]] for b in bases for p in range(len(b) + 1)] if block else bases
        )
    return orders


def _plain(unit: _Unit) -> bool:
    """A word that may be a verb: lower case, and no name, number, date, negator or quantifier."""
    return not _is_name(unit) and not unit.role and not unit.capital and unit.key.isalpha()


def _matcher(relaxed: _Relaxed) -> Callable[[_Unit, _Unit], bool]:
    """Same key and polarity, and a quantifier the source's allows, unless that part is relaxed."""
    check_negation = "negation" not in relaxed
    check_quantifier = "quantifier" not in relaxed

    def match(rendered: _Unit, source: _Unit) -> bool:
        if rendered.key != source.key:
            return False
        if check_negation and rendered.negated != source.negated:
            return False
        return (
            not check_quantifier
            or rendered.quant == source.quant
            or (not rendered.quant and source.universal)
        )

    return match


def _in_order(
    units: Sequence[_Unit],
    source: Sequence[_Unit],
    match: Callable[[_Unit, _Unit], bool],
    whole_starts: bool = False,
) -> bool:
    """Order-preserving match with gaps.

    A gap may leave a source clause only to enter a later clause at its first unit, and a clause
    with a subject of its own only at that name. With `whole_starts` (a language whose adjuncts
    may open a clause), it leaves a clause only after taking the clause's start without a gap.

    So "football on Tuesday and piano on Thursday" never yields "football on Thursday", and "on
    Fridays Jo runs" lends "Fridays" to nothing Jo does elsewhere, while "apples, pears and plums"
    still yields "pears"; and "Lena hat mittwochs Klavier und freitags Tennis" never yields
    "Lena hat Klavier freitags".
    """
    ends: list[tuple[int, bool]] = [(-1, True)]  # where the alignment may be, and whether its
    for unit in units:  # clause so far was taken from its start without a gap
        reached: dict[int, bool] = {}
        for k, candidate in enumerate(source):
            if not match(unit, candidate):
                continue
            for j, whole in ends:
                if j >= k:
                    continue
                if j < 0:
                    reached[k] = reached.get(k, False) or candidate.first
                elif candidate.clause == source[j].clause:
                    reached[k] = reached.get(k, False) or (whole and k == j + 1)
                elif _continues(source[j], candidate) and (whole or not whole_starts):
                    reached[k] = True
        ends = list(reached.items())
        if not ends:
            return False
    return True


def _continues(previous: _Unit, candidate: _Unit) -> bool:
    """Whether an alignment may go on from `previous` to `candidate` (see `_in_order`)."""
    if candidate.clause == previous.clause:
        return True
    return candidate.first and (not candidate.subject or _is_name(candidate))


def _refronted(
    units: Sequence[_Unit], span: _Span, seq: _Seq, match: Callable[[_Unit, _Unit], bool]
) -> bool:
    """An adjunct moved to the front of the render clause, or from the front of a source clause.

    The moved part holds no name, and the rest of the alignment still keeps each value in its own
    source clause, so neither a subject nor another clause's value can travel with it. Where
    adjuncts may open a clause anyway, a source clause's is left where it is: moved, its value
    would open the clause, where a gap may enter it.
    """
    if seq.fronted and any(
        _in_order(_to_end(units, k), span.units, match, seq.lex.adjunct_first) for k in _cuts(units)
    ):
        return True
    return not seq.lex.adjunct_first and any(
        _in_order(units, _moved(span.units, begin, end, k), match)
        for begin, end, source_fronted in span.clauses
        if source_fronted
        for k in _cuts(span.units[begin:end])
    )


def _moved(units: Sequence[_Unit], begin: int, end: int, k: int) -> list[_Unit]:
    """The source units with the first `k` of clause `begin:end` moved to that clause's end."""
    clause = [replace(u, first=n == 0) for n, u in enumerate(_to_end(units[begin:end], k))]
    return [*units[:begin], *clause, *units[end:]]


def _to_end(units: Sequence[_Unit], k: int) -> list[_Unit]:
    """The first `k` units moved to the end, where they take the polarity the clause ends with.

    "on Sundays Jo doesn't swim" says the same as "Jo doesn't swim on Sundays".
    """
    rest = list(units[k:])
    return [*rest, *(replace(u, negated=rest[-1].negated) for u in units[:k])]


def _cuts(units: Sequence[_Unit]) -> range:
    """How many leading units a fronted adjunct may span.

    At least one, up to the first name, and never the whole clause.
    """
    names = [k for k, u in enumerate(units) if _is_name(u)]
    return range(1, min([len(units) - 1, *names]) + 1)


def _without(seq: _Seq, relaxed: _Relaxed) -> _Seq:
    return replace(seq, units=_drop(seq.units, relaxed))


def _span_without(span: _Span, relaxed: _Relaxed) -> _Span:
    units = _drop(span.units, relaxed)
    ranges: list[tuple[int, int, bool]] = []
    for begin, _, fronted in span.clauses:
        kept = [k for k, u in enumerate(units) if u.clause == span.units[begin].clause]
        if kept:
            ranges.append((kept[0], kept[-1] + 1, fronted))
    return replace(span, units=units, clauses=tuple(ranges), keys=frozenset(u.key for u in units))


def _drop(units: tuple[_Unit, ...], relaxed: _Relaxed) -> tuple[_Unit, ...]:
    """The units without the roles being relaxed, each clause's new first unit marked first."""
    roles = {_RELAXED_ROLE[part] for part in relaxed}
    kept = [u for u in units if u.role not in roles]
    return tuple(
        replace(u, first=k == 0 or kept[k - 1].clause != u.clause) for k, u in enumerate(kept)
    )


def _autobiography(toks: list[Token], render: str) -> list[Failure]:
    """First-person life claims ("I grew up", "my mother", "when I was young"), traced or not.

    English reads them by its lists; elsewhere every first-person word that is not part of the
    framing is one ("Ich habe im März Geburtstag", "mon frère"; not "je me souviens").
    """
    if toks and not READINGS[toks[0].lang].life_lists:
        return _first_person_outside_framing(toks, render)
    found: list[Failure] = []
    for i, tok in enumerate(toks):
        if tok.kind != "word" or tok.norm not in ("i", "my"):
            continue
        end = _life_after_i(toks, i + 1) if tok.norm == "i" else _life_after_my(toks, i + 1)
        if end is not None:
            found.append(Failure("autobiography", render[tok.start : toks[end].end]))
    return found


def _skip(toks: Sequence[Token], j: int, fillers: frozenset[str], most: int) -> int:
    while most and j < len(toks) and toks[j].kind == "word" and toks[j].norm in fillers:
        j, most = j + 1, most - 1
    return j


def _life_after_i(toks: list[Token], j: int) -> int | None:
    k = _skip(toks, j, lx.FIRST_PERSON_FILLERS, 3)
    if k < len(toks) and toks[k].kind == "word" and toks[k].key in _LIFE_VERBS:
        return k
    if any(t.norm in lx.BE_FORMS for t in toks[j:k]):
        k = _skip(toks, k, frozenset({"a", "an"}), 1)
        if k < len(toks) and toks[k].kind == "word" and toks[k].key in _LIFE_STATES:
            return k
    return None


def _life_after_my(toks: list[Token], j: int) -> int | None:
    k = _skip(toks, j, lx.MY_FILLERS, 2)
    if k < len(toks) and toks[k].kind == "word" and toks[k].key in _LIFE_NOUNS:
        return k
    return None


def _first_person_outside_framing(toks: list[Token], render: str) -> list[Failure]:
    """First-person words that do not belong to framing ("ich erinnere mich"; "m'a dit")."""
    return [
        Failure("autobiography", render[t.start : t.end])
        for i, t in enumerate(toks)
        if t.kind == "word" and not t.framing and _says_i(t)
        if not (_frames(toks, i, -1) or _frames(toks, i, 1))
    ]


def _says_i(tok: Token) -> bool:
    lex = _lex(tok)
    return tok.norm in lex.first_person or tok.norm in lex.first_person_verbs


def _frames(toks: list[Token], i: int, step: int) -> bool:
    """Whether the first word beyond `i` that says more than form is framing.

    Other first-person words and function words are passed over; a subordinator ("dass",
    "que"), content or a clause's end stops the search: what follows "ich weiß, dass" is said,
    not framing.
    """
    lex = _lex(toks[i])
    k = i + step
    while 0 <= k < len(toks) and toks[k].kind == "word":
        tok = toks[k]
        if tok.framing:
            return True
        if tok.norm in lex.subordinators or (
            tok.norm not in lex.first_person and tok.norm not in lex.stopwords
        ):
            return False
        k += step
    return False
