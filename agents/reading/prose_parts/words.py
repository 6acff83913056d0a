"""The prose reader's words: the word lists and patterns its rules read by, as data.

Each list names the words that play one part in a sentence: determiners, pronouns by
person, negations, prepositions of place and of leaving, modals, the cues of not seeing
("unaware", "behind his back", "was absent"), the words a container's contents follow
("held", "filled with"). The reader's parts (:mod:`fabula.agents.reading.prose_parts`)
decide with them; nothing here reads a sentence. With them, two small word tests: a
pronoun's person (:func:`_gender`) and a word's look (:func:`_wordlike`).
"""

from __future__ import annotations

import re

_INTERPUNCT = re.compile(r"[·‧・•]")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|[,;:—–()]")
_DETERMINERS = frozenset(
    {"the", "a", "an", "his", "her", "their", "its", "my", "your", "our", "this", "that"}
    | {"these", "those", "some", "any", "every", "each", "no", "one's", "own", "of", "to"}
)
# a determiner before a noun ("the place", "a somewhat devious move"), and one that opens
# a noun phrase the reader cuts ("the box", not "to the box" or "of it")
_NOUN_DETERMINERS = _DETERMINERS - {"to", "that", "her", "of", "no"}
_PHRASE_DETERMINERS = _DETERMINERS - {"to", "of", "own"}
_DEFINITE = frozenset({"the", "this", "that", "these", "those", "his", "her", "their", "its"})
_POSSESSIVES = {"his": "he", "her": "she", "their": "they", "its": "it"}
_SUBJECTS = {"he": "he", "she": "she", "they": "they"}
_REFLEXIVES = {"himself": "he", "herself": "she", "themselves": "they", "themself": "they"}
_OBJECT_PRONOUNS = {"him": "he", "her": "she", "them": "they", "it": "it"}
_NEGATIONS = frozenset(
    {"not", "never", "didn't", "don't", "doesn't", "wasn't", "weren't", "couldn't", "failed"}
    | {"hadn't", "wouldn't", "without", "nor", "neither"}
)
_TO = frozenset(
    {"to", "into", "towards", "toward", "onto", "in", "inside", "on", "under", "at", "atop"}
)
_LOCATIVE = frozenset(
    {"in", "inside", "into", "within", "on", "onto", "atop", "under", "beneath", "at"}
)
_AWAY = frozenset({"out", "from"})
# modifiers that tell one thing from another of its kind, each as good as the others
_OTHER = frozenset(
    {"another", "different", "other", "separate", "alternate", "alternative", "second"}
)
_SPEECH = frozenset({"tell", "inform", "claim", "say", "ask"})  # a sentence's speech acts
# a name's words after one of these are not its head ("basket in the kitchen")
_POST_MODIFIERS = frozenset({"in", "on", "at", "by", "near", "under", "inside", "beside"})
# what a perception verb sees when it sees an event rather than a thing
_EVENTISH = frozenset(
    {"as", "while", "when", "how", "what", "this", "that", "it", "him", "her", "them"}
    | {"his", "their", "everything", "the", "silently", "quietly", "closely", "intently"}
)
_ACTION_NOUNS = frozenset(
    {"action", "actions", "move", "gesture", "act", "deed", "scene", "exchange", "whole"}
    | {"transfer", "switch", "maneuver", "manoeuvre", "relocation", "behavior", "behaviour"}
)
_UNAWARE = re.compile(
    r"\b(?:unaware|oblivious|ignorant|unbeknown(?:st)?|had\s+no\s+(?:idea|clue|inkling))\b",
    re.I,
)
_WATCHED = re.compile(
    r"\b(?:watch\w*|notic\w*|unnoticed|seen|saw|observ\w*|eyes?|witness\w*|gaze|spotted)\b",
    re.I,
)
_ABSENT = re.compile(
    r"\b(?:was|were)\s+(?:absent|away|not\s+there|not\s+around|nowhere|elsewhere|gone|busy|"
    r"distracted|preoccupied|not\s+looking|occupied)\b|\bhad\s+(?:already\s+)?left\b|"
    r"\bhad\s+(?:entirely\s+|completely\s+)?missed\s+(?:the|this|that|it|her|his|their|what|"
    r"every|everything|all)\b(?!\s+(?:chance|opportunity|bus|train))|"
    r"\b(?:had\s+not|hadn't|hadn’t)\s+been\s+(?:in|there|around|present)\b",
    re.I,
)
# another's not seeing, as what one is unaware of ("that Bo had not seen it", "that Bo
# had left", "that Bo was nowhere near")
_NOT_SEEN = re.compile(
    r"\b(?:not|never|\w+n['’]t|nobody|no\s+one)\b[^.;]{0,30}?\b(?:watch\w*|notic\w*|seen|saw|"
    r"see|observ\w*|witness\w*|spotted|there|around|present)\b|" + _ABSENT.pattern,
    re.I,
)
_LITTLE_DID = re.compile(r"\blittle\s+did\s+(\w+)\s+(?:know|realize|realise|suspect)\b", re.I)
_BEHIND_BACK = re.compile(r"\bbehind\s+(\w+(?:'s)?)\s+back\b", re.I)
_UNBEKNOWNST = re.compile(r"\b(?:unbeknown(?:st)?|unknown)\s+to\s+(\w+)", re.I)
_WITHOUT = re.compile(
    r"\bwithout\s+(\w+)\s+(?:noticing|knowing|seeing|realizing|realising|"
    r"being\s+aware|suspecting)",
    re.I,
)


_EVENT_KINDS = frozenset({"move", "take", "give"})
# a container's contents named after it ("the crate held", "filled to the brim with")
_HOLDING = frozenset(
    {"held", "holds", "holding", "contained", "contains", "containing", "housed", "housing"}
    | {"filled", "full", "brimming", "overflowing", "stuffed", "packed", "stocked", "laden"}
    | {"crammed", "loaded", "heaped", "piled"}
)
_BASE_BEFORE = frozenset(
    {"to", "would", "could", "can", "will", "should", "might", "must", "may", "shall", "did"}
    | {"didn't", "couldn't", "wouldn't", "won't", "can't", "cannot", "and", "or", "not"}
    | {"don't", "doesn't", "let", "help", "helped", "made", "make", "watch", "watched"}
)
_ADVERBISH = frozenset({"not", "also", "then", "just", "quickly", "never", "even", "soon"})
# verbs of intending before "to" + a verb ("wants to take it", "hoped to lock it", "forgot
# to lock it"): what follows is an intention, not a deed told as done (issue 43). A
# decision ("decided to", "chose to") is not here: a story tells its acts that way ("he
# decided to move the jacket to the hook"), and the phases mark such a reading unsure
_INTENDING = frozenset(
    {"want", "hope", "wish", "plan", "intend", "mean", "aim", "desire", "expect", "need"}
    | {"try", "attempt", "long", "yearn", "promise", "offer", "refuse", "hesitate", "seek"}
    | {"vow", "threaten", "dream", "forget", "plot", "scheme", "arrange"}
    | {"propose", "consider", "struggle", "fail", "wait"}
)
_MODALS = frozenset(
    {"would", "could", "might", "should", "may", "will", "can", "shall", "must", "if"}
    | {"unless", "whether"}
)
_CLAUSE_EDGE = frozenset({",", ";", ":", "—", "–", "(", ")", "and", "but", "so", "then"})
_OBLIQUE = frozenset(
    {"for", "towards", "toward", "about", "at", "with", "against", "upon", "across", "through"}
    | {"into", "onto", "to", "in", "on", "under", "inside", "behind", "beside", "near", "by"}
    | {"like", "than", "without", "despite", "toward", "regarding", "concerning"}
)
# words opening a leading phrase that has a subject of its own or names one ("When Bo
# saw it, he", "In Bo's mind, he"): a name there may be the main clause's pronoun
_OPENERS = frozenset(
    {"as", "when", "while", "after", "before", "since", "because", "once", "if", "though"}
    | {"although", "until", "whenever", "in", "with", "to", "for", "at", "on", "from"}
    | {"during", "despite", "by", "upon", "under", "just", "even", "and", "but", "so"}
)
_PREPOSITIONS = frozenset(
    {"to", "of", "at", "with", "for", "from", "by", "about", "towards", "toward", "upon", "on"}
)


def _gender(low: str) -> str | None:
    """The personal pronoun a word is a form of ("him", "her", "himself": he, she)."""
    return (
        _SUBJECTS.get(low)
        or _OBJECT_PRONOUNS.get(low)
        or _POSSESSIVES.get(low)
        or _REFLEXIVES.get(low)
    )


def _wordlike(low: str) -> bool:
    """Whether a token is a word (a hyphenated one too: "worn-out")."""
    return low.replace("-", "").replace("'", "").isalpha()
