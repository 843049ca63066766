"""Who a question means by a word of family: "my wife", "Mum", "Oma", "Leas Papa", "ma belle-mère".

A household tells Alto each person's mother, father and partner (`Kin`, by person). Every other
relation follows from those three (two mothers or two fathers: one parent and their partner of
the same sex): a child is someone whose mother or father one is, a sibling
shares a parent, a grandmother is a parent's mother, a mother-in-law a partner's mother. A word
of family is read in the question's language (`languages.Language.kin`) and is someone's: the
asker's after a possessive of their own ("my", "meine", "m'n", "notre") or when said alone as
people call a relative ("Mum", "Oma", "nonna"), or a named person's after their genitive
("Megan's mum", "Leas Papa"). "Mum" is a different person to each child who says it: that is why
it is read here, with the asker, and not as an alias every question shares.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .languages import Language
from .lexical import folded_words, language, without_clitic


@dataclass(frozen=True, slots=True)
class Kin:
    """One person's mother, father and partner (each another person's key) and sex ("f", "m").

    Each is None where the household did not say it.
    """

    mother: str | None = None
    father: str | None = None
    partner: str | None = None
    sex: str | None = None


type Family = Mapping[str, Kin]


def _parents(family: Family, person: str) -> set[str]:
    return set(_parents_by_sex(family, person))


def _parent(family: Family, person: str, which: str) -> set[str]:
    """Their mothers or fathers (`which`)."""
    wanted = "f" if which == "mother" else "m"
    return {p for p, sex in _parents_by_sex(family, person).items() if sex == wanted}


def _parents_by_sex(family: Family, person: str) -> dict[str, str]:
    """Each of their parents, "f" or "m".

    Their parents are whom the household named as mother or father and, where it named one only,
    that parent's partner. Each is a mother or a father by the sex told for them, else by the
    field they were named in (the partner: the other than the named one). So a child of two
    mothers, told as a mother and her partner, a woman, has two mothers and no father.
    """
    kin = family.get(person, Kin())
    by_field = {p: sex for p, sex in ((kin.mother, "f"), (kin.father, "m")) if p}
    if len(by_field) == 1:
        [(one, sex)] = by_field.items()
        one_is = family.get(one, Kin()).sex or sex
        partner = next(iter(sorted(_partners(family, one) - {person})), None)
        if partner:
            by_field[partner] = "m" if one_is == "f" else "f"
    return {p: family.get(p, Kin()).sex or sex for p, sex in by_field.items()}


def _partners(family: Family, person: str) -> set[str]:
    """Whom they named as partner and who named them, one way being enough."""
    named = family.get(person, Kin()).partner
    return {q for q, kin in family.items() if kin.partner == person} | ({named} if named else set())


def _children(family: Family, person: str) -> set[str]:
    """Whose mother or father they or their partner are."""
    own = {person, *_partners(family, person)}
    return {q for q in family if q not in own and _parents(family, q) & own}


def _of_all(family: Family, people: Iterable[str], step: str) -> set[str]:
    return {found for p in people for found in relatives(family, p, step)}


def _sex(family: Family, person: str) -> str | None:
    """As the household said, else "f" for someone's mother and "m" for someone's father."""
    if said := family.get(person, Kin()).sex:
        return said
    if any(kin.mother == person for kin in family.values()):
        return "f"
    return "m" if any(kin.father == person for kin in family.values()) else None


def relatives(family: Family, person: str, kind: str) -> set[str]:
    """The people who are `person`'s `kind` (a value of `Language.kin`).

    A kind ending ":f" or ":m" ("child:f": a daughter) leaves out those known to be of the other
    sex; someone whose sex is not known stays.
    """
    kind, _, sex = kind.partition(":")
    found = _related(family, person, kind)
    return {p for p in found if not sex or _sex(family, p) in (None, sex)}


def _related(family: Family, person: str, kind: str) -> set[str]:
    match kind:
        case "mother" | "father":
            return _parent(family, person, kind)
        case "parent":
            return _parents(family, person)
        case "partner":
            return _partners(family, person)
        case "child":
            return _children(family, person)
        case "sibling":
            parents = _parents(family, person)
            return {q for q in family if q != person and _parents(family, q) & parents}
        case "grandmother" | "grandfather" | "grandparent":
            return _of_all(family, _parents(family, person), kind.removeprefix("grand"))
        case "grandchild":
            return _of_all(family, _children(family, person), "child")
        case "mother_in_law" | "father_in_law" | "parent_in_law":
            return _of_all(family, _partners(family, person), kind.removesuffix("_in_law"))
        case "child_in_law":
            return _of_all(family, _children(family, person), "partner")
    return set()


def _possessor(
    word: str, lang: Language, asker: str | None, called: Mapping[str, str]
) -> str | None:
    """Whose relative the word before a word of family makes it, if anyone's."""
    if word in lang.possessives:
        return asker
    bare = word.removesuffix("'s").removesuffix("'")
    if bare in called:
        return called[bare]
    if lang.genitive and bare.endswith("s") and bare[:-1] in called:
        return called[bare[:-1]]
    return None


def meant(query: str, asker: str | None, family: Family, called: Mapping[str, str]) -> set[str]:
    """The people `query` names by a word of family, asked by `asker` (a key of `family`).

    `called` maps each person's name as written, casefolded ("megan"), to their key.
    """
    if not family:
        return set()
    lang = language(query)
    words = folded_words(query)
    bare = [without_clitic(word) for word in words]  # "son's" is a son
    found: set[str] = set()
    at = 0
    while at < len(words):
        for size in range(lang.kin_words, 0, -1):
            kind = lang.kin.get(" ".join(bare[at : at + size]))
            if kind is None:
                continue
            before = words[at - 1] if at else ""
            whose = _possessor(before, lang, asker, called)
            if whose is None and bare[at] in lang.kin_alone and before not in lang.possessives:
                whose = asker
            if whose is not None:
                found |= relatives(family, whose, kind)
            at += size - 1
            break
        at += 1
    return found - ({asker} if asker else set())


# How the turn's prompt names a relative (`relations`): each kind in this order, the first that
# holds, as a woman, a man, or either.
_LABELS = (
    ("partner", "wife", "husband", "partner"),
    ("mother", "mother", "mother", "mother"),
    ("father", "father", "father", "father"),
    ("child", "daughter", "son", "child"),
    ("sibling", "sister", "brother", "sibling"),
    ("grandmother", "grandmother", "grandmother", "grandmother"),
    ("grandfather", "grandfather", "grandfather", "grandfather"),
    ("grandchild", "granddaughter", "grandson", "grandchild"),
    ("mother_in_law", "mother-in-law", "mother-in-law", "mother-in-law"),
    ("father_in_law", "father-in-law", "father-in-law", "father-in-law"),
    ("child_in_law", "daughter-in-law", "son-in-law", "child-in-law"),
)


def relations(family: Family, person: str) -> list[tuple[str, str]]:
    """Everyone `family` relates to `person`, each with what they are to them, in English.

    "wife", "son", "mother-in-law": the prompt tells the model who the speaker's family are.
    """
    found: list[tuple[str, str]] = []
    named: set[str] = {person}
    for kind, woman, man, either in _LABELS:
        for other in sorted(_related(family, person, kind) - named):
            sex = _sex(family, other)
            found.append((other, woman if sex == "f" else man if sex == "m" else either))
            named.add(other)
    return found
