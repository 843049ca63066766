"""Whether a stored text tells anything.

Questions, bare acknowledgements and device commands do not compete for the turn's memory slots.

In modes 1 and 2 every turn's whole text is kept as a source, so "When is Sofia's swimming?"
sits beside "Sofia's swimming is on Wednesdays at five" and, sharing its words, often outranks
it. The text is kept (it is what was said, and forgetting and replay work on it); it only stays
out of the turn's memory block. A text is informative when at least one of its sentences is none
of these:

- a question: it ends with "?", or, with no end punctuation at all (as speech-to-text may leave
  it), opens with an interrogative or an inverted auxiliary ("when", "is", "can", "wann",
  "hoe", ...): "Will is coming on Friday." is a statement;
- an acknowledgement: every word is one of ACKNOWLEDGEMENTS ("ok", "thanks", "good night",
  "danke", "dank je wel", "never mind", "laat maar"), the assistant addressed included ("Thank
  you, computer!"), and whom thanks are said to ("Ta, love.", "Danke, Schatz."), which would
  otherwise compete as a fact and rise whenever a question names who said it; or all of them but
  a last word written with a capital, the name it is said to ("Good night Nova", "Buonanotte
  Alexa");
- a command: it opens (after "please", "hey", "bitte", ...) with one of COMMAND_VERBS ("turn",
  "set", "play", "mach", "zet") and says no finite "is" or "has" after it ("Set of spare keys is
  under the pot" tells; "tell me when Leo's appointment is" asks, a question word soon after the
  verb), verbs of device control and media, never of telling
  ("remember", "note", "remind" stay informative, and so do "erinnere", "herinner"); or it is
  said without its verb, a few words that end with one of SWITCHES and hold no function word
  ("Licht aus", "Kitchen lights off", "Woonkamer lamp uit"; "Die Schule ist aus" and "The
  heating is on" are statements).

Each list is the union of every language's (`languages`): a "Danke!" or "Licht aus" has too few
words to tell its language by, and the lists are kept so that no word of one language opens a
statement of another. It runs on every selection, so it is kept cheap: a regular expression's
words, not a Unicode segmenter.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .languages import detect, union
from .lexical import WORD
from .records import TEXTS_CACHED

# A sentence ends at . ! ? or …, except a dot between digits ("7.30").
_SENTENCE = re.compile(r"(?:[^.!?…]|(?<=\d)\.(?=\d))+[.!?…]*")

QUESTION_OPENERS = union("questions")
ACKNOWLEDGEMENTS = union("acknowledgements")
COMMAND_VERBS = union("commands")
SWITCHES = union("switches")
_FUNCTION_WORDS = union("function_words")
MAX_VERBLESS = 4  # the most words of a command said without its verb ("living room lights off")
_OPENING_COURTESIES = union("courtesies")
ASKS_WITHIN = 3  # a question word this soon after a command verb asks ("tell me when …")


@lru_cache(maxsize=TEXTS_CACHED)  # the keys are the rows' own strings
def is_informative(text: str) -> bool:
    """Whether at least one sentence of `text` is not a question, acknowledgement or command.

    See the module docstring.
    """
    return any(_tells(sentence) for sentence in _SENTENCE.findall(text))


def _tells(sentence: str) -> bool:
    written = WORD.findall(sentence)
    words = [w.casefold().replace("’", "'") for w in written]
    end = sentence.rstrip()[-1:]
    if not words or end == "?" or _acknowledges(words, written[-1]):
        return False
    opening = 0
    while opening < len(words) - 1 and words[opening] in _OPENING_COURTESIES:
        opening += 1
    first, rest = words[opening], words[opening + 1 :]
    if first in QUESTION_OPENERS and end not in ".!…":
        return False
    if first in COMMAND_VERBS:
        return _tells_after_verb(rest, sentence)
    return not _verbless_command(words[opening:])


def _tells_after_verb(rest: list[str], sentence: str) -> bool:
    """Whether words after a command verb make the sentence a statement, not a command.

    A finite "is" or "has" of the sentence's own language (`languages.detect`: "es" is German's
    "it" and Spanish's "is") in its first clause does ("Set of spare keys is under the pot"); a
    question word soon after the verb makes it a question ("tell me when …"); a clause after a
    comma is the command's reason ("Turn the heating up, it's freezing").
    """
    clause = [w.casefold() for w in WORD.findall(sentence.split(",", 1)[0])]
    finite = detect(clause).finite
    if any(w in QUESTION_OPENERS and w not in finite for w in rest[:ASKS_WITHIN]):
        return False
    return not finite.isdisjoint(clause[1:])


def _acknowledges(words: list[str], last: str) -> bool:
    """Whether the words are all acknowledgements, or all but a last one written with a capital.

    That one is whom it is said to ("Good night Nova", "Buonanotte Alexa"); `last` is the last
    word as written.
    """
    if not all(word in ACKNOWLEDGEMENTS for word in words[:-1]):
        return False
    return words[-1] in ACKNOWLEDGEMENTS or (len(words) > 1 and last[:1].isupper())


def _verbless_command(words: list[str]) -> bool:
    """Whether `words` are a command without its verb ("Licht aus"): see the module docstring."""
    return (
        1 < len(words) <= MAX_VERBLESS
        and words[-1] in SWITCHES
        and _FUNCTION_WORDS.isdisjoint(words[:-1])
    )
