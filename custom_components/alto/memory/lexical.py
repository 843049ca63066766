"""Exact lexical scores (Okapi BM25) of stored texts for a query, in integers.

Embeddings place "When is Sofia's swimming?" and "Who is Sofia's teacher?" close together; the
words that matter ("teacher") are what a lexical score weighs, by how rare they are among the
stored texts. The selection must be exact, so a replay, another machine or another Python picks
the same rows: no floating point. The inverse document frequency is a fixed-point base-2
logarithm computed with integers (`log2_fixed`), and each term's saturation is one integer
division, with k1 = 6/5 and b = 3/4, Robertson's usual constants.

Words: a regular expression's word characters, casefolded, a possessive or other clitic dropped
("Sofia's" is "sofia"; in French and Italian an elided article or pronoun too, "l'école" is
"école"), then stemmed by Snowball's stemmer of the text's language ("lessons" is "lesson",
"Tonnen" is "tonn"), and that language's commonest function words left out. A text's language is
read from its words (`languages.detect`): rows do not record one. Stemming is the well-kept
`snowballstemmer`, the one the verifier uses, but for one cut: Snowball's Dutch stemmer takes an
inner "ge" for a separable verb's participle wherever it finds one, so a "ge" it cuts out after
anything but a particle ("opgehaald" is "ophaal", as "ophalen" is) is put back ("garagedeur" stays
"garagedeur", not "garadeur": the compound still begins with "garage").

A household calls some of its people by another word ("Grandma", "Nana"): `with_names` adds
the name of each person a query calls so, and the lexical score then reads the question as about
them, both what they said (a memory is read with its speaker's name) and what names them (the
memory organ's reader embeds the same text, so the cosine score reads it so too). A
name is read in the question's language, as the question's own words are ("Sanne" is "sann" to
the English stemmer, "sanne" to the Dutch), and in German and Dutch with its genitive's bare "s"
("Leas Lehrerin": `name_count`).

A stem leaves derivations and compounds apart ("allergic" is "allerg", "allergy" "allergi";
"milk" and "milkman"; "head" and "headteacher"), so a query term also counts the stored terms it
begins or that begin it, at least PREFIX letters long (`related`): one term, its holders the
union. In a language that writes compounds closed (German, Dutch) a compound also meets its head:
a query term counts the stored terms it ends or that end it ("Tonne" and "Biomülltonne",
"Internetpasswort" and "Passwort"), the head at least PREFIX letters and what comes before it at
least MIN_PART ("Preise" is not "Reise" with a "P"). Parts are only ever words the household
said: no dictionary, so a part in the middle ("Müll" in "Biomülltonne") is not met.

A query term that meets no stored row that way, in any language, meets the terms that share its
first ALIKE letters (`alike`): an inflection the stemmer leaves apart, or a compound whose first
part the household said otherwise ("groenbak" meets "de groene container", "Klavierspielen"
"Klavierstunde"). Only then: a term a row holds never reaches further, so this can only add
a word where the score had none.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from functools import lru_cache

import numpy as np
import snowballstemmer

from .languages import LANGUAGES, Language, detect

IDF_BITS = 16  # fixed-point fraction bits of an inverse document frequency
_K1_NUM, _K1_DEN = 6, 5
# A word, with any apostrophe inside it ("Sofia's", "don’t"); `informative` reads words alike.
WORD = re.compile(r"\w+(?:['’]\w+)*")
_CLITIC = re.compile(r"'(?:s|m|re|ve|d|ll|t)$")  # read after "’" is "'"
_STEMMERS = {code: snowballstemmer.stemmer(lang.stemmer) for code, lang in LANGUAGES.items()}

type Terms = Mapping[str, int]  # stemmed term -> count in one text

PREFIX = 4  # the shortest stem that stands for the longer ones it begins (or, closed, ends)
MIN_PART = 3  # the fewest letters before a compound's head
ALIKE = 5  # the first letters a query term that meets nothing shares with what it then meets


@lru_cache(maxsize=65536)
def terms(text: str, code: str = "") -> Terms:
    """The stemmed content terms of `text` with their counts (cached by text).

    Read in the language `code` (a key of `languages.LANGUAGES`), or in its own (`language`).
    """
    return count_terms(text, code)


@lru_cache(maxsize=65536)
def language(text: str) -> Language:
    """The language `text` is read in (`languages.detect`; cached by text)."""
    return detect(folded_words(text))


def count_terms(text: str, code: str = "") -> Counter[str]:
    """`terms` uncached: what reads many texts once (the store's corpus) keeps only its words."""
    words = folded_words(text)
    lang = LANGUAGES[code] if code else detect(words)
    found = Counter(_term(lang, word) for word in words)
    found.pop("", None)
    return found


def stems(lang: Language, words: Iterable[str]) -> set[str]:
    """The terms of `words` (each as a text's words are read) in `lang`, function words aside."""
    return {t for word in folded_words(" ".join(words)) if (t := _term(lang, word))}


def form_words(text: str) -> list[str]:
    """The words of `text` that carry no term in its language, and its question words, as said.

    How it asks ("When does … ?"), apart from what it asks about.
    """
    lang, words = language(text), WORD.findall(text)
    return [
        word
        for word, folded in zip(words, _folded(words), strict=True)
        if without_clitic(folded) in lang.questions or not _term(lang, folded)
    ]


def folded_words(text: str) -> list[str]:
    """The words of `text` casefolded, each apostrophe as "'", as every rule here reads them."""
    return _folded(WORD.findall(text))


def without_clitic(word: str) -> str:
    """A casefolded word without the clitic an apostrophe joins to it ("son's" is "son")."""
    return _CLITIC.sub("", word)


def _folded(words: list[str]) -> list[str]:
    return [word.casefold().replace("’", "'") for word in words]


# By language, a word casefolded -> its term, "" for none; cleared when full.
_TERMS: dict[str, dict[str, str]] = {code: {} for code in LANGUAGES}
_TERMS_MAX = 1 << 18


def _term(lang: Language, word: str) -> str:
    """The term of one casefolded word in `lang`: its clitic or elision dropped, stemmed.

    "" for a function word. Cached: a new text is mostly words already read (numbers, often new,
    are their own term and skip the cache).
    """
    if word.isascii() and word.isdigit():
        return word
    cache = _TERMS[lang.code]
    found = cache.get(word)
    if found is None:
        bare = without_clitic(word)
        while (cut := bare.find("'")) > 0 and bare[:cut] in lang.elided:
            bare = bare[cut + 1 :]
        found = _stem(lang, bare) if bare and bare not in lang.function_words else ""
        if len(cache) >= _TERMS_MAX:
            cache.clear()
        cache[word] = found
    return found


def _stem(lang: Language, word: str) -> str:
    """Snowball's stem of one word in `lang`.

    Digits are their own stem (Snowball's rules only change letters) and the stemmer is slow on
    them (about 50 µs), so they skip it.
    """
    if word.isascii() and word.isdigit():
        return word
    stem = str(_STEMMERS[lang.code].stemWord(word))
    if lang.particles:
        return _inner_ge_kept(lang, word, stem)
    return stem


def _inner_ge_kept(lang: Language, word: str, stem: str) -> str:
    """`stem`, with an inner "ge" the stemmer cut out of `word` after no particle put back.

    The particles are `Language.particles`. Snowball's Dutch stemmer reads an inner "ge" as a
    separable verb's participle ("opgehaald" is "ophaal", as "ophalen" is) wherever it finds
    one, so it also cut it out of compounds and plain words ("garagedeur" was "garadeur",
    "regenjas" "renjas", "begeleid" "beleid"): a compound no longer began with its first part,
    and unrelated words met. Only a cut is undone: a stem that departs from its word at a "ge"
    and goes on as the word after it.
    """
    cut = next((i for i, (a, b) in enumerate(zip(stem, word, strict=False)) if a != b), len(stem))
    if (
        0 < cut < len(stem)
        and word.startswith("ge", cut)
        and word.startswith(stem[cut], cut + 2)
        and word[:cut] not in lang.particles
    ):
        return stem[:cut] + "ge" + stem[cut:]
    return stem


def log2_fixed(value: Fraction, bits: int = IDF_BITS) -> int:
    """floor(log2(value) * 2**bits) for value >= 1, by integer squaring (exact everywhere)."""
    if value < 1:
        raise ValueError("log2_fixed needs a value of at least 1")
    num, den = value.numerator, value.denominator
    whole = num.bit_length() - den.bit_length()  # >= 0 since num >= den
    if num < den << whole:
        whole -= 1
    precision = 62
    mantissa = (num << precision) // (den << whole)  # value / 2**whole in [1, 2), fixed point
    result = whole
    for _ in range(bits):
        mantissa = (mantissa * mantissa) >> precision
        result <<= 1
        if mantissa >= 2 << precision:
            mantissa >>= 1
            result |= 1
    return result


def idf(n: int, df: int) -> int:
    """A term's inverse document frequency in a corpus of `n` texts, `df` of which hold it.

    That is log2(1 + (n - df + 1/2) / (df + 1/2)) = log2((2n + 2) / (2 df + 1)), fixed point.
    """
    return log2_fixed(Fraction(2 * n + 2, 2 * df + 1))


def term_scores[T: (int, np.ndarray)](weight: int, tf: T, length: T, total: int, n: int) -> T:
    """One term's BM25 score in texts holding it `tf` times, `length` terms long.

    The corpus has `n` texts and `total` terms. The score is the term's `idf` `weight` times its
    saturation tf (k1 + 1) / (tf + k1 (1 - b + b length / avg)), both sides times 20 total,
    floored.

    Integers or integer arrays (the caller keeps `weight` * 44 * tf * total within int64).
    """
    top = 4 * (_K1_NUM + _K1_DEN) * tf * total
    bottom = 20 * total * tf + _K1_NUM * (total + 3 * length * n)
    return weight * top // bottom  # type: ignore[no-any-return]


def related(
    term: str,
    vocabulary: Mapping[str, int],
    by_prefix: Mapping[str, Sequence[str]],
    by_suffix: Mapping[str, Sequence[str]] | None = None,
) -> list[str]:
    """`term` and the terms of `vocabulary` it begins or that begin it, PREFIX letters or more.

    `by_prefix` lists the vocabulary's terms by their first PREFIX letters. Given `by_suffix`
    (the same by their last PREFIX letters), for a query in a language that writes compounds
    closed, also the terms it ends or that end it, the head PREFIX letters or more and at least
    MIN_PART before it. Numbers stand alone. Each term once.
    """
    if len(term) < PREFIX or term.isdigit():
        return [term]
    found = [term]
    found += (t for t in by_prefix.get(term[:PREFIX], ()) if t != term and t.startswith(term))
    found += (term[:k] for k in range(PREFIX, len(term)) if term[:k] in vocabulary)
    if by_suffix is not None:
        found += (
            t
            for t in by_suffix.get(term[-PREFIX:], ())
            if len(t) >= len(term) + MIN_PART and t.endswith(term)
        )
        found += (
            term[k:] for k in range(MIN_PART, len(term) - PREFIX + 1) if term[k:] in vocabulary
        )
    return list(dict.fromkeys(found))


def alike(term: str, by_prefix: Mapping[str, Sequence[str]]) -> list[str]:
    """The terms that begin with the first ALIKE letters of `term`, itself aside.

    `by_prefix` lists a vocabulary's terms by their first PREFIX letters. What a query term
    meets when no stored term holds it or is `related` to it: an inflection or compound the
    stemmer and the household's own words leave apart ("groenbak" and "groene", "Klavierspielen"
    and "Klavierstunde", "plantpot" and "planter"). Numbers and shorter terms meet none.
    """
    if len(term) < ALIKE or term.isdigit():
        return []
    return [t for t in by_prefix.get(term[:PREFIX], ()) if t != term and t[:ALIKE] == term[:ALIKE]]


def name_count(term: str, name: Terms, lang: Language) -> int:
    """How many times `name` (the terms of what someone is called) holds the query term `term`.

    As written, or, in a language whose names take a bare "s" for the genitive ("Leas
    Lehrerin", "Sannes mentor"), `term` less that "s".
    """
    found = name.get(term, 0)
    if not found and lang.genitive and term.endswith("s"):
        found = name.get(term[:-1], 0)
    return found


def with_names(query: str, aliases: Mapping[str, str]) -> str:
    """`query` followed by the names of the people it calls by an alias, if any.

    `aliases` maps what someone is called ("Grandma", "Aunt Lucia", "Oma") to their names
    ("Rosa"); an alias is in the query when every one of its terms is (`name_count`), the alias
    read in the query's language.
    """
    lang = language(query)
    asked = terms(query)
    found = sorted(
        {
            names
            for alias, names in aliases.items()
            if (called := terms(alias, lang.code))
            and all(any(name_count(t, {term: 1}, lang) for t in asked) for term in called)
        }
    )
    return " ".join([query, *found]) if found else query
