"""Strict complete-response parsing: every malformed shape is a stable refusal, never a raise."""

from __future__ import annotations

import json
import random

import pytest

from custom_components.alto.memory.parse import (
    Classification,
    Mention,
    Statements,
    parse_classification,
    parse_statements,
)
from custom_components.alto.memory.reasons import Reason, Refusal
from custom_components.alto.memory.spans import source_spans, span_texts

SPANS = ["Anna likes tea.", "Turn on the lights.", "Anna likes tea."]


def reason(result: object) -> Reason | None:
    """The refusal's reason, None for a parse."""
    return result.reason if isinstance(result, Refusal) else None


def test_valid_statement_response() -> None:
    """Valid statement response."""
    raw = json.dumps(
        [[s, label] for s, label in zip(SPANS, ["statement", "request", "statement"], strict=True)]
    )
    assert parse_statements(raw, SPANS) == Statements((3, 0, 3))
    assert parse_statements(raw, SPANS).accepted == (0, 2)


def test_zero_spans_need_exactly_empty_array() -> None:
    """Zero spans need exactly empty array."""
    assert parse_statements("[]", []) == Statements(())
    assert reason(parse_statements('[["x","statement"]]', [])) is Reason.ITEM_COUNT


def test_escaped_quote_is_decoded_but_label_must_be_literal() -> None:
    """Escaped quote is decoded but label must be literal."""
    spans = ['She said "hi"\tthen left.']
    quote = '"She said \\"hi\\"\\tthen \\u006ceft."'
    assert parse_statements(f'[[{quote},"statement"]]', spans) == Statements((3,))
    assert reason(parse_statements(f'[[{quote},"st\\u0061tement"]]', spans)) is Reason.BAD_LABEL


def test_surrogate_pair_escape_is_one_scalar() -> None:
    """Surrogate pair escape is one scalar."""
    spans = ["Smile \U0001f600."]
    assert parse_statements('[["Smile \\ud83d\\ude00.","statement"]]', spans) == Statements((3,))
    lone = '[["Smile \\ud83d.","statement"]]'
    assert reason(parse_statements(lone, spans)) is Reason.MALFORMED_JSON


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('Sure! [["a.","statement"]]', Reason.MALFORMED_JSON),
        ('[["a.","statement"]] Hope that helps.', Reason.TRAILING_DATA),
        ('[["a.","statement"]][]', Reason.TRAILING_DATA),
        ('[["a.","statement"]', Reason.MALFORMED_JSON),
        ('[["a.","statement"],]', Reason.MALFORMED_JSON),
        ('[["a.", "statement"]]', None),
        (' \n [ [ "a." , "statement" ] ] \n ', None),
        ('[["a.",' + " " * 8 + '"statement"]]', None),
        ('[["a.",' + " " * 9 + '"statement"]]', Reason.WHITESPACE_RUN),
        ('[["a.",' + " \n\t\r" * 2 + ' "statement"]]', Reason.WHITESPACE_RUN),
        ('{"a.":"statement"}', Reason.NOT_ARRAY),
        ('[{"quote":"a.","label":"statement"}]', Reason.BAD_ITEM),
        ('[["a.","statement",1]]', Reason.BAD_ITEM),
        ('[["a."]]', Reason.BAD_ITEM),
        ('[["a.","Statement"]]', Reason.BAD_LABEL),
        ('[["a.","fact"]]', Reason.BAD_LABEL),
        ('[["a.",3]]', Reason.BAD_LABEL),
        ('[["a ","statement"]]', Reason.QUOTE_MISMATCH),
        ('[["A.","statement"]]', Reason.QUOTE_MISMATCH),
        ('[["a.","statement"],["a.","statement"]]', Reason.ITEM_COUNT),
        ("[]", Reason.ITEM_COUNT),
        ('[["a.","statement"]]\x00', Reason.TRAILING_DATA),
        ('[["a.\n","statement"]]', Reason.MALFORMED_JSON),  # raw control in a string
        ('[["a.","statement"]] NaN', Reason.TRAILING_DATA),
        ("[NaN]", Reason.MALFORMED_JSON),
        ("[[[[[]]]]]", Reason.BAD_ITEM),
        ("[" * 2000 + "]" * 2000, Reason.BAD_ITEM),
        ("", Reason.MALFORMED_JSON),
    ],
)
def test_statement_refusals(raw: str, expected: Reason | None) -> None:
    """Each malformed statement response is refused with its reason."""
    assert reason(parse_statements(raw, ["a."])) is expected


def test_order_of_repeated_spans_is_positional() -> None:
    """Order of repeated spans is positional."""
    spans = ["Yes.", "No.", "Yes."]
    good = '[["Yes.","statement"],["No.","request"],["Yes.","request"]]'
    assert parse_statements(good, spans) == Statements((3, 0, 0))
    swapped = '[["No.","request"],["Yes.","statement"],["Yes.","request"]]'
    assert reason(parse_statements(swapped, spans)) is Reason.QUOTE_MISMATCH


def test_size_and_item_limits() -> None:
    """Oversized responses and too many items are refused."""
    spans = ["a."] * 513
    raw = json.dumps([["a.", "request"]] * 513, separators=(",", ":"))
    assert reason(parse_statements(raw, spans)) is Reason.RESPONSE_TOO_LARGE
    small = "[" + ",".join(["0"] * 513) + "]"
    assert reason(parse_statements(small, spans)) is Reason.TOO_MANY_ITEMS
    assert reason(parse_statements("[" + " " * 5000 + "]", [])) is Reason.RESPONSE_TOO_LARGE


def test_non_text_and_lone_surrogate_responses() -> None:
    """Non text and lone surrogate responses."""
    assert reason(parse_statements(None, [])) is Reason.MALFORMED_JSON
    assert reason(parse_statements(b"[]", [])) is Reason.MALFORMED_JSON
    assert reason(parse_statements('["\ud800"]', [])) is Reason.MALFORMED_JSON


SOURCE = "Anna likes tea. Turn on the lights for Ben. Ben feeds the cat daily."
SPAN_BYTES = source_spans(SOURCE)
ACCEPTED = [SPAN_BYTES[0], SPAN_BYTES[2]]
TEXTS = span_texts(SOURCE, ACCEPTED)


def classify(items: list[object], table_size: int = 2) -> Classification | Refusal:
    """Parse the items as a classification response."""
    return parse_classification(json.dumps(items), SOURCE, ACCEPTED, table_size)


def test_valid_classification_with_correction_and_mentions() -> None:
    """Valid classification with correction and mentions."""
    result = classify([[3, TEXTS[0]], [4, TEXTS[1], 2], [1, "Anna"], [2, "feeds the cat"]])
    assert result == Classification(
        ((3, 0), (4, 2)),
        (Mention(1, "Anna", 0, 4), Mention(2, "feeds the cat", SOURCE.index("feeds"), 13)),
    )


def test_same_quote_may_appear_once_per_kind() -> None:
    """Same quote may appear once per kind."""
    result = classify([[3, TEXTS[0]], [3, TEXTS[1]], [1, "Anna"], [2, "Anna"]])
    assert isinstance(result, Classification)
    assert len(result.mentions) == 2


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([[3, TEXTS[0]]], Reason.ITEM_COUNT),
        ([[3, TEXTS[0]], [1, "Anna"], [3, TEXTS[1]]], Reason.ITEM_COUNT),
        ([[3, TEXTS[0]], [3, TEXTS[1]], [1, "Anna"], [3, TEXTS[1]]], Reason.ORDER),
        ([[3, TEXTS[1]], [3, TEXTS[0]]], Reason.QUOTE_MISMATCH),
        ([[5, TEXTS[0]], [3, TEXTS[1]]], Reason.BAD_KIND),
        ([[3, TEXTS[0], 1], [3, TEXTS[1]]], Reason.BAD_ITEM),
        ([[4, TEXTS[0]], [3, TEXTS[1]]], Reason.BAD_ITEM),
        ([["3", TEXTS[0]], [3, TEXTS[1]]], Reason.BAD_ITEM),
        ([[True, TEXTS[0]], [3, TEXTS[1]]], Reason.BAD_ITEM),
        ([[4, TEXTS[0], 0], [3, TEXTS[1]]], Reason.INVALID_TARGET),
        ([[4, TEXTS[0], 3], [3, TEXTS[1]]], Reason.INVALID_TARGET),
        ([[4, TEXTS[0], 1.0], [3, TEXTS[1]]], Reason.INVALID_TARGET),
        ([[4, TEXTS[0], "1"], [3, TEXTS[1]]], Reason.INVALID_TARGET),
        ([[3, TEXTS[0]], [3, TEXTS[1]], [1, "Ben"]], Reason.QUOTE_NOT_UNIQUE),
        ([[3, TEXTS[0]], [3, TEXTS[1]], [1, "the lights"]], Reason.QUOTE_OUTSIDE_STATEMENT),
        ([[3, TEXTS[0]], [3, TEXTS[1]], [2, "tea. Turn"]], Reason.QUOTE_OUTSIDE_STATEMENT),
        ([[3, TEXTS[0]], [3, TEXTS[1]], [1, "Zoe"]], Reason.QUOTE_NOT_UNIQUE),
        ([[3, TEXTS[0]], [3, TEXTS[1]], [1, ""]], Reason.QUOTE_NOT_UNIQUE),
        ([[3, TEXTS[0]], [3, TEXTS[1]], [1, "Anna"], [1, "Anna"]], Reason.DUPLICATE_MENTION),
        ([[3, TEXTS[0]], [3, TEXTS[1]], [1, "Anna", 1]], Reason.BAD_ITEM),
        ([[3, TEXTS[0]], [3, TEXTS[1]], [7, "Anna"]], Reason.BAD_KIND),
    ],
)
def test_classification_refusals(items: list[object], expected: Reason) -> None:
    """Each malformed classification response is refused with its reason."""
    assert reason(classify(items)) is expected


def test_no_table_means_no_correction() -> None:
    """No table means no correction."""
    assert reason(classify([[4, TEXTS[0], 1], [3, TEXTS[1]]], table_size=0)) is (
        Reason.INVALID_TARGET
    )


def test_overlapping_occurrences_are_not_unique() -> None:
    """Overlapping occurrences are not unique."""
    source = "A banana."
    spans = source_spans(source)
    raw = json.dumps([[3, source], [1, "ana"]])
    assert reason(parse_classification(raw, source, spans, 0)) is Reason.QUOTE_NOT_UNIQUE


def test_random_corruptions_never_raise() -> None:
    """Byte-level damage of valid responses yields a parse or a refusal, never an exception."""
    rng = random.Random(4)
    first = json.dumps([[s, "statement"] for s in SPANS])
    second = json.dumps([[3, TEXTS[0]], [4, TEXTS[1], 1], [1, "Anna"]])
    alphabet = '[]{}",:\\ u0123456789eE-+.tnfalsrd\n\t\ud83d\U0001f600'
    for _ in range(3000):
        for raw, parse in (
            (first, lambda r: parse_statements(r, SPANS)),
            (second, lambda r: parse_classification(r, SOURCE, ACCEPTED, 2)),
        ):
            chars = list(raw)
            for _ in range(rng.randint(1, 3)):
                position = rng.randrange(len(chars) + 1)
                action = rng.randrange(3)
                if action == 0 and chars:
                    del chars[min(position, len(chars) - 1)]
                elif action == 1:
                    chars.insert(position, rng.choice(alphabet))
                elif chars:
                    chars[min(position, len(chars) - 1)] = rng.choice(alphabet)
            result = parse("".join(chars))
            assert isinstance(result, Statements | Classification | Refusal)
