"""The turn's memory block: informative rows only, lexical and cosine fused, newer wins."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

import numpy as np
import pytest

from custom_components.alto.memory import recall, update_link
from custom_components.alto.memory.corpus import Corpus
from custom_components.alto.memory.informative import is_informative
from custom_components.alto.memory.instructions import EmbeddingInstructions, instructions_for
from custom_components.alto.memory.lexical import (
    IDF_BITS,
    PREFIX,
    idf,
    log2_fixed,
    related,
    terms,
    with_names,
)
from custom_components.alto.memory.recall import (
    DAY_S,
    UPDATING,
    memory_line,
    rank,
)
from custom_components.alto.memory.records import KIND_EXPLICIT, KIND_SOURCE, Row

from .recall_reference import Similarity, bm25, document, lexical_document

ALICE = "a" * 32
DAY0 = 1_790_000_000


def row(
    row_id: int, text: str, *, day: int = 0, kind: int | str = KIND_SOURCE, actor: str = ALICE
) -> Row:
    """A household row said on `day`."""
    return Row(
        id=row_id,
        document=text,
        kind=kind,
        owner="household",
        scope="household",
        actor=actor,
        source_id=f"s{row_id}",
        source_version=1,
        offset=0,
        length=len(text.encode()),
        said_at=DAY0 + day * DAY_S if day >= 0 else 0,
    )


@pytest.mark.parametrize(
    ("text", "informative"),
    [
        ("Sofia's swimming lessons are on Wednesdays at five.", True),
        ("When is Sofia's swimming?", False),
        ("when is sofias swimming", False),  # speech to text may leave no punctuation
        ("Will is coming on Friday.", True),  # a name, not an auxiliary
        ("Thanks!", False),
        ("OK great, good night.", False),
        ("Hello there.", False),
        ("Goodnight!", False),
        ("Fine, whatever.", False),
        ("Thanks, that'll do.", False),
        ("Thank you, computer!", False),  # the assistant addressed
        ("That will do the job until Friday.", True),
        ("Turn off the kitchen lights.", False),
        ("Please set the thermostat to 20.", False),
        ("Turn off the lights. My sister Ana is coming at 7.30.", True),  # one sentence tells
        ("Remember that the spare key is under the blue pot.", True),
        ("Don't forget the bins go out on Tuesday.", True),
        ("The bus comes at 7.30 now, is that right?", False),  # one question, not split at 7.30
        ("", False),
        ("?!", False),
    ],
)
def test_what_is_informative(text: str, informative: bool) -> None:
    """Which texts are informative and which are not."""
    assert is_informative(text) is informative


def test_terms_fold_case_clitics_and_stems() -> None:
    """Terms fold case and clitics, and are stemmed."""
    assert terms("Sofia's swimming LESSONS are on Wednesdays") == {
        "sofia": 1,
        "swim": 1,
        "lesson": 1,
        "wednesday": 1,
    }


@pytest.mark.parametrize(
    "value", [Fraction(1), Fraction(3, 2), Fraction(10), Fraction(2**40 + 1, 7)]
)
def test_log2_fixed_is_the_floor_of_the_scaled_logarithm(value: Fraction) -> None:
    """`log2_fixed` is the floor of the scaled logarithm."""
    exact = math.log2(value) * 2**16
    assert log2_fixed(value) in (math.floor(exact), math.floor(exact) - 1)
    assert log2_fixed(value) == log2_fixed(value)  # integers only: the same everywhere


def test_log2_fixed_refuses_values_below_one() -> None:
    """`log2_fixed` refuses values below one."""
    with pytest.raises(ValueError, match="needs a value of at least 1"):
        log2_fixed(Fraction(1, 2))


def test_bm25_weighs_the_rare_word() -> None:
    """BM25 weighs the rare word above the common one."""
    documents = [
        "Sofia's teacher is Mrs Patel.",
        "Sofia's swimming is on Wednesdays.",
        "Sofia's piano is on Fridays.",
    ]
    read = [document(text) for text in documents]
    scores = bm25("Who is Sofia's teacher?", read)
    assert scores[0] > scores[1] == scores[2] > 0
    assert bm25("nothing in common", read) == [0, 0, 0]
    assert bm25("teacher", []) == []


def test_a_term_counts_the_stored_terms_it_begins_or_that_begin_it() -> None:
    """Derivations and compounds a stem leaves apart meet; short stems and numbers stand alone."""
    stored = ["allergi", "milkman", "headteach", "head", "passport", "bus", "busi", "2024", "20245"]
    vocabulary = {term: index for index, term in enumerate(stored)}
    by_prefix: dict[str, list[str]] = {}
    for term in stored:
        if len(term) >= PREFIX:
            by_prefix.setdefault(term[:PREFIX], []).append(term)
    assert related("allerg", vocabulary, by_prefix) == ["allerg", "allergi"]  # allergic, allergy
    assert related("milk", vocabulary, by_prefix) == ["milk", "milkman"]
    assert related("headteach", vocabulary, by_prefix) == ["headteach", "head"]
    assert related("bus", vocabulary, by_prefix) == ["bus"]  # under PREFIX letters
    assert related("2024", vocabulary, by_prefix) == ["2024"]  # a number is itself


def test_the_lexical_score_reads_related_terms() -> None:
    """The word "allergic" finds "allergy": the rows tie on cosine, the related word decides."""
    rows = [
        row(1, "Leo has a peanut allergy.", day=1),
        row(2, "Leo has a swimming lesson.", day=2),
        *FILLERS,
    ]
    ranked = rank(rows, [700, 700, 300, 100], "What is Leo allergic to?")
    assert [r.id for r in ranked][:2] == [1, 2]
    assert bm25("allergic", [document("a peanut allergy"), document("a lesson")])[1] == 0


def test_questions_and_commands_never_compete() -> None:
    """Questions and commands never compete."""
    rows = [
        row(1, "When is Sofia's swimming?", day=5),
        row(2, "Sofia's swimming is on Wednesdays at five.", day=1),
        row(3, "Turn on the swimming pool lights.", day=6),
        row(4, "When is Sofia's swimming?", day=7, kind=KIND_EXPLICIT),  # authored: competes
    ]
    ranked = rank(rows, [900, 500, 800, 100], "When does Sofia go swimming?")
    assert sorted(r.id for r in ranked) == [2, 4]


# Rows unlike any question here: the low end of a store's cosine scores.
FILLERS = [
    row(90, "The bins go out on Tuesday.", day=0),
    row(91, "The wifi password is on the fridge.", day=0),
]


def test_fusion_lifts_the_row_with_the_asked_word() -> None:
    """Fusion lifts the row with the asked word."""
    rows = [
        row(1, "Sofia's swimming lessons are on Wednesdays.", day=1),
        row(2, "Sofia's class teacher is Mrs Patel.", day=2),
        *FILLERS,
    ]
    # Cosine prefers the swimming row by less than a thirty-second of the pool's span; the word
    # "teacher" is in the other one only.
    ranked = rank(rows, [900, 895, 300, 100], "Who is Sofia's teacher?")
    assert [r.id for r in ranked][:2] == [2, 1]


def test_scores_are_fused_not_ranks() -> None:
    """A rare asked word lifts a row by how far it stands out, not by its place alone.

    Two rows hold the asked name; the coat row also holds the rare word. By ranks (1 / (60 +
    place) summed), the name rows' two good places beat the coat row's first place and poor
    cosine; by scores the coat row comes first.
    """
    leo = "b" * 32
    rows = [
        row(1, "I left my coat in lost property at school.", day=3, actor=leo),
        row(2, "Leo's birthday is on October 3rd.", day=2),
        row(3, "Leo's party is at the bowling alley.", day=1),
        *FILLERS,
    ]
    ranked = rank(rows, [788, 800, 790, 300, 100], "Where's Leo's coat?", {leo: "Leo"})
    assert [r.id for r in ranked][:3] == [1, 2, 3]


def test_the_fused_score_weighs_cosine_thirty_two_to_lexical_one() -> None:
    """The whole lexical span weighs a thirty-second of the whole cosine span.

    Only the boiler row holds the asked word (b' = 1 against 0); the tea row has the highest
    cosine (c' = 1). The boiler row comes first once 32 c' + 1 > 32, that is c' > 31/32. All
    three were said on one day, so no age part tells them apart.
    """
    rows = [
        row(1, "The boiler is in the cellar.", day=1),
        row(2, "Mum likes tea.", day=1),
        row(3, "Ana is coming at seven.", day=1),
    ]
    for cosine, first in ((388, 1), (387, 2)):  # 31/32 of 400 is 387.5
        assert rank(rows, [cosine, 400, 0], "Where is the boiler?")[0].id == first, cosine


@pytest.mark.parametrize("scale", [1, 30, 3000])
def test_the_age_part_weighs_as_much_as_the_lexical_part(scale: int) -> None:
    """The whole age span weighs a thirty-second of the whole cosine span, in the pool's span.

    The older row has the highest cosine (c' = 1, a' = 0), the newer row was said last (a' = 1)
    and no row holds an asked word. The newer comes first once 32 c' + 1 > 32, that is c' >
    31/32, whether the pool spans two days or sixteen years.
    """
    rows = [
        row(1, "The bins go out on Monday.", day=0),
        row(2, "Collection is Thursday mornings.", day=2 * scale),
        row(3, "Ana is coming at seven.", day=scale),
    ]
    for cosine, first in ((388, 2), (387, 1)):  # 31/32 of 400 is 387.5
        assert rank(rows, [400, cosine, 0], "What weekday for the refuse lorry?")[0].id == first


def test_a_memory_said_at_an_unknown_time_reads_as_the_oldest() -> None:
    """A row whose time was not recorded (said_at 0) gets no age part; the known times span."""
    rows = [
        row(1, "The bins go out on Monday.", day=-1),
        row(2, "Collection is Thursday mornings.", day=5),
        row(3, "Ana is coming at seven.", day=4),
    ]
    assert rank(rows, [400, 388, 0], "What weekday for the refuse lorry?")[0].id == 2
    rows[0] = row(1, "The bins go out on Monday.", day=5)  # said as late: no age part between
    assert rank(rows, [400, 388, 0], "What weekday for the refuse lorry?")[0].id == 1


def test_the_age_part_never_outweighs_a_clear_cosine_lead() -> None:
    """Age alone never lifts a row past one the question scores a thirty-second higher.

    However much newer each of 38 rows is, each scores more than a thirty-second of the span
    below the oldest.
    """
    rows = [row(1, "The bins go out on Monday.", day=0)]
    rows += [row(i, f"Filler number {i} about the garden.", day=i * 100) for i in range(2, 40)]
    cosine = [400] + [386] * 38  # 386 < 387.5: below by more than 1/32 of the span 0..400
    cosine[-1] = 0
    assert rank(rows, cosine, "What weekday for the refuse lorry?")[0].id == 1


def test_the_lexical_score_reads_who_said_it() -> None:
    """The lexical score reads who said it."""
    leo = "b" * 32
    fish = row(1, "My goldfish is called Captain.", day=1, actor=leo)
    dog = row(2, "The dog is called Rolo.", day=1)
    assert lexical_document(fish, {leo: "Leo"}).terms == {
        "goldfish": 1,
        "call": 1,
        "captain": 1,
        "leo": 1,
    }
    assert lexical_document(dog, {leo: "Leo"}) == document("The dog is called Rolo.")
    asked = "Tell me about Leo's goldfish."
    pool, cosine = [fish, dog, *FILLERS], [590, 600, 200, 100]
    # Cosine prefers the dog; only the name and "goldfish" lift the fish above it.
    assert [r.id for r in rank(pool, cosine, asked, {leo: "Leo"})][:2] == [1, 2]
    assert [r.id for r in rank(pool, cosine, "Tell me about Leo.", {})][:2] == [2, 1]


def test_ties_go_to_the_newer_row() -> None:
    """Ties go to the newer row."""
    rows = [row(1, "The boiler is in the cellar.", day=1), row(2, "The boiler is red.", day=3)]
    assert [r.id for r in rank(rows, [700, 700], "boiler")] == [2, 1]


def similarity(table: dict[tuple[int, int], int]) -> Similarity:
    """Scores between rows by id pair (either order), 0 for pairs not listed."""

    def similar(candidates: Sequence[Row], pool: Sequence[Row]) -> list[list[int]]:
        return [
            [table.get((a.id, b.id), table.get((b.id, a.id), 0)) for b in pool] for a in candidates
        ]

    return similar


NONE_ALIKE = similarity({})


def _likeness(pool: Sequence[Row], similar: Similarity) -> recall.Likeness:
    """`similar` as the indexed path reads it: positions of `pool` against all of `pool`."""

    def likeness(positions: np.ndarray, among: np.ndarray | None) -> np.ndarray:
        against = pool if among is None else [pool[a] for a in among]
        return np.asarray(similar([pool[p] for p in positions], against))

    return likeness


def nearest_older(
    candidates: Sequence[Row], pool: Sequence[Row], similar: Similarity
) -> dict[int, int]:
    """`recall.nearest_older` over `pool` alone, by id."""
    view = Corpus.of(pool)
    found = recall.nearest_older(
        view,
        [pool.index(r) for r in candidates],
        np.ones(len(pool), dtype=bool),
        _likeness(pool, similar),
    )
    return {pool[c].id: pool[p].id for c, p in found.items()}


def newer_first(
    ranked: Sequence[Row],
    pool: Sequence[Row],
    similar: Similarity,
    asked: Mapping[int, int] | None = None,
) -> list[Row]:
    """`recall.newer_first` over `pool` alone.

    `asked` holds the question's cosine scores by row id; by default it cannot tell the ranked
    rows apart (each scores 900, the pool's other rows 500).
    """
    view = Corpus.of(pool)
    positions = [pool.index(r) for r in ranked]
    if asked is None:
        asked = asking(dict.fromkeys((r.id for r in ranked), 900), pool)
    cosine = np.array([asked[r.id] for r in pool], dtype=np.int64)
    return recall.newer_first(
        view, positions, np.arange(len(pool)), _likeness(pool, similar), cosine=cosine
    )


def turn_block(
    rows: Sequence[Row],
    cosine: Sequence[int],
    query: str,
    render: Callable[[Row], str],
    *,
    similar: Similarity,
    **limits: int,
) -> list[Row]:
    """`recall.turn_block` over `rows` alone, every row visible."""
    return recall.turn_block(
        Corpus.of(rows),
        np.ones(len(rows), dtype=bool),
        np.array(cosine, dtype=np.int64),
        query,
        render,
        likeness=_likeness(rows, similar),
        **limits,
    )


def weights(pool: Sequence[Row]) -> Callable[[str], int]:
    """Each term's IDF with the quotes of `pool` as the corpus."""
    return lambda term: idf(len(pool), sum(term in terms(r.document) for r in pool))


def asking(scores: dict[int, int], pool: Sequence[Row]) -> dict[int, int]:
    """A question's cosine scores by row id: `scores`, and 500 for the pool's other rows."""
    return {r.id: scores.get(r.id, 500) for r in pool}


def other_rows(count: int, first_id: int) -> list[Row]:
    """`count` rows about other things, each in words no other row holds."""
    return [
        row(first_id + n, f"Shelf {chr(97 + n // 26)}{chr(97 + n % 26)}q holds jars.", day=2)
        for n in range(count)
    ]


def among_others(table: dict[tuple[int, int], int], others: Sequence[Row]) -> Similarity:
    """`table`'s scores, and each of `others` as alike to every row as unrelated texts are.

    Between 600 and 800, as far apart as a small model places texts on other things.
    """
    spread = {o.id: 600 + (o.id * 37) % 200 for o in others}

    def similar(candidates: Sequence[Row], pool: Sequence[Row]) -> list[list[int]]:
        return [
            [
                spread.get(a.id)
                or spread.get(b.id)
                or table.get((a.id, b.id), table.get((b.id, a.id), 0))
                for b in pool
            ]
            for a in candidates
        ]

    return similar


@pytest.fixture
def linked(monkeypatch: pytest.MonkeyPatch) -> list[update_link.Pair]:
    """Every pair step 3 asks the update link about, each answered yes."""
    asked: list[update_link.Pair] = []

    def moves(link: update_link.Link, move: update_link.Move) -> bool:
        asked.append(move.pair)
        return True

    monkeypatch.setattr(update_link.Link, "moves", moves)
    return asked


def test_a_newer_statement_goes_before_the_older_one_most_like_it(
    linked: list[update_link.Pair],
) -> None:
    """A newer statement the update link links goes before the older one most like it."""
    frank = row(4, "Frank drives the number 23.", day=0)
    old = row(1, "Sofia's school bus leaves the Carlton Road stop at 7:45.", day=1)
    other = row(3, "Frank, the school bus driver, is off sick.", day=4)
    new = row(2, "The school bus comes at 7:30 now.", day=9)
    pool = [frank, old, other, new]
    alike = similarity({(2, 1): 950, (2, 3): 900, (2, 4): 500, (3, 4): 960, (3, 1): 940})
    assert nearest_older([new, other], pool, alike) == {2: 1, 3: 4}
    assert [r.id for r in newer_first([old, other, new], pool, alike)] == [2, 1, 3]
    assert [r.id for r in newer_first([new, old, other], pool, alike)] == [2, 1, 3]
    # When the old row is not the one most like the new, nothing moves.
    unlike = similarity({(2, 4): 990, (2, 1): 400, (3, 4): 960})
    assert [r.id for r in newer_first([old, other, new], pool, unlike)] == [1, 3, 2]


def test_step_3_reads_the_pair_as_the_update_link_weighs_it(
    linked: list[update_link.Pair],
) -> None:
    """Step 3 hands the update link the pair as it weighs it.

    How far the pair stands out among the newer row's scores against the pool, whether each is
    the other's nearest, the rarity of their shared content words, a word of change in the
    newer, and a value in both.
    """
    old = row(1, "Sofia's school bus leaves the Carlton Road stop at 7:45.", day=1)
    new = row(2, "The school bus comes at 7:30 now.", day=9)
    others = other_rows(12, 100)
    pool = [old, *others, new]
    similar = among_others({(1, 2): 950}, others)
    newer_first([old, others[0], new], pool, similar)  # not next: the link is asked
    scores = [950, *(600 + (o.id * 37) % 200 for o in others)]
    weight = weights(pool)
    assert linked == [
        update_link.Pair(
            standing=pytest.approx((950 - np.mean(scores)) / np.std(scores)),  # type: ignore[arg-type]
            mutual=True,
            shared=(weight("school") + weight("bus")) / (1 << IDF_BITS),
            change=True,
            values=True,
        )
    ]


def test_rows_no_words_could_link_are_never_weighed(linked: list[update_link.Pair]) -> None:
    """No value in both, no word of change, no content word in common: nothing to weigh.

    The nearest older row (a product with every row) is found only for rows words could link.
    """
    old = row(1, "The spare key is under the blue pot.", day=1)
    new = row(2, "Mia loves her piano teacher.", day=20)
    assert [r.id for r in newer_first([old, new], [old, new], similarity({(1, 2): 990}))] == [1, 2]
    assert linked == []


def test_a_row_below_the_updating_window_stays_where_it_ranks(
    linked: list[update_link.Pair],
) -> None:
    """A row below the updating window stays where it ranks."""
    old = row(1, "The school bus comes at 7:45.", day=1)
    fillers = [row(10 + n, f"Filler fact {n} about nothing.", day=2) for n in range(UPDATING)]
    new = row(2, "The school bus comes at 7:30 now.", day=9)
    ranked = [old, *fillers, new]
    moved = newer_first(ranked, ranked, similarity({(2, 1): 990}))
    assert moved[-1] == new


# A fact restated with its new value and no word of change, in each language Alto speaks: no
# content word in common, a value in each.
RESTATED = {
    "en": ("The recycling goes out on Monday evenings.", "Collection is Thursday mornings."),
    "de": ("Die Biotonne wird montags geleert.", "Abgeholt wird donnerstags in der Früh."),
    "nl": ("De groene kliko gaat op dinsdag aan de straat.", "Het gft wordt donderdags opgehaald."),
    "fr": ("Les poubelles sortent le lundi soir.", "Le ramassage passe le jeudi matin."),
    "es": ("La basura se saca los lunes por la noche.", "Recogen el jueves por la mañana."),
    "it": ("La spazzatura si porta fuori il lunedì sera.", "La raccolta passa il giovedì mattina."),
}


# Each language's restated value (RESTATED) said with a word of change.
CORRECTED = {
    "en": "Collection is Thursday mornings now.",
    "de": "Abgeholt wird jetzt donnerstags in der Früh.",
    "nl": "Het gft wordt nu donderdags opgehaald.",
    "fr": "Le ramassage passe maintenant le jeudi matin.",
    "es": "Ahora recogen el jueves por la mañana.",
    "it": "Ora la raccolta passa il giovedì mattina.",
}


@pytest.mark.parametrize("language", sorted(CORRECTED))
@pytest.mark.parametrize("says_so", [True, False])
def test_a_correction_that_says_so_goes_first_where_a_second_fact_stays(
    language: str, says_so: bool
) -> None:
    """A correction that says it changes something goes first; a second fact of one kind stays.

    Among a household's other memories, each the other's nearest, a value in each, a question
    that ranks the older well above the newer (a row between them, two spreads apart):
    "Collection is Thursday mornings now." goes before "The recycling goes out on Monday
    evenings.", and "Collection is Thursday mornings." stays below it.
    """
    said, restated = RESTATED[language]
    corrected = CORRECTED[language] if says_so else restated
    old = row(1, said, day=1)
    new = row(2, corrected, day=20, actor="b" * 32)
    between = row(3, "The spare key is under the blue pot.", day=5)
    others = other_rows(30, 100)
    pool = [old, between, new, *others]
    assert recall.says_change(new) is says_so
    assert not recall.content_words(said) & recall.content_words(corrected)
    similar = among_others({(1, 2): 920, (1, 3): 650, (2, 3): 650}, others)
    asked = asking({1: 900, 3: 800, 2: 700}, pool)
    moved = newer_first([old, between, new], pool, similar, asked)
    assert [r.id for r in moved] == ([2, 1, 3] if says_so else [1, 3, 2])


def test_rare_shared_words_make_one_subject_and_the_newer_goes_first() -> None:
    """Words few rows hold make a second fact on them go first; both stay.

    No rule on words tells "piano on Fridays" from a correction of "swimming on Wednesdays" for
    sure: the newer goes first, and the block labels when each was said.
    """
    swimming = row(1, "Sofia's swimming lessons are on Wednesdays at five.", day=1)
    piano = row(2, "Sofia's piano lessons are on Fridays at six.", day=3)
    between = row(3, "The spare key is under the blue pot.", day=2)
    others = other_rows(40, 100)
    pool = [swimming, between, piano, *others]  # "sofia" and "lesson": 2 rows of 43
    similar = among_others({(1, 2): 920, (1, 3): 650, (2, 3): 650}, others)
    assert [r.id for r in newer_first([swimming, between, piano], pool, similar)] == [2, 1, 3]


def test_words_most_rows_hold_do_not_make_one_subject() -> None:
    """Common words ("Sofia", "lesson" in a store about Sofia's lessons) join nothing alone.

    A fact among many on the same person keeps its rank: "Ben picks Leo up from school" is not
    an update of "Leo's school starts at 8:45".
    """
    swimming = row(1, "Sofia's swimming lessons are on Wednesdays at five.", day=1)
    piano = row(2, "Sofia's piano lessons are on Fridays at six.", day=3)
    lessons = [row(10 + n, f"Sofia's lesson {n} was fun.", day=2) for n in range(30)]
    pool = [swimming, piano, *lessons]
    similar = among_others({(1, 2): 920}, lessons)
    ranked = [swimming, lessons[0], piano]
    asked = asking({1: 900, 10: 800, 2: 700}, pool)  # the question tells them apart
    assert [r.id for r in newer_first(ranked, pool, similar, asked)] == [1, 10, 2]


@pytest.mark.parametrize(
    ("newer", "updates"),
    [
        ("Bridge has moved to the golf club.", True),
        ("Bridge is at the golf club, still Tuesday afternoons.", True),
        ("Chess is at the golf club instead, same time.", False),  # no word in common
        ("Bridge is at the golf club.", False),  # one common word, no word of change
    ],
)
def test_a_word_of_change_makes_one_shared_word_enough(newer: str, updates: bool) -> None:
    """One shared word is enough when the newer row says it changes something.

    "moved", "instead", "now", "same", "still": people say these when they restate a fact with
    one part changed. The question ranks the older well above the newer (a row between them).
    """
    bridge = row(1, "I play bridge on Tuesday afternoons at the community centre.", day=1)
    moved = row(2, newer, day=20)
    between = row(3, "The spare key is under the blue pot.", day=5)
    others = other_rows(30, 100)
    pool = [bridge, between, moved, *others]
    similar = among_others({(1, 2): 900, (1, 3): 650, (2, 3): 650}, others)
    asked = asking({1: 900, 3: 800, 2: 700}, pool)
    ranked = newer_first([bridge, between, moved], pool, similar, asked)
    assert [r.id for r in ranked] == ([2, 1, 3] if updates else [1, 3, 2])


@pytest.mark.parametrize("language", sorted(RESTATED))
@pytest.mark.parametrize(
    ("ranked", "asked", "alike", "expected"),
    [
        # The question can hardly tell them apart: the newer goes first.
        ([1, 2, 3], {1: 900, 2: 880, 3: 700}, {}, [2, 1, 3]),
        # It ranks the older well above the newer, a row between: it asks after the older.
        ([1, 3, 2], {1: 900, 3: 850, 2: 600}, {}, [1, 3, 2]),
        # A later row is more like the old one: not its update.
        ([1, 2, 3], {1: 900, 2: 880, 3: 700}, {(1, 3): 950}, [1, 2, 3]),
    ],
)
def test_a_value_restated_without_a_word_of_change_goes_first_when_the_question_asks_both(
    language: str,
    ranked: list[int],
    asked: dict[int, int],
    alike: dict[tuple[int, int], int],
    expected: list[int],
) -> None:
    """Said again with its new value and no word of change, by someone else, in other words.

    The newer row goes first when the question scores it as it scores the older one and the
    vectors pair them both ways (each the other's nearest), both holding a value.
    """
    said, restated = RESTATED[language]
    old = row(1, said, day=1)
    new = row(2, restated, day=20, actor="b" * 32)
    other = row(3, "The spare key is under the blue pot.", day=5)
    pool = [old, new, other]
    assert not recall.content_words(said) & recall.content_words(restated)
    assert recall.holds_value(old)
    assert recall.holds_value(new)
    assert not recall.says_change(new)
    similar = similarity({(1, 2): 800, (1, 3): 100, (2, 3): 100, **alike})
    by_id = {r.id: r for r in pool}
    moved = newer_first([by_id[i] for i in ranked], pool, similar, asked)
    assert [r.id for r in moved] == expected


@pytest.mark.parametrize("language", sorted(RESTATED))
def test_a_row_without_a_value_ranked_just_after_an_older_one_stays(language: str) -> None:
    """Ranked just after an older row it is nearest to, but holding no value: no update."""
    said, _ = RESTATED[language]
    old = row(1, said, day=1)
    new = row(2, "Mia loves her piano teacher.", day=20)
    pool = [old, new]
    assert not recall.holds_value(new)
    moved = newer_first([old, new], pool, similarity({(1, 2): 800}))
    assert [r.id for r in moved] == [1, 2]


def test_the_block_keeps_to_its_limits_in_rank_order() -> None:
    """The block keeps to its limits in rank order."""
    tools = ("rake", "spade", "hoe", "saw", "drill", "ladder", "mower", "hose", "shears")
    rows = [row(n, f"The {tool} hangs in the garden shed.", day=n) for n, tool in enumerate(tools)]
    cosine = [1000 - n for n in range(len(tools))]
    block = turn_block(
        rows, cosine, "garden shed", lambda r: r.document, similar=NONE_ALIKE, max_refs=5
    )
    assert len(block) == 5
    small = turn_block(
        rows, cosine, "garden shed", lambda r: r.document, similar=NONE_ALIKE, max_bytes=80
    )
    assert sum(len(r.document.encode()) for r in small) <= 80
    assert len(small) == 2
    assert block[:2] == small


def test_a_text_said_twice_is_shown_once() -> None:
    """A text said twice is shown once."""
    rows = [
        row(1, "The bins go out on Thursday.", day=1),
        row(2, "the bins go out  on Thursday.", day=5),
        row(3, "The recycling goes out on Friday.", day=2),
    ]
    block = turn_block(rows, [800, 800, 500], "bins", lambda r: r.document, similar=NONE_ALIKE)
    assert [r.id for r in block] == [2, 3]  # the newer of the two, then the other memory


def test_memory_line_names_who_and_when_never_an_id() -> None:
    """A memory line names who said it and when, never an id."""
    names = {ALICE: "Alice"}
    said = row(1, "The bins go out on Thursday.", day=0)
    assert (
        memory_line(said, now=said.said_at + 3 * DAY_S + 5, names=names)
        == "[said; Alice, 3 days ago] The bins go out on Thursday.\n"
    )
    assert "today" in memory_line(said, now=said.said_at + 60, names=names)
    assert "yesterday" in memory_line(said, now=said.said_at + DAY_S, names=names)
    unknown = row(2, "The key is under the pot.", day=-1, kind=KIND_EXPLICIT, actor="unknown")
    assert (
        memory_line(unknown, now=DAY0, names=names)
        == "[asked to remember; someone, some time ago] The key is under the pot.\n"
    )


BGE_QUERY = "Represent this sentence for searching relevant passages: "


@pytest.mark.parametrize(
    ("model", "query", "document"),
    [
        ("multilingual-e5-small:latest", "query: ", "passage: "),
        ("jeffh/intfloat-multilingual-e5-large:f16", "query: ", "passage: "),
        ("nomic-embed-text:latest", "search_query: ", "search_document: "),
        ("mxbai-embed-large", BGE_QUERY, ""),
        ("bge-small-en-v1.5", BGE_QUERY, ""),
        ("embeddinggemma:300m", "task: search result | query: ", "title: none | text: "),
        ("snowflake-arctic-embed:33m", BGE_QUERY, ""),
        ("snowflake-arctic-embed2:568m", "query: ", ""),
        (
            "qwen3-embedding:0.6b",
            "Instruct: Given a web search query, retrieve relevant passages that answer the query"
            "\nQuery:",
            "",
        ),
        ("bge-m3:latest", "", ""),  # no instruction in its family
        ("all-minilm", "", ""),
        ("vee5tor:latest", "", ""),  # "e5" inside a word is not the family
    ],
)
def test_embedding_instructions_by_family(model: str, query: str, document: str) -> None:
    """The query and document instructions follow the embedding model family."""
    assert instructions_for(model) == EmbeddingInstructions(query, document)


@pytest.mark.parametrize(
    ("query", "read"),
    [
        ("When is Grandma's flu jab?", "When is Grandma's flu jab? Rosa"),
        ("what does nana like", "what does nana like Rosa"),
        ("Is Aunt Lucia coming?", "Is Aunt Lucia coming? Lucia Ramos"),
        ("Is Lucia coming?", "Is Lucia coming?"),  # "Aunt Lucia" needs both words
        ("When is the grand final?", "When is the grand final?"),  # a word, not the alias
        ("Will Grandma and Nana come?", "Will Grandma and Nana come? Rosa"),  # once
    ],
)
def test_a_query_calling_someone_by_an_alias_names_them(query: str, read: str) -> None:
    """`with_names` adds the names of the people a query calls by an alias."""
    aliases = {"Grandma": "Rosa", "Nana": "Rosa", "Aunt Lucia": "Lucia Ramos", "Me": "Leo"}
    assert with_names(query, aliases) == read
