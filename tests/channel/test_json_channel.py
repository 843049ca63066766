"""The JSON channel: speech streams as it decodes, actions come only from the whole object."""

from __future__ import annotations

import json

import pytest
from llama_cpp.llama_grammar import json_schema_to_gbnf

from custom_components.alto.channel.json_channel import SCHEMA, THOUGHT_CHARS, JsonChannel


def run(raw: str, chunk: int) -> tuple[str, JsonChannel]:
    """Feed `raw` in chunks of `chunk` characters; the speech emitted and the channel."""
    channel = JsonChannel()
    spoken = "".join(channel.feed(raw[i : i + chunk]) for i in range(0, len(raw), chunk))
    spoken += channel.finalize()
    return spoken, channel


ANSWER = {
    "speech": 'I\'ll switch the "porch" light off.\nSee you — 🙂 later.',
    "actions": ["turn off the porch light", "  "],
    "thought": "The porch light is on; the person wants it off.",
}


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1000])
def test_speech_streams_and_actions_are_collected(chunk: int) -> None:
    """Any chunking: the decoded speech exactly, escapes included; blank actions dropped."""
    for ensure_ascii in (True, False):
        raw = json.dumps(ANSWER, ensure_ascii=ensure_ascii)
        spoken, channel = run(raw, chunk)
        assert spoken == ANSWER["speech"]
        assert channel.actions == ["turn off the porch light"]
        assert "porch light is on" not in spoken  # the thought is never spoken


def test_speech_is_emitted_before_the_object_is_complete() -> None:
    """The first words come out while the rest of the answer is still being generated."""
    channel = JsonChannel()
    assert channel.feed('{"speech": "Hello th') == "Hello th"
    assert channel.feed('ere", "actions": [') == "ere"
    assert channel.actions == []  # only the whole object is trusted for actions


def test_other_strings_are_never_spoken() -> None:
    """A key or value that is not the top-level speech stays silent, wherever it is."""
    raw = json.dumps({"thought": "secret", "actions": ["speech"], "speech": "Only this."})
    spoken, channel = run(raw, 4)
    assert spoken == "Only this."
    assert channel.actions == ["speech"]


@pytest.mark.parametrize(
    "raw",
    [
        '{"speech": "Cut mid-way", "actions": ["unlock the door"',
        '{"speech": "Prose after", "actions": ["x"], "thought": ""} and more',
        '["speech", "not an object"]',
        '{"speech": "Wrong type", "actions": "unlock the door", "thought": ""}',
    ],
)
def test_a_broken_answer_yields_no_action(raw: str) -> None:
    """Whatever was spoken stays spoken; an object that does not parse strictly acts on nothing."""
    _spoken, channel = run(raw, 5)
    assert channel.actions == []


def test_schema_orders_speech_first_and_the_thought_last_and_bounded() -> None:
    """Speech first, so decoding produces it first; the thought last, bounded by the grammar."""
    assert list(SCHEMA["properties"]) == ["speech", "actions", "thought"]
    assert set(SCHEMA["required"]) == {"speech", "actions", "thought"}
    grammar = json_schema_to_gbnf(json.dumps(SCHEMA))
    thought = next(line for line in grammar.splitlines() if line.startswith("thought ::="))
    assert thought.count("char") == THOUGHT_CHARS


ACTED = '{"speech": "Trying.", "actions": ["turn on the lamp"], "thought": ""}'


@pytest.mark.parametrize(
    ("raw", "spoken", "actions", "plain"),
    [
        (ACTED, "Trying.", ["turn on the lamp"], False),
        (f"```json\n{ACTED}\n```\n", "Trying.", ["turn on the lamp"], False),
        (f"<think>lamp? {ACTED}</think>{ACTED}", "Trying.", ["turn on the lamp"], False),
        (f"Here it is: {ACTED}", "Here it is: Trying.", [], True),
        (f"{ACTED} Hope that helps!", "Trying.", [], False),
        ("It is warm, `21` degrees.", "It is warm, 21 degrees.", [], True),
        ("Less <than> more", "Less <than> more", [], True),
    ],
)
def test_what_a_model_that_ignores_format_writes(
    raw: str, spoken: str, actions: list[str], plain: bool
) -> None:
    """Fences and think blocks dropped; prose spoken as prose; actions only from a bare object."""
    for chunk in (1, 3, 1000):
        said, channel = run(raw, chunk)
        assert said == spoken
        assert channel.actions == actions
        assert channel.plain is plain
