"""Source spans: official UAX #29 boundary conformance, edge trimming, byte offsets, admission."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import uniseg

from custom_components.alto.memory.reasons import Reason
from custom_components.alto.memory.spans import (
    MAX_SOURCE_BYTES,
    SEGMENTATION_PROFILE,
    admit_source,
    default_boundaries,
    source_spans,
    span_texts,
)

# Debian's unicode-data package (apt-get install unicode-data) ships the official test file.
SENTENCE_BREAK_TEST = Path("/usr/share/unicode/auxiliary/SentenceBreakTest.txt")

# Cases of the installed (older) test file whose expected boundaries the Unicode version of
# uniseg changed on purpose, by 1-based line number, with the reason. Unicode 15.0 -> 16.0 made
# no change to the default sentence-break rules or to the Sentence_Break values of any
# code point the 15.0 test file uses, so for that pair the list is empty; the test below fails
# both on an unlisted difference and on a listed case that no longer differs.
EXPECTED_DIFFERENCES: dict[int, str] = {}


def _cases(path: Path) -> list[tuple[int, str, list[int]]]:
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        chars: list[str] = []
        breaks: list[int] = []
        for field in fields:
            if field == "÷":
                breaks.append(len(chars))
            elif field != "×":
                chars.append(chr(int(field, 16)))
        cases.append((number, "".join(chars), breaks))
    return cases


@pytest.mark.skipif(not SENTENCE_BREAK_TEST.exists(), reason="unicode-data not installed")
def test_official_sentence_break_vectors() -> None:
    """Every official vector matches, except the explicitly explained differences."""
    header = SENTENCE_BREAK_TEST.read_text(encoding="utf-8").split("\n", 1)[0]
    version = re.search(r"SentenceBreakTest-(\d+\.\d+\.\d+)", header)
    assert version is not None
    cases = _cases(SENTENCE_BREAK_TEST)
    if version[1] == "15.0.0":
        assert len(cases) == 502
    assert uniseg.unidata_version == "16.0.0"
    differing = {n for n, text, expected in cases if default_boundaries(text) != expected}
    assert differing == set(EXPECTED_DIFFERENCES)


def test_profile_names_library_and_unicode() -> None:
    """The segmentation profile records what actually segments."""
    assert f"unicode={uniseg.unidata_version}\n" in SEGMENTATION_PROFILE
    assert "library=uniseg 0.10.1\n" in SEGMENTATION_PROFILE
    assert SEGMENTATION_PROFILE.endswith("\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Hello there.  How are you?  ", [(2, 14), (16, 28)]),
        ("One.\r\nTwo.", [(0, 4), (6, 10)]),
        ("One.\u2029Two.", [(0, 4), (7, 11)]),
        ("One.\u0085Two.", [(0, 4), (6, 10)]),  # NEL has Sentence_Break=Sep
        ("Hi.\n\nYes", [(0, 3), (5, 8)]),
        ("no terminator at all", [(0, 20)]),
        ("Dr. Vale arrived.", [(0, 3), (4, 17)]),  # default rules, no abbreviation list
        (" \n\t ", []),
        ("", []),
        ("\u3000東京に行きます。\u3000はい。", [(3, 27), (30, 39)]),  # U+3000 is Sp
    ],
)
def test_trimmed_spans(text: str, expected: list[tuple[int, int]]) -> None:
    """Edge Sp/CR/LF/Sep are trimmed, empty intervals omitted, offsets are original bytes."""
    assert source_spans(text) == expected


def test_multibyte_offsets_are_original_bytes() -> None:
    """Each span's bytes are exactly the source bytes at its offsets, nothing normalized."""
    text = "Caf\u00e9 ist zu. Cafe\u0301 auch! \U0001f600 Gut."
    data = text.encode("utf-8")
    spans = source_spans(text)
    texts = span_texts(text, spans)
    assert texts == ["Caf\u00e9 ist zu.", "Cafe\u0301 auch!", "\U0001f600 Gut."]
    for (start, end), span in zip(spans, texts, strict=True):
        assert data[start:end] == span.encode("utf-8")
    assert spans[2] == (data.index("\U0001f600".encode()), len(data))


def test_tab_inside_span_kept_edges_trimmed() -> None:
    """TAB is Sp: trimmed at the edges, kept inside."""
    assert span_texts("\tA\tB.\t", source_spans("\tA\tB.\t")) == ["A\tB."]


def test_repeated_text_gives_distinct_spans() -> None:
    """Identical sentences at different positions stay separate spans."""
    assert source_spans("Yes. Yes. Yes.") == [(0, 4), (5, 9), (10, 14)]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("fine\ttext\nwith LF", None),
        ("", Reason.EMPTY_SOURCE),
        (None, Reason.EMPTY_SOURCE),
        ("carriage\rreturn", Reason.INVALID_TEXT),
        ("nul\x00", Reason.INVALID_TEXT),
        ("bell\x07", Reason.INVALID_TEXT),
        ("del\x7f", Reason.INVALID_TEXT),
        ("c1\x85", Reason.INVALID_TEXT),
        ("c1\x9f", Reason.INVALID_TEXT),
        ("lone \ud800 surrogate", Reason.INVALID_TEXT),
        ("x" * MAX_SOURCE_BYTES, None),
        ("x" * (MAX_SOURCE_BYTES + 1), Reason.SOURCE_TOO_LARGE),
        ("\u00e9" * (MAX_SOURCE_BYTES // 2 + 1), Reason.SOURCE_TOO_LARGE),
    ],
)
def test_admission(text: object, reason: Reason | None) -> None:
    """Strict UTF-8 scalars, TAB and LF only among controls, bounded size."""
    assert admit_source(text) == reason
