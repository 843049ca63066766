"""Strict reading of a complete model answer: one JSON object of an exact shape, or a refusal.

The passes' answers are objects (memory's reader reads only arrays), so this module reads them
with `json.loads` made strict: at most the caller's byte bound, valid UTF-8 (no lone surrogate,
raw or escaped), no NaN or Infinity, no fractional or exponent number, no duplicate key, nothing
after the value. The shape helpers then check exact key sets, types, enums and bounds. Any
failure is `Malformed`, which the pass turns into a memory `Refusal` for the WHOLE answer:
nothing of a malformed answer is used, and nothing is repaired.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, NoReturn

from ..memory.reasons import Reason, Refusal


class Malformed(Exception):
    """Why an answer is refused; `refusal` is the value the pass reports."""

    def __init__(self, reason: Reason, detail: str = "") -> None:
        """Refuse for `reason`, with `detail` saying where."""
        super().__init__(detail)
        self.refusal = Refusal(reason, detail=detail)


def bad(where: str, what: str) -> NoReturn:
    """Refuse the answer: `where` in it is not `what` it must be."""
    raise Malformed(Reason.BAD_ITEM, f"{where}: {what}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise Malformed(Reason.MALFORMED_JSON, "duplicate key")
    return result


def _no_constant(name: str) -> NoReturn:
    raise Malformed(Reason.MALFORMED_JSON, f"{name} is not JSON")


def _no_float(text: str) -> NoReturn:
    raise Malformed(Reason.BAD_ITEM, f"number {text[:16]} is not an integer")


def _check_strings(value: object) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            raise Malformed(Reason.MALFORMED_JSON, "lone surrogate") from err
    elif isinstance(value, list):
        for item in value:
            _check_strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key)
            _check_strings(item)


def load_object(raw: object, max_bytes: int) -> dict[str, Any]:
    """The one JSON object `raw` holds, strictly read (see the module docstring)."""
    if not isinstance(raw, str):
        raise Malformed(Reason.MALFORMED_JSON, "answer is not text")
    try:
        size = len(raw.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise Malformed(Reason.MALFORMED_JSON, "answer is not valid UTF-8") from err
    if size > max_bytes:
        raise Malformed(Reason.RESPONSE_TOO_LARGE, f"{size} bytes")
    try:
        value = json.loads(
            raw,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_no_float,
        )
    except ValueError as err:  # JSONDecodeError, including trailing data
        raise Malformed(Reason.MALFORMED_JSON, str(err)[:120]) from err
    except RecursionError as err:
        raise Malformed(Reason.MALFORMED_JSON, "nested too deep") from err
    if not isinstance(value, dict):
        bad("answer", "an object")
    _check_strings(value)
    return value


def obj(value: object, keys: Collection[str], where: str) -> dict[str, Any]:
    """`value` as an object with exactly `keys`."""
    if not isinstance(value, dict) or set(value) != set(keys):
        bad(where, f"an object with exactly {sorted(keys)}")
    return value


def items(value: object, where: str, *, low: int = 0, high: int) -> list[Any]:
    """`value` as an array of `low`..`high` items."""
    if not isinstance(value, list):
        bad(where, "an array")
    if not low <= len(value) <= high:
        raise Malformed(Reason.TOO_MANY_ITEMS, f"{where}: {len(value)} items")
    return value


def text(value: object, where: str, *, high: int) -> str:
    """`value` as a string of 1..`high` characters, not blank."""
    if not isinstance(value, str) or not value.strip() or len(value) > high:
        bad(where, f"a non-blank string of at most {high} characters")
    return value


def choice[T: str](value: object, choices: Collection[T], where: str) -> T:
    """`value` as one of `choices` (exact strings)."""
    for option in choices:
        if value == option:
            return option
    bad(where, f"one of {sorted(choices)}")


def integer(value: object, allowed: Collection[int], where: str) -> int:
    """`value` as an integer in `allowed` (booleans are not integers)."""
    if not isinstance(value, int) or isinstance(value, bool) or value not in allowed:
        raise Malformed(Reason.INVALID_TARGET, f"{where}: {value!r}")
    return value


def citations(value: object, allowed: Collection[int], where: str, *, high: int) -> tuple[int, ...]:
    """`value` as 1..`high` distinct integers from `allowed`, in the answer's order."""
    cited = tuple(
        integer(item, allowed, f"{where}[{i}]")
        for i, item in enumerate(items(value, where, low=1, high=high))
    )
    if len(set(cited)) != len(cited):
        bad(where, "distinct citations")
    return cited
