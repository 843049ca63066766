"""How far apart one memory's codes are when it is embedded another way (`memory_freshness`).

Run: scripts/bench, or .venv/bin/python scripts/benches/embedding_forms.py

After a start Alto embeds a few stored memories again and calls them embedded otherwise when the
cosine of their int8 codes and the stored ones falls below `memory_freshness.ALIKE`. This prints
that cosine, with multilingual-e5-small on llama.cpp (`tests/local_model.py`), for the household
set's first 64 memories embedded as a memory is now (E5's ``passage: `` prefix, the speaker's
name) and:

- the same texts again, one at a time (the stored codes were made in a batch of 64);
- as a store written before role prefixes and names stored them (each text as said);
- with the prefix but without the name;
- with the speaker's name changed by one letter (a renamed user).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from custom_components.alto.memory.pipeline import embedding_codes
from custom_components.alto.memory_organ.freshness import ALIKE
from tests.local_model import embed_model

DATA = Path(__file__).parent / "recall_data" / "household.json"
COUNT = 64


def _codes(texts: list[str]) -> np.ndarray:
    vectors, _tokens = embed_model()[0].embed(texts)
    return np.stack([embedding_codes(vector) for vector in vectors]).astype(np.float64)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dot = np.einsum("ij,ij->i", a, b)
    result: np.ndarray = dot / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return result


def main() -> None:
    """Print the table."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    said = data["utterances"][:COUNT]
    name = {person: person.title() for person in data["people"]}
    now = [f"passage: {name[u['speaker']]} said: {u['text']}" for u in said]
    stored = _codes(now)
    forms = {
        "the same text, embedded alone": np.concatenate([_codes([text]) for text in now]),
        "as said (before prefixes and names)": _codes([u["text"] for u in said]),
        "with the prefix, without the name": _codes([f"passage: {u['text']}" for u in said]),
        "the speaker renamed by one letter": _codes(
            [f"passage: {name[u['speaker']]}a said: {u['text']}" for u in said]
        ),
    }
    print(f"\ncosine of int8 codes against the form now, {COUNT} household memories")
    print("| embedded | min | median | max | below ALIKE |")
    print("|---|---|---|---|---|")
    for form, codes in forms.items():
        cos = _cosines(stored, codes)
        print(
            f"| {form} | {cos.min():.3f} | {np.median(cos):.3f} | {cos.max():.3f} "
            f"| {int((cos < ALIKE).sum())} of {COUNT} |"
        )
    print(f"ALIKE = {ALIKE}")


if __name__ == "__main__":
    main()
