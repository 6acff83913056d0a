"""A question said aloud that is not where a thing is, and a character's answer to it.

A question is said aloud (``"What are your powers, Seraphina?" said User.``); it is put to
the character its words name first or last (``"Seraphina, …?"``, ``"…, Seraphina?"``),
or, naming no one, to whoever is alone with the one who asks (the offline character and
planner decide that from what each believes: :func:`said_question` and :func:`put_to`
read the words only).

:func:`reply` is what the character says to it, in the first person, from what it holds
itself and was given as its own — never the world's:

1. the entries of its own lore (its keyspace's copy: its card's book and what the author
   made known to it) that the question activates by a key: an entry that is always on
   answers nothing in particular;
2. asked about a place it knows of by name ("What do you make of the Laboratory?"), with no
   such entry, that place's description as its own mind holds it;
3. asked about itself ("Who are you?", "What are your powers?") with no such entry, its
   own description (its own entity, as its mind knows it);
4. what it believes of what the question names (the caller leaves out where a thing is
   that it keeps from the asker).

A sentence that tells a secret (its own, or one it knows) is never said; of the rest,
whole sentences, as many as fit in :data:`ANSWER_CHARS`; nothing left: :data:`NO_ANSWER`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabula.agents.contracts import LINE_CHARS
from fabula.agents.reading.extract import parse_sentence
from fabula.agents.shared.goals import Situation
from fabula.agents.views import AuthorView
from fabula.memory.records import Entity, slug
from fabula.memory.sentences import called
from fabula.memory.text import split_sentences
from fabula.worlds.cardtext import Exchange, Trait, read_card_text, speech_of, trait_sentences
from fabula.worlds.imports.cards import resolve_macros
from fabula.worlds.imports.keys import KeyError_, key_matches
from fabula.worlds.recall import Lit
from fabula.worlds.voice import terms

ANSWER_CHARS = 2 * LINE_CHARS
"""The most characters an offline answer to a free question says: two lines' worth, whole
sentences (a long lore entry or description is cut after its last sentence that fits)."""

NO_ANSWER = "I cannot say"
"""What a character says to a question nothing it holds answers."""

_CALLED = r"[A-Za-z][\w'-]*(?: [A-Za-z][\w'-]*)*"  # a name as a person types it
_FIRST = re.compile(rf"^(?P<name>{_CALLED}), (?P<rest>.+)$")
_LAST = re.compile(rf"^(?P<rest>.+?), (?P<name>{_CALLED})\?$")
_SELF = re.compile(
    r"\b(?:your|yours|yourself|(?:are|were|can|could) you|you (?:are|were|can|could)"
    r"|do you (?!know\b|think\b|believe\b|remember\b|see\b|hear\b))\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True)
class SaidLine:
    """A line someone said aloud: who (``speaker``, as written) and the words."""

    speaker: str
    words: str
    to: str | None = None  # whom the sentence says it was said to ("A asked B"), as written


def said_line(quote: str) -> SaidLine | None:
    """The line a remembered sentence says aloud, read by the controlled grammar
    (:func:`~fabula.agents.reading.extract.parse_sentence`) in any of its orders of
    dialogue (``"…" said A.``, ``"…," A said.``, ``"…?" A asked B.``, ``A said to B, "…"``,
    a memory's own ``A said to B: "…"``) or as a question told as narration (``A asked B
    about …``, its words as they would have been said); None for any other sentence."""
    action = parse_sentence(" ".join(quote.split()))
    if action.kind != "say" or not action.actors or not action.utterance:
        return None
    to = action.listeners[0] if action.listeners else None
    return SaidLine(action.actors[0], action.utterance, to)


def said_question(quote: str) -> SaidLine | None:
    """The question a remembered sentence says aloud or tells (:func:`said_line`, its
    words ending in a question mark), or a request for words or a way phrased as an order
    (:func:`as_question`: "Tell me about the ferry." is asked as "What is the ferry?");
    None for any other sentence."""
    said = said_line(quote)
    if said is None:
        return None
    if said.words.endswith("?"):
        return said
    asked = as_question(said.words)
    return None if asked is None else SaidLine(said.speaker, asked, said.to)


_TELL_ME = re.compile(
    r"^(?P<lead>[^,]+, )?(?:please,? )?(?:tell me (?:more |a little |a bit |something )?"
    r"(?:about|of)|describe|explain) (?P<topic>.+?)[.!]*$",
    re.IGNORECASE,
)
_TAKE_ORDER = re.compile(
    r"^(?P<lead>[^,]+, )?(?:please,? )?(?P<verb>take|bring|lead|walk|row|guide) "
    r"(?P<rest>(?:me|us)\b.+?)[.!]*$"
    r"|^(?P<lead2>[^,]+, )?(?:let's|let us) (?P<go>go|walk|head)\b(?P<rest2>.+?)[.!]*$",
    re.IGNORECASE,
)


def as_question(words: str) -> str | None:
    """A request phrased as an order, as the question it asks (a name that calls the one
    asked kept where it is); None for words that are neither:

    - about a topic ("Tell me about the ferry.", "Describe the lamp, Ilsa."): "What is the
      ferry?", "What is the lamp, Ilsa?" (about itself: "Who are you?"; "Tell me about your
      powers": "What are your powers?");
    - to go somewhere with the one who asks ("take me up to the lamp", "Let's go to the
      tower."): "Can you take me up to the lamp?", "Shall we go to the tower?"
      (:func:`asked_to_go` reads them)."""
    words = " ".join(words.split())
    told = _TELL_ME.match(words)
    if told is not None:
        lead, topic = told["lead"] or "", told["topic"]
        bare = topic.split(",")[0].strip().casefold()
        if bare in ("yourself", "you"):
            question = "Who are you" + topic[len(topic.split(",")[0]) :]
        elif bare.startswith("your "):
            be = "are" if bare.endswith("s") and not bare.endswith("ss") else "is"
            question = f"What {be} {topic}"
        else:
            question = f"What is {topic}"
        if lead:  # "Ilsa, what is the lamp?"
            question = question[0].lower() + question[1:]
        return _capital(lead + question) + "?"
    taken = _TAKE_ORDER.match(words)
    if taken is None:
        return None
    if taken["verb"]:
        lead = taken["lead"] or ""
        return _capital(f"{lead}can you {taken['verb'].casefold()} {taken['rest']}?")
    lead = taken["lead2"] or ""
    return _capital(f"{lead}shall we {taken['go'].casefold()}{taken['rest2']}?")


def addressed(said: SaidLine, names: Mapping[str, str]) -> tuple[str | None, str]:
    """Whom ``said`` was put to, of ``names`` (character id → name): the one its words call
    by name (:func:`put_to`), else the one its sentence names ("A asked B"); and its words
    without the name. (None, the words) when it names no one of ``names``."""
    to, words = put_to(said.words, names)
    if to is None and said.to is not None:
        to = next((i for i, n in names.items() if said.to.casefold() in _called(n)), None)
    return to, words


def _called(name: str) -> tuple[str, str]:
    return name.casefold(), name.split(" ")[0].casefold()


def said_to(view: AuthorView, characters: Sequence[str], text: str) -> list[str]:
    """Whom the questions said aloud in ``text`` were put to, as the author sees the story
    (``view``): the character each names, else the one other character in the asker's
    place."""
    names = {c: view.name(c) for c in characters}
    out = []
    for start, end in split_sentences(text):
        said = said_question(text[start:end])
        if said is None:
            continue
        to, _ = addressed(said, names)
        asker = slug(said.speaker)
        place = view.place_of(asker)
        with_them = [c for c in characters if c != asker and place and view.place_of(c) == place]
        if to is None and len(with_them) == 1:
            to = with_them[0]
        if to is not None and to != asker:
            out.append(to)
    return out


def put_to(words: str, names: Mapping[str, str]) -> tuple[str | None, str]:
    """Whom ``words`` are put to by name, of ``names`` (character id → name; a name or its
    first word, in any case), and the words without that name ("What are your powers?").
    (None, the words as they are) when they name no one of ``names`` first or last."""
    for pattern in (_FIRST, _LAST):
        m = pattern.match(words)
        if m is None:
            continue
        called = m["name"].casefold()
        for ident, name in names.items():
            if called in _called(name):
                rest = m["rest"].rstrip(",")
                rest = rest if rest.endswith("?") else rest + "?"
                return ident, rest[0].upper() + rest[1:]
    return None, words


def reply(
    words: str,
    me: str,
    *,
    description: str = "",
    lore: Sequence[str] = (),
    known: Sequence[str] = (),
    secrets: Sequence[str] = (),
    traits: Sequence[Trait] = (),
    places: Sequence[str] = (),
) -> str:
    """What ``me`` (its name) says to the question ``words``, in the first person (see the
    module docstring): from the ``lore`` entries the question activates by a key, else the
    descriptions of the places it names (``places``: :func:`place_texts`), else —
    asked about itself — its ``description``, then what it believes of what the question
    names (``known``: sentences, as its beliefs read); never a sentence that tells one of
    ``secrets``; :data:`NO_ANSWER` when nothing is left. Card markup in the lore and the
    description is read, not said: their prose as sentences, their lists (and its own
    ``traits``) in the first person (:func:`~fabula.worlds.cardtext.trait_sentences`)."""
    read = [read_card_text(x, me) for x in lore if x.strip()]
    sources = [_clean(r.prose) for r in read if r.prose.strip()]
    first = trait_sentences([t for r in read for t in r.traits])  # already its own words
    about = read_card_text(description, me)
    itself = _introduced(_sentences(_clean(about.prose)), me)
    if not sources and not first:  # a place it knows, asked about by name: a world's
        # description of it, its markup read (none of it an order to a model, though it may
        # read like one: "a conglomerate driving the frontier of AI")
        told = [read_card_text(x, me) for x in places if x.strip()]
        sources = [_clean(" ".join((r.prose, *r.instructions))) for r in told]
        sources = [x for x in sources if x]
    if not sources and not first:
        first = _asked_traits(words, [*traits, *about.traits])
    if not sources and not first and _about_me(words, me):
        listed = [*traits, *about.traits]
        asked = _stems(words) - _stems(me)
        if asked and not _IDENTITY.search(words):
            # "What are your powers?": what of itself the question names, not all it is
            itself = [s for s in itself if _stems(s) & asked]
            listed = [t for t in listed if _stems(" ".join((t.category, *t.values))) & asked]
        sources.append(" ".join(itself))
        first = trait_sentences(listed) if itself or not listed else traits_said(listed, me)
    said = [s for text in sources for s in _sentences(text) if not tells(s, secrets)]
    pronoun = _pronoun([*itself, *said], me)
    mine = [_of_me(s, me, pronoun) for s in said]
    mine += [s for s in first if not tells(s, secrets)]
    beliefs = [first_person(s, me) for s in known if not tells(s, secrets)]
    if beliefs:
        mine.append(_capital("As far as I know, " + "; ".join(beliefs) + "."))
    return _fitted(mine) or NO_ANSWER


def place_texts(words: str, entities: Mapping[str, Entity]) -> list[str]:
    """The descriptions of the places a question names (by their whole names, in any
    case: "What do you make of the Laboratory?"), of ``entities`` — the entities the
    character's own mind knows of, never the world's: a place it knows, as it knows it."""
    said = f" {_words(words)} "
    out = []
    for _, entity in sorted(entities.items()):
        name = _words(entity.name)
        if entity.kind == "place" and entity.description.strip() and f" {name} " in said:
            out.append(entity.description)
    return out


@dataclass(frozen=True)
class Company:
    """What a character believes of the moment it is asked in: where it is (``place``, as
    a sentence names it: "the glade", "Eldoria"; None when it does not know), the names of
    the others it believes are there with it (``others``, the asker left out), whether it
    believes the asker is there (``asker_here``), and how it is (``feeling``: its own
    condition, as it believes it; None for none)."""

    place: str | None
    others: tuple[str, ...] = ()
    asker_here: bool = True
    feeling: str | None = None


def company(sit: Situation, asker: str | None) -> Company:
    """What the character of ``sit`` believes of the moment ``asker`` asks it in (None: a
    person outside the story, in a chat): where it is, who else is there, whether the
    asker is, and its own condition — its own beliefs only."""
    here = sit.here
    others = tuple(sit.name(c) for c in sit.others_here() if c != asker)
    feeling = sit.beliefs.get(sit.me, "condition")
    well = feeling.value if feeling is not None and feeling.polarity else None
    return Company(
        place=called(here, sit.entities, place=True) if here else None,
        others=others,
        asker_here=asker is not None and _with(sit, asker),
        feeling=well.replace("_", " ") if well and " " not in well.strip() else None,
    )


def _with(sit: Situation, other: str) -> bool:
    """Whether ``other`` is, as far as the character believes, where it is (unknown: it
    may be)."""
    mine = sit.beliefs.where(sit.me)
    theirs = sit.beliefs.get(other, "location")
    if mine is None or theirs is None:
        return True
    return theirs.value == mine if theirs.polarity else theirs.value != mine


_WHERE_HERE = re.compile(
    r"^(?:and )?(?:so )?(?:where (?P<who>are we|am i|are you|is this(?: place)?)"
    r"(?: now| right now)?|what (?:is this place|place is this))\?$",
    re.IGNORECASE,
)
_ALONE = re.compile(
    r"\b(?:are|were) you (?:all )?(?:alone|by yourself|on your own)\b"
    r"|\b(?:is|are) (?:there )?any(?:one|body) (?:else )?(?:here|with you)\b"
    r"|^who (?:else )?(?:is|lives) (?:here|with you)\b",
    re.IGNORECASE,
)
_HOW_ARE_YOU = re.compile(
    r"^(?:and )?how (?:are you|do you feel|are you feeling|are you doing|have you been)"
    r"(?: today| now)?\?$|^are you (?:well|ok|okay|all right|alright)\?$",
    re.IGNORECASE,
)
FINE = "I am well"
"""How a character says it is, asked, when it believes nothing of its own condition."""


def situated(words: str, around: Company) -> str | None:
    """The answer to a question about the moment itself, from what the character believes
    of it (``around``), in the first person; None for any other question.

    - where it is ("Where are we?", "Where am I?", "What is this place?"): "We are in the
      glade." (the asker there with it), "I am in the glade.", "You are in the glade.";
      not knowing, "I do not know where we are.";
    - who is with it ("Are you alone out here?", "Is anyone else here?"): "No one is here
      but you and me.", "Mara is here with me.", "Yes, I am alone.";
    - how it is ("How are you?"): its condition ("I am tired."), else :data:`FINE`."""
    words = " ".join(words.split())
    where = _WHERE_HERE.match(words)
    if where is not None:
        who = (where["who"] or "").casefold()
        subject = {"am i": "You are", "are you": "I am"}.get(who)
        if subject is None:
            subject = "We are" if around.asker_here else "I am"
        if subject == "You are" and not around.asker_here:
            return "I do not know where you are."
        if around.place is None:
            unknown = {"We are": "we are", "I am": "I am", "You are": "you are"}[subject]
            return f"I do not know where {unknown}."
        return f"{subject} in {around.place}."
    if _ALONE.search(words):
        if around.others:
            be = "is" if len(around.others) == 1 else "are"
            return f"No: {_and(around.others)} {be} here with me."
        return "No one is here but you and me." if around.asker_here else "Yes, I am alone."
    if _HOW_ARE_YOU.match(words):
        return f"I am {around.feeling}." if around.feeling else f"{FINE}."
    return None


_TAKE_ME = re.compile(
    r"^(?:(?:can|could|will|would) you (?:please )?(?:take|bring|lead|show|walk|row|guide)"
    r" (?:me|us)|(?:can|could|shall|should|may) we (?:please )?(?:go|walk|head))"
    r"(?: (?:up|down|over|back|out|across))? (?:to|into|toward|towards) (?P<place>[^?]+)\?$",
    re.IGNORECASE,
)


def asked_to_go(words: str) -> str | None:
    """The place a question asks the one it is put to to go to with the asker ("Can you
    take me to the watchtower?", "Shall we go to Eastmere?"), as written ("the
    watchtower"); None for any other question."""
    m = _TAKE_ME.match(" ".join(words.split()))
    return m["place"].strip() if m is not None else None


def _shape(words: str) -> str | None:
    """Which question about the moment ``words`` is (:func:`situated`): "where", "alone",
    "how"; None for another."""
    words = " ".join(words.strip().strip('"').split())
    for shape, pattern in (("where", _WHERE_HERE), ("alone", _ALONE), ("how", _HOW_ARE_YOU)):
        if pattern.search(words):
            return shape
    return None


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


_LOOKS = frozenset({"look", "appearance", "body"})


def _asked_traits(words: str, traits: Sequence[Trait]) -> list[str]:
    """The traits a question asks about, said in the first person: one whose category or
    verb it names ("What do you like?": likes; "What do you wear?": clothes; "What do you
    look like?": body)."""
    want = _stems(words)
    out = []
    for trait in traits:
        said = trait_sentences([trait])  # none for a category of the story (its genre)
        if not said:
            continue
        sentence = said[0]
        keys = _stems(trait.category) | _stems(sentence.split(" ")[1])
        if sentence.startswith("I have ") and trait.category != "persona":
            keys |= _LOOKS
        if keys & want and not ("look" in want and "like" in keys and "look" not in keys):
            out.append(sentence)
    return out


_IDENTITY = re.compile(
    r"^(?:and )?(?:who|what) (?:are|were) you\b|\b(?:about|describe) yourself\b"
    r"|^what are you like\b|\byour name\b|^who is this\b",
    re.IGNORECASE,
)
"""A question asking who the one it is put to is, as a whole ("Who are you?", "Tell me
about yourself", "What is your name?"): its description and traits answer it whole."""


def unheld(words: str, texts: Sequence[str]) -> bool:
    """Whether ``words`` ask after something of the one asked ("What are your powers?")
    that none of ``texts`` (what it recalls) names: a question nothing it holds answers,
    not one to answer with everything it remembers."""
    m = re.search(r"\byour ([a-z][\w' -]*)", words, re.IGNORECASE)
    if m is None:
        return False
    asked = _stems(m.group(1))
    held = [t for t in texts if said_question(t) is None]  # a question asked holds nothing
    return bool(asked) and not any(asked & _stems(t) for t in held)


def _about_me(words: str, me: str) -> bool:
    """Whether the question is about the one it is put to ("your", "who are you", "can
    you", "what do you do", its name; not "what do you know of the key")."""
    return bool(_SELF.search(words)) or re.search(rf"\b{re.escape(me)}\b", words) is not None


def _clean(text: str) -> str:
    """A text as a line may say it: one line, no double quotation marks or emphasis."""
    text = text.replace("*", "").replace("“", "'").replace("”", "'").replace('"', "'")
    return " ".join(text.split())


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text) if any(c.isalpha() for c in text[s:e])]


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def asked_lore(lit: Sequence[Lit], words: str) -> list[str]:
    """The texts of the entries of ``lit`` (a character's lore for the turn, activated by
    the chat scan over the turns it lived and the question) that the question ``words``
    itself names by one of their keys: the lore it asks about. An entry lit by an earlier
    turn only ("What is the Thornwood?" two turns ago, now "Who are you?"), or one always
    on, is lore the turn has at hand, not an answer to this question."""
    out = []
    for x in lit:
        entry = x.activated.entry
        if x.activated.fired == "constant":
            continue
        case = bool(entry.case_sensitive)
        whole = True if entry.whole_words is None else entry.whole_words
        if any(_key_in(key, words, entry.use_regex, case, whole) for key in entry.keys):
            out.append(x.text)
    return out


def _key_in(key: str, words: str, regex: bool, case: bool, whole: bool) -> bool:
    """Whether a lore key is found in ``words`` (an invalid regular expression never is)."""
    try:
        return key_matches(key, words, use_regex=regex, case_sensitive=case, whole_words=whole)
    except KeyError_:
        return False


def tells(sentence: str, secrets: Sequence[str]) -> bool:
    """Whether ``sentence`` says one of ``secrets`` or a part of one (words compared
    without case or punctuation)."""
    said = _words(sentence)
    for secret in secrets:
        kept = _words(secret)
        if kept and said and (f" {kept} " in f" {said} " or f" {said} " in f" {kept} "):
            return True
    return False


_PRONOUNS = {"she": "her", "he": "his", "they": "their"}
_AGREE = {"is": "am", "has": "have", "does": "do", "was": "was", "believes": "believe"}
_NOT_VERBS = frozenset({"always", "also", "never", "often", "once", "still", "as", "us"})


def _introduced(sentences: list[str], me: str) -> list[str]:
    """A description's sentences, the first one saying who it is of ("A careful
    archivist." → "Leo is a careful archivist.", "Leo's cousin." → "Mara is Leo's
    cousin."): one that opens with an article or a possessive names no one."""
    if not sentences:
        return sentences
    first = sentences[0]
    opening = first.split(" ")[0]
    if opening in ("A", "An", "The"):
        first = f"{me} is {opening.lower()} {first.split(' ', 1)[1]}" if " " in first else first
    elif opening.endswith("'s") and opening[:-2] != me:
        first = f"{me} is {first}"
    return [first, *sentences[1:]]


def _pronoun(sentences: Sequence[str], me: str) -> str | None:
    """The pronoun a text uses for ``me``: the one (or its possessive) that opens the
    sentence after a sentence that opens with its name ("Mira is … . She tends …", "Mira's
    powers: … . Her magic …"), if any."""
    possessives = {own: subject for subject, own in _PRONOUNS.items()}
    for before, after in itertools.pairwise(sentences):
        first = after.split(" ")[0].casefold()
        if before.startswith((f"{me} ", f"{me}'s ")) and first in _PRONOUNS:
            return first
        if before.startswith((f"{me} ", f"{me}'s ")) and first in possessives:
            return possessives[first]  # "Mira's powers: … . Her magic …"
    return None


_OBJECT_WORDS = "the|a|an|my|his|her|their|its|them|him|it|away|back|out|up"
_PREPOSITIONS = "on|in|at|of|for|with|from|to|by|into|onto|under|over|near|about|and|or"
_AFTER_OBJECT = (  # words that follow "her" as an object, not as a possessive
    "when|and|or|to|with|in|on|at|as|that|if|but|so|back|away|up|out|for|from|by|again|too"
)


def _of_me(sentence: str, me: str, pronoun: str | None) -> str:
    """A sentence of a text about ``me`` in ``me``'s own words: its name (and, opening a
    sentence, its ``pronoun``) as "I", its possessive as "my", the verb after "I" agreed."""
    sentence = _named_whole(sentence, me)
    opening = sentence.split(" ")[0].casefold()
    if pronoun is not None and opening == pronoun:
        sentence = f"{me} " + sentence.split(" ", 1)[1]
    elif pronoun is not None and opening == _PRONOUNS[pronoun]:
        sentence = f"{me}'s " + sentence.split(" ", 1)[1]
    text = first_person(sentence, me)
    mine = text.startswith(("I ", "My "))  # a sentence about itself
    if pronoun is None and mine:  # "I heal with her magic": her is mine
        used = [p for p in _PRONOUNS if re.search(rf"\b{_PRONOUNS[p]}\b(?= [a-z])", text)]
        pronoun = used[0] if len(used) == 1 else None
    if pronoun is not None and mine:
        own = _PRONOUNS[pronoun]
        # "her" before a noun is "my"; before a word like "when", or at a clause's end, "me"
        text = re.sub(rf"\b{own}\b(?= (?:{_AFTER_OBJECT})\b|[.,;!?])", "me", text)
        text = re.sub(rf"\b{own}\b(?= [a-z])", "my", text)
        if pronoun == "he":
            text = re.sub(r"\bhim\b", "me", text)
        # the pronoun as a later clause's subject ("I am old, and she has rowed"): "I"
        text = re.sub(
            rf"([,;] (?:and |but |so )?){pronoun} ([a-z]+)\b",
            lambda m: m.group(1) + _agreed("I " + m.group(2)),
            text,
        )
    # "To Trek, Falko is a colleague with whom he talks": its own view, said as its view is
    # said ("Falko is a colleague with whom I talk")
    view = re.match(r"^(?:To|For|In the eyes of) me, ", text)
    if view is not None:
        text = _capital(text[view.end() :])
        used = [p for p in ("he", "she") if re.search(rf"\b{p}\b", text, re.IGNORECASE)]
        if len(used) == 1:  # the one it speaks of is named: the pronoun is its own
            subject = used[0]
            text = re.sub(
                rf"\b{subject}( [a-z]+ly)? ([a-z]+)\b",
                lambda m: "I" + (m.group(1) or "") + " " + _own_verb(m.group(2)),
                text,
            )
            text = re.sub(rf"\b{_PRONOUNS[subject]}\b(?= [a-z])", "my", text)
            text = re.sub(r"\bhim\b" if subject == "he" else r"\bher\b", "me", text)
    return _agreed(text)


def _named_whole(sentence: str, me: str) -> str:
    """``sentence`` with ``me``'s first name alone ("Trek", of "Trek·Vemil"), as a text
    about it calls it, written as its whole name, so that it is said in the first person
    too ("To Trek, Falko is …" → "To Trek·Vemil, Falko is …")."""
    short = re.split(r"[ ·]", me, maxsplit=1)[0]
    if short == me or not short:
        return sentence
    rest = re.escape(me[len(short) :])
    return re.sub(rf"\b{re.escape(short)}\b(?!{rest})(?![·'-]?\w)", me, sentence)


def _agreed(text: str) -> str:
    """ "I heals" → "I heal", "I carries" → "I carry", "and has" → "and have" (after "I")."""

    def verb(m: re.Match[str]) -> str:
        return m.group(1) + _own_verb(m.group(2))

    if not text.startswith("I "):
        return text
    text = re.sub(r"^(I )([a-z]+)\b", verb, text)
    text = re.sub(r"( and )(is|has|does)\b", lambda m: m.group(1) + _AGREE[m.group(2)], text)
    # a second verb of "I" ("I heal ... and drives the beasts back"): one an object follows
    text = re.sub(rf"( and )([a-z]+)\b(?= (?:{_OBJECT_WORDS})\b)", verb, text)
    # or a word that is no preposition ("and tells long stories"; "nets and ropes on")
    return re.sub(rf"( and )([a-z]+s)\b(?= (?!(?:{_PREPOSITIONS})\b)[a-z])", verb, text)


def _own_verb(word: str) -> str:
    """A verb as "I" says it: "heals" → "heal", "carries" → "carry", "is" → "am"; a word
    that is no such verb ("always", "firmly") as it is."""
    if word in _AGREE:
        return _AGREE[word]
    if word in _NOT_VERBS or len(word) < 4 or not word.endswith("s") or word.endswith("ss"):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if re.search(r"(?:ch|sh|x|z|o)es$", word):
        return word[:-2]
    return word[:-1]


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fitted(sentences: Sequence[str]) -> str:
    """As many of ``sentences``, in order, as fit in :data:`ANSWER_CHARS`; a first one
    too long alone is cut after its last word that fits."""
    out: list[str] = []
    for sentence in sentences:
        if len(" ".join([*out, sentence])) > ANSWER_CHARS:
            break
        out.append(sentence)
    if not out and sentences:
        cut = sentences[0][: ANSWER_CHARS - 1].rsplit(" ", 1)[0]
        return cut.rstrip(",;:") + "…"
    return " ".join(out)


_BE = {"is": "am", "was": "was", "has": "have", "does": "do", "believes": "believe"}


def first_person(text: str, me: str) -> str:
    """``text`` as ``me`` says it of itself: "Owen is in the loft" → "I am in the loft",
    "with Owen" → "with me", "Owen's map" → "my map" (other words are left as written)."""
    name = re.escape(me)
    text = re.sub(rf"\bsaid {name}\b", "I said", text)  # never "said me"
    text = re.sub(rf"\b{name}['’]s\b", "my", text)
    text = re.sub(rf"\b{name} (is|was|has|does|believes)\b", lambda m: "I " + _BE[m.group(1)], text)
    text = re.sub(
        rf"(^|[.;!?:]\s+|\bthat\s+){name}\b(?: ([a-z]+)\b)?",
        lambda m: m.group(1) + "I" + (f" {_own_verb(m.group(2))}" if m.group(2) else ""),
        text,
    )
    # "However, Trek notices": the name opening a clause, a verb after it
    text = re.sub(
        rf"(,\s+){name} ([a-z]+s)\b(?! (?:and|or)\b)",
        lambda m: m.group(1) + "I " + _own_verb(m.group(2)),
        text,
    )
    text = re.sub(rf"\b{name}\b", "me", text)
    return re.sub(r"^my\b", "My", text)


@dataclass(frozen=True)
class ExampleReply:
    """An example reply of the character's card, as it says it in the story: what it does
    as it speaks (``gesture``: one sentence, in the past tense, the one it answers named;
    "" for none) and its words."""

    gesture: str
    words: str


def card_exchanges(texts: Sequence[str], me: str, asker: str) -> list[Exchange]:
    """The example exchanges of ``texts`` (a card's examples, lore entries; a macro left
    in them is ``me`` or ``asker``), read by
    :func:`~fabula.worlds.cardtext.read_card_text`."""
    resolved = (resolve_macros(text, me, asker) for text in texts)
    return [x for text in resolved for x in read_card_text(text, me, users=(asker,)).exchanges]


def addressed_to(words: str, name: str) -> str:
    """An answer said to ``name``: its name before the answer's last mark ("I can heal,
    User"; "Are you hungry, User?")."""
    words = words.strip().rstrip(".,;:")
    if words.endswith(("?", "!")):
        return f"{words[:-1].rstrip()}, {name}{words[-1]}"
    return f"{words}, {name}"


_VAGUE = frozenset(
    {"here", "there", "how", "where", "when", "why", "now", "today", "ever", "still", "out"}
)
"""Words that say nothing of what a question is about ("What do you do here?" and "Are
there wolves here?" are not one question): a question word, a word pointing at the
moment or the place."""


def _stems(text: str) -> set[str]:
    """The words of ``text`` that say what it is about (not :data:`_VAGUE`), a plural as
    its singular."""
    return {
        w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w
        for w in terms(text)
        if w not in _VAGUE
    }


def best_exchange(
    words: str, lit: Sequence[Exchange], examples: Sequence[Exchange]
) -> Exchange | None:
    """The exchange whose prompt best matches the question ``words``: of the lore entries
    the question activated (``lit``: any, the one sharing most words first) and the
    card's examples (one sharing a word at least); the earlier on a tie; None for none."""
    want = _stems(words)
    asked = _words(words)
    shape = _shape(words)
    best: tuple[int, int, Exchange] | None = None
    for i, (x, bonus) in enumerate([*((x, 1) for x in lit), *((x, 0) for x in examples)]):
        shared = len(_stems(x.prompt) & want)
        if shape is not None and _shape(x.prompt) == shape:
            shared += 1  # "Where am I?" answers "Where are we?" as the card's author would
        if _words(x.prompt) == asked:  # the very question ("Who are you?": no word of note)
            shared += 100
        if not x.prompt or (shared == 0 and bonus == 0):
            continue
        score = (shared + bonus, -i)
        if best is None or score > (best[0], best[1]):
            best = (score[0], score[1], x)
    return best[2] if best is not None else None


_IRREGULAR = {
    "is": "was",
    "are": "were",
    "has": "had",
    "does": "did",
    "goes": "went",
    "takes": "took",
    "gives": "gave",
    "makes": "made",
    "says": "said",
    "sits": "sat",
    "stands": "stood",
    "holds": "held",
    "keeps": "kept",
    "leaves": "left",
    "feels": "felt",
    "finds": "found",
    "brings": "brought",
    "thinks": "thought",
    "sees": "saw",
    "comes": "came",
    "gets": "got",
    "puts": "put",
    "lets": "let",
    "runs": "ran",
    "speaks": "spoke",
    "knows": "knew",
    "tells": "told",
    "hears": "heard",
    "sets": "set",
    "rises": "rose",
    "shakes": "shook",
    "draws": "drew",
    "grows": "grew",
    "throws": "threw",
    "begins": "began",
    "lies": "lay",
    "meets": "met",
    "sends": "sent",
    "spends": "spent",
    "wears": "wore",
    "bends": "bent",
    "kneels": "knelt",
    "leads": "led",
    "breaks": "broke",
    "catches": "caught",
    "teaches": "taught",
    "seeks": "sought",
    "writes": "wrote",
    "hides": "hid",
    "bites": "bit",
    "shines": "shone",
    "swings": "swung",
    "hangs": "hung",
    "spreads": "spread",
    "cuts": "cut",
    "shuts": "shut",
    "becomes": "became",
    "steps": "stepped",
    "nods": "nodded",
    "hums": "hummed",
    "grins": "grinned",
    "stops": "stopped",
    "drops": "dropped",
    "taps": "tapped",
    "hugs": "hugged",
    "pats": "patted",
    "wraps": "wrapped",
    "slips": "slipped",
    "shrugs": "shrugged",
}
_GESTURES = frozenset(
    {"smiles", "laughs", "nods", "grins", "sighs", "shrugs", "winks", "waves", "frowns"}
    | {"blushes", "giggles", "chuckles", "hums", "pauses", "waits", "leans", "turns"}
    | {"looks", "glances", "points", "beams", "smirks", "yawns", "stretches", "whispers"}
    | {"mutters", "replies", "answers", "adds", "gestures", "shivers", "scoffs", "snorts"}
    | {"purrs", "growls", "huffs", "pouts", "listens", "watches", "stares", "blinks"}
)
"""Verbs of gesture, the second verb of a card's action ("… and smiles")."""
_SUBJECT = r"(?:\b(?:she|he|they|it|I)|{me})"


def _past(verb: str) -> str:
    """A verb of the present (third person) in the past: "smiles" → "smiled"."""
    low = verb.casefold()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low.endswith("ies") and len(low) > 4:
        return low[:-3] + "ied"
    if low.endswith("es") and re.search(r"(?:ch|sh|ss|x|z)es$", low):
        return low[:-2] + "ed"
    if low.endswith("ees") or (low.endswith("es") and low[-3:-2] not in "aeiou"):
        return low[:-1] + "d"
    if low.endswith("s") and not low.endswith("ss"):
        stem = low[:-1]
        if re.fullmatch(r"[^aeiou]*[aeiou][bdgklmnprt]", stem):
            return stem + stem[-1] + "ed"  # "stirs" → "stirred", "grabs" → "grabbed"
        return stem + "ed"
    return verb


def gesture_of(deed: str, me: str, asker: str) -> str:
    """A card's ``*action*`` as one sentence of the story: the one it speaks to named for
    "you", the character named where it opens with a pronoun or a bare verb, its verbs
    after a subject in the past ("*smiles softly at you*" → "Seraphina smiled softly at
    User.")."""
    text = " ".join(deed.split()).strip(" .")
    text = re.sub(r"\byourself\b", asker, text)
    text = re.sub(r"\byour\b", f"{asker}'s", text)
    text = re.sub(r"\b[Yy]ou\b", asker, text)
    first = text.split(" ")[0]
    if first in ("She", "He", "They", "I"):
        text = f"{me} {text.split(' ', 1)[1]}" if " " in text else me
    elif first[:1].islower():
        text = f"{me} {text}"
    subject = _SUBJECT.format(me="|".join(re.escape(n) for n in {me, me.split(" ")[0]}))
    text = re.sub(
        rf"({subject}\s+(?:[a-z]+ly\s+)?)([a-z]+s)\b",
        lambda m: m.group(1) + _past(m.group(2)),
        text,
    )
    pasts = "|".join({*_IRREGULAR.values()})
    text = re.sub(
        rf"(\b(?:[a-z]+ed|{pasts})\s+and\s+)([a-z]+s)\b",
        lambda m: m.group(1) + _past(m.group(2)),
        text,
    )
    # its second verb after the first one's object ("pulled her shawl tighter and smiles"):
    # a verb of gesture or one of the irregular verbs
    if re.search(rf"^\S+(?: [a-z]+ly)? (?:[a-z]+ed|{pasts})\b", text):
        text = re.sub(
            r"(\s+and\s+)([a-z]+s)\b",
            lambda m: (
                m.group(1) + _past(m.group(2))
                if m.group(2) in _GESTURES or m.group(2) in _IRREGULAR
                else m.group(0)
            ),
            text,
        )
    return text[:1].upper() + text[1:] + "."


def example_reply(exchange: Exchange, me: str, asker: str) -> ExampleReply:
    """An example's reply as the character says it in the story (:class:`ExampleReply`):
    its first action as a gesture, its words as whole sentences that fit in
    :data:`ANSWER_CHARS` (none said: the action alone, "…" as words)."""
    deeds, said = speech_of(exchange.reply)
    gesture = gesture_of(deeds[0], me, asker) if deeds else ""
    words = _fitted(_sentences(" ".join(_clean(w) for w in said)))
    return ExampleReply(gesture, words)


def traits_said(traits: Sequence[Trait], me: str) -> list[str]:
    """A character's traits as it says them of itself, its name first ("I am Seraphina.
    I am caring and gentle. I have pink hair.")."""
    if not traits:
        return []
    return [f"I am {me}.", *trait_sentences(traits)]


def card_answer(
    words: str, me: str, asker: str, lore: Sequence[str], examples: Sequence[str]
) -> str | None:
    """What the character says to ``words`` from its card alone, as a passage would tell
    it (its action, then its words in quotation marks): the example whose prompt matches
    (:func:`best_exchange`, of the ``lore`` entries the question activated and its
    ``examples``); None when no example matches."""
    found = best_exchange(
        words, card_exchanges(lore, me, asker), card_exchanges(examples, me, asker)
    )
    if found is None:
        return None
    said = example_reply(found, me, asker)
    if not said.words:
        return said.gesture or None
    return " ".join(x for x in (said.gesture, f'"{said.words}"') if x)


def lore_said(text: str, me: str) -> list[str]:
    """A lore entry as sentences the character may say of it: its prose, its lists in the
    first person; never its markup (an Ali:Chat exchange is said by :func:`card_answer`)."""
    read = read_card_text(text, me)
    return [*_sentences(_clean(read.prose)), *trait_sentences(read.traits)]
