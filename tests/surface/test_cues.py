"""Cues: names the store knows that the utterance contains."""

from __future__ import annotations

import pytest

from custom_components.alto.surface import cues
from custom_components.alto.surface.cues import CueIndex, find_cues

NAMES = ["Tom", "Maria", "the boiler", "Grandma Rose", "Rose", "Biscuit"]


def test_names_in_the_utterance_are_cued_longest_first() -> None:
    """Names in the utterance are cued longest first."""
    assert find_cues("Did Maria ring about the boiler?", NAMES) == ["the boiler", "Maria"]


def test_matching_is_casefolded() -> None:
    """Matching is casefolded."""
    assert find_cues("MARIA said THE BOILER is fine", NAMES) == ["the boiler", "Maria"]


def test_whole_words_only() -> None:
    """Whole words only."""
    assert find_cues("Tomorrow the Tomlinsons walk Biscuits", NAMES) == []


def test_possessive_names_its_owner() -> None:
    """Possessive names its owner."""
    assert find_cues("Is it Maria's turn or Tom’s?", NAMES) == ["Maria", "Tom"]


@pytest.mark.parametrize(
    ("utterance", "names", "cued"),
    [
        ("Wann hat Omas Katze Geburtstag?", ["Oma"], ["Oma"]),
        ("Waar staat Sannes fiets eigenlijk?", ["Sanne"], ["Sanne"]),
        ("Tomorrow the Tomlinsons walk Biscuits", ["Biscuit"], []),  # English: a plural
        ("Est-ce que le chat d'Anna est rentré ?", ["Anna"], ["Anna"]),
        ("Il gatto dell'Anna è a casa?", ["Anna"], ["Anna"]),
        ("Ist unser Kessel schon gewartet?", ["der Kessel"], ["der Kessel"]),
        ("¿Cuándo viene nuestra abuela?", ["la abuela"], ["la abuela"]),
        ("Is onze buurvrouw thuis?", ["de buurvrouw"], ["de buurvrouw"]),
    ],
)
def test_a_name_is_cued_as_each_language_says_it(
    utterance: str, names: list[str], cued: list[str]
) -> None:
    """A genitive "s" where German and Dutch write one, an elision, any language's article."""
    assert find_cues(utterance, names) == cued


def test_leading_article_is_optional() -> None:
    """Leading article is optional."""
    assert find_cues("our boiler is banging again", NAMES) == ["the boiler"]


def test_longer_name_containing_a_shorter_one_wins() -> None:
    """Longer name containing a shorter one wins."""
    assert find_cues("Grandma Rose is coming", NAMES) == ["Grandma Rose"]


def test_a_separate_mention_of_the_shorter_name_still_counts() -> None:
    """A separate mention of the shorter name still counts."""
    assert find_cues("Grandma Rose and Rose next door", NAMES) == ["Grandma Rose", "Rose"]


def test_at_most_limit() -> None:
    """At most limit."""
    said = "Tom, Maria, Biscuit and the boiler"
    assert find_cues(said, NAMES) == ["the boiler", "Biscuit", "Maria"]
    assert find_cues(said, NAMES, limit=1) == ["the boiler"]
    assert find_cues(said, NAMES, limit=0) == []


def test_equal_lengths_keep_utterance_order_then_name_order() -> None:
    """Equal lengths keep utterance order then name order."""
    assert find_cues("Ann met Bob", ["Bob", "Ann"]) == ["Ann", "Bob"]
    assert find_cues("Ann", ["ann", "Ann"]) == ["ann"]


def test_a_name_is_returned_once() -> None:
    """A name is returned once."""
    assert find_cues("Tom and Tom and Tom", NAMES) == ["Tom"]


def test_unicode_names() -> None:
    """Unicode names."""
    names = ["Zoë", "José María", "Ōkubo"]
    assert find_cues("zoë and JOSÉ MARÍA met Ōkubo-san", names) == ["José María", "Ōkubo", "Zoë"]
    assert find_cues("Zoe came", names) == []


def test_composed_and_decomposed_accents_match() -> None:
    """Composed and decomposed accents match."""
    assert find_cues("Zoe\u0308 is here", ["Zo\u00eb"]) == ["Zo\u00eb"]


def test_names_may_be_any_iterable() -> None:
    """Names may be any iterable."""
    assert find_cues("Maria", (n for n in NAMES)) == ["Maria"]


def test_nothing_to_find() -> None:
    """Nothing to find."""
    assert find_cues("", NAMES) == []
    assert find_cues("hello there", []) == []
    assert find_cues("hello there", ["", "  ", "!!"]) == []


# --- the index: each name segmented once ---------------------------------------------------------


def counting_keys(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every name `CueIndex.build` segments."""
    segmented: list[str] = []
    keys = cues._keys

    def recording(name: str) -> tuple[tuple[str, ...], ...]:
        segmented.append(name)
        return keys(name)

    monkeypatch.setattr(cues, "_keys", recording)
    return segmented


def test_an_index_finds_what_find_cues_finds() -> None:
    """One index answers every utterance as `find_cues` would."""
    index = CueIndex.build(NAMES)
    for said in ("Did Maria ring about the boiler?", "Grandma Rose and Rose next door", "hello"):
        assert index.find(said) == find_cues(said, NAMES)
    assert index.find("Tom, Maria, Biscuit and the boiler", limit=1) == ["the boiler"]


def test_a_new_index_segments_only_names_no_earlier_index_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keys are reused from earlier indexes; only a new name is segmented."""
    segmented = counting_keys(monkeypatch)
    household = CueIndex.build(["Tom", "Maria"])
    private = CueIndex.build(["Biscuit"])
    assert segmented == ["Tom", "Maria", "Biscuit"]
    both = CueIndex.build(["Maria", "Biscuit", "the boiler"], household, private)
    assert segmented == ["Tom", "Maria", "Biscuit", "the boiler"]
    assert both.keys["Maria"] is household.keys["Maria"]
    assert both.find("Maria fed Biscuit by the boiler") == ["the boiler", "Biscuit", "Maria"]


def test_a_name_left_out_of_the_new_index_is_no_cue() -> None:
    """An index holds only the names it was built from, whatever an earlier one held."""
    earlier = CueIndex.build(NAMES)
    later = CueIndex.build(["Maria"], earlier)
    assert "Tom" not in later.keys
    assert later.find("Tom and Maria") == ["Maria"]
