"""The executor's contract: its fresh-context messages, its output schema and the strict parser.

The schema is passed as Ollama's ``format`` so a small model can only emit one of three shapes,
with the entity and service drawn from enums; it narrows what the model can say but grants
nothing, since the guard re-checks every field. The schema is an ``anyOf`` of one branch per
tool rather than one flat object, so a call must carry an entity and a service and ``none``
carries nothing else.
"""

import json
from collections.abc import Sequence
from typing import Any

from .allowlist import ALLOWLIST, services_for
from .model import (
    CALL_SERVICE_TOOL,
    NO_TOOL,
    STATE_QUERY_TOOL,
    ExposedEntity,
    GuardReason,
    GuardRefusal,
    Proposal,
    Registry,
)
from .relevance import ranked_entities, ranked_services

TOOLS = (CALL_SERVICE_TOOL, STATE_QUERY_TOOL, NO_TOOL)
# Entities the executor is shown at most: a large home's full list would crowd a small model's
# context window (and the schema's enum) for one short statement.
MAX_CANDIDATES = 60
# The executor answers with one small object; anything longer is not a proposal.
MAX_PROPOSAL_BYTES = 4096

_ROLE = (
    "You turn one short action statement into exactly one JSON proposal for a smart home. "
    f'Use "{CALL_SERVICE_TOOL}" to change a device, "{STATE_QUERY_TOOL}" to read one, or '
    f'"{NO_TOOL}" when the statement does not name exactly one of the devices below or asks '
    "for something these services cannot do. Use only the entity ids and services listed. "
    "Put service parameters in data, and nothing else there. Any conversation before these "
    "instructions is context only: answer for the action statement alone."
)


def _branch(tool: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"tool": {"type": "string", "enum": [tool]}, **properties},
        "required": ["tool", *properties],
        "additionalProperties": False,
    }


def candidates(
    registry: Registry, span: str, area: str | None, limit: int = MAX_CANDIDATES
) -> tuple[ExposedEntity, ...]:
    """The exposed entities the executor is shown for `span`, the likeliest first.

    At most `limit`, in `relevance.ranked_entities`'s order (the entities the span names, whose
    domain can do what it asks, first; deterministic). Narrowing and order only shape what the
    model is shown and may name; the guard still checks every proposal against the whole
    registry.
    """
    return tuple(ranked_entities(registry.entities(), span, area)[:limit])


def proposal_schema(entities: Sequence[ExposedEntity], span: str = "") -> dict[str, Any]:
    """JSON schema of the executor's answer; branches whose enum would be empty are left out.

    The enums keep the entities' order and list the services `span` names first.
    """
    entity_ids = [entity.entity_id for entity in entities]
    services = ranked_services(
        {name for entity in entities for name in services_for(entity.domain)}, span
    )
    branches = []
    if entity_ids and services:
        branches.append(
            _branch(
                CALL_SERVICE_TOOL,
                entity={"type": "string", "enum": entity_ids},
                service={"type": "string", "enum": services},
                data={"type": "object"},
            )
        )
    if entity_ids:
        branches.append(_branch(STATE_QUERY_TOOL, entity={"type": "string", "enum": entity_ids}))
    branches.append(_branch(NO_TOOL))
    return {"anyOf": branches}


class _Malformed(ValueError):
    """Raised inside the JSON decoder hooks; caught by ``parse_proposal``."""


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A repeated key would let a proposal say two things; json.loads would keep the last one.
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Malformed("duplicate key")
    return result


def _no_constant(name: str) -> Any:
    raise _Malformed(f"{name} is not JSON")


def parse_proposal(raw: str) -> Proposal | GuardRefusal | None:
    """The proposal in the executor's complete response.

    None for ``none``, a GuardRefusal when the response is not exactly one JSON object naming a
    known tool (prose, duplicates, NaN...).
    """
    if not isinstance(raw, str) or len(raw.encode("utf-8", "replace")) > MAX_PROPOSAL_BYTES:
        return GuardRefusal(
            GuardReason.MALFORMED_PROPOSAL, f"not a string of at most {MAX_PROPOSAL_BYTES} bytes"
        )
    try:
        value = json.loads(
            raw, object_pairs_hook=_object_without_duplicates, parse_constant=_no_constant
        )
    except (ValueError, RecursionError) as err:
        return GuardRefusal(GuardReason.MALFORMED_PROPOSAL, f"invalid JSON: {err}"[:120])
    if not isinstance(value, dict) or not isinstance(value.get("tool"), str):
        return GuardRefusal(GuardReason.MALFORMED_PROPOSAL, "expected an object with a string tool")
    tool = value.pop("tool")
    if tool not in TOOLS:
        return GuardRefusal(GuardReason.UNKNOWN_TOOL, f"unknown tool {tool[:40]!r}")
    if tool == NO_TOOL:
        if value:
            return GuardRefusal(GuardReason.MALFORMED_PROPOSAL, "tool none takes no arguments")
        return None
    return Proposal(tool, value)


def _one_line(text: str) -> str:
    # Names and areas are user-edited; a newline in one must not start a new prompt line.
    return " ".join(text.split())


def _entity_line(entity: ExposedEntity) -> str:
    line = f"- {entity.entity_id} — {_one_line(entity.name)}"
    if entity.area:
        line += f" ({_one_line(entity.area)})"
    if entity.aliases:
        line += f", also called: {', '.join(_one_line(a) for a in entity.aliases)}"
    return line


def _service_lines(domains: set[str]) -> list[str]:
    lines = []
    for domain in sorted(domains & ALLOWLIST.keys()):
        calls = (
            f"{name}({', '.join(spec.params)})" if spec.params else name
            for name, spec in sorted(ALLOWLIST[domain].items())
        )
        lines.append(f"- {domain}: {', '.join(calls)}")
    return lines


def executor_messages(
    span: str, area: str | None, entities: Sequence[ExposedEntity]
) -> list[dict[str, str]]:
    """The executor's own messages: its role, the candidate entities, the span and the area.

    Sent alone, or after the conversational call's messages (`executor.propose`); nothing the
    conversational model answered is ever among them.
    """
    system = "\n".join(
        [
            _ROLE,
            "",
            "Devices (entity id — name (area)):",
            *(_entity_line(entity) for entity in entities),
            "",
            "Services by domain (data keys in parentheses):",
            *_service_lines({entity.domain for entity in entities}),
        ]
    )
    # JSON-quoted so a span cannot fake a second field, e.g. its own speaker area.
    user = f"Action: {json.dumps(span, ensure_ascii=False)}\nSpeaker's area: " + (
        json.dumps(area, ensure_ascii=False) if area else "unknown"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
