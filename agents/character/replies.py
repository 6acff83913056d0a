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
2. asked about itself ("Who are you?", "What are your powers?") with no such entry, its
   own description (its own entity, as its mind knows it);
3. what it believes of what the question names (the caller leaves out where a thing is
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
from fabula.agents.memory_builder.extract import parse_sentence
from fabula.agents.views import AuthorView
from fabula.memory.records import slug
from fabula.memory.text import split_sentences

ANSWER_CHARS = 2 * LINE_CHARS
"""The most characters an offline answer to a free question says: two lines' worth, whole
sentences (a long lore entry or description is cut after its last sentence that fits)."""

NO_ANSWER = "I cannot say"
"""What a character says to a question nothing it holds answers."""

_CALLED = r"[A-Za-z][\w'-]*(?: [A-Za-z][\w'-]*)*"  # a name as a person types it
_FIRST = re.compile(rf"^(?P<name>{_CALLED}), (?P<rest>.+)$")
_LAST = re.compile(rf"^(?P<rest>.+?), (?P<name>{_CALLED})\?$")
_SELF = re.compile(
    r"\b(?:your|yours|yourself|(?:are|were|can|could) you|you (?:are|were|can|could))\b",
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
    (:func:`~fabula.agents.memory_builder.extract.parse_sentence`) in any of its orders of
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
    words ending in a question mark); None for any other sentence."""
    said = said_line(quote)
    return said if said is not None and said.words.endswith("?") else None


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
) -> str:
    """What ``me`` (its name) says to the question ``words``, in the first person (see the
    module docstring): from the ``lore`` entries the question activates by a key, else —
    asked about itself — its ``description``, then what it believes of what the question
    names (``known``: sentences, as its beliefs read); never a sentence that tells one of
    ``secrets``; :data:`NO_ANSWER` when nothing is left."""
    sources = [_clean(x) for x in lore if x.strip()]
    itself = _introduced(_sentences(_clean(description)), me)
    if not sources and _about_me(words, me):
        sources.append(" ".join(itself))
    said = [s for text in sources for s in _sentences(text) if not _tells(s, secrets)]
    pronoun = _pronoun([*itself, *said], me)
    mine = [_of_me(s, me, pronoun) for s in said]
    beliefs = [first_person(s, me) for s in known if not _tells(s, secrets)]
    if beliefs:
        mine.append(_capital("As far as I know, " + "; ".join(beliefs) + "."))
    return _fitted(mine) or NO_ANSWER


def _about_me(words: str, me: str) -> bool:
    """Whether the question is about the one it is put to ("your", "who are you", "can
    you", its name; not "what do you know of the key")."""
    return bool(_SELF.search(words)) or re.search(rf"\b{re.escape(me)}\b", words) is not None


def _clean(text: str) -> str:
    """A text as a line may say it: one line, no double quotation marks or emphasis."""
    text = text.replace("*", "").replace("“", "'").replace("”", "'").replace('"', "'")
    return " ".join(text.split())


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text) if any(c.isalpha() for c in text[s:e])]


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def _tells(sentence: str, secrets: Sequence[str]) -> bool:
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
_AFTER_OBJECT = (  # words that follow "her" as an object, not as a possessive
    "when|and|or|to|with|in|on|at|as|that|if|but|so|back|away|up|out|for|from|by|again|too"
)


def _of_me(sentence: str, me: str, pronoun: str | None) -> str:
    """A sentence of a text about ``me`` in ``me``'s own words: its name (and, opening a
    sentence, its ``pronoun``) as "I", its possessive as "my", the verb after "I" agreed."""
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
    return _agreed(text)


def _agreed(text: str) -> str:
    """ "I heals" → "I heal", "I carries" → "I carry", "and has" → "and have" (after "I")."""

    def verb(m: re.Match[str]) -> str:
        word = m.group(2)
        if word in _AGREE:
            return m.group(1) + _AGREE[word]
        if word in _NOT_VERBS or len(word) < 4 or not word.endswith("s") or word.endswith("ss"):
            return m.group(0)
        if word.endswith("ies"):
            return m.group(1) + word[:-3] + "y"
        if re.search(r"(?:ch|sh|x|z|o)es$", word):
            return m.group(1) + word[:-2]
        return m.group(1) + word[:-1]

    if not text.startswith("I "):
        return text
    text = re.sub(r"^(I )([a-z]+)\b", verb, text)
    text = re.sub(r"( and )(is|has|does)\b", lambda m: m.group(1) + _AGREE[m.group(2)], text)
    # a second verb of "I" ("I heal ... and drives the beasts back"): one an object follows
    return re.sub(rf"( and )([a-z]+)\b(?= (?:{_OBJECT_WORDS})\b)", verb, text)


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
    text = re.sub(rf"\b{name}'s\b", "my", text)
    text = re.sub(rf"\b{name} (is|was|has|does|believes)\b", lambda m: "I " + _BE[m.group(1)], text)
    text = re.sub(rf"(^|[.;!?:]\s+|\bthat\s+){name}\b", lambda m: m.group(1) + "I", text)
    text = re.sub(rf"\b{name}\b", "me", text)
    return re.sub(r"^my\b", "My", text)
