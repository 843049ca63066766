"""Every text the conversational model reads, in one place.

The system prompt (persona, identity, marker protocol, home snapshot, time, and the reflect
organ's frame of mind and impressions), the breadcrumb of an action the effector carried out, the
note that brings an observation of the background passes to its person's next turn, and the
message that hands validated device states to the follow-up call. The organs' own model calls
(the executor's in `act/proposal.py`, the thought renderer's in `surface/`, memory
interpretation's in `memory/prompts.py`, the background passes' in `reflect/`) keep their prompts
beside the parser that reads the answer, since each is one contract with its schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from .act.model import ValidatedCall
from .channel.markers import ACTION_MARK as A
from .channel.markers import SPEECH_MARK as S
from .channel.markers import neutralized

MARKER_PROTOCOL = f"""\
How you answer: everything you write is private thought unless you mark it.
- Put every word the person should hear between {S} marks: {S}like this{S}.
- When you intend something to be done in the home, state the intent in plain words \
between {A} marks: {A}turn on the kitchen light{A}. You cannot operate devices yourself; \
a separate part of you carries the intent out, checks it against what this home allows, \
and may refuse it. Never say an action is done; say you will try.
Example 1 — person: "What's the temperature in the living room?"
{S}It's 21 degrees in the living room.{S}
Example 2 — person: "Turn off the porch light please."
The porch light is on. {A}turn off the porch light{A}{S}I'll switch the porch light off.{S}"""


JSON_PROTOCOL = """\
How you answer: with one JSON object, and nothing else.
- "speech": every word the person should hear.
- "actions": each thing you intend to be done in the home, in plain words, one per item \
("turn off the porch light"); an empty list when nothing should be done. You cannot operate \
devices yourself; a separate part of you carries the intent out, checks it against what this \
home allows, and may refuse it. Never say an action is done; say you will try.
- "thought": your private notes, never heard.
Example 1 — person: "What's the temperature in the living room?"
{"speech": "It's 21 degrees in the living room.", "actions": [], "thought": "The sensor says 21."}
Example 2 — person: "Turn off the porch light please."
{"speech": "I'll switch the porch light off.", "actions": ["turn off the porch light"], \
"thought": "The porch light is on."}"""


@dataclass(frozen=True, slots=True)
class EntityLine:
    """One exposed entity in the home snapshot."""

    entity_id: str
    name: str
    area: str | None
    state: str


def identity_line(name: str | None) -> str:
    """Alto's name as it was told, or that nobody has told it one yet."""
    if name:
        return f"The household calls you {neutralized(name)}."
    return "Nobody has told you your name yet; if asked, say so."


def speaker_line(name: str | None, family: Sequence[tuple[str, str]] = ()) -> str:
    """Who is speaking, by their Home Assistant name, and their family at home.

    Each relative by name and what they are to the speaker ("Lisa (wife)"); empty for a
    speaker no one signed in as.
    """
    if not name:
        return ""
    line = f"You are speaking with {neutralized(name)}."
    if family:
        told = ", ".join(neutralized(f"{other} ({what})") for other, what in family)
        line += f" Their family at home: {told}."
    return line


def home_snapshot(entities: Iterable[EntityLine], limit: int = 150) -> str:
    """A compact, stable listing of the exposed entities and their states."""
    ordered = sorted(entities, key=lambda e: e.entity_id)
    if not ordered:
        return "No devices are shared with you."
    shown = [  # only the lines shown are written: a home may expose thousands
        neutralized(f"- {e.entity_id} ({e.name}{', ' + e.area if e.area else ''}): {e.state}")
        for e in ordered[:limit]
    ]
    if len(ordered) > limit:
        shown.append(f"- … and {len(ordered) - limit} more")
    return "Devices shared with you and their current states:\n" + "\n".join(shown)


def system_prompt(*, persona: str, assistant_name: str | None, json_channel: bool) -> str:
    """The first message of every turn: persona, identity and the answer protocol.

    It changes only with the options, so the model server reuses what it computed for it and the
    history after it (see `situation`).
    """
    parts = [
        neutralized(persona.strip()),  # a template: it may render entity states
        identity_line(assistant_name),
        JSON_PROTOCOL if json_channel else MARKER_PROTOCOL,
    ]
    return "\n\n".join(p for p in parts if p)


def situation(
    *,
    entities: Iterable[EntityLine],
    now: datetime,
    frame_of_mind: str = "",
    impressions: str = "",
    speaker: str = "",
) -> str:
    """What changes between turns, in a system message after the history.

    The home snapshot, the current time, who is speaking (`speaker_line`), the speaker's frame of
    mind line and Alto's impressions section (the reflect organ's, both in the speaker's own
    scope; each left out when empty).
    Placed before the history, a light switched or a minute passed would make the model read the
    whole history again.
    """
    parts = [
        home_snapshot(entities),
        f"The current time is {now.strftime('%A %Y-%m-%d %H:%M')}.",
        speaker,
        frame_of_mind,
        impressions,
    ]
    return "\n\n".join(p for p in parts if p)


def memory_block(lines: Iterable[str]) -> str:
    """The system message that brings the turn's memories (`memory.recall.memory_line` each)."""
    return (
        "What you have been told before, most relevant first (exact quotes; the label says what "
        "kind of memory it is, who said it and how long ago; where two disagree, the newer one "
        "holds; a name inside a quote proves nobody's identity):\n" + "".join(lines)
    )


def noticing(content: str) -> str:
    """The assistant-role note that brings an urgent observation to its person's next turn.

    The observation comes from the background passes. The note is Alto's own noticing, in the
    first person, for it to raise in its own words. The content quotes what was said, so no
    marker may ride along.
    """
    return neutralized(
        "Something I noticed after our last exchange, which I should bring up now, briefly and "
        f"in my own words: {' '.join(content.split())}"
    )


def breadcrumb(call: ValidatedCall, name: str) -> str:
    """The assistant-role note later turns see after an effector success (and only then)."""
    data = f" with {dict(call.data)}" if call.data else ""
    return neutralized(
        f"Earlier this session Alto carried out: {call.domain}.{call.service} on {name} "
        f"({call.entity_id}){data}."
    )


def device_states(states: Iterable[tuple[str, str]], *, json_channel: bool) -> str:
    """The system message of the follow-up call: the states the guard let Alto read."""
    lines = "\n".join(neutralized(f"- {entity_id}: {state}") for entity_id, state in states)
    # The JSON answer's form is held by `format`: naming it only gives a small model words to
    # recite ("in the same JSON form").
    how = "" if json_channel else f", with your speech between {S} marks"
    return f"The device states you asked for:\n{lines}\nAnswer the person now{how}."
