"""The executor: one model call that turns an action span into a proposal.

It answers under a JSON-schema `format` whose enums list the exposed entity ids and services, so a
small model cannot emit a malformed shape. Its own instruction (the role, the candidate entities
and services, the span and the speaker's area) comes after a `prefix`: the conversational call's
messages, byte for byte, when both calls go to the same model. Ollama keeps one prompt cache per
loaded model: a prompt of its own would evict the conversation's, and the next turn would
recompute its whole prompt; after the shared prefix, only the executor's own lines are computed,
and the conversation's prefix stays cached. The model's speech and thought are never in it.

The entities and services are ordered by what the span says (`relevance`): a small model picks
early from a list, so "unlock the front door" is put to the lock named Front Door before any
media player. The guard still trusts none of it.

The call never thinks (`think: false`): a thinking model would make a device wait on thoughts
about one short statement, and its thinking is not read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import ollama

from .model import GuardRefusal, Proposal, Registry
from .proposal import candidates, executor_messages, parse_proposal, proposal_schema

type Message = Mapping[str, str]


async def propose(
    client: ollama.AsyncClient,
    *,
    model: str,
    span: str,
    area: str | None,
    registry: Registry,
    keep_alive: str,
    num_ctx: int,
    prefix: Sequence[Message] = (),
) -> Proposal | GuardRefusal | None:
    """The model's proposal for `span` (None for "nothing to do"); model errors propagate.

    `prefix` (the conversational call's messages, or none) is sent first, unchanged.
    """
    shown = candidates(registry, span, area)
    response = await client.chat(
        model=model,
        messages=[*map(dict, prefix), *executor_messages(span, area, shown)],
        format=proposal_schema(shown, span),
        stream=False,
        keep_alive=keep_alive,
        think=False,
        # The same context window as every call to this model: Ollama reloads on a change.
        options={"temperature": 0, "num_ctx": num_ctx},
    )
    return parse_proposal(response.message.content or "")
