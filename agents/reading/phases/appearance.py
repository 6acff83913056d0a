"""Phase 4, a part: how a thing looks, said beside the clause that names it.

A clause's object may be described in a clause of its own, which says its condition as it
appears (to the clause's subject, when the clause is a perception):

* a relative clause: "selects a bag of clay *that appears to be soft*", "finds a stream
  *which seems clean*", "unearths a tablet covered with glyphs *that appear to be in
  excellent condition*": the described thing is the clause's object (the first noun
  phrase after its verb), not the nearest noun;
* a participle after a comma: "sees the wok hanging in its spot, *appearing clean and
  ready*": the object of the clause before;
* a relative clause of belief: "buys tomatoes, *which he believes are ripe*": the
  holder's belief about the object (:func:`believer`);
* what draws a character's notice: "a carefully raked pattern *catches Yoshi's eye*" is
  perceived by Yoshi, as it was named (:func:`catcher`);
* what a thing holds, said beside it: "a jar *containing raisins*", "a pitcher *filled
  with oat milk*", "a basket *full of apples*" (:func:`contained`).

The verbs of appearing are those of WordNet's sense "give a certain impression" (appear,
seem, look), the only ones that say how a thing looks rather than what it does.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.mentions import Mention, Resolver, phrase
from fabula.agents.reading.phases.readings import StateReading
from fabula.agents.reading.phases.tokens import Token
from fabula.agents.reading.phases.values import complement_at, value_of

APPEAR = frozenset(["appear", "seem", "look"])
# verbs that say what a thing holds: "containing raisins", "filled with oat milk"
CONTENTS = frozenset(["contain", "hold", "fill"])
_RELATIVE = frozenset(["that", "which"])
_POSSESSIVES = frozenset(["his", "her", "their", "my", "our", "your", "its"])


def first_named(resolver: Resolver, tokens: Sequence[Token]) -> Mention | None:
    """The first one named after a clause's verb, whoever it is: a thing ("a bag of
    clay"; "fresh tomatoes", a plural with no determiner, right after the verb) or a
    person ("greets the visiting children")."""
    for k, t in enumerate(tokens):
        bare = (
            k == 1
            and t.lower not in lx.PREPOSITIONS
            and t.lower not in ("to", "up", "down", "away", "back", "out")
            and t.lower not in lx.NEGATIONS
            and not t.capital
            and not t.lower.endswith("ly")
            and lx.verb(t.lower) is None
        )
        if k and (bare or t.lower in lx.DETERMINERS or t.lower in _POSSESSIVES):
            return resolver.mention(tokens[k:])
    return None


def as_object(resolver: Resolver, found: Mention | None) -> Mention | None:
    """``found`` (:func:`first_named`) as a clause's object, a thing: none for a character,
    and without the state its phrase ran on into ("pried the shell open": the shell)."""
    if found is None or found.character:
        return None
    cut = complement_at(found.tokens)
    return resolver.mention(found.tokens[:cut]) if 1 < cut < len(found.tokens) else found


def looks(tokens: Sequence[Token]) -> str | None:
    """The value after a verb of appearing ("appears to be soft and malleable" → "soft and
    malleable"), or None where ``tokens`` do not begin with one."""
    if not tokens:
        return None
    verb = lx.verb(tokens[0].lower)
    if verb is None or verb.lemma not in APPEAR:
        return None
    rest = list(tokens[1:])
    if len(rest) > 1 and rest[0].lower == "to" and rest[1].lower == "be":
        rest = rest[2:]
    if rest and rest[0].lower in ("like", "at", "to", "around", "for", "into"):
        return None  # "looks at the map", "looks for the key": a doing, not a look
    value = value_of(rest)
    return value or None


def described(
    resolver: Resolver, tokens: Sequence[Token], obj: Mention | None
) -> tuple[Mention, str] | None:
    """The object of a clause and how a relative clause says it looks, if one does."""
    if obj is None:
        return None
    start = obj.tokens[-1].start
    for k, t in enumerate(tokens):
        if t.start > start and t.lower in _RELATIVE:
            value = looks(tokens[k + 1 :])
            return (obj, value) if value else None
    return None


# a thing that draws a character's notice: "catches Yoshi's eye", "draws her attention"
_CATCHING = frozenset(["catch", "draw", "attract", "grab"])
_NOTICE = frozenset(["eye", "eyes", "attention", "gaze"])


def catcher(resolver: Resolver, after: Sequence[Token]) -> Mention | None:
    """The character whose eye or attention the clause's subject catches, given the words
    after the subject ("catches Yoshi's eye"), or None."""
    if len(after) < 3:
        return None
    verb = lx.verb(after[0].lower)
    if verb is None or verb.lemma not in _CATCHING or after[2].lower not in _NOTICE:
        return None
    owner = after[1].text.removesuffix("'s").removesuffix("’s")
    holder = resolver.mention([Token(owner, after[1].start, after[1].end)])
    return holder if holder is not None and holder.character else None


def believer(resolver: Resolver, tokens: Sequence[Token]) -> tuple[Mention, Sequence[Token]] | None:
    """A relative clause of belief ("which he believes are ripe and perfect"): the holder
    and the predicate it believes of the object before (after its copula), or None."""
    if len(tokens) < 4 or tokens[0].lower not in _RELATIVE:
        return None
    holder = resolver.mention(tokens[1:])
    if holder is None or not holder.character:
        return None
    after = list(tokens[1 + len(holder.tokens) :])
    verb = lx.verb(after[0].lower) if after else None
    if verb is None or "cognition" not in verb.classes[:1]:
        return None
    after = after[1:]
    while after and (after[0].lower in lx.COPULAS or after[0].lower in ("to", "be")):
        after = after[1:]
    return (holder, after) if after else None


def contained(resolver: Resolver, tokens: Sequence[Token]) -> list[StateReading]:
    """ "X containing Y", "X filled with Y", "X full of Y": Y is X's contents."""
    out: list[StateReading] = []
    for k in range(1, len(tokens) - 1):
        w = tokens[k].lower
        v = lx.verb(w)
        contains = v is not None and v.lemma in CONTENTS and w.endswith(("ing", "ed"))
        full = w == "full" and tokens[k + 1].lower == "of"
        if not (contains or full):
            continue
        j = k + 1
        if j < len(tokens) and tokens[j].lower in ("with", "of"):
            j += 1
        if j >= len(tokens):
            continue
        start = k - 1
        while start > 0 and tokens[start].lower not in lx.DETERMINERS:
            start -= 1
        owner = resolver.mention(tokens[start:k])
        if owner is None or owner.character:
            continue
        contents = phrase(tokens[j:])
        if contents:
            out.append(StateReading(owner, "contents", value_of(contents)))
    return out
