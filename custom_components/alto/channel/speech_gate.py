"""Between the speech channel and the listener.

Nothing internal is spoken, and nothing is spoken as done that no effector did.

`SpeechGate` reads speech one sentence at a time (deterministic, no model). Internal labels and
ids are taken out, and a sentence that reports a completed device action ("I've turned off the
lights", "the door is now unlocked", "c'est fait") is withheld unless an effector succeeded in
this turn. The claim patterns cover every language Alto speaks (`claims`); they look for the
completed form only, so "I'll turn off the lights" passes.

A sentence is not held whole: its words are released up to the first place where a claim could
begin, whatever words came next (a partial match, `regex`'s `partial=True`), or where a label or
id may still be arriving. So "It should stay dry until about six, so an early walk is the safer
bet." flows word by word (Home Assistant's pipeline starts speaking after 60 characters), while
"The porch light is now on." stops before "is now on" until the sentence has ended and been
judged. What a listener hears before that point never holds a claim, even in part.

Two more things are never spoken, whatever the channel let through: the syntax of the reply
object (a brace, a quoted key such as `"speech":`), taken out like a label, and the model's own
instructions recited back (the answer protocol's and the follow-up's phrases, "in the same JSON
form", "every word the person should hear"): a sentence that recites them is withheld whole,
whoever acted, and released early only up to where such a phrase could begin.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

import regex

from .claims import CLAIMS, negated, patterns
from .markers import neutralized

_SENTENCE_END: Final = re.compile(r"[.!?…]+[\"'”»)\]]*(?:\s+|$)|\n+")

# A memory label as the turn's memory block writes it ("[said; Maria, 3 days ago]", one of the
# kinds of `memory.recall.KINDS`), also one the text ends inside (a small model echoes the
# block's lines, and its reply can stop before the "]"), and bare 32-hex ids (HA user and entry
# ids).
MEMORY_KINDS: Final = (
    "said",
    "asked to remember",
    "person mentioned",
    "task mentioned",
    "statement",
    "correction",
    "memory",
)
# The reply object's syntax: a brace, a key in quotes with its colon.
_SYNTAX: Final = re.compile(r'[{}]|"(?:speech|actions|thought)"(?:\s*:)?')
_INTERNAL: Final = (
    re.compile(rf"\[(?:{'|'.join(MEMORY_KINDS)});[^\[\]\n]*(?:\]\s*|$)", re.IGNORECASE),
    re.compile(r"\b[0-9a-f]{32}\b"),
    _SYNTAX,
)
# Phrases of the instructions in `prompt.py` (the answer protocols, the follow-up's request) that
# no answer says to a person. Every instruction sentence, and every part of one after a colon,
# holds one within its first four words, so even a recital cut short is caught; none is a
# phrase an answer to a household would use.
_ECHO: Final = regex.compile(
    r"\b(?:json|how you answer|everything you write|put every word|every word the person|"
    r"each thing you intend|when you intend something|you cannot operate devices|"
    r"never say an action|your private notes|example \d+\W+person|the device states you|"
    r"answer the person now)\b",
    regex.IGNORECASE,
)

# The end of a text that more text could still change: a word being written, a quoted word
# that may be a key whose colon is still coming, or a "[" not closed yet (a memory label, or an
# id, is taken out only whole).
_UNSETTLED: Final = re.compile(r'"\w*"?\s*$|\w+$')


def scrubbed(sentence: str) -> str:
    """`sentence` without marker characters, memory labels, internal ids or the object's syntax."""
    text = neutralized(sentence)
    for pattern in _INTERNAL:
        text = pattern.sub("", text)
    return text


def claims_done(sentence: str, claims: Sequence[regex.Pattern[str]] = CLAIMS) -> bool:
    """Whether `sentence` reports a device action as completed (and not negated: `claims`)."""
    text = sentence.strip()
    return any(
        not negated(text, found.start(), found.end())
        for pattern in claims
        for found in pattern.finditer(text)
    )


def recites_instructions(sentence: str) -> bool:
    """Whether `sentence` recites Alto's instructions to the model rather than answering."""
    return _ECHO.search(sentence) is not None


def settled(unfinished: str, known: int = 0, claims: Sequence[regex.Pattern[str]] = CLAIMS) -> str:
    """The scrubbed start of an unfinished sentence that no later text can make part of a claim.

    Cut before a word still being written (or a quoted one) and before a "[" not yet closed;
    then before the first place where a claim or a recited instruction matches or could match if
    the sentence went on. `known`: the length of an earlier answer for a shorter start of the
    same sentence; no claim can begin before it (a match attempt that failed inside the text
    fails the same way whatever follows).
    """
    cut = len(unfinished)
    if word := _UNSETTLED.search(unfinished):
        cut = word.start()
    if (opened := unfinished.rfind("[", 0, cut)) > unfinished.rfind("]", 0, cut):
        cut = opened
    text = scrubbed(unfinished[:cut])
    start = len(text) - len(text.lstrip())  # claims read the sentence stripped
    hold = min(
        (
            start + found.start()
            for pattern in (*claims, _ECHO)
            if (found := pattern.search(text[start:], max(known - start, 0), partial=True))
        ),
        default=len(text),
    )
    return text[:hold]


class SpeechGate:
    """Releases speech word by word, scrubbed, without unbacked claims of action."""

    def __init__(self, effector_succeeded: Callable[[], bool], language: str = "") -> None:
        """Gate speech against what the effectors did.

        `effector_succeeded` says, when a sentence is released, whether any effector succeeded
        in this turn so far; `language` is the turn's (`claims.patterns`).
        """
        self._effector_succeeded = effector_succeeded
        self._claims = patterns(language)
        self._pending = ""  # the unfinished sentence, as it came
        self._spoken = 0  # how much of it, scrubbed, was released early
        self.withheld: list[str] = []  # what was not spoken as done, for the trace
        self.recited = 0  # sentences withheld as recited instructions, for the trace

    def feed(self, speech: str) -> str:
        """Take speech text; return what may be spoken now.

        The sentences that ended, and the settled start of the one still arriving.
        """
        self._pending += speech
        released: list[str] = []
        while match := _SENTENCE_END.search(self._pending):
            sentence, self._pending = (
                self._pending[: match.end()],
                self._pending[match.end() :],
            )
            released.append(self._pass(sentence))
        early = settled(self._pending, self._spoken, self._claims)
        if len(early) > self._spoken:
            released.append(early[self._spoken :])
            self._spoken = len(early)
        return "".join(released)

    def finalize(self) -> str:
        """The rest, as a last sentence."""
        rest, self._pending = self._pending, ""
        return self._pass(rest) if rest.strip() else ""

    def backed(self) -> str:
        """The withheld sentences, once an effector has succeeded.

        The model said "Done." before the action organ ran, and now something was done.
        Empty while nothing succeeded.
        """
        if not self.withheld or not self._effector_succeeded():
            return ""
        text, self.withheld = " ".join(self.withheld), []
        return text

    def _pass(self, sentence: str) -> str:
        """A whole sentence: the part not yet released, unless the sentence claims unbacked."""
        text = scrubbed(sentence)
        spoken, self._spoken = self._spoken, 0
        if recites_instructions(text):
            self.recited += 1
            return ""
        if claims_done(text, self._claims) and not self._effector_succeeded():
            if rest := text[spoken:].strip():
                self.withheld.append(rest)
            return ""
        return text[spoken:]
