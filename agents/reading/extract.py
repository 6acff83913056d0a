"""Controlled English → typed story actions, each with its exact span. No Redis, no model.

The offline memory-builder's extraction stage. A turn's text is split into sentences (a line
break always ends one; ``.``, ``!`` and ``?`` end one outside quotation marks), and each
sentence is matched against the controlled vocabulary below. A sentence that matches nothing
is kept as ``narration`` with its span: it is never an error and never dropped.

Sentence forms (``A``, ``B`` are capitalised names; ``P`` a place; ``O`` an object; ``C`` a
container; ``<clause>`` is ``the O is in the C``, ``the O is with A``, ``the <attribute> of
the O is <value>`` or ``A's secret is that <proposition>`` (a secret: see
:data:`fabula.memory.records.SECRET`; ``A's secret 2 is that …`` for a second one))::

    A entered the P.   A and B entered the P.   A, B and C entered the P.
    A exited the P.    A left the P.            A went out of the P.
    A went to the P.                            (leaves where A was, enters P)
    A is in the P.     A and B are in the P.   (or "was", "were")
    A made no movements and stayed in the P for 1 minute.
    A moved the O to the C.   A put the O in the C.
    A picked up the O.   A took the O.   A gave the O to B.   A dropped the O.
    The O is in the C.                          (a bare statement, made in the current scene)
    The <attribute> of the O is <value>.        (a bare statement)
    A saw that <clause>.   A and B saw that <clause>.
    A saw a cat.
    A privately told B that <clause>.   A publicly claimed that <clause>.
    A told B that <clause>.                     (said aloud: everyone present hears it)
    A privately told B that C's secret is that <proposition>.   (a secret confided)
    A searched the C.                           (shows those present what is, and is not, in C)
    A asked B where the O is.   A asked B where the O was.
    "...," said A.   "...," A said.   A said, "...".   (an utterance; a claim if a clause)
    "...?" A asked B.   A said to B, "...".     (said to B)
    A asked B about .... A asked B what (who, why, whether, ...) ....   (a question to B)
    A likes / loves / hates / dislikes the O.
    A thought about the O for a while.

Names in the actions are kept as written; identifiers are assigned later (``slug``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from fabula.memory.actions import ActionKind, Clause, StoryAction
from fabula.memory.records import is_secret, secret_text
from fabula.memory.text import split_sentences

_STOP = {"The", "A", "An", "This", "That", "It", "He", "She", "They", "We", "I", "You"}
# a name is one capitalised word, or several joined by an interpunct, as BookWorld writes
# a whole name ("Lacia·Eldridge")
_NAME = r"(?:(?!(?:The|A|An|This|That|It|He|She|They|We|I|You)\b)[A-Z][\w'-]*(?:·[A-Z][\w'-]*)*)"
_NP = r"(?:[^\s,;:\"]+?(?: [^\s,;:\"]+?)*?)"  # a noun phrase: one or more plain words
_END = r"[.!?]?$"
_SAID = r"(?:said|asked|replied|whispered|shouted)"
# a question told as narration: "A asked B about …", "A asked B what (who, why, …) …"
_REPORTED = re.compile(
    rf"^(?P<name>{_NAME}) asked (?P<listener>{_NAME}) "
    r"(?P<wh>about|what|who|whom|whose|which|why|how|when|whether|if) (?P<rest>\S.*?)[.?]?$"
)
# the one asked, as the asker would say it to them
_YOU = {
    "she": "you",
    "he": "you",
    "they": "you",
    "her": "your",
    "his": "your",
    "their": "your",
    "herself": "yourself",
    "himself": "yourself",
    "themselves": "yourself",
    "hers": "yours",
    "theirs": "yours",
}
_YOU_AGREE = {"is": "are", "was": "were", "has": "have", "does": "do"}
_TO_YOU = re.compile(r"\b(?:" + "|".join(_YOU) + r")\b", re.IGNORECASE)
_INVERTS = re.compile(
    r"^(?P<subject>you|(?:your|the) [\w' -]+?|[A-Z][\w'-]*) (?P<verb>are|is|were|was|can|could|"
    r"will|would|have|has|had|do|does|did)(?P<rest>\b.*)$"
)
_OPEN, _CLOSE, _QUOTED = '["“]', '["”]', '[^"“”]+'  # straight or curly quotes
# a speaker beside a quotation may be named in several words ("said Old Tom", "Trek Vemil
# asked"): the quotation and the verb of saying mark where the name starts and ends
_SPEAKER = rf"(?:{_NAME}(?: {_NAME})*)"
_TO = rf"(?:,? (?:to )?(?P<listener>{_SPEAKER}))?"  # whom: "asked Mara", "said to Mara"
# after an inverted "said A", whom it was said to takes its "to" ("said Old Tom to Mara"):
# a second name with none is the speaker's own ("said Trek Vemil")
_TO_AFTER = rf"(?:,? to (?P<listener>{_SPEAKER}))?"


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + pattern + _END)


def _named(cast: tuple[str, ...]) -> str:
    """A name where a sentence starts: one capitalised word (or several joined by an
    interpunct), or one of ``cast``, the story's names written in several words ("Old
    Tom"), read whole."""
    if not cast:
        return _NAME
    known = "|".join(re.escape(n) for n in sorted(cast, key=len, reverse=True))
    return rf"(?:(?:{known})(?![\w'-])|{_NAME})"


@functools.lru_cache(maxsize=64)
def _forms(cast: tuple[str, ...] = ()) -> list[tuple[ActionKind, re.Pattern[str]]]:
    """The sentence forms, their names read with ``cast`` (:func:`_named`)."""
    name = _named(cast)
    names = rf"(?:{name}(?:(?:,? and |, ){name})*)"
    said_first = rf"(?:{name}|{_SPEAKER})" if cast else _NAME
    return [
        ("enter", _rx(rf"(?P<names>{names}) entered the (?P<place>{_NP})")),
        ("exit", _rx(rf"(?P<name>{name}) (?:exited|left|went out of) the (?P<place>{_NP})")),
        ("go", _rx(rf"(?P<name>{name}) went to the (?P<place>{_NP})")),
        ("locate", _rx(rf"(?P<names>{names}) (?:is|are|was|were) in the (?P<place>{_NP})")),
        (
            "stay",
            _rx(rf"(?P<name>{name}) made no movements? and stayed in the (?P<place>{_NP}) for .+"),
        ),
        ("move", _rx(rf"(?P<name>{name}) moved the (?P<obj>{_NP}) to the (?P<target>{_NP})")),
        (
            "put",
            _rx(rf"(?P<name>{name}) put the (?P<obj>{_NP}) (?:in|into|on) the (?P<target>{_NP})"),
        ),
        ("take", _rx(rf"(?P<name>{name}) (?:picked up|took) the (?P<obj>{_NP})")),
        ("give", _rx(rf"(?P<name>{name}) gave the (?P<obj>{_NP}) to (?P<target>{name})")),
        ("drop", _rx(rf"(?P<name>{name}) dropped the (?P<obj>{_NP})")),
        ("perceive", _rx(rf"(?P<names>{names}) saw that (?P<clause>.+?)")),
        ("see", _rx(rf"(?P<name>{name}) saw (?:a|an|the|some) (?P<thing>{_NP})")),
        (
            "tell",
            _rx(rf"(?P<name>{name}) privately told (?P<listener>{name}) that (?P<clause>.+?)"),
        ),
        ("claim", _rx(rf"(?P<name>{name}) publicly claimed that (?P<clause>.+?)")),
        ("inform", _rx(rf"(?P<name>{name}) told (?P<listener>{name}) that (?P<clause>.+?)")),
        ("search", _rx(rf"(?P<name>{name}) searched the (?P<target>{_NP})")),
        (
            "ask",
            _rx(
                rf"(?P<name>{name}) asked (?P<listener>{name}) where the (?P<obj>{_NP}) "
                r"(?:is|was)"
            ),
        ),
        (
            "feel",
            _rx(rf"(?P<name>{name}) (?P<verb>likes|loves|hates|dislikes) the (?P<obj>{_NP})"),
        ),
        ("think", _rx(rf"(?P<name>{name}) thought about the (?P<obj>{_NP})(?: for a while)?")),
        (
            "say",
            _rx(rf"{_OPEN}(?P<quote>{_QUOTED}){_CLOSE} {_SAID} (?P<name>{_SPEAKER}){_TO_AFTER}"),
        ),
        ("say", _rx(rf"{_OPEN}(?P<quote>{_QUOTED}){_CLOSE} (?P<name>{_SPEAKER}) {_SAID}{_TO}")),
        # "A said to B, "…"", and a memory's own "A said to B: "…"" (memory/recollection.py)
        (
            "say",
            _rx(rf"(?P<name>{said_first}) {_SAID}{_TO}[,:]? {_OPEN}(?P<quote>{_QUOTED}){_CLOSE}"),
        ),
    ]


_LOCATION_CLAUSE = re.compile(rf"^(?:[Tt]he )?(?P<obj>{_NP}) is in the (?P<target>{_NP})$")
_HELD_CLAUSE = re.compile(rf"^[Tt]he (?P<obj>{_NP}) is with (?P<holder>{_NAME})$")
_ATTRIBUTE_CLAUSE = re.compile(rf"^[Tt]he (?P<attr>{_NP}) of the (?P<obj>{_NP}) is (?P<value>.+)$")
_SECRET_CLAUSE = re.compile(
    rf"^(?P<owner>{_NAME})'s (?P<attr>secret(?: [0-9]+)?) is that (?P<text>\S.*)$"
)
_NAME_SPLIT = re.compile(r",? and |, ")


def parse_clause(text: str) -> Clause | None:
    """``the O is in the C``, ``the O is with A``, ``the <attribute> of the O is <value>``
    or ``A's secret is that <proposition>``; None otherwise."""
    text = text.strip().rstrip(".!?,").strip()
    secret = _SECRET_CLAUSE.match(text)
    if secret and is_secret(secret["attr"]):
        value = secret_text(secret["text"])
        return Clause(subject=secret["owner"], attribute=secret["attr"], value=value)
    held = _HELD_CLAUSE.match(text)
    if held:
        return Clause(subject=held["obj"], attribute="location", value=held["holder"])
    attribute = _ATTRIBUTE_CLAUSE.match(text)
    location = _LOCATION_CLAUSE.match(text)
    if location and (attribute is None or attribute.group("value").startswith("in the ")):
        return Clause(subject=location["obj"], attribute="location", value=location["target"])
    if attribute:
        return Clause(
            subject=attribute["obj"], attribute=attribute["attr"], value=attribute["value"]
        )
    return None


def _names(text: str) -> tuple[str, ...]:
    return tuple(n for n in _NAME_SPLIT.split(text) if n)


def parse_sentence(sentence: str, start: int = 0, cast: Sequence[str] = ()) -> StoryAction:
    """One sentence as a typed action; ``narration`` when no form matches.

    ``start`` is the sentence's offset in its turn's text, so the action's span is exact.
    ``cast``: the story's names; one written in several words ("Old Tom") is read whole
    wherever a name stands (a speaker beside a quotation always is: "said Trek Vemil").
    """
    end = start + len(sentence)
    bare = _bare_statement(sentence)
    if bare is not None:
        return StoryAction(kind="state", start=start, end=end, clause=bare)
    spaced = tuple(sorted({n for n in cast if " " in n.strip()}))
    for kind, pattern in _forms(spaced):
        m = pattern.match(sentence)
        if m is None:
            continue
        action = _action(kind, m, start, end)
        if action is not None:
            return action
    reported = reported_question(sentence)
    if reported is not None and reported[0] not in _STOP:
        asker, asked, words = reported
        return StoryAction(
            kind="say",
            start=start,
            end=end,
            actors=(asker,),
            listeners=(asked,),
            utterance=words,
        )
    return StoryAction(kind="narration", start=start, end=end)


def _bare_statement(sentence: str) -> Clause | None:
    if not sentence.startswith("The "):
        return None
    return parse_clause(sentence)


def _action(kind: ActionKind, m: re.Match[str], start: int, end: int) -> StoryAction | None:
    groups = m.groupdict()
    actors = _names(groups["names"]) if groups.get("names") else (groups["name"],)
    if any(a in _STOP for a in actors):
        return None
    clause = None
    if kind in ("perceive", "tell", "claim", "inform"):
        clause = parse_clause(groups["clause"])
        if clause is None:
            return None
    quote = groups.get("quote")
    if quote is not None:
        clause = parse_clause(quote.strip())
    return StoryAction(
        kind=kind,
        start=start,
        end=end,
        actors=actors,
        place=groups.get("place"),
        obj=groups.get("obj"),
        target=groups.get("target"),
        listeners=(groups["listener"],) if groups.get("listener") else (),
        clause=clause,
        utterance=quote.strip().rstrip(",") if quote is not None else groups.get("thing"),
        verb=groups.get("verb"),
    )


def reported_question(sentence: str) -> tuple[str, str, str] | None:
    """A question told as narration, put to someone by name ("User asked Seraphina about
    her powers.", "Ann asked Leo what he was reading."): (who asked, whom, the words that
    would have been said to them: "What about your powers?", "What were you reading?");
    None for any other sentence. Where a thing is ("asked Leo where the key is") is a
    form of its own, and not this."""
    m = _REPORTED.match(" ".join(sentence.split()))
    if m is None:
        return None
    wh, rest = m["wh"].casefold(), m["rest"]
    rest = _TO_YOU.sub(lambda w: _YOU[w[0].casefold()], rest)
    if wh == "about":
        words = f"what about {rest}"
    elif wh in ("whether", "if"):
        words = _asked_back(rest)
    else:
        words = f"{wh} {_asked_back(rest)}"
    words = words.rstrip("?") + "?"
    return m["name"], m["listener"], words[0].upper() + words[1:]


def _asked_back(clause: str) -> str:
    """A reported clause put back as a question's words: its verb first ("you were
    reading" → "were you reading"); as it is where it has no such verb."""
    m = _INVERTS.match(clause)
    if m is None:
        return clause
    verb = _YOU_AGREE.get(m["verb"], m["verb"]) if m["subject"] == "you" else m["verb"]
    return f"{verb} {m['subject']}{m['rest']}"


def extract(text: str, cast: Sequence[str] = ()) -> list[StoryAction]:
    """Every sentence of a turn's ``text`` as an action, in order, with exact spans (names
    of ``cast`` read whole: :func:`parse_sentence`)."""
    return [parse_sentence(text[s:e], s, cast) for s, e in split_sentences(text)]
