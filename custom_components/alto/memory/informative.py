"""Whether a stored text tells anything.

Questions, bare acknowledgements and device commands do not compete for the turn's memory slots.

In modes 1 and 2 every turn's whole text is kept as a source, so "When is Sofia's swimming?"
sits beside "Sofia's swimming is on Wednesdays at five" and, sharing its words, often outranks
it. The text is kept (it is what was said, and forgetting and replay work on it); it only stays
out of the turn's memory block. A text is informative when at least one of its sentences is none
of these:

- a question: it ends with "?", or, with no end punctuation at all (as speech-to-text may leave
  it), opens with an interrogative or an inverted auxiliary ("when", "is", "can", ...): "Will is
  coming on Friday." is a statement;
- an acknowledgement: every word is one of ACKNOWLEDGEMENTS ("ok", "thanks", "good night"),
  the assistant addressed included ("Thank you, computer!");
- a command: it opens (after "please", "hey", ...) with one of COMMAND_VERBS ("turn", "set",
  "play"), verbs of device control and media, never of telling ("remember", "note" stay
  informative).

The rule is deterministic and English, like the word lists; a sentence in another language is
informative unless it ends with "?". It runs on every selection, so it is kept cheap: a regular
expression's words, not a Unicode segmenter.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .lexical import WORD
from .records import TEXTS_CACHED

# A sentence ends at . ! ? or …, except a dot between digits ("7.30").
_SENTENCE = re.compile(r"(?:[^.!?…]|(?<=\d)\.(?=\d))+[.!?…]*")

_QUESTION_OPENERS_WORDS = (
    "what when where who whom whose why how which is are am was were do does did can could "
    "will would shall should may might must have has had"
)
QUESTION_OPENERS = frozenset(_QUESTION_OPENERS_WORDS.split())
_ACKNOWLEDGEMENTS_WORDS = (
    "ok okay k thanks thank you ty cheers great good cool nice perfect awesome fine alright "
    "right sure yes yeah yep yup no nope nah never mind night morning evening bye goodbye "
    "hello hi hey there ha haha hahaha lol wow oh ah hmm um uh got it that's lovely brilliant "
    "super excellent fantastic wonderful sounds much very so all done sorry please goodnight "
    "whatever that that'll will do computer alto assistant"  # "Thanks, that'll do, computer!"
)
ACKNOWLEDGEMENTS = frozenset(_ACKNOWLEDGEMENTS_WORDS.split())
_COMMAND_VERBS_WORDS = (
    "turn switch set dim brighten open close lock unlock play pause stop start resume skip "
    "mute unmute raise lower increase decrease activate deactivate arm disarm run toggle show "
    "tell read call text message put add cancel"
)
COMMAND_VERBS = frozenset(_COMMAND_VERBS_WORDS.split())
_OPENING_COURTESIES = frozenset(
    ["please", "hey", "ok", "okay", "alto", "assistant", "now", "and", "then"]
)


@lru_cache(maxsize=TEXTS_CACHED)  # the keys are the rows' own strings
def is_informative(text: str) -> bool:
    """Whether at least one sentence of `text` is not a question, acknowledgement or command.

    See the module docstring.
    """
    return any(_tells(sentence) for sentence in _SENTENCE.findall(text))


def _tells(sentence: str) -> bool:
    words = [w.casefold().replace("’", "'") for w in WORD.findall(sentence)]
    end = sentence.rstrip()[-1:]
    if not words or end == "?":
        return False
    if all(word in ACKNOWLEDGEMENTS for word in words):
        return False
    opening = 0
    while opening < len(words) - 1 and words[opening] in _OPENING_COURTESIES:
        opening += 1
    first = words[opening]
    if first in QUESTION_OPENERS and end not in ".!…":
        return False
    return first not in COMMAND_VERBS
