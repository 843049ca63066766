"""Nothing of the answer object, and nothing of Alto's instructions, is ever spoken.

A property over a family of raw answers, well-formed and not: every prefix of each (a stream
may end anywhere) goes through the JSON channel and the speech gate, split into deltas at random
places, and what is spoken never holds a brace, a quoted key of the object, "JSON", or four
words in a row of the instructions `prompt.py` gives the model. A well-formed object speaks
exactly its speech, and plain text from a model that ignored `format` is spoken as it is.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
import re
from collections.abc import Iterator

import pytest

from custom_components.alto.channel.json_channel import JsonChannel
from custom_components.alto.channel.markers import neutralized
from custom_components.alto.channel.speech_gate import SpeechGate
from custom_components.alto.prompt import JSON_PROTOCOL, MARKER_PROTOCOL, device_states

SPEECHES = (
    "It's 21 degrees in the living room.",
    'I\'ll switch the "porch" light off.\nSee you — 🙂 later.',
    "Sure! Maria said she walks the dog at seven, so the hall lamp can wait.",
    "Klar, ich schaue nach. Die Heizung steht auf 21 Grad.",
    "Ok",
)
STATES = device_states([("light.porch", "on")], json_channel=True)
# What the model is told, without the examples (their speech is ordinary speech) and without
# what is quoted or marked (an example action, a key name): the instructions' own words.
INSTRUCTIONS = tuple(
    neutralized(re.sub(r'"[^"]*"|¦(?! )[^¦]*¦|¤(?! )[^¤]*¤', " ", text.split("Example 1")[0]))
    for text in (
        JSON_PROTOCOL,
        MARKER_PROTOCOL,
        device_states([], json_channel=True),
        device_states([], json_channel=False),
    )
)
INSTRUCTION_SENTENCES = tuple(
    sentence.strip(" -")
    for text in INSTRUCTIONS
    for sentence in re.split(r"(?<=[.:])\s+|\n", text)
    if len(sentence.split()) >= 4
)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


RECITED = frozenset(
    tuple(words[i : i + 4])
    for text in INSTRUCTIONS
    for words in [_words(text)]
    for i in range(len(words) - 3)
)


def answer(speech: str, **fields: object) -> str:
    """A reply object as a constrained model writes it."""
    return json.dumps({"speech": speech, "actions": [], "thought": "", **fields})


def well_formed() -> Iterator[tuple[str, str]]:
    """(raw answer, its speech): objects in any key order and escaping, fenced or not."""
    for speech in SPEECHES:
        yield answer(speech), speech
        yield json.dumps({"speech": speech}, ensure_ascii=False, indent=2), speech
        yield (
            json.dumps({"thought": "the speech is {x}", "actions": ["unlock"], "speech": speech}),
            speech,
        )
        yield f"```json\n{answer(speech)}\n```", speech
        yield f'<think>Use {{"speech": ...}} here.</think>\n{answer(speech)}', speech
        yield answer(answer(speech)), speech  # an answer object written inside the speech


def malformed() -> Iterator[str]:
    """Answers no listener should hear any syntax of."""
    yield "{"
    yield '{"speech": "{", "actions": [], "thought": ""}'
    yield '{"speech": "{\\"speech\\": \\"Hel'
    yield '"speech": "Hello there", "actions": [], "thought": "none"'
    yield '{"actions": ["unlock the front door"], "thought": "the \\"speech\\" key"}'
    yield '{"speech": "\\"speech\\": \\"Hi\\", \\"actions\\": [], \\"thought\\": \\"\\""}'
    yield '{"speech": "Set it to {temp} now", "actions": [], "thought": ""}'
    yield '{"speech": "Okay } then {", "actions": []}'
    yield f"Here is my answer: {answer(SPEECHES[0])} Hope that helps!"
    yield f"Sure.\n```json\n{answer(SPEECHES[2])}\n```\n"
    yield f"``` {answer(SPEECHES[1])} ```"
    yield answer(STATES)
    yield answer("Answer the person now, in the same JSON form.")
    yield answer("Okay. " + JSON_PROTOCOL)
    yield answer(MARKER_PROTOCOL)
    yield MARKER_PROTOCOL
    yield JSON_PROTOCOL
    for sentence in INSTRUCTION_SENTENCES:
        yield answer(sentence)
        yield sentence


def splits(raw: str, rng: random.Random) -> list[str]:
    """`raw` cut into deltas of 1 to 9 characters."""
    cuts = [0]
    while cuts[-1] < len(raw):
        cuts.append(min(len(raw), cuts[-1] + rng.randint(1, 9)))
    return [raw[a:b] for a, b in itertools.pairwise(cuts)]


def every_prefix(raw: str, seed: int) -> Iterator[tuple[int, str]]:
    """(prefix length, what is spoken when the stream ends there), for every prefix of `raw`."""
    rng = random.Random(seed)
    channel, gate = JsonChannel(), SpeechGate(lambda: False)
    spoken = ""
    fed = 0
    for delta in splits(raw, rng):
        for end in range(1, len(delta)):  # the stream ends inside this delta
            c, g = copy.deepcopy(channel), copy.deepcopy(gate)
            said = spoken + g.feed(c.feed(delta[:end]))
            yield fed + end, said + g.feed(c.finalize()) + g.finalize()
        spoken += gate.feed(channel.feed(delta))
        fed += len(delta)
        c, g = copy.deepcopy(channel), copy.deepcopy(gate)
        yield fed, spoken + g.feed(c.finalize()) + g.finalize()


def assert_silent_syntax(spoken: str) -> None:
    """Nothing of the object's syntax or of the instructions is in `spoken`."""
    for fragment in ("{", "}", '"speech"', '"actions"', '"thought"'):
        assert fragment not in spoken
    words = _words(spoken)
    assert "json" not in words
    recited = {tuple(words[i : i + 4]) for i in range(len(words) - 3)} & RECITED
    assert not recited, recited


@pytest.mark.parametrize(("raw", "speech"), list(well_formed()))
def test_a_well_formed_answer_speaks_exactly_its_speech(raw: str, speech: str) -> None:
    """Every prefix speaks no syntax; the whole speaks the speech, whatever the deltas."""
    for seed in range(3):
        for _end, spoken in every_prefix(raw, seed):
            assert_silent_syntax(spoken)
        assert spoken == speech


@pytest.mark.parametrize("raw", list(malformed()))
def test_a_malformed_answer_speaks_no_syntax(raw: str) -> None:
    """Whatever the model wrote and wherever the stream ends, no syntax and no instruction."""
    for seed in range(2):
        for _end, spoken in every_prefix(raw, seed):
            assert_silent_syntax(spoken)


@pytest.mark.parametrize("speech", SPEECHES)
def test_plain_text_is_spoken_as_plain_text(speech: str) -> None:
    """A model that ignored `format` and wrote text: the text, as it streams."""
    for seed in range(3):
        spoken = ""
        for _end, spoken in every_prefix(speech, seed):
            assert speech.startswith(spoken.strip()) or not spoken.strip()
        assert spoken == speech


def test_the_instructions_are_the_family() -> None:
    """The family recites every instruction sentence (so a new one is covered by the above)."""
    assert len(INSTRUCTION_SENTENCES) >= 10
    assert all(len(_words(s)) >= 4 for s in INSTRUCTION_SENTENCES)
