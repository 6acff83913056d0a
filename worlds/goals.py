"""The goal language of world packs: what a character's ``goals`` may say.

A goal is one of these forms (any case, an optional final full stop; ``O`` an object of the
pack, ``C`` a character, ``P`` a place, each as the pack names it)::

    get the O                  (also: take, recover, retrieve, fetch)  hold the O
    find the O                 see where the O is, with one's own eyes
    keep the O hidden          (also: keep the O safe / secret, hide the O)  have the O put
                               away in a container, or hold it
    give the O to C            the O in C's hands
    learn where the O is       know where the O is
    learn C's secret           (also: learn what C hides, learn the secret of C)  be told it
                               (a secret is a pack's ``secrets`` entry, held as knowledge)
    tell C D's secret          (also: tell D's secret to C)  confide D's secret to C, once
                               it is known
    tell C my secret           (also: confess to C, confess the <words> to C)  confide one's
                               own secret to C
    keep my secret             (also: keep D's secret, hide my secret from C)  asked for it,
                               lie rather than refuse
    tell C where the O is      let C know where one believes the O is
    hide the O from C          the O put away where C does not know it is
    meet C                     be in the same place as C
    ask C about T              (also: talk to C about T)  be with C and ask what C makes
                               of T (anything: a name, "the enigmatic signal"), once
    avoid C                    not be in the same place as C
    go to the P                (also: reach the P, be in the P)  be in the P
    visit the P                (also: explore the P)  have been in the P, once
    keep to the P              be in the P this hour (a routine's hour: going back there
                               day after day is never going round in circles)
    spread C's secret          (also: spread my secret, pass on C's secret; ``secret 2``
                               for a second)  tell it to each one met who has neither been
                               told it by the character nor told it to the character, once

A name may be several words ("meet Sansa Stark"). A goal in other words that names one
character of the world — "find out what Iris is hiding", "protect Iris" — is read as a goal
about that character (:func:`natural_goal`): learning, finding out or uncovering is
``learn C's secret``, escaping or fleeing ``avoid C``, anything else ``meet C``; one that
names no character and one place, ``go to the P``. Its text stays as written.

Anything else is a *motive*: kept in the character's brief (a model reads it), but the
offline engine cannot pursue it, and loading the pack warns about it
(:func:`unreadable_goals`) with the goal, its field and these forms.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from fabula.memory.records import slug

GoalKind = Literal[
    "get",
    "find",
    "keep_hidden",
    "give",
    "learn_where",
    "learn_secret",
    "tell_where",
    "hide_from",
    "meet",
    "ask_about",
    "avoid",
    "go",
    "visit",
    "keep_to",
    "spread",
    "tell_secret",
    "keep_secret",
    "motive",
]

FORMS = (
    "get the O",
    "find the O",
    "keep the O hidden",
    "give the O to C",
    "learn where the O is",
    "learn C's secret",
    "tell C D's secret",
    "tell C my secret",
    "keep my secret",
    "tell C where the O is",
    "hide the O from C",
    "meet C",
    "ask C about T",
    "avoid C",
    "go to the P",
    "visit the P",
    "keep to the P",
    "spread C's secret",
    "spread my secret",
)
"""The forms :func:`parse_goal` reads (O an object, C a character, P a place)."""

_NAME = r"(?P<c>[A-Za-z][\w'-]*(?:[ ·](?-i:[A-Z])[\w'-]*)*)"
_OWN = r"(?:my|one's|one's own|the)"
_SPELLED: tuple[tuple[GoalKind, str], ...] = (
    (
        "tell_secret",
        rf"^(?:(?:tell|reveal|confide) {_NAME.replace('c>', 'w>')}'s secret to {_NAME}"
        rf"|tell {_NAME.replace('c>', 'c2>')} {_NAME.replace('c>', 'w2>')}'s secret"
        rf"|tell {_NAME.replace('c>', 'c3>')} {_OWN} secret"
        rf"|(?:confess|confide)(?: the [\w' -]+?| {_OWN} secret)? to "
        rf"{_NAME.replace('c>', 'c4>')})$",
    ),
    (
        "keep_secret",
        rf"^(?:keep {_OWN} secret|keep {_NAME.replace('c>', 'w>')}'s secret"
        rf"|(?:hide|keep) {_OWN} secret from {_NAME})$",
    ),
    (
        "spread",
        rf"^(?:spread|pass on) (?:{_NAME.replace('c>', 'w>')}'s|{_OWN})"
        r" (?P<n>secret(?: [0-9]+)?)$",
    ),
    ("keep_to", r"^keep to (?:the )?(?P<p>.+?)$"),
    ("give", rf"^(?:give|hand|bring) (?:the )?(?P<o>.+?) to {_NAME}$"),
    ("hide_from", rf"^(?:hide|keep) (?:the )?(?P<o>.+?)(?: hidden| secret)? from {_NAME}$"),
    (
        "keep_hidden",
        r"^(?:keep (?:the )?(?P<o>.+?) (?:hidden|safe|secret)"
        r"|hide (?:the )?(?P<h>.+?))$",
    ),
    ("go", r"^(?:go to|reach|be in|get to|return to) (?:the )?(?P<p>.+?)$"),
    ("visit", r"^(?:visit|explore) (?:the )?(?P<p>.+?)$"),
    (  # "get the silver spoon back": having it again is having it
        "get",
        r"^(?:(?:get|take|win|bring) back|get|take|recover|retrieve|fetch|steal|win|have)"
        r" (?:the )?(?P<o>.+?)(?: back| again)?$",
    ),
    ("find", r"^(?:find|locate|look for) (?:the )?(?P<o>.+?)$"),
    ("learn_where", r"^(?:learn|discover|find out) where (?:the )?(?P<o>.+?) is$"),
    (
        "learn_secret",
        rf"^(?:learn|discover|find out|uncover) (?:{_NAME}'s secrets?"
        rf"|what {_NAME.replace('c>', 'c2>')} (?:hides|is hiding|keeps|is keeping|knows)"
        rf"|the secret of {_NAME.replace('c>', 'c3>')})$",
    ),
    ("tell_where", rf"^(?:tell|show) {_NAME} where (?:the )?(?P<o>.+?) is$"),
    ("ask_about", rf"^(?:ask|talk to|talk with|speak to|speak with) {_NAME} about (?P<t>.+?)$"),
    ("meet", rf"^(?:meet|find|see|join) {_NAME}$"),
    ("avoid", rf"^(?:avoid|keep away from|stay away from) {_NAME}$"),
)
_PATTERNS = tuple((kind, re.compile(pattern, re.I)) for kind, pattern in _SPELLED)
_SPREAD = dict(_PATTERNS)["spread"]


def may_spread(text: str) -> bool:
    """Whether ``text`` has the form of a ``spread`` goal, whatever it names: no other
    text reads as one (:func:`parse_goal`; :func:`natural_goal` reads none)."""
    return _SPREAD.match(text.strip().rstrip(".").strip()) is not None


@dataclass(frozen=True)
class Goal:
    """A goal read from its text: its kind and arguments (ids, by :func:`slug`); a
    ``motive`` is a goal the offline engine cannot pursue. ``owner`` is whose secret a
    ``tell_secret`` or ``keep_secret`` goal is about (None: the character's own); the
    listener of a ``tell_secret``, the one a ``keep_secret`` hides from, is ``character``.
    ``topic`` is what an ``ask_about`` goal asks about, as written ("the enigmatic
    signal"); ``attribute`` which of its owner's secrets a ``spread`` goal passes on
    (``secret``, ``secret 2``, ...)."""

    kind: GoalKind
    text: str
    object: str | None = None
    character: str | None = None
    place: str | None = None
    owner: str | None = None
    topic: str | None = None
    attribute: str | None = None


# words that make an argument a clause rather than a thing's name ("find out what Iris is
# hiding" is no search for an object called "out what Iris is hiding")
_CLAUSE = frozenset(
    {"out", "what", "where", "who", "whom", "why", "how", "whether", "if", "that", "is", "are"}
    | {"was", "were", "about", "into", "for", "with", "his", "her", "their", "my", "your"}
)
_LEARN = re.compile(
    r"^(?:find out|learn|discover|uncover|unmask|expose|understand|figure out|know|question"
    r"|investigate|interrogate|spy on|find the truth)\b",
    re.I,
)
_FLEE = re.compile(
    r"^(?:avoid|escape|flee|evade|elude|hide from|run from|run away from|get away from"
    r"|stay away from|keep away from|keep clear of|shun)\b",
    re.I,
)


def parse_goal(
    text: str,
    objects: Iterable[str] | None = None,
    characters: Iterable[str] | None = None,
    places: Iterable[str] | None = None,
    *,
    natural: bool = True,
) -> Goal:
    """``text`` read as a goal of the language (see the module docstring).

    With the world's ids (``objects``, ``characters``, ``places``), a form is read only when
    its arguments name things of the right kind ("find Leo" is a meeting, "find the key" a
    search), and a goal in other words naming one character or place is read as a goal
    about it (:func:`natural_goal`; not with ``natural`` False); without them, any argument
    that could be a name is accepted. An argument that reads as a clause ("out what Iris
    is hiding") is no name.
    """
    clean = text.strip().rstrip(".").strip()
    known = {
        "o": None if objects is None else _as_set(objects),
        "c": None if characters is None else _as_set(characters),
        "p": None if places is None else _as_set(places),
        "w": None if characters is None else _as_set(characters),
    }
    for kind, pattern in _PATTERNS:
        m = pattern.match(clean)
        if m is None:
            continue
        groups = {k: v for k, v in m.groupdict().items() if v}
        topic = groups.pop("t", None)  # a topic is words, not a name of the world
        attribute = groups.pop("n", None)  # which of its owner's secrets (spread)
        if any(set(v.lower().split()) & _CLAUSE for v in groups.values()):
            continue
        args = {("o" if name == "h" else name[0]): slug(value) for name, value in groups.items()}
        if all((ids := known[k]) is None or v in ids for k, v in args.items()):
            return Goal(
                kind,
                clean,
                object=args.get("o"),
                character=args.get("c"),
                place=args.get("p"),
                owner=args.get("w"),
                topic=topic,
                attribute=attribute.lower() if attribute else None,
            )
    if natural and known["c"] is not None:
        return natural_goal(clean, known["c"], known["p"] or ())
    return Goal("motive", clean)


def _named(text: str, ids: Iterable[str]) -> list[str]:
    """The ids ``text`` names: each id whose words all appear in it in a row, or whose first
    word does where no other id starts with it ("Iris" for ``iris_vane``); an id inside a
    longer one that is named counts once."""
    words = slug(text).split("_") if any(ch.isalnum() for ch in text) else []
    joined = f"_{'_'.join(words)}_"
    ids = sorted(set(ids))
    firsts: dict[str, list[str]] = {}
    for ident in ids:
        firsts.setdefault(ident.split("_")[0], []).append(ident)
    found = []
    for ident in ids:
        head = ident.split("_")[0]
        if f"_{ident}_" in joined or (len(firsts[head]) == 1 and f"_{head}_" in joined):
            found.append(ident)
    return [i for i in found if not any(i != j and f"_{i}_" in f"_{j}_" for j in found)]


def _as_set(ids: Iterable[str]) -> AbstractSet[str]:
    """``ids`` as a set to look names up in; a set given is used as it is (a town's
    planner reads a thousand goals against the same thousand ids)."""
    return ids if isinstance(ids, (set, frozenset)) else set(ids)


def natural_goal(text: str, characters: Iterable[str], places: Iterable[str] = ()) -> Goal:
    """A goal in other words than the language's, read by what it names (see the module
    docstring): one character, a goal about that character; else one place, going there;
    else a ``motive``. The goal's text is kept as written."""
    clean = text.strip().rstrip(".").strip()
    who = _named(clean, characters)
    if len(who) == 1:
        if _LEARN.match(clean):
            return Goal("learn_secret", clean, character=who[0])
        if _FLEE.match(clean):
            return Goal("avoid", clean, character=who[0])
        return Goal("meet", clean, character=who[0])
    where = _named(clean, places)
    if not who and len(where) == 1:
        return Goal("go", clean, place=where[0])
    return Goal("motive", clean)


def unreadable_goals(
    goals: Iterable[tuple[str, str]],
    objects: Iterable[str],
    characters: Iterable[str],
    places: Iterable[str],
) -> list[str]:
    """One warning line for each goal (``(field, text)`` pairs) the offline engine cannot
    pursue in this world, naming the goal, its field and the forms it reads."""
    objs, chars, where = set(objects), set(characters), set(places)
    out = []
    for field, text in goals:
        if parse_goal(text, objs, chars, where).kind == "motive":
            out.append(
                f"{field}: {text!r} is not a goal the offline engine can pursue (it is kept "
                f"as a motive); it reads: {'; '.join(FORMS)} (O an object, C a character, "
                "P a place of the pack)"
            )
    return out
