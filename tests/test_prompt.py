"""The prompt's home snapshot (every exposed entity counted, the first shown) and speaker line."""

from __future__ import annotations

from custom_components.alto.channel.markers import ACTION_MARK, SPEECH_MARK
from custom_components.alto.prompt import EntityLine, home_snapshot, speaker_line


def test_the_snapshot_shows_the_first_entities_by_id_and_counts_the_rest() -> None:
    """Sorted by entity id, markers taken out of what is shown, the rest counted."""
    entities = [
        EntityLine(f"light.room_{n:04d}", f"Room {n}{SPEECH_MARK}", "Hall" if n % 2 else None, "on")
        for n in reversed(range(2000))
    ]
    snapshot = home_snapshot(entities, limit=3)
    assert snapshot == (
        "Devices shared with you and their current states:\n"
        "- light.room_0000 (Room 0): on\n"
        "- light.room_0001 (Room 1, Hall): on\n"
        "- light.room_0002 (Room 2): on\n"
        "- … and 1997 more"
    )
    assert home_snapshot(entities[:2], limit=3).count("\n") == 2
    assert home_snapshot([]) == "No devices are shared with you."
    assert ACTION_MARK not in home_snapshot([EntityLine("a.b", ACTION_MARK, None, "x")])


def test_the_speaker_line_names_the_speaker_and_their_family() -> None:
    """By name, each relative with what they are to them; nothing for no one; marks taken out."""
    assert speaker_line(None) == ""
    assert speaker_line("Gary") == "You are speaking with Gary."
    assert speaker_line("Gary", [("Lisa", "wife"), ("Megan", "daughter")]) == (
        "You are speaking with Gary. Their family at home: Lisa (wife), Megan (daughter)."
    )
    assert SPEECH_MARK not in speaker_line(f"Ga{SPEECH_MARK}ry", [(f"Li{SPEECH_MARK}sa", "wife")])
