"""The per-document mention test that the Surfacer's prefilter replaced, kept as the reference."""

from __future__ import annotations

from custom_components.alto.surface.cues import find_cues
from custom_components.alto.surface.store_view import Needle, _could_mention, _skeleton


def mentions(document: str, name: str, needle: Needle | None) -> bool:
    """`name` occurs in `document` as whole words, exactly as a cue would find it."""
    if not _could_mention(_skeleton(document), needle):
        return False  # the cheap necessary condition fails: no cue can match
    return bool(find_cues(document, [name], limit=1))
