"""The processor: its contract text, both call instructions and its digest.

The processor digest is the identity half of a qualified pair (the other half is the Ollama model
digest). It is the SHA-256 hex of these UTF-8 bytes, concatenated in this order:

1. `PROCESSOR_CONTRACT` (ends with LF),
2. `STATEMENT_INSTRUCTION` (call 1 system message),
3. `CLASSIFICATION_INSTRUCTION` (call 2 system message),
4. `spans.SEGMENTATION_PROFILE` (ends with LF).

Any change to a rule, an instruction, the parser's contract or the segmenter changes the digest,
so a qualification earned by one processor never carries over to another. `profile_digest()`
is the SHA-256 of the segmentation profile alone; the journal records it with each intake.
"""

from __future__ import annotations

import hashlib
from functools import cache

from .spans import SEGMENTATION_PROFILE

PROCESSOR_CONTRACT = (
    "Alto interpretation processor 1\n"
    "source spans: uax29 default sentence boundaries, edge Sp/CR/LF/Sep trimmed, empty omitted, "
    "original utf-8 byte offsets, no normalization; actor 32 lowercase hex or unknown; "
    "call 1 prompt: actor line, <source>, numbered JSON-escaped span lines, </source>; "
    'call 1 response: one [quote, "statement"|"request"] pair per span in order, repeats '
    "included, exact unescaped lowercase labels mapped to kinds 3/0, reserve 1+E+17K<=4096; "
    "zero spans still call, constrained to []; empty accepted list skips call 2 (final []); "
    "call 2 prompt: actor line, <corrections> table (index, source, version, actor, quote), "
    "<statements> numbered JSON-escaped accepted statements; call 2 response: required [3, quote] "
    "or [4, quote, target] per accepted statement in order, then optional [1, quote] participant "
    "and [2, quote] task mentions, each one exact occurrence in the original source inside an "
    "accepted statement, once per kind and quote, reserve 1+E+10K<=4096; "
    "correction table: current inferred assertions of the same owner and scope from the "
    "pre-write selection's sources, source-diverse one per source per round, object-id order "
    "within a source, at most 16 entries and min(4096, remaining prompt) rendered bytes, never "
    "truncated; limits: prompt 6144 bytes (all message content), response 4096 bytes, 512 items, "
    "at most 8 consecutive whitespace bytes outside strings; complete strict parse, any violation "
    "refuses the whole batch of 1..64 inputs; schemas: call 1 exact tuple, call 2 alternatives "
    "of the required tuple plus 0..8 mention items; inferred rows keep unknown evidence and the "
    "model and processor digests; exact recorded replay\n"
)

STATEMENT_INSTRUCTION = (
    "You sort the sentences of one message that a household member said to a home assistant.\n"
    "The user message gives the speaker's actor id, then the message between <source> and "
    "</source> as numbered lines; each line holds one span of the message as a JSON string.\n"
    "Answer with one JSON array and nothing else. For every numbered span, in order, write one "
    'pair [quote, label]: quote is the span copied exactly, label is "statement" or "request".\n'
    '"request": the span asks the assistant for something: a question, a command, a polite or '
    "indirect request, a conditional command (if or when something happens, do something), or "
    "a quoted message the assistant should pass on.\n"
    '"statement": the span tells something about the world, the home, the household or the '
    "speaker, including negated, uncertain and reported claims.\n"
    "Write one pair for every span, also when two spans have the same text. Never add, merge, "
    "split or change spans."
)

CLASSIFICATION_INSTRUCTION = (
    "You record what a household member told a home assistant.\n"
    "The user message gives the speaker's actor id, a numbered list of earlier assertions between "
    "<corrections> and </corrections> (it may be empty), and the new statements between "
    "<statements> and </statements>, one JSON string per numbered line.\n"
    "Answer with one JSON array and nothing else. First, for every statement, in order, write "
    "one item:\n"
    "[3, quote] when the statement is a new assertion;\n"
    "[4, quote, n] when the statement corrects, contradicts or updates earlier assertion number n "
    "from the corrections list.\n"
    "quote is the statement copied exactly; its negation and uncertainty are part of it. Use 4 "
    "only for the earlier assertion the statement replaces; a statement about something else "
    "is 3.\n"
    "After all statements you may add mentions:\n"
    "[1, text] for a person named in a statement;\n"
    "[2, text] for a task or chore named in a statement.\n"
    "text is copied exactly from one statement and must occur only once in the whole message. "
    "Give each mention once. A mention never says who is speaking."
)


@cache
def processor_digest() -> str:
    """SHA-256 hex of contract, both instructions and the segmentation profile, in that order."""
    data = PROCESSOR_CONTRACT + STATEMENT_INSTRUCTION + CLASSIFICATION_INSTRUCTION
    return hashlib.sha256((data + SEGMENTATION_PROFILE).encode("utf-8")).hexdigest()


@cache
def profile_digest() -> str:
    """SHA-256 hex of the segmentation profile alone."""
    return hashlib.sha256(SEGMENTATION_PROFILE.encode("utf-8")).hexdigest()
