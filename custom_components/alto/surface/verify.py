"""The extractive verifier: the deterministic backstop behind the Surfacer's render.

A render passes only when every content-bearing word traces to a licensed source phrase of the
entity its clause is about. The check re-derives this from the same fragment the model saw, with
no model in the loop, so it cannot be argued with; and it fails toward dropping: a verifier that
cannot run returns a failing verdict rather than waving the render through.

Words are segmented by Unicode word boundaries (UAX #29, via uniseg) so accents, apostrophes and
decimal numbers split the way the standard says rather than the way a regex guesses. They are
casefolded and stemmed with the Snowball English stemmer: it is deterministic, pure Python, needs no
model or dictionary download, and folds the regular inflections an extractive render legitimately
changes ("walks" -> "walking") while leaving different words different. Its over-stemming only
ever matters within one small fragment. Irregular forms it cannot relate (told/tell, broke/break)
go through a fixed table in `lexicon` first.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import snowballstemmer
from uniseg.wordbreak import words

from . import lexicon as lx

Mode = Literal["untraceable", "misattributed", "precise", "echo", "framing", "autobiography"]


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
        return frozenset(f.mode for f in self.failures)

    @property
    def untraceable_spans(self) -> tuple[str, ...]:
        """Distinct failing spans in render order, to name in the one regenerate prompt."""
        return tuple(dict.fromkeys(f.span for f in self.failures if f.span))


@dataclass(frozen=True, slots=True)
class Token:
    kind: Literal["word", "number", "clause", "sentence"]
    norm: str = ""  # casefolded word, or the number normalized ("3rd" -> "3", "7.30" -> "7:30")
    key: str = ""  # what tracing compares: the stem for words, the normalized number otherwise
    start: int = 0
    end: int = 0
    capital: bool = False
    initial: bool = False  # first word of a sentence, where a capital says nothing about names


_Group = tuple[str, ...]

_STEMMER = snowballstemmer.stemmer("english")
_STEM_LOCK = threading.Lock()  # Snowball stemmers keep per-call state on the instance
_NUMBER = re.compile(r"(\d[\d,]*(?:[:/.\-]\d+)*)(st|nd|rd|th|am|pm)?")
_CLOCK_DOT = re.compile(r"\d{1,2}\.\d{2}")
_MERIDIEM = frozenset({"am", "pm"})


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    with _STEM_LOCK:
        return _STEMMER.stemWord(lx.IRREGULAR.get(word, word))


def _stems(forms: frozenset[str]) -> frozenset[str]:
    return frozenset(_stem(w) for w in forms)


_EVALUATIVE = _stems(lx.EVALUATIVE)
_LIFE_VERBS = _stems(lx.LIFE_VERBS)
_LIFE_STATES = _stems(lx.LIFE_STATES)
_LIFE_NOUNS = _stems(lx.LIFE_NOUNS)
_UNIT_WORDS = frozenset(w for w, v in lx.NUMBER_WORDS.items() if v.isdigit() and 0 < int(v) < 10)


def verify_render(
    fragment: Mapping[str, Sequence[str]], render: str, *, utterance: str = ""
) -> Verdict:
    """Judge `render` against the licensed phrases in `fragment`; never raises."""
    try:
        failures = _failures(fragment, render, utterance)
    except Exception:  # a verifier that cannot run drops the render instead of passing it
        failures = None
    if failures is None:
        return Verdict(False, (Failure("untraceable", render if isinstance(render, str) else ""),))
    return Verdict(not failures, tuple(failures))


def _failures(fragment: object, render: object, utterance: object) -> list[Failure] | None:
    if not (_valid_fragment(fragment) and isinstance(render, str) and isinstance(utterance, str)):
        return None
    toks = tokens(render)
    if not any(t.kind == "word" for t in toks):
        return None
    names = {name: _name_key(name) for name in fragment}
    licences = _licences(fragment, names)
    everywhere = frozenset().union(*licences.values())
    echo = frozenset(t.key for t in tokens(utterance))
    mention_at = _mentions(toks, names)
    name_tokens = {k for i, (_, end) in mention_at.items() for k in range(i, end)}
    scopes: dict[_Group | None, frozenset[str]] = {None: everywhere}
    failures: list[Failure] = []
    for i, group in enumerate(_attribute(toks, mention_at)):
        tok = toks[i]
        if i in name_tokens or not is_content(tok):
            continue
        if group not in scopes:
            scopes[group] = frozenset.intersection(*(licences[e] for e in group))
        mode = _judge(tok, scopes[group], everywhere, echo)
        if mode is not None:
            failures.append(Failure(mode, render[tok.start : tok.end]))
    failures += _autobiography(toks, render)
    return failures


def _valid_fragment(fragment: object) -> bool:
    return isinstance(fragment, Mapping) and all(
        isinstance(name, str)
        and isinstance(phrases, Sequence)
        and not isinstance(phrases, str | bytes)
        and all(isinstance(p, str) for p in phrases)
        for name, phrases in fragment.items()
    )


def tokens(text: str) -> list[Token]:
    """The words and numbers of `text` as the verifier sees them (shared with the Surfacer)."""
    toks: list[Token] = []
    initial = True
    for start, piece in _pieces(text):
        end = start + len(piece)
        if not any(c.isalnum() for c in piece):
            if "\n" in piece or any(c in lx.SENTENCE_PUNCT for c in piece):
                toks.append(Token("sentence", start=start, end=end))
                initial = True
            elif any(c in lx.CLAUSE_PUNCT for c in piece):
                toks.append(Token("clause", start=start, end=end))
            continue
        folded = unicodedata.normalize("NFC", piece.casefold()).replace("’", "'").replace("ʼ", "'")
        number = _number(folded)
        if number is not None:
            toks.append(Token("number", number, number, start, end, initial=initial))
        else:
            for n, norm in enumerate(_split_clitics(folded)):
                capital = n == 0 and piece[0].isupper()
                toks.append(Token("word", norm, _stem(norm), start, end, capital, initial))
        initial = False
    return _join_meridiem(toks)


def _pieces(text: str) -> list[tuple[int, str]]:
    """UAX #29 words with offsets, re-joining numbers it splits: 7:30, 3/4, twenty-five."""
    raw: list[tuple[int, str]] = []
    pos = 0
    for piece in words(text):
        raw.append((pos, piece))
        pos += len(piece)
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(raw):
        start, piece = raw[i]
        while i + 2 < len(raw) and _joins(piece, raw[i + 1][1], raw[i + 2][1]):
            piece += raw[i + 1][1] + raw[i + 2][1]
            i += 2
        out.append((start, piece))
        i += 1
    return out


def _joins(left: str, sep: str, right: str) -> bool:
    if sep in (":", "/", "-") and left[-1:].isdigit() and right[:1].isdigit():
        return True
    return sep == "-" and left.casefold() in lx.TENS and right.casefold() in _UNIT_WORDS


def _number(folded: str) -> str | None:
    if folded in lx.NUMBER_WORDS:
        return lx.NUMBER_WORDS[folded]
    tens, _, unit = folded.partition("-")
    if tens in lx.TENS and unit in _UNIT_WORDS:
        return str(int(lx.NUMBER_WORDS[tens]) + int(lx.NUMBER_WORDS[unit]))
    match = _NUMBER.fullmatch(folded)
    if match is None:
        return None
    body, suffix = match.group(1).replace(",", ""), match.group(2)
    if _CLOCK_DOT.fullmatch(body):  # "7.30" is how British speakers write 7:30
        body = body.replace(".", ":")
    value = "".join(str(int(p)) if p.isdigit() else p for p in re.split(r"([:/.\-])", body))
    return value + suffix if suffix in _MERIDIEM else value


def _split_clitics(folded: str) -> list[str]:
    """Split a clitic off: can't -> can, not; I'm -> i, am; Maria's -> maria, is (form)."""
    if folded in lx.FUSED_NEGATIONS:
        return [lx.FUSED_NEGATIONS[folded], "not"]
    if folded.endswith("n't") and len(folded) > 3:
        base = folded[:-3]
        return [lx.NEGATED_BASES.get(base, base), "not"]
    head, sep, tail = folded.rpartition("'")
    if sep and head and tail in lx.CLITICS:
        return [head, lx.CLITICS[tail]]
    return [folded.strip("'")]


def _join_meridiem(toks: list[Token]) -> list[Token]:
    """'7 pm' compares as '7pm': the half of the day is part of the time, not a separate word."""
    out: list[Token] = []
    for tok in toks:
        prev = out[-1] if out else None
        if tok.kind == "word" and tok.norm in _MERIDIEM and prev and prev.kind == "number":
            value = prev.norm + tok.norm
            out[-1] = Token("number", value, value, prev.start, tok.end, initial=prev.initial)
        else:
            out.append(tok)
    return out


def _name_key(name: str) -> tuple[str, ...]:
    """The keys a render must contain to mention an entity; a leading article is optional."""
    keys = [(t.norm, t.key) for t in tokens(name) if t.kind in ("word", "number")]
    while len(keys) > 1 and keys[0][0] in lx.DETERMINERS:
        keys.pop(0)
    return tuple(key for _, key in keys)


def _mentions(toks: list[Token], names: dict[str, tuple[str, ...]]) -> dict[int, tuple[str, int]]:
    """Token index where a name starts -> (entity, index after it); longest name wins a position."""
    by_length = sorted((k for k in names.items() if k[1]), key=lambda item: -len(item[1]))
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


def _licences(
    fragment: Mapping[str, Sequence[str]], names: dict[str, tuple[str, ...]]
) -> dict[str, frozenset[str]]:
    """Each entity's traceable keys: its own phrases, and other entities' phrases naming it."""
    keys: dict[str, set[str]] = {name: set() for name in fragment}
    for owner, phrases in fragment.items():
        for phrase in phrases:
            toks = tokens(phrase)
            phrase_keys = {t.key for t in toks if t.key}
            keys[owner] |= phrase_keys
            for named, _ in _mentions(toks, names).values():
                keys[named] |= phrase_keys
    return {name: frozenset(k) for name, k in keys.items()}


def _attribute(toks: list[Token], mention_at: dict[int, tuple[str, int]]) -> list[_Group | None]:
    """The entity group each token's clause is about.

    Clauses split at punctuation and clause conjunctions. A clause is about the names it mentions
    (words before its first name belong to that name); one that mentions none continues the
    previous clause's last name, as a pronoun would. Names joined by "and"/"or" form one group whose
    every member the words must trace to. Tokens with nothing before them take the render's first
    group; with no name anywhere the group is None, meaning any entity of the fragment.
    """
    groups: list[_Group | None] = [None] * len(toks)
    clause: list[int] = []
    named: list[tuple[int, _Group]] = []
    carry: _Group | None = None
    first: _Group | None = None

    def close() -> None:
        nonlocal carry, first
        for i in clause:
            before = [g for start, g in named if start < i]
            groups[i] = before[-1] if before else (named[0][1] if named else carry)
        if named:
            carry = named[-1][1]
            first = first or named[0][1]
        clause.clear()
        named.clear()

    i, coordinating = 0, False
    while i < len(toks):
        tok = toks[i]
        if i in mention_at:
            entity, end = mention_at[i]
            if coordinating and named:
                named[-1] = (named[-1][0], (*named[-1][1], entity))
            else:
                named.append((i, (entity,)))
            i, coordinating = end, False
            if i < len(toks) and toks[i].norm in lx.COORDINATORS and i + 1 in mention_at:
                i, coordinating = i + 1, True
            continue
        if tok.kind in ("clause", "sentence") or tok.norm in lx.CLAUSE_CONJUNCTIONS:
            close()
        else:
            clause.append(i)
        i += 1
    close()
    return [g if g is not None or first is None else first for g in groups]


def is_content(tok: Token) -> bool:
    """Whether a token carries content (not a stopword or memory/report framing)."""
    if tok.kind == "number":
        return True
    if tok.kind != "word" or tok.norm in lx.FIRST_PERSON:
        return False
    if tok.capital and not tok.initial:  # a mid-sentence capital is a name even if it is "May"
        return True
    return tok.norm not in lx.STOPWORDS and tok.norm not in lx.FRAMING_VERBS


def _judge(
    tok: Token, licence: frozenset[str], everywhere: frozenset[str], echo: frozenset[str]
) -> Mode | None:
    if tok.key in licence:
        return None
    if tok.kind == "number" or (tok.capital and not tok.initial):
        return "precise"  # numbers, dates, times and names stay exact or are dropped
    if tok.key in everywhere:
        return "misattributed"
    if tok.key in _EVALUATIVE:
        return "framing"
    if tok.key in echo:
        return "echo"
    return "untraceable"


def _autobiography(toks: list[Token], render: str) -> list[Failure]:
    """First-person life claims ("I grew up", "my mother", "when I was young"), traced or not."""
    found: list[Failure] = []
    for i, tok in enumerate(toks):
        if tok.kind != "word" or tok.norm not in ("i", "my"):
            continue
        end = _life_after_i(toks, i + 1) if tok.norm == "i" else _life_after_my(toks, i + 1)
        if end is not None:
            found.append(Failure("autobiography", render[tok.start : toks[end].end]))
    return found


def _skip(toks: list[Token], j: int, fillers: frozenset[str], most: int) -> int:
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
