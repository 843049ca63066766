"""The recall bench's sets by name, in the order they were written (`recall_data/`).

Each trio of blind sets is named for when it was written and first run; `bench_recall.py` runs
SETS, and `_query_adapter.py` learns from the trios that newer ones measure (its LEARNT_FROM).
Not a bench itself (`scripts/bench` skips files whose names start with an underscore).
"""

from __future__ import annotations

# Blind sets in Alto's other languages, written as the English ones were, each a household
# speaking the set's "language" (its Home Assistant configured in it): blind_de_1 (Freiburg)
# and blind_nl_1 (Utrecht), first run on the rule before per-language words (English only).
BLIND_OTHER = ["blind_de_1", "blind_nl_1"]
# Written for the six-language recall work, apart from the code and every other set, committed
# before any rule was measured on them, first run on the rule as it stood then, tuned on since
# (see docs/memory.md).
BLIND_FRESH = ["blind_en_1", "blind_de_2", "blind_nl_2"]
# Written the same way while those were tuned on, first run on the rule that tuning left.
BLIND_FINAL = ["blind_en_2", "blind_de_3", "blind_nl_3"]
# Written the same way after those were measured, first run on the rule that stood then.
BLIND_NEWEST = ["blind_en_3", "blind_de_4", "blind_nl_4"]
# Written after the speaker's words for themselves came in, first run on it and the rule before.
BLIND_LATEST = ["blind_en_4", "blind_de_5", "blind_nl_5"]
# Written while the question's form was tried on the sets above, first run on it and the rule
# before, side by side.
BLIND_SIXTH = ["blind_en_5", "blind_de_6", "blind_nl_6"]
# Written after that, first run on the question's form and the rule before it, side by side.
BLIND_SEVENTH = ["blind_en_6", "blind_de_7", "blind_nl_7"]
# Written while a household's family was tried on the sets above, first run on it and the rule
# before, side by side.
BLIND_EIGHTH = ["blind_en_7", "blind_de_8", "blind_nl_8"]
# Written while the query adapter was learnt (from neither this trio nor the one before), first
# run on it and the rule before it, side by side.
BLIND_NINTH = ["blind_en_8", "blind_de_9", "blind_nl_9"]
# Written while step 3's rule for corrections said without a word of change was tried on the sets
# above, first run on it and the rule before it, side by side.
BLIND_TENTH = ["blind_en_9", "blind_de_10", "blind_nl_10"]
# Written after that rule was chosen, first run on it, the rule before it and a value said inside a
# German or Dutch compound, side by side.
BLIND_ELEVENTH = ["blind_en_10", "blind_de_11", "blind_nl_11"]
# Written while step 3's links were learnt from the households in adapter_data/, before any rule
# ran on it.
BLIND_TWELFTH = ["blind_en_11", "blind_de_12", "blind_nl_12"]
# Written after the update link was learnt, before any rule ran on it.
BLIND_THIRTEENTH = ["blind_en_12", "blind_de_13", "blind_nl_13"]
# Written while the update link's map was learnt, first run on it and the rule before, side by side.
BLIND_FOURTEENTH = ["blind_en_13", "blind_de_14", "blind_nl_14"]
# Written while the query adapter was learnt again, first run on it and the rules before, side by
# side.
BLIND_FIFTEENTH = ["blind_en_14", "blind_de_15", "blind_nl_15"]
# Written while the query adapter learnt from BLIND_EIGHTH to BLIND_TWELFTH and more households,
# first run on it and the rule before, side by side.
BLIND_SIXTEENTH = ["blind_en_15", "blind_de_16", "blind_nl_16"]
# Written, two trios at once, while the query adapter learnt from BLIND_THIRTEENTH to
# BLIND_SIXTEENTH and more households, before any rule ran on them.
BLIND_SEVENTEENTH = ["blind_en_16", "blind_de_17", "blind_nl_17"]
BLIND_EIGHTEENTH = ["blind_en_17", "blind_de_18", "blind_nl_18"]
# Written, two trios at once, while the query adapter learnt from BLIND_SEVENTEENTH,
# BLIND_EIGHTEENTH and more households, before any rule ran on them.
BLIND_NINETEENTH = ["blind_en_18", "blind_de_19", "blind_nl_19"]
BLIND_TWENTIETH = ["blind_en_19", "blind_de_20", "blind_nl_20"]
# Written, two trios at once, while the query adapter learnt from more households again, before
# any rule ran on them.
BLIND_TWENTY_FIRST = ["blind_en_20", "blind_de_21", "blind_nl_21"]
BLIND_TWENTY_SECOND = ["blind_en_21", "blind_de_22", "blind_nl_22"]
# Written, two trios at once, while step 3's link for corrections said in other words was tried on
# the sets above, before any rule ran on them.
BLIND_TWENTY_THIRD = ["blind_en_22", "blind_de_23", "blind_nl_23"]
BLIND_TWENTY_FOURTH = ["blind_en_23", "blind_de_24", "blind_nl_24"]
# Written, two trios at once, while the age part of step 2 was tried on the sets above, before any
# rule ran on them.
BLIND_TWENTY_FIFTH = ["blind_en_24", "blind_de_25", "blind_nl_25"]
BLIND_TWENTY_SIXTH = ["blind_en_25", "blind_de_26", "blind_nl_26"]
SETS = [
    "household",
    "heldout",
    *(f"blind{n}" for n in ("", *range(2, 19))),
    *BLIND_OTHER,
    *BLIND_FRESH,
    *BLIND_FINAL,
    *BLIND_NEWEST,
    *BLIND_LATEST,
    *BLIND_SIXTH,
    *BLIND_SEVENTH,
    *BLIND_EIGHTH,
    *BLIND_NINTH,
    *BLIND_TENTH,
    *BLIND_ELEVENTH,
    *BLIND_TWELFTH,
    *BLIND_THIRTEENTH,
    *BLIND_FOURTEENTH,
    *BLIND_FIFTEENTH,
    *BLIND_SIXTEENTH,
    *BLIND_SEVENTEENTH,
    *BLIND_EIGHTEENTH,
    *BLIND_NINETEENTH,
    *BLIND_TWENTIETH,
    *BLIND_TWENTY_FIRST,
    *BLIND_TWENTY_SECOND,
    *BLIND_TWENTY_THIRD,
    *BLIND_TWENTY_FOURTH,
    *BLIND_TWENTY_FIFTH,
    *BLIND_TWENTY_SIXTH,
]
