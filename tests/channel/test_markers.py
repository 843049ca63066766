"""The marker channel on chunk boundaries, truncation, unbalanced and nested markers."""

from __future__ import annotations

import pytest

from custom_components.alto.channel.markers import MarkerChannel


def run(deltas: list[str], *, fallback: bool = True) -> tuple[str, MarkerChannel]:
    """Feed the deltas through a channel; returns the speech and the channel."""
    channel = MarkerChannel(plain_reply_fallback=fallback)
    spoken = "".join(channel.feed(d) for d in deltas)
    spoken += channel.finalize()
    return spoken, channel


def every_split(text: str) -> list[list[str]]:
    """The text cut into two deltas at every position, and one character at a time."""
    return [[text[:i], text[i:]] for i in range(len(text) + 1)] + [list(text)]


REPLY = "thinking ¦Hello, Ana.¦ more thought ¤turn on the hall light¤ ¦It's on its way.¦ done"


@pytest.mark.parametrize("deltas", every_split(REPLY))
def test_any_chunking_gives_the_same_result(deltas: list[str]) -> None:
    """Wherever the stream is cut, the speech and the actions are the same."""
    spoken, channel = run(deltas)
    assert spoken == "Hello, Ana. It's on its way."
    assert channel.actions == ["turn on the hall light"]
    assert not channel.used_fallback


def test_speech_streams_as_it_arrives() -> None:
    """Speech comes out of the channel delta by delta, not at the end."""
    channel = MarkerChannel()
    assert channel.feed("¦Hel") == "Hel"
    assert channel.feed("lo wor") == "lo wor"
    assert channel.feed("ld¦ thought") == "ld"


def test_consecutive_speech_spans_join_with_one_space() -> None:
    """Speech spans join with one space, their outer whitespace trimmed."""
    spoken, _ = run(["¦ One. ¦¦Two.¦   ¦  Three.  ¦"])
    assert spoken == "One. Two. Three."


def test_inner_whitespace_is_kept_but_trailing_is_not() -> None:
    """Whitespace inside speech is kept; trailing whitespace is not."""
    spoken, _ = run(["¦a  b", "  ", "¦x¦c ¦"])
    assert spoken == "a  b c"


def test_truncated_stream_captures_the_open_action_span() -> None:
    """A stream cut inside an action span still captures the action."""
    spoken, channel = run(["¦Sure.¦ ¤lock the front", " door"])
    assert spoken == "Sure."
    assert channel.actions == ["lock the front door"]


def test_truncated_speech_keeps_what_was_said() -> None:
    """A stream cut inside speech keeps what was said."""
    spoken, channel = run(["¦I was saying somethi"])
    assert spoken == "I was saying somethi"
    assert channel.actions == []


def test_action_inside_speech_closes_the_speech() -> None:
    """An action mark inside speech closes the speech."""
    spoken, channel = run(["¦Okay ¤open the garage¤ I will.¦"])
    # "I will." is after the action closed, so it is thought; the dangling ¦ opens speech.
    assert spoken == "Okay"
    assert channel.actions == ["open the garage"]


def test_speech_mark_inside_action_is_dropped() -> None:
    """A speech mark inside an action span is dropped from the action."""
    spoken, channel = run(["¤turn ¦off¦ the fan¤ ¦Done soon.¦"])
    assert channel.actions == ["turn off the fan"]
    assert spoken == "Done soon."


def test_unbalanced_close_only() -> None:
    """A lone speech mark opens speech: only what follows it is spoken."""
    spoken, channel = run(["no open ¦ then words"])
    # A lone mark opens speech: what follows it is spoken, what precedes it is thought.
    assert spoken == "then words"
    assert channel.saw_marker


def test_empty_action_spans_are_ignored() -> None:
    """Empty or blank action spans capture nothing."""
    _, channel = run(["¤ ¤ ¤¤ ¦hi¦"])
    assert channel.actions == []


def test_no_marker_is_spoken_plainly_when_fallback_is_on() -> None:
    """With the fallback on, a reply without markers is spoken plainly."""
    spoken, channel = run(["Plain ", "answer. "])
    assert spoken == "Plain answer."
    assert channel.used_fallback


def test_no_marker_is_silent_when_fallback_is_off() -> None:
    """With the fallback off, a reply without markers says nothing."""
    spoken, channel = run(["Plain answer."], fallback=False)
    assert spoken == ""
    assert not channel.used_fallback
    assert not channel.spoke


def test_only_thought_with_markers_is_silent() -> None:
    """A reply with markers but no speech says nothing, and is no fallback."""
    spoken, channel = run(["I think ¤¤ nothing"])
    assert spoken == ""
    assert not channel.used_fallback


def test_multiple_actions_in_order() -> None:
    """Several actions are captured in order, an unclosed last one included."""
    _, channel = run(["¤a¤¤b¤", "¤c"])
    assert channel.actions == ["a", "b", "c"]
