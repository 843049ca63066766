"""Ollama `format` JSON schemas for both calls.

Ollama turns a `format` schema into a llama.cpp grammar. That converter handles `const`, `enum`,
`anyOf`, `$ref` into `$defs`, integer `minimum`/`maximum`, and arrays through `prefixItems`
(an exact tuple) or `items` with `minItems`/`maxItems`; it silently drops keywords it does not
know. Two converter facts shape these schemas:

- when `items` is present it wins over `prefixItems`, and a boolean `items: false` is rejected,
  so tuples are written with `prefixItems` alone (which already fixes their length);
- a tuple cannot carry an optional tail, so call 2 is an `anyOf` of its required tuple followed
  by 0 to `SCHEMA_MENTIONS` generic mention items (each alternative shares `$defs`).

The grammar constrains shape, exact quotes and labels, not optional-quote uniqueness, and its
whitespace rule is looser than ours: `parse` checks the complete response independently.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Mention alternatives in the call-2 schema; the parser itself only applies the item limits.
SCHEMA_MENTIONS = 8

Schema = dict[str, Any]


def _tuple(items: list[Schema]) -> Schema:
    return {"type": "array", "prefixItems": items}


def statement_schema(spans: Sequence[str]) -> Schema:
    """Call 1: exactly one [span, "statement"|"request"] pair per span, in order."""
    label = {"enum": ["statement", "request"]}
    return _tuple([_tuple([{"const": span}, label]) for span in spans])


def classification_schema(statements: Sequence[str], table_size: int) -> Schema:
    """Call 2: required [3|4, statement(, target)] items in order, then up to 8 mentions."""
    defs: dict[str, Schema] = {
        "mention": _tuple([{"enum": [1, 2]}, {"type": "string", "minLength": 1}])
    }
    for number, statement in enumerate(statements, 1):
        choices = [_tuple([{"const": 3}, {"const": statement}])]
        if table_size:
            target = {"type": "integer", "minimum": 1, "maximum": table_size}
            choices.append(_tuple([{"const": 4}, {"const": statement}, target]))
        defs[f"s{number}"] = {"anyOf": choices}
    required = [{"$ref": f"#/$defs/s{number}"} for number in range(1, len(statements) + 1)]
    mention = {"$ref": "#/$defs/mention"}
    shapes = [_tuple(required + [mention] * count) for count in range(SCHEMA_MENTIONS + 1)]
    return {"$defs": defs, "anyOf": shapes}
