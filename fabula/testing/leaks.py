"""Generated lighthouse turns and a sloppy model's reading of them, with an oracle of who
saw each deed: shared by the leak properties (prompts, chat answers).

Hypothesis writes turns of the lighthouse world (Ada, Ben, Cora, Dev over three places): a
few true deeds, each told by one clause, clauses joined into sentences (", and", "; ",
", while"), with narration sentences between. :func:`sloppy_reading` plays a sloppy model
reading them: each action's span is the clause, its sentence, the whole passage or a
random stretch around it, and some deeds are left out. A take, put or utterance is seen by
everyone in the place; a private telling (of where a thing is, or of a secret: its owner's
own, or a lie about another's) by the two speakers; a journey's clause names both its ends,
so only the traveller saw all it says. :func:`witnessed_pairs` and :func:`assert_witnessed`
are the oracle: what a character may know, and a text that holds nothing more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from fabula.memory.actions import Clause, StoryAction
from fabula.memory.projections import project_beliefs
from fabula.memory.store import StoryStore

__all__ = [
    "CONTAINERS",
    "FILLER",
    "JOINS",
    "PLACES",
    "SECRETS",
    "START",
    "THINGS",
    "Deed",
    "Turn",
    "assert_witnessed",
    "pairs",
    "sloppy_reading",
    "turns",
    "witnessed_pairs",
]


START = {"Ada": "cottage", "Ben": "cove", "Cora": "lamp room", "Dev": "cottage"}
PLACES = ("lamp room", "cottage", "cove")
CONTAINERS = {"cottage": "cupboard", "cove": "sea chest", "lamp room": "lantern box"}
THINGS = ("logbook", "spare key")
SECRETS = {  # the pack's secrets, each held at the start by its character alone
    "Ada": "Ada knows Ben lands brandy in the cove",
    "Ben": "Ben smuggles brandy through the cove",
    "Dev": "Dev saw Ben land brandy in the cove",
}
FILLER = ("The wind rose.", "Gulls cried over the rocks.", "The lamp turned slowly.")
JOINS = (", and ", "; ", ", while ")


@dataclass
class Deed:
    """One true deed: its clause, the action a model should read from it, who saw it."""

    clause: str
    action: dict[str, Any]
    audience: frozenset[str]
    pair: tuple[str, str] | None = None  # (object, container) the clause puts together


@dataclass
class Turn:
    text: str
    deeds: list[Deed]
    spans: dict[int, tuple[int, int]]  # deed index -> clause span in text
    fillers: list[str] = field(default_factory=list)


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    where = dict(START)
    deeds: list[Deed] = []
    for _ in range(draw(st.integers(2, 5))):
        who = draw(st.sampled_from(sorted(where)))
        here = where[who]
        present = frozenset(c for c, p in where.items() if p == here)
        kind = draw(st.sampled_from(["go", "take", "put", "tell", "say", "confide"]))
        if kind == "go":
            to = draw(st.sampled_from([p for p in PLACES if p != here]))
            if any(d.clause == f"{who} went to the {to}" for d in deeds):
                continue  # one clause per deed text: the oracle tells deeds by their words
            where[who] = to
            deeds.append(
                Deed(
                    f"{who} went to the {to}",
                    {"kind": "go", "actors": [who], "place": to},
                    frozenset({who}),
                )
            )
        elif kind == "take":
            thing = draw(st.sampled_from(THINGS))
            deeds.append(
                Deed(
                    f"{who} took the {thing}",
                    {"kind": "take", "actors": [who], "obj": thing},
                    present,
                )
            )
        elif kind == "put":
            thing, box = draw(st.sampled_from(THINGS)), CONTAINERS[here]
            deeds.append(
                Deed(
                    f"{who} put the {thing} in the {box}",
                    {"kind": "put", "actors": [who], "obj": thing, "target": box},
                    present,
                    (thing, box),
                )
            )
        elif kind == "tell":
            other = draw(st.sampled_from([c for c in START if c != who]))
            thing, box = (
                draw(st.sampled_from(THINGS)),
                draw(st.sampled_from(list(CONTAINERS.values()))),
            )
            clause = {"subject": thing, "attribute": "location", "value": box}
            told = f"{who} privately told {other} that the {thing} is in the {box}"
            action = {"kind": "tell", "actors": [who], "listeners": [other], "clause": clause}
            deeds.append(Deed(told, action, frozenset({who, other}), (thing, box)))
        elif kind == "confide":
            # a secret told in private (its owner's, or a lie about another's): only the
            # two hear it
            owner = draw(st.sampled_from(sorted(SECRETS)))
            other = draw(st.sampled_from([c for c in START if c != who]))
            text = SECRETS[owner] if owner == who else f"{owner} has nothing to hide"
            clause = {"subject": owner, "attribute": "secret", "value": text}
            told = f"{who} privately told {other} that {owner}'s secret is that {text}"
            action = {"kind": "tell", "actors": [who], "listeners": [other], "clause": clause}
            deeds.append(Deed(told, action, frozenset({who, other})))
        else:
            thing = draw(st.sampled_from(THINGS))
            deeds.append(
                Deed(
                    f'"Where is the {thing}?" asked {who}',
                    {"kind": "say", "actors": [who], "utterance": f"Where is the {thing}?"},
                    present,
                )
            )
    deeds = [d for i, d in enumerate(deeds) if d.clause not in {e.clause for e in deeds[:i]}]
    # clauses into sentences, narration between
    text = ""
    spans: dict[int, tuple[int, int]] = {}
    fillers: list[str] = []
    i = 0
    while i < len(deeds):
        if text and draw(st.booleans()):
            filler = draw(st.sampled_from(FILLER))
            fillers.append(filler)
            text += filler + " "
        size = draw(st.integers(1, min(3, len(deeds) - i)))
        for j in range(i, i + size):
            if j > i:
                text += draw(st.sampled_from(JOINS))
            told = deeds[j].clause
            if j == i:
                told = told[0].upper() + told[1:]
            spans[j] = (len(text), len(text) + len(told))
            text += told
        text += ". "
        i += size
    return Turn(text.strip(), deeds, spans, fillers)


def sloppy_reading(draw: st.DrawFn, turn: Turn) -> tuple[list[StoryAction], set[int]]:
    """The model's reading: each deed's action with a span that may be far too wide, some
    deeds left out. Returns the actions (in story order) and the deeds read."""
    n = len(turn.text)
    read: set[int] = set()
    actions = []
    for i, deed in enumerate(turn.deeds):
        if deed.action["kind"] != "go" and draw(st.integers(0, 5)) == 0:
            continue  # left out (a journey is always read: the oracle follows positions)
        start, end = turn.spans[i]
        how = draw(st.sampled_from(["clause", "sentence", "passage", "around"]))
        if how == "sentence":
            start = turn.text.rfind(". ", 0, start) + 2 if ". " in turn.text[:start] else 0
            stop = turn.text.find(".", end)
            end = n if stop < 0 else stop + 1
        elif how == "passage":
            start, end = 0, n
        elif how == "around":
            start = draw(st.integers(0, start))
            end = draw(st.integers(end, n))
        fields = dict(deed.action)
        if "clause" in fields:
            fields["clause"] = Clause(**fields["clause"])
        actions.append(StoryAction(start=start, end=end, **fields))
        read.add(i)
    return actions, read


def pairs(text: str) -> set[tuple[str, str]]:
    """The (thing, container) pairs one sentence or clause of ``text`` puts together."""
    found = set()
    for part in re.split(r"[.;:]\s|,\s(?:and|while)\s|\n", text.lower()):
        for thing in THINGS:
            for box in CONTAINERS.values():
                if thing in part and box in part:
                    found.add((thing, box))
    return found


async def witnessed_pairs(
    store: StoryStore, character: str, turn: Turn
) -> tuple[str, set[tuple[str, str]]]:
    """The character's name and the (thing, container) pairs it may know: those the deeds
    of ``turn`` it saw put together, and those it believed from the start (turn 0, the
    world pack's setup as it observed it)."""
    name = (await store.resolve(character, "character")).name
    start = await project_beliefs(store, (character,), as_of=0)
    told = {
        (b.subject.replace("_", " "), b.value.replace("_", " "))
        for b in start.beliefs.values()
        if b.attribute == "location"
    }
    return name, {d.pair for d in turn.deeds if name in d.audience and d.pair} | told


def assert_witnessed(
    text: str, name: str, turn: Turn, seen: set[tuple[str, str]], *about: object
) -> None:
    """``text`` holds no narration sentence of ``turn``, no clause of a deed ``name`` did
    not see, and no (thing, container) pair outside ``seen``; ``about`` goes into the
    message of the assertion that fails."""
    low = text.lower()
    for filler in FILLER:
        assert filler.lower() not in low, (name, *about, text, turn.text)
    for deed in turn.deeds:
        if name not in deed.audience:
            assert deed.clause.lower() not in low, (name, *about, deed.clause, text)
    for pair in pairs(text):
        assert pair in seen, (name, *about, pair, text, turn.text)
