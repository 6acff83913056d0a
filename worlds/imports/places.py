"""The places an imported text names: where a card's story can go.

A card names no places as a world pack does; its scenario, greeting, description and lore
name them in prose ("wakes in her cottage at the edge of the Thornwood", "The Thornwood is
an ancient forest"). A place is named only where the text *puts* something there: a noun
phrase after a locative preposition ("in", "at", "by", "below", "into" ...; "to" and
"toward" after a verb of motion, "carried her to the glade") — never any object after
"to" or "from" ("throws a rope to the post", "far from the road"), never a noun merely
mentioned ("lost the road"). Such a phrase is a place when:

- its head is a common noun WordNet knows as a kind of place (its hypernyms, the general
  words :mod:`fabula.memory.index.general` ships, WordNet 3.1): a clearly spatial kind (a
  building, a room, a dwelling, a geographic area, land, a body of water, a workplace), or,
  after a preposition that can only mean where (not "to" or "from"), a looser kind (a
  location, a structure, an area). A noun that is also a body part, a piece of furniture,
  a time or a boundary ("hand", "bed", "night", "edge") is never one;
- or it is a name ("at Sable Crossing", "below Greyhaven lighthouse", "in the Thornwood")
  after such a preposition, not one of the cast, nor a time;
- or an inverted sentence of place puts it at one ("Beyond the cottage lie the old chapel
  and the river ford": what lies beyond the cottage is somewhere), a clearly spatial kind.

A phrase followed by "of" passes its frame on: in "at the edge of the Thornwood" the place
is the Thornwood; in "in the forest of Eldoria" it is Eldoria, a forest. A name is also a
place where a lore entry defines it as one ("The Thornwood is an ancient forest").

(WordNet's lexicographer classes, ``noun.location`` and the like, are not shipped; the
hypernym table is what the layers below ``agents`` have, and it is enough with the frame.)

Deterministic, no model; what is read is :class:`Named` — each place with the noun it was
named by, in the order the texts first name them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fabula.memory.index.general import general_table
from fabula.memory.index.terms import terms
from fabula.memory.records import slug

# WordNet kinds (as the general-words table stems them) that make a noun a place
_SPATIAL = frozenset(
    {"build", "edific", "room", "dwell", "abod", "geograph_area", "geograph_region"}
    | {"bodi_water", "dri_land", "land", "workplac", "settlement", "urban_area"}
    | {"place_worship", "popul_area", "district"}
)
_LOOSE = frozenset({"locat", "structur", "area", "region", "construct"})
# kinds that make a noun too often something else (a body part, furniture, a time, a side)
_NEVER = frozenset(
    {"bodi_part", "extern_bodi_part", "furnitur", "articl_furnitur", "time_period"}
    | {"period_time", "illumin", "semidark", "spatial_arrang", "boundari", "surfac"}
)
# prepositions (and verbs) that put what follows somewhere: a looser kind of place counts
_WHERE = frozenset(
    {"in", "into", "inside", "at", "within", "on", "onto", "upon", "by", "beside", "near"}
    | {"behind", "below", "beneath", "under", "above", "beyond", "outside", "through"}
    | {"across", "around", "along", "enter", "enters", "entered", "reach", "reaches"}
    | {"reached", "visit", "visits", "visited", "leave", "leaves", "left"}
)
# toward a place, after a verb of motion only ("carried her to the glade"; not "throws a
# rope to the post"), or away from one: a clearly spatial kind only
_TOWARD = frozenset({"to", "toward", "towards", "from"})
MOTION_VERBS = frozenset(
    {"go", "goes", "went", "gone", "come", "comes", "came", "walk", "walks", "walked"}
    | {"run", "runs", "ran", "return", "returns", "returned", "head", "heads", "headed"}
    | {"carry", "carries", "carried", "bring", "brings", "brought", "lead", "leads", "led"}
    | {"take", "takes", "took", "taken", "travel", "travels", "travelled", "traveled"}
    | {"ride", "rides", "rode", "sail", "sails", "sailed", "row", "rows", "rowed", "drive"}
    | {"drives", "drove", "fly", "flies", "flew", "climb", "climbs", "climbed", "move"}
    | {"moves", "moved", "hurry", "hurries", "hurried", "flee", "flees", "fled", "drag"}
    | {"drags", "dragged", "pull", "pulls", "pulled", "send", "sends", "sent", "way"}
    | {"back", "home", "journey", "journeys", "journeyed", "wander", "wanders", "wandered"}
)
"""Verbs (and words) of motion: after one, "to" puts what follows somewhere."""
_MOTION = MOTION_VERBS
# verbs of an inverted sentence of place: "Beyond the cottage lie the old chapel and the
# river ford", "In the valley stands a mill" put what follows them at the place before
_LIE = frozenset(
    {"lie", "lies", "lay", "stand", "stands", "stood", "sit", "sits", "sat", "rise", "rises"}
    | {"rose"}
)
_BE = frozenset({"is", "are", "was", "were"})  # "Behind the inn is a stable"
_DETERMINERS = frozenset({"the", "a", "an", "his", "her", "their", "its", "my", "your", "our"})
_STOP = frozenset(
    {"and", "or", "but", "of", "with", "after", "before", "where", "while", "when", "that"}
    | {"who", "which", "is", "are", "was", "were", "as", "by", "for", "on", "under", "over"}
    | _WHERE
    | _TOWARD
    | _DETERMINERS
    | _LIE
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|[.,;:!?\"()*—–]")
_COPULA = re.compile(
    r"^\s*(?:[Tt]he\s+)?(?P<name>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)\s+(?:is|was|lies|stands)\s+"
    r"(?:a|an|the|one of the)\s+(?P<rest>[^.;:]*)",
)

Frame = str
"""How a text puts something at a phrase: ``"where"`` (in, at, by, below ...), ``"toward"``
(to or from, after a verb of motion, or from), or ``""`` (not at all)."""


@dataclass(frozen=True)
class Named:
    """A place a text names: its name as the world will call it, and the noun it is a
    kind of ("forest" for "Thornwood"; its name itself for a common noun)."""

    name: str
    noun: str


def _kinds(word: str) -> set[str]:
    """The WordNet kinds of ``word`` (itself among them: "room" is a room), any sense."""
    table = general_table()
    kinds: set[str] = set()
    for term in terms(word):
        kinds.update((term, *table.get(term, ())))
    return kinds


def place_noun(word: str, *, framed: bool | Frame) -> bool:
    """Whether ``word`` (a noun) names a kind of place by WordNet where a text puts
    something at it: a clearly spatial kind in any frame (``framed`` true, or ``"where"``
    or ``"toward"``); a looser one ("area", "structure", "tower") only where the frame can
    only mean where (``True`` or ``"where"``); nothing unframed."""
    if not framed:
        return False
    kinds = _kinds(word)
    if not kinds or kinds & _NEVER:
        return False
    loose = framed is True or framed == "where"
    return bool(kinds & _SPATIAL) or (loose and bool(kinds & _LOOSE))


def _a_name(words: Sequence[str]) -> bool:
    """Whether a capitalised run could name a place: not a time ("Christmas", "January")."""
    return not (_kinds(words[-1]) & _NEVER)


def _singular(word: str) -> str:
    low = word.lower()
    if low.endswith("ies") and len(low) > 4:
        return low[:-3] + "y"
    if low.endswith(("ches", "shes", "sses", "xes")):
        return low[:-2]
    if low.endswith("s") and not low.endswith("ss") and len(low) > 3:
        return low[:-1]
    return low


def _frame(words: Sequence[str], i: int) -> Frame:
    """How the words before ``words[i]`` (the start of a phrase, or its determiner) put
    it somewhere (see :data:`Frame`)."""
    if i == 0:
        return ""
    before = words[i - 1].lower()
    if before in _WHERE:
        return "where"
    if before == "from" or (
        before in _TOWARD and any(w.lower() in _MOTION for w in words[max(0, i - 4) : i - 1])
    ):
        return "toward"
    if _inverted(words, i):
        return "toward"  # put somewhere, but by a verb: a clearly spatial kind only
    return ""


def _inverted(words: Sequence[str], i: int) -> bool:
    """Whether the phrase at ``words[i]`` is what an inverted sentence of place puts there
    ("Beyond the cottage lie the old chapel and the river ford", "In the valley stands a
    mill", "Behind the inn is a stable"): it follows a verb of :data:`_LIE` or a form of
    "be" (or another phrase after one, by "and" or a comma) in a clause that opens with a
    preposition of place."""
    j = i - 1
    while j >= 0 and words[j].lower() not in _LIE | _BE:
        if words[j] in '.;:!?"':
            return False
        j -= 1
    if j < 1 or (j != i - 1 and words[i - 1].lower() not in ("and", ",")):
        return False
    k = j - 1
    while k >= 0 and words[k] not in '.;:!?"*':
        k -= 1
    return words[k + 1].lower() in _WHERE and k + 1 < j - 1


@dataclass(frozen=True)
class _Phrase:
    """A noun phrase of a text: its words as a place would be named, its head noun, whether
    it is a name, how the text frames it, and the kind of place it is "of" (``forest`` in
    "the forest of Eldoria")."""

    text: str
    head: str
    proper: bool
    frame: Frame
    kind_of: str = ""


def _phrases(text: str, people: set[str]) -> Iterable[_Phrase]:
    """Each noun phrase of ``text``: a run of words after a determiner or a possessive, or
    a capitalised run right after a preposition of place or "of" ("at Sable Crossing",
    "of Eldoria"), up to a stop word (its last three words; the head is the last). A phrase
    followed by "of" is no place itself but passes its frame to what follows (the place is
    the Thornwood in "at the edge of the Thornwood"), and, being a kind of place, names what
    follows as one of that kind ("the forest of Eldoria")."""
    words = _WORD.findall(text)
    carried: tuple[Frame, str] | None = None  # what an "X of" passes to the phrase after it
    i = 0
    while i < len(words):
        low = words[i].lower()
        after_of = i > 0 and words[i - 1].lower() == "of"
        frame = _frame(words, i)
        determined = low in _DETERMINERS or low.endswith(("'s", "’s"))
        bare = words[i][0].isupper() and low not in _STOP and bool(frame or after_of)
        if not (determined or bare):
            i += 1
            continue
        kind_of = ""
        if not frame and after_of and carried is not None:
            frame, kind_of = carried
        j = i + 1 if determined else i
        run: list[str] = []
        while j < len(words) and words[j][0].isalpha() and words[j].lower() not in _STOP:
            if words[j].lower().endswith(("'s", "’s")):
                break
            run.append(words[j])
            j += 1
        carried = None
        i = max(j, i + 1)
        if not run:
            continue
        head = run[-1]
        capitalised = all(w[0].isupper() for w in run)
        if j < len(words) and words[j].lower() == "of":  # "the edge of", "the forest of"
            noun = "" if head[0].isupper() else _singular(head)
            kind = noun if noun and place_noun(noun, framed=frame or "where") else ""
            carried = (frame, kind) if frame or kind else None
        elif capitalised and (low == "the" or bare):  # a name: "the Thornwood", "Gull Rock"
            if " ".join(run).lower() not in people and _a_name(run):
                yield _Phrase(" ".join(run), head, True, frame, kind_of)
        elif bare and not head[0].isupper():  # a name and its kind: "Greyhaven lighthouse"
            if place_noun(_singular(head), framed=frame or "where"):
                yield _Phrase(" ".join(run), _singular(head), True, frame, _singular(head))
        elif not head[0].isupper():
            phrase = [w.lower() for w in run[-3:-1]] + [_singular(head)]
            yield _Phrase(" ".join(phrase), _singular(head), False, frame)


def _defined(lore: Sequence[tuple[str, Sequence[str], str]]) -> list[Named]:
    """Names a lore entry defines as places: its content opens "<Name> is a ... <noun>"
    with the name one of its keys or its own name, and the noun (the last word before
    "of", "and", a comma or the end) a place by WordNet."""
    out = []
    for name, keys, content in lore:
        m = _COPULA.match(content)
        if m is None:
            continue
        subject = m["name"]
        known = {k.lower() for k in (*keys, name) if k}
        if subject.lower() not in known:
            continue
        head = re.split(r"\b(?:of|and|with|where|that|which|in|on|at|near)\b|,", m["rest"])[0]
        nouns = re.findall(r"[A-Za-z][A-Za-z'-]*", head)
        if nouns and place_noun(nouns[-1], framed=True):
            out.append(Named(subject, _singular(nouns[-1])))
    return out


def named_places(
    texts: Sequence[str],
    lore: Sequence[tuple[str, Sequence[str], str]] = (),
    people: Iterable[str] = (),
) -> list[Named]:
    """The places ``texts`` (in order: the first place the first text names first) and
    ``lore`` (entries as name, keys, content) name, none twice; ``people`` are names that
    are never places (the cast, ``{{user}}``). A common noun that a place the lore defines
    is a kind of ("forest" for the Thornwood, an ancient forest) names that place."""
    folk = {p.lower() for p in people}
    defined = [d for d in _defined(lore) if d.name.lower() not in folk]
    by_noun: dict[str, Named] = {}
    for d in defined:
        by_noun.setdefault(d.noun, d)
    by_name = {d.name.lower(): d for d in defined}
    found: dict[str, Named] = {}  # by the noun a common noun's place is named by
    for text in texts:
        for ph in _phrases(text, folk):
            place: Named | None
            if ph.proper:
                place = by_name.get(ph.text.lower())
                if place is None and ph.frame:
                    place = Named(ph.text, ph.kind_of or ph.head.lower())
                key = slug(place.name) if place is not None else ""
            elif ph.head in by_noun and ph.frame:
                place, key = by_noun[ph.head], slug(by_noun[ph.head].name)
            else:  # "the old chapel", then "the chapel": one place, named as first written
                named = place_noun(ph.head, framed=ph.frame)
                place, key = (Named(ph.text, ph.head), ph.head) if named else (None, "")
            if place is not None:
                found.setdefault(key, place)
    for d in defined:  # what the lore defines, where no text names it
        found.setdefault(slug(d.name), d)
    out: dict[str, Named] = {}
    for place in found.values():
        out.setdefault(slug(place.name), place)
    return list(out.values())


def things_named(text: str, people: Iterable[str] = ()) -> list[str]:
    """The things (not places, people or times) ``text`` names by a common noun phrase, as
    a sentence would name them again: "the enigmatic signal" for "One day, an enigmatic
    signal from an unknown source reached Lacia and Trek", in order, none twice."""
    folk = {p.lower() for p in people}
    out: list[str] = []
    for ph in _phrases(text, folk):
        if ph.proper or place_noun(ph.head, framed=ph.frame or "where"):
            continue
        kinds = _kinds(ph.head)
        if not kinds or kinds & _NEVER:
            continue
        out.append(f"the {ph.text}")
    return list(dict.fromkeys(out))


def setting_of(texts: Sequence[str], people: Iterable[str] = ()) -> Named | None:
    """The one place a card's scenario or greeting sets its scene in, where it puts nothing
    anywhere ("A storm-bound island; Sam has come by boat.", "The lamp room."): the first
    place it names (see :func:`named_places`), else the first noun phrase of a clearly
    spatial kind it names at all; None where there is none."""
    folk = {p.lower() for p in people}
    found = named_places(texts, (), folk)
    if found:
        return found[0]
    for text in texts:
        for ph in _phrases(text, folk):
            if not ph.proper and place_noun(ph.head, framed="toward"):
                return Named(ph.text, ph.head)
    return None
