"""The places an imported text names: where a card's story can go.

A card names no places as a world pack does; its scenario, description, greeting and lore
name them in prose ("wakes in her cottage at the edge of the Thornwood", "The Thornwood is
an ancient forest"). A common noun names a place when WordNet says it is one: its
hypernyms (the general words :mod:`fabula.memory.index.general` ships, WordNet 3.1) hold a
kind of place. A noun of a clearly spatial kind (a building, a room, a dwelling, a
geographic area, land, a body of water, a workplace) is a place wherever it is named; one
of a looser kind (a location, a structure, an area, a region) only where the text puts
someone or something in, at, into or toward it. A noun that is also a body part, a piece
of furniture, a time or a boundary ("hand", "bed", "night", "edge") is never one, nor is a
noun followed by "of" ("the edge of the forest": the place is what follows). A name is a
place where a lore entry defines it as one ("The Thornwood is an ancient forest"), or the
text puts something in or at "the Name".

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
_LOCATIVE = frozenset(
    {"in", "into", "inside", "at", "to", "toward", "towards", "from", "beyond", "near"}
    | {"outside", "through", "across", "within", "around", "reach", "reached", "enter"}
    | {"enters", "entered", "leave", "leaves", "left", "visit", "visits", "visited"}
)
_DETERMINERS = frozenset({"the", "a", "an", "his", "her", "their", "its", "my", "your", "our"})
_STOP = frozenset(
    {"and", "or", "but", "of", "with", "after", "before", "where", "while", "when", "that"}
    | {"who", "which", "is", "are", "was", "were", "as", "by", "for", "on", "under", "over"}
    | _LOCATIVE
    | _DETERMINERS
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|[.,;:!?\"()*—–]")
_COPULA = re.compile(
    r"^\s*(?:[Tt]he\s+)?(?P<name>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)\s+(?:is|was|lies|stands)\s+"
    r"(?:a|an|the|one of the)\s+(?P<rest>[^.;:]*)",
)


@dataclass(frozen=True)
class Named:
    """A place a text names: its name as the world will call it, and the noun it is a
    kind of ("forest" for "Thornwood"; its name itself for a common noun)."""

    name: str
    noun: str


def place_noun(word: str, *, framed: bool) -> bool:
    """Whether ``word`` (a noun) names a kind of place by WordNet; a noun of a loose kind
    ("area", "structure") only when ``framed`` (the text puts something in or at it)."""
    table = general_table()
    kinds: set[str] = set()
    for term in terms(word):  # the noun's own kind counts: "room" is a room
        kinds.update((term, *table.get(term, ())))
    if not kinds or kinds & _NEVER:
        return False
    return bool(kinds & _SPATIAL) or (framed and bool(kinds & _LOOSE))


def _singular(word: str) -> str:
    low = word.lower()
    if low.endswith("ies") and len(low) > 4:
        return low[:-3] + "y"
    if low.endswith(("ches", "shes", "sses", "xes")):
        return low[:-2]
    if low.endswith("s") and not low.endswith("ss") and len(low) > 3:
        return low[:-1]
    return low


def _phrases(text: str, people: set[str]) -> Iterable[tuple[str, str, bool, bool]]:
    """(phrase, head noun, capitalised, framed) for each noun phrase in ``text``: a run of
    words after a determiner or a possessive, up to a stop word (its last three words; the
    head is the last); a phrase followed by "of" is skipped (the place is what follows)."""
    words = _WORD.findall(text)
    i = 0
    while i < len(words):
        low = words[i].lower()
        framed = i > 0 and words[i - 1].lower() in _LOCATIVE
        if low in _DETERMINERS or low.endswith(("'s", "’s")):
            if low.endswith(("'s", "’s")) and i > 0 and words[i - 1].lower() in _LOCATIVE:
                framed = True
            if i > 0 and words[i - 1].lower().endswith(("'s", "’s")):
                framed = framed or (i > 1 and words[i - 2].lower() in _LOCATIVE)
            j = i + 1
            run: list[str] = []
            while j < len(words) and words[j][0].isalpha() and words[j].lower() not in _STOP:
                if words[j].lower().endswith(("'s", "’s")):
                    break
                run.append(words[j])
                j += 1
            if run and not (j < len(words) and words[j].lower() == "of"):
                head = run[-1]
                proper = all(w[0].isupper() for w in run) and low == "the"
                if proper and " ".join(run).lower() not in people:
                    yield " ".join(run), head, True, framed
                elif not head[0].isupper():
                    phrase = [w.lower() for w in run[-3:-1]] + [_singular(head)]
                    yield " ".join(phrase), _singular(head), False, framed
            i = max(j, i + 1)
            continue
        i += 1


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
        for phrase, head, proper, framed in _phrases(text, folk):
            if proper:
                place = by_name.get(phrase.lower())
                if place is None and framed:
                    place = Named(phrase, head.lower())
                key = slug(place.name) if place is not None else ""
            elif head in by_noun:
                place, key = by_noun[head], slug(by_noun[head].name)
            else:  # "the old chapel", then "the chapel": one place, named as first written
                named = place_noun(head, framed=framed)
                place, key = (Named(phrase, head), head) if named else (None, "")
            if place is not None:
                found.setdefault(key, place)
    for d in defined:  # what the lore defines, where no text names it
        found.setdefault(slug(d.name), d)
    out: dict[str, Named] = {}
    for place in found.values():
        out.setdefault(slug(place.name), place)
    return list(out.values())
