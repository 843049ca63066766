"""Forgetting reaches every place that kept the words of what was said.

The memory organ erases a forgotten memory from its store and journal, the reflect organ from
its turn logs, the surface organ its last thought. A memory is a verbatim quote of what someone
said, so the same words are kept elsewhere too; after every forget (`MemoryOrgan.async_on_forget`)
`forget_listener` erases them, whoever's memory it was (the words are matched, not owners):

- every conversation's turn buffer (`TurnBuffers.forget`): the next prompt never carries them,
  nor the turn that said them;
- the recorder's events holding them, and on SQLite their bytes (`recorded`);
- what Home Assistant keeps in memory of recent conversations (`erase_conversation_records`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from homeassistant.components.conversation import trace
from homeassistant.components.conversation.chat_log import DATA_CHAT_LOGS, Content
from homeassistant.core import HomeAssistant, callback

from ..const import LOGGER
from ..history import TurnBuffers
from .forgotten import Forgotten
from .recorded import recorded_eraser

if TYPE_CHECKING:
    from .organ import ForgetListener

ASSIST_PIPELINE = "assist_pipeline"


def forget_listener(hass: HomeAssistant, buffers: TurnBuffers) -> ForgetListener:
    """The listener that erases forgotten `texts` from `buffers`, the recorder and HA's records."""

    async def forgotten(_scope: str, texts: frozenset[str]) -> None:
        if not texts:
            return
        recorded_eraser(hass).async_erase(texts=texts)
        dropped = buffers.forget(texts)
        erase_conversation_records(hass, Forgotten.of(texts))
        LOGGER.debug("Forgotten words left %d turn buffer entries", dropped)

    return forgotten


@callback
def erase_conversation_records(hass: HomeAssistant, forgotten: Forgotten) -> None:
    """Erase the forgotten texts from what Home Assistant keeps of recent conversations.

    All of it is held in memory only; it is reached through HA's public names, no private one:

    - conversation traces (`conversation.trace`, the last three conversations): HA drops one
      only by clearing them all, so all go when one holds a forgotten text;
    - chat logs (`conversation.chat_log`, a conversation's content while its session lives):
      every turn holding one goes, the user's content and all that answered it;
    - Assist pipeline debug runs (`assist_pipeline`, the last ten runs of each pipeline): every
      run holding one goes.
    """
    if any(_holds_or_unreadable(forgotten, t) for t in trace.async_get_traces()):
        trace.async_clear_traces()
    for chat_log in (hass.data.get(DATA_CHAT_LOGS) or {}).values():
        kept = _kept_turns(chat_log.content, forgotten)
        if len(kept) < len(chat_log.content):
            provided = chat_log.llm_input_provided_index
            chat_log.llm_input_provided_index = sum(1 for i in kept if i < provided)
            chat_log.content = [chat_log.content[i] for i in kept]
    if ASSIST_PIPELINE in hass.config.components:
        _erase_pipeline_runs(hass, forgotten)


def _holds_or_unreadable(forgotten: Forgotten, conversation: trace.ConversationTrace) -> bool:
    """Whether the trace holds a forgotten text; a trace that cannot be read is not kept."""
    try:
        return forgotten.held_in(conversation.as_dict())
    except Exception:  # noqa: BLE001 - any agent's objects may be in a trace
        LOGGER.debug("A conversation trace could not be read", exc_info=True)
        return True


def _kept_turns(content: Sequence[Content], forgotten: Forgotten) -> list[int]:
    """Positions of the chat log's content to keep: the system prompt, and turns not holding.

    A turn is a user's content and everything after it until the next user content (the
    agent's answer, its tool calls and their results stay together).
    """
    turns: list[list[int]] = [[0]]  # the system prompt, rebuilt for each turn
    for position, item in enumerate(content[1:], start=1):
        if item.role == "user" or len(turns) == 1:
            turns.append([])
        turns[-1].append(position)
    return [
        position
        for n, turn in enumerate(turns)
        if n == 0 or not forgotten.held_in([content[i] for i in turn])
        for position in turn
    ]


def _erase_pipeline_runs(hass: HomeAssistant, forgotten: Forgotten) -> None:
    # The pipeline's package is loaded (it is an after-dependency): import it only now.
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        KEY_ASSIST_PIPELINE,
    )

    try:
        debug = hass.data[KEY_ASSIST_PIPELINE].pipeline_debug
        for runs in debug.values():
            for run_id in [i for i, run in runs.items() if forgotten.held_in(run.events)]:
                del runs[run_id]
    except (KeyError, AttributeError, TypeError):
        LOGGER.debug("No Assist pipeline debug runs to erase", exc_info=True)
