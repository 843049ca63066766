"""Each translation says all that `strings.json` says, with the same placeholders (hassfest-style).

`strings.json` is the source; `translations/en.json` is exactly it; German, French, Spanish, Dutch
and Italian (the languages the confirmation words cover) carry every key and no other, and each
string names the same `{placeholders}` as the English one. Like hassfest, a string may hold no
markup and no single-quoted placeholder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).parents[2] / "custom_components" / "alto"
LANGUAGES = ("de", "fr", "es", "nl", "it")
PLACEHOLDER = re.compile(r"\{(\w+)\}")
MARKUP = re.compile(r"<[a-zA-Z/!][^>]*>")  # hassfest's string_with_no_html rejects tags
SINGLE_QUOTED_PLACEHOLDER = re.compile(r"'\{\w+\}'")


def flatten(tree: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every leaf."""
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from flatten(value, path)
        else:
            yield path, value


def strings_of(path: Path) -> dict[str, Any]:
    """A strings file's leaves by dotted key."""
    return dict(flatten(json.loads(path.read_text(encoding="utf-8"))))


SOURCE = strings_of(PACKAGE / "strings.json")


def problems(source: dict[str, Any], translated: dict[str, Any]) -> list[str]:
    """What a translation gets wrong against the source: keys, placeholders, markup."""
    found = [f"missing {key}" for key in source.keys() - translated.keys()]
    found += [f"extra {key}" for key in translated.keys() - source.keys()]
    for key in source.keys() & translated.keys():
        text = translated[key]
        if not isinstance(text, str) or not text.strip():
            found.append(f"{key}: not a text")
            continue
        if set(PLACEHOLDER.findall(text)) != set(PLACEHOLDER.findall(source[key])):
            found.append(f"{key}: placeholders differ from the English ones")
        if MARKUP.search(text) or SINGLE_QUOTED_PLACEHOLDER.search(text):
            found.append(f"{key}: markup or a single-quoted placeholder")
    return sorted(found)


def test_english_is_strings_json() -> None:
    """`translations/en.json` is what HA loads at run time: exactly the source."""
    english = json.loads((PACKAGE / "translations" / "en.json").read_text(encoding="utf-8"))
    assert english == json.loads((PACKAGE / "strings.json").read_text(encoding="utf-8"))


def test_the_source_is_valid() -> None:
    """The source itself holds no markup and no single-quoted placeholder."""
    assert problems(SOURCE, SOURCE) == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_translation_has_every_key_and_the_same_placeholders(language: str) -> None:
    """One file per language, every key of the source and no other, placeholders as in English."""
    assert problems(SOURCE, strings_of(PACKAGE / "translations" / f"{language}.json")) == []


def test_the_check_finds_each_kind_of_problem() -> None:
    """A missing key, an extra key, a renamed placeholder and markup are each reported."""
    source = {"a": "Hello {name}", "b": "Bye"}
    translated = {"a": "Hallo {naam}", "c": "Extra", "b": "<b>Tschüss</b>"}
    assert problems(source, translated) == [
        "a: placeholders differ from the English ones",
        "b: markup or a single-quoted placeholder",
        "extra c",
    ]
    assert problems(source, {"a": "Hallo {name}"}) == ["missing b"]
