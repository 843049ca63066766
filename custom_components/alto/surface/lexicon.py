"""Fixed word lists for the extractive verifier.

The lists are general English, not fitted to any test case: a word belongs here because of what it
is (a function word, a report verb, an evaluation), never because one render needed it. Forms are
casefolded surface forms; the verifier stems them itself where it compares stems. `ENGLISH` gathers
them as one `Reading`; `readings` holds the other languages Alto speaks.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


def _words(text: str) -> tuple[str, ...]:
    """A word list written as running text, which keeps the lists below readable."""
    return tuple(text.split())


# Function words carry no recallable content, so they need no licence. Negators and quantifiers
# (below) and temporal relations (before, after, during, until, since) are deliberately absent:
# changing one changes the memory.
STOPWORDS = frozenset(
    _words("""
    a an the this that these those such
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    who whom whose which what whatever someone somebody something
    be am is are was were been being have has had having do does did doing done
    will would shall should can could may might must
    to of in on at by for with from about into onto upon over under up down out off through
    around across along near than as per via between behind beside among within toward towards
    and or but so if because while whereas although though whether then also too
    just very really quite rather there here now ever even how why where when
    """)
)

# Negators open a negated scope that runs to the end of their clause (across "or"/"nor", which
# continue a negated list): every content word in it is negated, and the render must agree.
NEGATORS = frozenset(_words("not never no nobody nothing none neither nor nowhere without"))
# Quantifiers bind the next content word. A universal one may be left out ("every morning" ->
# "in the morning" still says it happens each morning); a restricting one may not, since the render
# would then claim more than the source ("some Sundays" -> "on Sundays"). Neither may be added or
# changed. Frequency adverbs quantify over occasions and behave the same way.
UNIVERSAL_QUANTIFIERS = frozenset(_words("every each all both any always"))
RESTRICTING_QUANTIFIERS = frozenset(
    _words("""
    some several few many most sometimes usually often occasionally rarely seldom mostly only
    """)
)
# Quantifiers that float beside a coordinated subject ("Mia and Leo are both ...", "both Mia and
# Leo"): they say the clause holds of each member, which is how the verifier already reads it.
FLOATING_QUANTIFIERS = frozenset({"both", "all", "each"})

# Words that open a fronted adjunct ("Every Sunday Maria swims", "On weekdays the heating comes
# on"): a clause led by one may move that adjunct from the end of its phrase to the front.
OPENERS = frozenset(
    _words("""
    on in at by after before during until till since from over around throughout
    every each most some last next this yesterday today tonight tomorrow once twice
    usually always often sometimes
    """)
)

# Extractive framing, the one place it is named: the words and phrases that say a thought is
# remembered or reported ("I recall", "Maria told me", "as far as I remember") are form, so they
# need no licence and take no part in a clause's alignment. One-word entries match anywhere (any
# person may tell or mention); phrases match as whole word sequences, casefolded and with clitics
# expanded the way the verifier reads them ("I'm" -> "i am"). Irregular forms are listed because
# the stemmer does not relate told/tell or thought/think.
FRAMING: tuple[str, ...] = (
    *_words("""
    remember remembers remembered remembering recall recalls recalled recalling
    think thinks thought thinking know knows knew known knowing tell tells told telling
    say says said saying mention mentions mentioned mentioning hear hears heard hearing
    """),
    "as far as i remember",
    "as far as i recall",
    "as far as i know",
    "if i remember rightly",
    "if i remember correctly",
    "if i remember right",
    "if i recall correctly",
    "if i recall rightly",
    "if memory serves",
    "from what i remember",
    "from what i recall",
    "i seem to remember",
    "i seem to recall",
    "i believe",
    "i gather",
)

FIRST_PERSON = frozenset({"i", "me", "my"})

# Leading words of an entity name that a speaker may drop or swap ("the boiler" / "our boiler").
DETERMINERS = frozenset({"the", "a", "an", "my", "our", "your", "his", "her", "their"})

# Conjunctions that open a new clause; "and"/"or" between two names coordinate instead.
CLAUSE_CONJUNCTIONS = frozenset(
    {"and", "but", "or", "so", "because", "while", "whereas", "although", "though"}
)
COORDINATORS = frozenset({"and", "or"})
CLAUSE_PUNCT = frozenset(',;:()—–-"“”')
SENTENCE_PUNCT = frozenset(".!?…")

# Clitics after an apostrophe, as the word they stand for (possessive 's reads as a stopword).
CLITICS = {"s": "is", "m": "am", "re": "are", "ve": "have", "d": "would", "ll": "will"}
# "can't" splits as "ca" + "n't"; these bases are the irregular ones.
NEGATED_BASES = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}
# Negations written as one word, as the modal they negate.
FUSED_NEGATIONS = {"cannot": "can"}

_UNITS = _words("zero one two three four five six seven eight nine ten eleven twelve thirteen")
_UNITS += _words("fourteen fifteen sixteen seventeen eighteen nineteen")
_TENS = _words("twenty thirty forty fifty sixty seventy eighty ninety")
_ORDINALS = _words("zeroth first second third fourth fifth sixth seventh eighth ninth tenth")
_ORDINALS += _words("eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth")
_ORDINALS += _words("eighteenth nineteenth")
_TENS_ORDINALS = _words("twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth")
_TENS_ORDINALS += ("ninetieth",)

# Number words as the digits they name, so "three" and "3" (or "third" and "3rd") compare equal.
NUMBER_WORDS: dict[str, str] = {
    **{w: str(i) for i, w in enumerate(_UNITS)},
    **{w: str(i) for i, w in enumerate(_ORDINALS)},
    **{w: str(20 + 10 * i) for i, w in enumerate(_TENS)},
    **{w: str(20 + 10 * i) for i, w in enumerate(_TENS_ORDINALS)},
    "hundred": "100",
    "hundredth": "100",
    "thousand": "1000",
    "million": "1000000",
    "dozen": "12",
    "half": "half",
    "quarter": "quarter",
}
TENS = frozenset(_TENS)

MONTHS = frozenset(
    _words("""
    january february march april may june july august september october november december
    """)
)

# Irregular inflections to their base, applied to source and render alike before stemming, so that
# "broke" traces to "break" the way "walking" traces to "walks".
IRREGULAR: dict[str, str] = {
    form: base
    for base, forms in {
        "be": "was were been",
        "have": "had",
        "do": "did done",
        "go": "goes went gone",
        "get": "got gotten",
        "take": "took taken",
        "make": "made",
        "give": "gave given",
        "come": "came",
        "eat": "ate eaten",
        "run": "ran",
        "grow": "grew grown",
        "break": "broke broken",
        "write": "wrote written",
        "speak": "spoke spoken",
        "buy": "bought",
        "bring": "brought",
        "catch": "caught",
        "teach": "taught",
        "fight": "fought",
        "feel": "felt",
        "keep": "kept",
        "leave": "left",
        "lose": "lost",
        "meet": "met",
        "pay": "paid",
        "sit": "sat",
        "sleep": "slept",
        "spend": "spent",
        "stand": "stood",
        "swim": "swam swum",
        "throw": "threw thrown",
        "wake": "woke woken",
        "win": "won",
        "wear": "wore worn",
        "drive": "drove driven",
        "ride": "rode ridden",
        "fall": "fell fallen",
        "forget": "forgot forgotten",
        "find": "found",
        "hold": "held",
        "lead": "led",
        "mean": "meant",
        "see": "saw seen",
        "sell": "sold",
        "send": "sent",
        "sing": "sang sung",
        "begin": "began begun",
        "build": "built",
        "choose": "chose chosen",
        "drink": "drank drunk",
        "fly": "flew flown",
        "hide": "hid hidden",
        "hang": "hung",
        "ring": "rang rung",
        "shake": "shook shaken",
        "steal": "stole stolen",
        "tear": "tore torn",
        "bite": "bit bitten",
        "blow": "blew blown",
        "dig": "dug",
        "feed": "fed",
        "freeze": "froze frozen",
        "lend": "lent",
        "stick": "stuck",
        "child": "children",
        "man": "men",
        "woman": "women",
        "foot": "feet",
        "tooth": "teeth",
        "mouse": "mice",
    }.items()
    for form in forms.split()
}

# Evaluation and affect. Absent from the source, such a word is the Surfacer inventing how a memory
# felt ("that awful fight") rather than translating what it was.
EVALUATIVE = frozenset(
    _words("""
    lovely wonderful wonderfully sad sadly unfortunately fortunately luckily lucky unlucky
    happy happily unhappy thankfully hopefully favorite favourite amazing amazingly terrible
    terribly awful awfully horrible dreadful love loving lovingly hate hateful adore adorable
    beautiful gorgeous great nice fun funny fantastic brilliant delightful charming sweet sweetly
    cute precious dear darling poor naughty silly annoying annoyed irritating frustrating
    frustrated upset upsetting angry furious worried worrying worry anxious nervous scared scary
    afraid frightened stressed stressful excited exciting thrilled proud glad pleased disappointed
    disappointing heartbreaking tragic painful miserable lonely boring tedious nasty unfair perfect
    perfectly special memorable cherished treasured fond fondly blessed grateful awesome incredible
    incredibly ridiculous embarrassing shame pity sorry relieved joy joyful delighted best worst
    """)
)

# Autobiography: the operator claiming a life. "I" + optional fillers + a life verb; "I was" + a
# life state; "my" + optional fillers + a life noun. Verbs and nouns are base forms, stemmed.
FIRST_PERSON_FILLERS = frozenset(
    _words("""
    was were am have had did do used to once also still really always often never even first
    actually just too would will could can all both then
    """)
)
BE_FORMS = frozenset({"was", "were", "am"})
LIFE_VERBS = frozenset(
    _words("""
    grow live visit feel born raise travel move study work marry miss love hate enjoy go spend meet
    play learn attend cry dream
    """)
)
LIFE_STATES = frozenset(
    _words("young little small younger child kid boy girl teenager baby student")
)
MY_FILLERS = frozenset(_words("own old late dear first little big younger older whole early"))
LIFE_NOUNS = frozenset(
    _words("""
    childhood youth mother mum mom mam mummy father dad daddy parent family brother sister sibling
    grandmother grandma gran granny nan nana grandfather grandpa grandad granddad wife husband
    partner son daughter kid child baby hometown school schoolday life birthday job career friend
    boyfriend girlfriend uncle aunt auntie cousin niece nephew past teens body pet dog cat wedding
    """)
)


@dataclass(frozen=True, slots=True)
class Reading:
    """The verifier's words of one language: what it reads as form, and what it guards.

    A word left out of `stopwords` needs a licence, so a list errs short: a missing function
    word only drops a render. Negators, quantifiers and temporal relations are never stopwords.
    """

    code: str  # the primary language subtag, as `memory.languages` keys its records
    stemmer: str  # the Snowball algorithm (`snowballstemmer`)
    stopwords: frozenset[str]
    negators: frozenset[str]
    universal: frozenset[str]  # quantifiers a render may leave out ("every")
    restricting: frozenset[str]  # quantifiers it may not ("some")
    floating: frozenset[str]  # beside coordinated names ("both")
    openers: frozenset[str]  # what opens a fronted adjunct
    framing: tuple[str, ...]  # words (matched by stem) and phrases (word for word)
    first_person: frozenset[str]  # the operator speaking of itself
    subordinators: frozenset[str]  # open what is said after framing ("that")
    determiners: frozenset[str]  # a name's optional leading words
    clause_conjunctions: frozenset[str]
    coordinators: frozenset[str]  # "and"/"or": between two names they coordinate
    scope_continuers: frozenset[str]  # a negated list goes on across these ("or", "nor")
    months: frozenset[str]
    number_words: Mapping[str, str] = MappingProxyType({})
    before_day: frozenset[str] = frozenset()  # between a month and its day ("March the 3rd")
    before_month: frozenset[str] = frozenset()  # between a day and its month ("3 de marzo")
    clitics: Mapping[str, str] = MappingProxyType({})  # after an apostrophe, as the word
    elisions: Mapping[str, str] = MappingProxyType({})  # before one ("l'" is "le")
    contractions: Mapping[str, tuple[str, ...]] = MappingProxyType({})  # whole words
    negated_bases: Mapping[str, str] = MappingProxyType({})  # before "n't" ("ca" is "can")
    meridiem: frozenset[str] = frozenset()  # after a number, part of its time ("7 pm")
    tens: frozenset[str] = frozenset()  # joined to a unit by a hyphen ("twenty-five")
    hour_mark: str = ""  # between a time's hour and minutes ("16 h 30", "16h30")
    irregular: Mapping[str, str] = MappingProxyType({})
    evaluative: frozenset[str] = frozenset()
    # Its negators negate their whole clause, not what follows them: a verb-second language says
    # the verb first and the negation after it ("Oma schwimmt nicht").
    clause_negation: bool = False
    # The finite verb changes place between main and subordinate clauses ("dass Oma schwimmt"):
    # a clause may align with one word moved, inside one source clause.
    verb_moves: bool = False
    # An adjunct may open a clause before its value ("und freitags Tennis"), so entering a later
    # clause where it starts says nothing of which value is taken (`verify._in_order`).
    adjunct_first: bool = False
    # The subject may follow its verb ("dans le tiroir se trouvent les piles"): a clause naming
    # only the phrase's owner may name it anywhere, when the phrase names no one else.
    subject_moves: bool = False
    # Verbs that say "I" without a pronoun ("nací", "ho"): content, and a life claimed when said.
    first_person_verbs: frozenset[str] = frozenset()
    # Any verb may say "I" alone ("sono nato a Bari"): a thought that names none of its
    # fragment's names may be Alto speaking of itself, and is dropped.
    pro_drop: bool = False
    genitive: bool = False  # a name's genitive is the name and an "s" ("Omas Geburtstag")
    # Separable verbs' particles: a render may join one to its verb ("abholt" for "holt … ab").
    particles: frozenset[str] = frozenset()
    person_t: bool = False  # the stemmer keeps a verb's person "t" ("spielt"): tracing drops it
    ordinal_dot: bool = False  # "am 12. März": the dot after a day before a month ends nothing
    # Life claims are read word for word (English's lists below); elsewhere a first-person word
    # outside a clause of framing is one.
    life_lists: bool = False


ENGLISH = Reading(
    "en",
    "english",
    stopwords=STOPWORDS,
    negators=NEGATORS,
    universal=UNIVERSAL_QUANTIFIERS,
    restricting=RESTRICTING_QUANTIFIERS,
    floating=FLOATING_QUANTIFIERS,
    openers=OPENERS,
    framing=FRAMING,
    first_person=FIRST_PERSON,
    subordinators=frozenset({"that"}),
    determiners=DETERMINERS,
    clause_conjunctions=CLAUSE_CONJUNCTIONS,
    coordinators=COORDINATORS,
    scope_continuers=frozenset({"or", "nor"}),
    months=MONTHS,
    number_words=MappingProxyType(NUMBER_WORDS),
    before_day=frozenset({"the"}),
    before_month=frozenset({"of", "the"}),
    clitics=MappingProxyType(CLITICS),
    contractions=MappingProxyType({w: (base, "not") for w, base in FUSED_NEGATIONS.items()}),
    negated_bases=MappingProxyType(NEGATED_BASES),
    meridiem=frozenset({"am", "pm"}),
    tens=TENS,
    irregular=MappingProxyType(IRREGULAR),
    evaluative=EVALUATIVE,
    life_lists=True,
)
