"""Source spans: UAX #29 default sentence boundaries over original UTF-8 bytes.

`source_spans(text)` returns (start, end) UTF-8 byte offsets, end exclusive, one per default
sentence boundary interval after removing edge code points whose Sentence_Break property is Sp,
CR, LF or Sep. Empty intervals are omitted; every other byte keeps its original offset (final
fragments included). Nothing is normalized and no locale, name, title or abbreviation dictionary
is consulted, so "Dr. Vale" can split into "Dr." and "Vale": spans are positions, not proof of
linguistic sentences.

Why uniseg: it is pure Python with its own Unicode tables (Unicode 16.0 for uniseg 0.10.1), so
it installs wherever Home Assistant runs, Alpine included, needs no compiled ICU, and does not
depend on the interpreter's `unicodedata` version. It also exposes the Sentence_Break property
itself (`sentence_break`), so the edge trim uses the same table as the boundaries.

`SEGMENTATION_PROFILE` names the library, its version and its Unicode version as installed; it
enters the processor digest, so a different segmenter is a different (unqualified) processor.

`admit_source(text)` is the source-text domain (what a memory query or source may be): strict
UTF-8 scalar values, TAB and LF allowed, every other C0 control, DEL and C1 controls refused (CR
included), non-empty and at most `MAX_SOURCE_BYTES`. Boundary conformance tests use raw
`source_spans` and do not widen this domain.
"""

from __future__ import annotations

from importlib.metadata import version
from itertools import pairwise

import uniseg
from uniseg.sentencebreak import SentenceBreak, sentence_boundaries, sentence_break

from .reasons import Reason

# Alto's own admission bound for one source (a query limit is the device's to choose); any
# longer input would not fit the 6,144-byte statement prompt once escaped and framed anyway.
MAX_SOURCE_BYTES = 4096

_TRIM = frozenset({SentenceBreak.SP, SentenceBreak.CR, SentenceBreak.LF, SentenceBreak.SEP})

SEGMENTATION_PROFILE = (
    "alto-source-span-profile-1\n"
    f"library=uniseg {version('uniseg')}\n"
    f"unicode={uniseg.unidata_version}\n"
    "base=default-sentence-boundaries\n"
    "trim-edge=Sp,CR,LF,Sep\n"
    "empty-intervals=omit\n"
    "text=original-utf8-bytes\n"
    "offsets=original-byte-offsets\n"
    "normalization=none\n"
    "locale=none\n"
    "fragments=retain\n"
    "source-utf8=strict-scalars\n"
    "source-controls=reject-C0-except-0009-000A-and-reject-007F-0080-009F\n"
    f"source-max-bytes={MAX_SOURCE_BYTES}\n"
)


def _utf8_len(char: str) -> int:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        raise ValueError("text holds a lone surrogate, not a Unicode scalar value")
    return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4


def default_boundaries(text: str) -> list[int]:
    """UAX #29 default sentence boundaries as code point indices (0 and len included)."""
    return list(sentence_boundaries(text))


def source_spans(text: str) -> list[tuple[int, int]]:
    """UTF-8 byte (start, end) of every trimmed, non-empty default sentence interval of `text`."""
    offsets = [0]
    for char in text:
        offsets.append(offsets[-1] + _utf8_len(char))
    bounds = default_boundaries(text)
    spans: list[tuple[int, int]] = []
    for first, stop in pairwise(bounds):
        start, end = first, stop
        while start < end and sentence_break(text[start]) in _TRIM:
            start += 1
        while end > start and sentence_break(text[end - 1]) in _TRIM:
            end -= 1
        if start < end:
            spans.append((offsets[start], offsets[end]))
    return spans


def span_texts(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """The exact text of each byte span (spans from `source_spans` start and end on scalars)."""
    data = text.encode("utf-8")
    return [data[start:end].decode("utf-8") for start, end in spans]


def admit_source(text: object) -> Reason | None:
    """None when `text` is an admissible source, else why not."""
    if not isinstance(text, str) or not text:
        return Reason.EMPTY_SOURCE
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return Reason.INVALID_TEXT
    if size > MAX_SOURCE_BYTES:
        return Reason.SOURCE_TOO_LARGE
    for char in text:
        code = ord(char)
        if (code < 0x20 and char not in "\t\n") or 0x7F <= code <= 0x9F:
            return Reason.INVALID_TEXT
    return None
