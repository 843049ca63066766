"""Strict reading of a complete model answer: one JSON object of an exact shape, or a refusal.

The passes' answers are objects, read by `model.strict_json.read` (the reader memory's parser
uses too) with every key unique and integers only: at most the caller's byte bound, valid UTF-8
(no lone surrogate, raw or escaped), no NaN or Infinity, no duplicate key, nothing after the
value. Past the bound is `RESPONSE_TOO_LARGE`, a fraction or an exponent a bad item, any other
fault of the reading (trailing prose included) malformed JSON. The shape helpers then check
exact key sets, types, enums and bounds. Any failure is `Malformed`, which the pass turns into
a memory `Refusal` for the WHOLE answer: nothing of a malformed answer is used, nothing repaired.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, NoReturn

from ..memory.reasons import Reason, Refusal
from ..model.strict_json import Fault, JsonFault, read


class Malformed(Exception):
    """Why an answer is refused; `refusal` is the value the pass reports."""

    def __init__(self, reason: Reason, detail: str = "") -> None:
        """Refuse for `reason`, with `detail` saying where."""
        super().__init__(detail)
        self.refusal = Refusal(reason, detail=detail)


def bad(where: str, what: str) -> NoReturn:
    """Refuse the answer: `where` in it is not `what` it must be."""
    raise Malformed(Reason.BAD_ITEM, f"{where}: {what}")


def _integer(literal: str) -> int:
    if not literal.removeprefix("-").isdigit():
        raise Malformed(Reason.BAD_ITEM, f"number {literal[:16]} is not an integer")
    return int(literal)


def load_object(raw: object, max_bytes: int) -> dict[str, Any]:
    """The one JSON object `raw` holds, strictly read (see the module docstring)."""
    try:
        value = read(raw, max_bytes, number=_integer, unique_keys=True)
    except JsonFault as fault:
        too_large = fault.fault is Fault.TOO_LARGE
        reason = Reason.RESPONSE_TOO_LARGE if too_large else Reason.MALFORMED_JSON
        raise Malformed(reason, fault.detail) from None
    if not isinstance(value, dict):
        bad("answer", "an object")
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
