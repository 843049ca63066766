"""Words of family read as the people they mean to whoever asks, in every language Alto speaks."""

from __future__ import annotations

import pytest

from custom_components.alto.memory.kin import Family, Kin, meant, relations, relatives
from custom_components.alto.memory.languages import LANGUAGES

# Rosa is Ana's mother; Ana and Ben are partners; Leo (a boy) and Mia are their children, though
# only Ana is named as Leo's mother and only Ben as Mia's father.
FAMILY: Family = {
    "ana": Kin(mother="rosa", partner="ben"),
    "leo": Kin(mother="ana", sex="m"),
    "mia": Kin(father="ben", sex="f"),
    "rosa": Kin(),
    "ben": Kin(),
}
CALLED = {person: person for person in FAMILY}

# (language, question, asker, the people it means)
CASES = [
    ("en", "When is my wife's dentist?", "ben", {"ana"}),
    ("en", "What does my husband drink?", "ana", {"ben"}),
    ("en", "Where is Mum working today?", "leo", {"ana"}),
    ("en", "Where is Mum working today?", "ana", {"rosa"}),
    ("en", "When is my son's swimming?", "ben", {"leo"}),
    ("en", "Who teaches our daughter?", "ana", {"mia"}),
    ("en", "What can't Grandma eat?", "mia", {"rosa"}),
    ("en", "When is my mother-in-law coming?", "ben", {"rosa"}),
    ("en", "Where's my brother's bike?", "mia", {"leo"}),
    ("en", "What does Leo's dad do?", "rosa", {"ben"}),
    ("en", "When are my grandkids off school?", "rosa", {"leo", "mia"}),
    ("de", "Wann hat meine Frau Geburtstag?", "ben", {"ana"}),
    ("de", "Wann kommt Oma?", "leo", {"rosa"}),
    ("de", "Was isst Mama gern?", "mia", {"ana"}),
    ("de", "Wo trainiert mein Sohn?", "ana", {"leo"}),
    ("de", "Wann hat Leos Schwester Schwimmen?", "rosa", {"mia"}),
    ("de", "Wann besucht uns meine Schwiegermutter?", "ben", {"rosa"}),
    ("de", "Wann kommt Frau Schmidt?", "ben", set()),
    ("nl", "Wanneer is mijn vrouw jarig?", "ben", {"ana"}),
    ("nl", "Hoe laat komt oma?", "mia", {"rosa"}),
    ("nl", "Waar werkt mam?", "leo", {"ana"}),
    ("nl", "Hoe laat moet m'n dochter naar school?", "ana", {"mia"}),
    ("nl", "Wanneer komt mijn schoonmoeder?", "ben", {"rosa"}),
    ("nl", "Waar zit mijn broertje op school?", "mia", {"leo"}),
    ("fr", "Quand ma femme rentre-t-elle?", "ben", {"ana"}),
    ("fr", "Que mange mamie?", "leo", {"rosa"}),
    ("fr", "Quand arrive ma belle-mère?", "ben", {"rosa"}),
    ("fr", "Où joue mon fils?", "ana", {"leo"}),
    ("es", "¿Cuándo es el cumpleaños de mi mujer?", "ben", {"ana"}),
    ("es", "¿Qué come la abuela?", "mia", {"rosa"}),
    ("es", "¿Dónde trabaja mi suegra?", "ben", {"rosa"}),
    ("es", "¿A qué hora entrena mi hija?", "ana", {"mia"}),
    ("it", "Quando è il compleanno di mia moglie?", "ben", {"ana"}),
    ("it", "Cosa mangia la nonna?", "leo", {"rosa"}),
    ("it", "Dove lavora mia suocera?", "ben", {"rosa"}),
    ("it", "A che ora gioca mio figlio?", "ana", {"leo"}),
]


@pytest.mark.parametrize(("code", "question", "asker", "people"), CASES)
def test_a_word_of_family_means_the_askers_relative(
    code: str, question: str, asker: str, people: set[str]
) -> None:
    """Each language's words of family, after a possessive, alone, or after a name's genitive."""
    assert meant(question, asker, FAMILY, CALLED) == people


@pytest.mark.parametrize("code", sorted(LANGUAGES))
def test_every_language_names_every_relation(code: str) -> None:
    """Each language has words for every relation, and says some of them alone."""
    lang = LANGUAGES[code]
    kinds = {kind.partition(":")[0] for kind in lang.kin.values()}
    assert kinds == {
        "mother",
        "father",
        "parent",
        "partner",
        "child",
        "sibling",
        "grandmother",
        "grandfather",
        "grandparent",
        "grandchild",
        "mother_in_law",
        "father_in_law",
        "parent_in_law",
        "child_in_law",
    }
    assert lang.kin_alone <= lang.kin.keys()
    assert lang.possessives


def test_a_question_without_a_family_or_asker_names_no_one_by_a_possessive() -> None:
    """No family told: nothing. No asker: "my" is no one's, a name's genitive still counts."""
    assert meant("When is my wife's birthday?", "ben", {}, CALLED) == set()
    assert meant("When is my wife's birthday?", None, FAMILY, CALLED) == set()
    assert meant("When is Ben's wife's birthday?", None, FAMILY, CALLED) == {"ana"}


def test_the_asker_is_never_their_own_relative() -> None:
    """Ana asking about "my mum" never gets herself, even where the family loops back."""
    looped: Family = {"ana": Kin(mother="ana")}
    assert meant("Where is my mum?", "ana", looped, {"ana": "ana"}) == set()


def test_relations_follow_from_mother_father_and_partner() -> None:
    """Children through either partner, siblings, in-laws; a mother or father's sex is known."""
    assert relatives(FAMILY, "ben", "child") == {"leo", "mia"}
    assert relatives(FAMILY, "leo", "sibling") == {"mia"}
    assert relatives(FAMILY, "leo", "father") == {"ben"}  # Ana's partner
    assert relatives(FAMILY, "ben", "mother_in_law") == {"rosa"}
    assert relatives(FAMILY, "rosa", "child_in_law:m") == {"ben"}
    assert relatives(FAMILY, "ben", "partner:f") == {"ana"}  # Leo's mother
    assert relatives(FAMILY, "ana", "partner:f") == set()  # Ben is Mia's father
    assert relatives(FAMILY, "rosa", "grandchild:f") == {"mia"}


# Marieke and Sanne, two women, are partners; only Marieke is named as their children's mother.
TWO_MOTHERS: Family = {
    "marieke": Kin(mother="ria", partner="sanne", sex="f"),
    "sanne": Kin(sex="f"),
    "daan": Kin(mother="marieke", sex="m"),
    "lotte": Kin(mother="marieke", sex="f"),
    "ria": Kin(sex="f"),
}


def test_a_parent_s_partner_of_the_same_sex_is_a_second_parent_of_that_sex() -> None:
    """Two mothers, told as a mother and her partner, a woman: no one is their father."""
    assert relatives(TWO_MOTHERS, "daan", "mother") == {"marieke", "sanne"}
    assert relatives(TWO_MOTHERS, "daan", "father") == set()
    assert relatives(TWO_MOTHERS, "daan", "parent") == {"marieke", "sanne"}
    assert relatives(TWO_MOTHERS, "sanne", "child") == {"daan", "lotte"}
    assert relatives(TWO_MOTHERS, "lotte", "sibling") == {"daan"}
    assert relatives(TWO_MOTHERS, "daan", "grandmother") == {"ria"}
    called = {person: person for person in TWO_MOTHERS}
    assert meant("Waar werkt mama vandaag?", "lotte", TWO_MOTHERS, called) == {"marieke", "sanne"}
    assert meant("Where is Dad?", "lotte", TWO_MOTHERS, called) == set()


def test_a_parent_is_a_mother_or_father_by_the_sex_told_for_them() -> None:
    """Sanne named in the father's field but told to be a woman is a mother."""
    family: Family = {**TWO_MOTHERS, "daan": Kin(mother="marieke", father="sanne", sex="m")}
    assert relatives(family, "daan", "mother") == {"marieke", "sanne"}
    assert relatives(family, "daan", "father") == set()


@pytest.mark.parametrize(("told", "father"), [(None, {"ben"}), ("m", {"ben"}), ("f", set())])
def test_the_one_parent_s_partner_is_the_other_parent_unless_told_otherwise(
    told: str | None, father: set[str]
) -> None:
    """Ana named as Leo's mother: her partner Ben is his father unless told to be a woman."""
    family: Family = {**FAMILY, "ben": Kin(sex=told)}
    assert relatives(family, "leo", "father") == father
    assert relatives(family, "leo", "mother") == {"ana"} | ({"ben"} if told == "f" else set())


def test_the_prompt_names_each_relative_once_by_what_they_are() -> None:
    """The closest relation first, by sex where it is known, everyone else of the family once."""
    assert relations(FAMILY, "ben") == [
        ("ana", "wife"),
        ("leo", "son"),
        ("mia", "daughter"),
        ("rosa", "mother-in-law"),
    ]
    assert relations(FAMILY, "leo") == [
        ("ana", "mother"),
        ("ben", "father"),
        ("mia", "sister"),
        ("rosa", "grandmother"),
    ]
    assert relations(FAMILY, "rosa") == [
        ("ana", "daughter"),
        ("leo", "grandson"),
        ("mia", "granddaughter"),
        ("ben", "son-in-law"),
    ]
