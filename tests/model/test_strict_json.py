"""The shared strict reader: strict `json.loads` as a property, and each fault at its bound."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from custom_components.alto.model.strict_json import Fault, JsonFault, read

BIG = 1 << 20
CHARS = 'aZ é€"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\U0001f600'


def number(literal: str) -> int | float:
    """What `json.loads` makes of a number literal."""
    return float(literal) if any(c in literal for c in ".eE") else int(literal)


def fault(raw: object, max_bytes: int = BIG, **bounds: Any) -> Fault | None:
    """The fault reading `raw` raises, None if it reads."""
    try:
        read(raw, max_bytes, number=number, **bounds)
    except JsonFault as err:
        return err.fault
    return None


def strict_loads(raw: str) -> object:
    """The reference: `json.loads` refusing NaN, Infinity, duplicate keys and lone surrogates."""

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        if len({key for key, _ in pairs}) != len(pairs):
            raise ValueError("duplicate key")
        return dict(pairs)

    def constant(name: str) -> object:
        raise ValueError(name)

    value = json.loads(raw, object_pairs_hook=unique, parse_constant=constant)
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # a lone surrogate raises here
    return value


def random_value(rng: random.Random, depth: int = 0) -> object:
    """A JSON value: nested containers, integers of either sign, floats, any text."""
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([True, False, None])
    if kind == 1:
        return rng.randint(-(10**20), 10**20)
    if kind == 2:
        return rng.choice([0.5, -2.25, 1e300, 3.0])
    if kind in (3, 4):
        return "".join(rng.choice(CHARS) for _ in range(rng.randrange(6)))
    if kind in (5, 6):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{i}": random_value(rng, depth + 1) for i in range(rng.randrange(4))}


def dumped(rng: random.Random, value: object) -> str:
    """`value` as JSON in one of several layouts."""
    indent = rng.choice([None, 0, 2, "\t"])
    return json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=indent)


def test_valid_json_reads_as_json_loads_reads_it() -> None:
    """Any layout, any text, any nesting: the same value as `json.loads`."""
    rng = random.Random(1)
    for _ in range(2000):
        raw = dumped(rng, random_value(rng))
        assert read(raw, BIG, number=number, unique_keys=True) == json.loads(raw)


def test_damaged_json_reads_exactly_when_strict_json_loads_does() -> None:
    """Byte-level damage: accepted (with the same value) iff the strict reference accepts it."""
    rng = random.Random(2)
    alphabet = [*'[]{}",:\\ 0123456789eE+-.tfnaul', "NaN", "-Infinity", "\\ud800", '"k0": 1']
    for _ in range(6000):
        chars = list(dumped(rng, random_value(rng)))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(chars) + 1)
            if rng.random() < 0.5 and chars:
                del chars[min(at, len(chars) - 1)]
            else:
                chars.insert(at, rng.choice(alphabet))
        raw = "".join(chars)
        try:
            expected: object = strict_loads(raw)
        except (ValueError, UnicodeEncodeError):
            expected = JsonFault
        try:
            got: object = read(raw, BIG, number=number, unique_keys=True)
        except JsonFault:
            got = JsonFault
        assert got == expected, raw


@pytest.mark.parametrize("text", ["plain", 'q"uote', "back\\slash", "tab\t", "é", "\U0001f600"])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_a_string_says_whether_it_was_written_with_escapes(text: str, ascii_only: bool) -> None:
    """`string` gets the decoded text and whether its raw form held a backslash."""
    raw = json.dumps([text], ensure_ascii=ascii_only)
    value = read(raw, BIG, number=int, string=lambda s, escaped: (s, escaped))
    assert value == [(text, "\\" in raw)]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, Fault.NOT_TEXT),
        (b"[]", Fault.NOT_TEXT),
        ('["\ud800"]', Fault.NOT_TEXT),
        ("", Fault.SYNTAX),
        ("[1,]", Fault.SYNTAX),
        ('{"a" 1}', Fault.SYNTAX),
        ("[NaN]", Fault.SYNTAX),
        ("[-Infinity]", Fault.SYNTAX),
        ("[01]", Fault.SYNTAX),
        ("01", Fault.SYNTAX),
        ("[1.]", Fault.SYNTAX),
        ("[1e]", Fault.SYNTAX),
        ('["\\x"]', Fault.SYNTAX),
        ('["\\ud800"]', Fault.SYNTAX),
        ('["\\udc00\\ud800"]', Fault.SYNTAX),
        ('["\\ud800\\u0041"]', Fault.SYNTAX),
        ('["a\nb"]', Fault.SYNTAX),
        ('["open', Fault.SYNTAX),
        ("[" + "1" * 5000 + "]", Fault.SYNTAX),  # longer than `int` reads
        ("[] []", Fault.TRAILING),
        ("[]\x00", Fault.TRAILING),
        ("{} Hope that helps!", Fault.TRAILING),
        ("true", None),
        ('  {"a": [null, false, -0, 1E+2]}\r\n', None),
    ],
)
def test_faults(raw: object, expected: Fault | None) -> None:
    """Each shared rule, at the fault it names."""
    assert fault(raw) is expected


def test_a_fault_of_the_callers_number_propagates() -> None:
    """`number` refuses by raising; anything but `ValueError` reaches the caller as raised."""

    class Refused(Exception):
        pass

    def integers_only(literal: str) -> int:
        if not literal.lstrip("-").isdigit():
            raise Refused(literal)
        return int(literal)

    assert read("[1, -2]", BIG, number=integers_only) == [1, -2]
    with pytest.raises(Refused):
        read("[1, 2.5] trailing", BIG, number=integers_only)


def test_the_byte_bound_counts_utf8_bytes() -> None:
    """At the bound reads; one byte over is too large."""
    raw = '["' + "é" * 10 + '"]'  # 24 bytes, 14 characters
    assert fault(raw, 24) is None
    assert fault(raw, 23) is Fault.TOO_LARGE


@pytest.mark.parametrize("gap", [" ", "\t", "\r", "\n"])
def test_whitespace_runs_are_bounded_outside_strings_only(gap: str) -> None:
    """A run of `max_gap` reads, one more is refused; inside a string any run is text."""
    for at in ("@[]", "[]@", "[1@]", "[1,@2]", "{@}", '{"a"@:1}', '{"a":@1}'):
        assert fault(at.replace("@", gap * 8), max_gap=8) is None
        assert fault(at.replace("@", gap * 9), max_gap=8) is Fault.WHITESPACE_RUN
    assert fault(json.dumps([gap * 50]), max_gap=8) is None
    assert fault("[" + gap * 50 + "]") is None  # unbounded unless asked


@pytest.mark.parametrize("depth", range(1, 6))
def test_nesting_is_bounded_when_asked_and_read_without_recursion_when_not(depth: int) -> None:
    """Containers (empty or not, arrays or objects) nest `max_depth` deep, not one more."""
    for shape in ("[{}]", "[{}, 1]", '{{"a": {}}}'):
        for innermost, levels in (("0", depth), ("[]", depth + 1), ("{}", depth + 1)):
            raw = innermost
            for _ in range(depth):
                raw = shape.format(raw)
            assert fault(raw, max_depth=levels) is None
            assert fault(raw, max_depth=levels - 1) is Fault.TOO_DEEP
    deep = "[" * 50_000 + "]" * 50_000
    assert fault(deep) is None


def test_duplicate_keys_are_refused_when_asked() -> None:
    """At any depth, and only with `unique_keys`; otherwise the last one is kept."""
    assert fault('{"a": 1, "a": 2}', unique_keys=True) is Fault.DUPLICATE_KEY
    assert fault('[{"b": {"a": 1, "a": 2}}]', unique_keys=True) is Fault.DUPLICATE_KEY
    assert read('{"a": 1, "a": 2}', BIG, number=int) == {"a": 2}
