"""Exact lexical scores (Okapi BM25) of stored texts for a query, in integers.

Embeddings place "When is Sofia's swimming?" and "Who is Sofia's teacher?" close together; the
words that matter ("teacher") are what a lexical score weighs, by how rare they are among the
stored texts. The selection must be exact, so a replay, another machine or another Python picks
the same rows: no floating point. The inverse document frequency is a fixed-point base-2
logarithm computed with integers (`log2_fixed`), and each term's saturation is one integer
division, with k1 = 6/5 and b = 3/4, Robertson's usual constants.

Words: a regular expression's word characters, casefolded, a possessive or other clitic dropped
("Sofia's" is "sofia"), Snowball's English stemmer ("lessons" is "lesson"), and the commonest
function words left out. Stemming is the well-kept `snowballstemmer`, the one the verifier uses.

A household calls some of its people by another word ("Grandma", "Nana"): `with_names` adds
the name of each person a query calls so, and the lexical score then reads the question as about
them, both what they said (a memory is read with its speaker's name) and what names them.

A stem leaves derivations and compounds apart ("allergic" is "allerg", "allergy" "allergi";
"milk" and "milkman"; "head" and "headteacher"), so a query term also counts the stored terms it
begins or that begin it, at least PREFIX letters long (`related`): one term, its holders the
union.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import lru_cache

import numpy as np
import snowballstemmer

IDF_BITS = 16  # fixed-point fraction bits of an inverse document frequency
_K1_NUM, _K1_DEN = 6, 5
# A word, with any apostrophe inside it ("Sofia's", "don’t"); `informative` reads words alike.
WORD = re.compile(r"\w+(?:['’]\w+)*")
_CLITIC = re.compile(r"['’](?:s|m|re|ve|d|ll|t)$")
_STEMMER = snowballstemmer.stemmer("english")
_STOPWORDS_WORDS = (
    "a an the and or but of to in on at by for with from as is are was were be been being am "
    "it its this that these those there here i me my we our us you your he him his she her "
    "they them their do does did so if then than too very just also oh um uh please"
)
STOPWORDS = frozenset(_STOPWORDS_WORDS.split())

type Terms = Mapping[str, int]  # stemmed term -> count in one text

PREFIX = 4  # the shortest stem that stands for the longer ones it begins


@lru_cache(maxsize=65536)
def terms(text: str) -> Terms:
    """The stemmed content terms of `text` with their counts (cached by text)."""
    return count_terms(text)


def count_terms(text: str) -> Counter[str]:
    """`terms` uncached: what reads many texts once (the store's corpus) keeps only its words."""
    found = Counter(map(_term, WORD.findall(text)))
    found.pop("", None)
    return found


_TERMS: dict[str, str] = {}  # a word as written -> its term, "" for none; cleared when full
_TERMS_MAX = 1 << 18


def _term(word: str) -> str:
    """The term of one word as written: casefolded, its clitic dropped, stemmed.

    "" for a function word. Cached: a new text is mostly words already read (numbers, often new,
    are their own term and skip the cache).
    """
    if word.isascii() and word.isdigit():
        return word
    found = _TERMS.get(word)
    if found is None:
        bare = _CLITIC.sub("", word.casefold())
        found = _stem(bare) if bare and bare not in STOPWORDS else ""
        if len(_TERMS) >= _TERMS_MAX:
            _TERMS.clear()
        _TERMS[word] = found
    return found


def _stem(word: str) -> str:
    """Snowball's stem of one word.

    Digits are their own stem (Snowball's English rules only change letters) and the stemmer is
    slow on them (about 50 µs), so they skip it.
    """
    if word.isascii() and word.isdigit():
        return word
    return str(_STEMMER.stemWord(word))


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
    term: str, vocabulary: Mapping[str, int], by_prefix: Mapping[str, Sequence[str]]
) -> list[str]:
    """`term` and the terms of `vocabulary` it begins or that begin it, PREFIX letters or more.

    `by_prefix` lists the vocabulary's terms by their first PREFIX letters. Numbers stand alone.
    """
    if len(term) < PREFIX or term.isdigit():
        return [term]
    found = [term]
    found += (t for t in by_prefix.get(term[:PREFIX], ()) if t != term and t.startswith(term))
    found += (term[:k] for k in range(PREFIX, len(term)) if term[:k] in vocabulary)
    return found


def with_names(query: str, aliases: Mapping[str, str]) -> str:
    """`query` followed by the names of the people it calls by an alias, if any.

    `aliases` maps what someone is called ("Grandma", "Aunt Lucia") to their names ("Rosa"); an
    alias is in the query when every one of its terms is.
    """
    asked = terms(query)
    found = sorted(
        {
            names
            for alias, names in aliases.items()
            if (called := terms(alias)) and all(term in asked for term in called)
        }
    )
    return " ".join([query, *found]) if found else query
