"""The executor: one fresh-context model call that turns an action span into a proposal.

It sees the span, the speaker's area and the exposed entities, nothing of the conversation, and
answers under a JSON-schema `format` whose enums list the exposed entity ids and services, so a
small model cannot emit a malformed shape. Both are ordered by what the span says
(`relevance`): a small model picks early from a list, so "unlock the front door" is put to the
lock named Front Door before any media player. The guard still trusts none of it.

The call never thinks (`think: false`): a thinking model would make a device wait on thoughts
about one short statement, and its thinking is not read.
"""

from __future__ import annotations

import ollama

from .model import GuardRefusal, Proposal, Registry
from .proposal import candidates, executor_messages, parse_proposal, proposal_schema


async def propose(
    client: ollama.AsyncClient,
    *,
    model: str,
    span: str,
    area: str | None,
    registry: Registry,
    keep_alive: str,
    num_ctx: int,
) -> Proposal | GuardRefusal | None:
    """The model's proposal for `span` (None for "nothing to do"); model errors propagate."""
    shown = candidates(registry, span, area)
    response = await client.chat(
        model=model,
        messages=executor_messages(span, area, shown),
        format=proposal_schema(shown, span),
        stream=False,
        keep_alive=keep_alive,
        think=False,
        # The same context window as every call to this model: Ollama reloads on a change.
        options={"temperature": 0, "num_ctx": num_ctx},
    )
    return parse_proposal(response.message.content or "")
