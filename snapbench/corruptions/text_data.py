"""Static tables for the text operators: QWERTY neighbours, the unrelated-sentence pool, the
generic questions of ``sent_replace``, and the word lists used to find an entity when none is given.

Written for snapbench (not copied from nlpaug or any other keyboard/typo list).  Changing any table
changes corrupted outputs for the same seed, so treat edits here like a version bump.
"""

from __future__ import annotations

__all__ = [
    "QWERTY_NEIGHBOURS",
    "SENTENCE_POOL",
    "GENERIC_QUESTIONS",
    "QUESTION_WORDS",
    "HOW_QUANTIFIERS",
    "STOPWORDS",
    "IRREGULAR_PLURALS",
]

# Letter keys that touch each other on a US QWERTY keyboard: same-row left/right keys plus the
# keys above and below (rows are staggered, so a key touches two keys in the row above/below,
# except at the edges).  Symmetric by construction; tests re-derive it from key geometry.
QWERTY_NEIGHBOURS: dict[str, str] = {
    "q": "wa",
    "w": "qeas",
    "e": "wrsd",
    "r": "etdf",
    "t": "ryfg",
    "y": "tugh",
    "u": "yihj",
    "i": "uojk",
    "o": "ipkl",
    "p": "ol",
    "a": "qwsz",
    "s": "weadzx",
    "d": "ersfxc",
    "f": "rtdgcv",
    "g": "tyfhvb",
    "h": "yugjbn",
    "j": "uihknm",
    "k": "iojlm",
    "l": "opk",
    "z": "asx",
    "x": "sdzc",
    "c": "dfxv",
    "v": "fgcb",
    "b": "ghvn",
    "n": "hjbm",
    "m": "jkn",
}

# Unrelated everyday sentences for sent_add: short, category-free, no question marks, no named
# entities, so they add noise without adding retrieval cues.
SENTENCE_POOL: tuple[str, ...] = (
    "My phone battery is almost dead.",
    "I need to buy milk on the way home.",
    "The bus was late again this morning.",
    "It has been raining all week.",
    "I forgot my umbrella at the office.",
    "My coffee went cold while I was typing.",
    "The wifi here is really slow.",
    "I have a dentist appointment tomorrow.",
    "We are meeting friends for dinner tonight.",
    "I just got back from the gym.",
    "My sister is visiting next weekend.",
    "The laundry still needs folding.",
    "I should really clean my desk.",
    "Traffic was terrible on the way here.",
    "I slept badly last night.",
    "The neighbours are having a party.",
    "My keys were in my other jacket.",
    "I am waiting for a delivery.",
    "It is way too hot in this room.",
    "I keep forgetting to call my mom back.",
    "The train is packed today.",
    "My headphones stopped working yesterday.",
    "I have to finish a report by Friday.",
    "Lunch was a bit too salty.",
    "The elevator is out of order again.",
    "I left the window open this morning.",
    "My screen has a crack in the corner.",
    "We ran out of coffee at home.",
    "I am on my lunch break right now.",
    "The power went out for an hour.",
    "I need to water the plants later.",
    "My friend is running a little late.",
    "I just finished a long meeting.",
    "The store closes in twenty minutes.",
    "I am typing this with one hand.",
    "The kids are finally asleep.",
    "It is my day off today.",
    "I lost my charger somewhere.",
    "The printer jammed twice today.",
    "I walked ten thousand steps today.",
    "My parking ticket expires soon.",
    "The heater makes a strange noise.",
    "I have too many tabs open.",
    "Someone parked in my spot again.",
    "Dinner is almost ready.",
    "I need a new pair of running shoes.",
    "The meeting got moved to Thursday.",
    "My cat keeps walking on the keyboard.",
)

# sent_replace: generic questions per question word, with no category and no entity.  The first
# form that differs from the original question is used; the alternatives exist so that a question
# that already *is* the first generic form still changes.
GENERIC_QUESTIONS: dict[str, tuple[str, ...]] = {
    "what": ("What is this?", "What is that?", "What am I looking at?"),
    "which": ("Which one is this?", "Which is this?", "Which one is that?"),
    "who": ("Who is this?", "Who is that?"),
    "whom": ("Who is this?", "Who is that?"),
    "whose": ("Whose is this?", "Whose is that?"),
    "where": ("Where is this?", "Where was this taken?", "Where is that?"),
    "when": ("When was this taken?", "When is this from?", "When was that?"),
    "why": ("Why is this like this?", "Why is that?"),
    "how": ("How is this?", "How does this work?", "How is that?"),
    "how much": ("How much is this?", "How much is that?"),
    "how many": ("How many are there?", "How many are in this?"),
    "how old": ("How old is this?", "How old is that?"),
    "how big": ("How big is this?", "How big is that?"),
    "how long": ("How long is this?", "How long is that?"),
}

QUESTION_WORDS: frozenset[str] = frozenset({"what", "which", "who", "whom", "whose", "where", "when", "why", "how"})
# "how" + one of these forms a two-word question word with its own generic questions.
HOW_QUANTIFIERS: frozenset[str] = frozenset({"much", "many", "old", "big", "long"})

# Words skipped when guessing the entity of a question that has none: question words, auxiliaries,
# pronouns, determiners, prepositions, generic "kind of" nouns and the participles that end
# photo questions ("where was this taken").  Lower-case; possessive 's is stripped before lookup.
STOPWORDS: frozenset[str] = frozenset(
    """
    what which who whom whose where when why how whats dont doesnt isnt
    is are was were be been being am do does did can could would should will shall may might must
    have has had get got
    this that these those it its they them their there here i me my mine you your yours we our us
    he him his she her hers one ones
    a an the some any each every all both either neither no not
    of in on at to from by with for about into onto over under near behind above below between
    and or but if so than then as like
    kind kinds type types sort sorts variety name called named
    thing things stuff something anything object item
    please tell identify know show find see look looking
    taken made built located found seen shown pictured photographed called
    exactly really actually
    """.split()
)

# Irregular singular -> plural pairs used by the plural/stem matcher (whole words only).
IRREGULAR_PLURALS: dict[str, str] = {
    "man": "men",
    "woman": "women",
    "child": "children",
    "person": "people",
    "mouse": "mice",
    "louse": "lice",
    "goose": "geese",
    "tooth": "teeth",
    "foot": "feet",
    "ox": "oxen",
    "cactus": "cacti",
    "fungus": "fungi",
    "octopus": "octopi",
    "die": "dice",
    "potato": "potatoes",
    "tomato": "tomatoes",
}
