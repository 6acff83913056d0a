"""The offline writer: realises the characters' proposals as plain controlled English.

Every sentence it writes is one the offline reader parses back into the event it
describes (``TestRoundTrip`` in ``tests/graph/test_loop.py`` holds it so). The writer is on
the author's side and may read the world: an intention that the world does not allow is
realised as what actually happens — a character who reaches for a key that is no longer
there searches an empty drawer. It writes no filler: a character with nothing to do stays
out of the passage, and a turn in which nobody does anything is not written
(:class:`StoryAtRest`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from fabula.agents.contracts import Action, Draft, Proposal, WriteRequest
from fabula.agents.reading.prose import read_prose
from fabula.agents.shared.goals import asks
from fabula.agents.shared.replies import said_to
from fabula.agents.views import AuthorView
from fabula.errors import StoryAtRest
from fabula.memory.index.general import the_place
from fabula.memory.records import is_secret, slug


def _the(view: AuthorView, entity: str | None) -> str:
    return "the " + view.name(entity) if entity else "something"


def _into(view: AuthorView, entity: str | None) -> str:
    """Where someone goes or something is, as a sentence names it: "the lamp room", "the
    Laboratory", but a place's own made-up name stands alone ("went to Eldoria"; see
    :func:`~fabula.memory.index.general.the_place`)."""
    if entity and view.kind(entity) == "place":
        return the_place(view.name(entity))
    return _the(view, entity)


def realise(view: AuthorView, character: str, action: Action) -> str:
    """One action as one controlled-English sentence, true to the world ("" for an action
    that shows nothing: waiting, or an action missing what it needs)."""
    a = view.name(character)
    k = action.kind
    if k == "go" and action.target:
        return f"{a} went to {_into(view, action.target)}."
    if k == "take" and action.object:
        obj = action.object
        here = view.place_of(character)
        actually = view.world.where(obj)
        reachable = (
            actually is not None
            and view.place_of(obj) == here
            and view.kind(actually) != "character"
            and (action.target is None or actually == action.target)
        )
        if reachable:
            return f"{a} took {_the(view, obj)}."
        # it reaches where it believes the object is, and finds what is really there
        if action.target and view.kind(action.target) == "object":
            return f"{a} searched {_the(view, action.target)}."
        return f"{a} looked for {_the(view, obj)}."
    if k == "search" and action.target:
        return f"{a} searched {_the(view, action.target)}."
    if k == "put" and action.object and action.target:
        return f"{a} put {_the(view, action.object)} in {_into(view, action.target)}."
    if k == "give" and action.object and action.listener:
        return f"{a} gave {_the(view, action.object)} to {view.name(action.listener)}."
    if k == "ask" and action.listener and action.about:
        return f"{a} asked {view.name(action.listener)} where {_the(view, action.about)} was."
    if k == "tell" and action.listener and action.about and action.claim:
        if is_secret(action.attribute):
            # a secret is confided: nobody but the listener hears it
            clause = f"{view.name(action.about)}'s {action.attribute} is that {action.claim}"
            return f"{a} privately told {view.name(action.listener)} that {clause}."
        if action.attribute == "location" and view.kind(action.claim) == "character":
            clause = f"{_the(view, action.about)} is with {view.name(action.claim)}"
        elif action.attribute == "location":
            clause = f"{_the(view, action.about)} is in {_into(view, action.claim)}"
        else:
            clause = f"the {action.attribute} of {_the(view, action.about)} is {action.claim}"
        return f"{a} told {view.name(action.listener)} that {clause}."
    if k == "say" and action.line:
        return " ".join(x for x in (action.gesture, said_sentence(action.line, a)) if x)
    return ""


def said_sentence(line: str, speaker: str) -> str:
    """A line said, as the story writes it: a question or an exclamation keeps its mark
    (``"Who are you?" said Ann.``) — one written without its mark but asking ("What are
    you hiding, Mara") gets it —, anything else ends in a comma inside the quotation
    (``"I am Ann," said Ann.``)."""
    words = line.strip().rstrip(".,;:")
    if asks(words) and not words.endswith(("?", "!")):
        words += "?"  # a question written without its mark ("What are you hiding, Mara")
    if words.endswith(("?", "!")):
        return f'"{words}" said {speaker}.'
    return f'"{words}," said {speaker}.'


# a quotation with words outside it, after or before: '"Hi," Ann said', 'Ann said, "Hi."'
_ATTRIBUTED = re.compile(r'["“][^"“”]+["”][^"“”]*\w|\w[^"“”]*["“][^"“”]+["”]')


@dataclass(frozen=True)
class PlayedPart:
    """A played character's part as the passage has it, and whether it takes the character
    elsewhere (it goes, leaves or enters, as read)."""

    sentence: str
    moves: bool = False


_MOVES = ("go", "exit", "enter")


def played_part(view: AuthorView, character: str, words: str) -> PlayedPart:
    """A played character's part as the passage has it: the person's words as they are when
    they tell what happens (they read as an action, begin with a name of the story, or
    quote a line beside other words: the critic says if they cannot be read), else the line
    the character says. The words are read once."""
    text = " ".join(words.split())
    quoted = len(text) > 1 and text[0] in '"“' and text[-1] in '"”'
    if text and not quoted:
        sentence = text if text[-1] in '.!?"”' else text + "."
        actions = read_prose(sentence, view.entities)
        read = any(a.kind != "narration" for a in actions)
        names = [e.name for e in view.entities.values()]
        named = any(text.casefold().startswith(n.casefold() + " ") for n in names)
        # a line already written with its quotation marks and who says it ('"Who are you?"
        # Ann asked.') is a sentence of the story, whether or not it could be read
        attributed = bool(_ATTRIBUTED.search(text))
        if read or named or attributed:
            mine = [a for a in actions if a.actors and slug(a.actor) == character]
            return PlayedPart(sentence, moves=any(a.kind in _MOVES for a in mine))
    return PlayedPart(said_sentence(text.strip('"“”'), view.name(character)))


_ANSWERS = ("answer", "answer a request", "keep a secret")


def _answers_first(focal: Sequence[str], proposals: Mapping[str, Proposal]) -> list[str]:
    """The focal characters in the order the passage writes them: one answering what was
    put to it in an earlier turn first (the answer follows its question, before anything
    new is said), then the others in the plan's order."""
    answering = [
        c
        for c in focal
        if (p := proposals.get(c)) is not None and not p.words and p.intent in _ANSWERS
    ]
    return [*answering, *(c for c in focal if c not in answering)]


class OfflineWriter:
    """Deterministic writer: one sentence per proposed action, focal characters in order.

    On a revision it leaves out every sentence the critic found an error in, except a
    played part: the person's words stay, with the error beside them, for the person to
    edit or reject (never dropped in silence). An action addressed to someone (a telling,
    a question, an answer, a gift) who is elsewhere, or by or to a character who went
    elsewhere earlier in the passage (a played part's move included), is left out: they
    are not together. A character may believe the other is
    there; the passage tells what happens. One a played part puts a question to does not
    leave in the same passage: it answers in the next turn.
    """

    reads_context: ClassVar[bool] = False
    """The draft is made of the proposals alone: the memory context assembled for a writer
    is not read (a tick's scene, which nobody approves, does not assemble it)."""

    async def write(self, request: WriteRequest, view: AuthorView) -> Draft:
        """The draft: each focal character's actions realised, in plan order.

        Raises :class:`StoryAtRest` (``idle``) when no sentence is left to write.
        """
        by_character = {p.character: p for p in request.proposals}
        flagged = {f.quote for f in request.findings if f.severity == "error" and f.quote}
        sentences: list[str] = []
        gone: set[str] = set()  # who went elsewhere earlier in this passage
        left_out: set[str] = set()  # whose action the passage leaves out on purpose
        # who a played part puts a question to stays to hear it out: the others proposed
        # before the part was written, and an answer comes in the next turn
        parts = {  # the played parts as the passage has them, each read once
            p.character: played_part(view, p.character, p.words)
            for p in request.proposals
            if p.words
        }
        stays = {
            to for part in parts.values() for to in said_to(view, view.characters(), part.sentence)
        }
        for character in _answers_first(request.plan.focal, by_character):
            proposal = by_character.get(character)
            if proposal is None:
                continue
            if proposal.words:  # a person's part: written in as they wrote it
                part = parts[character]
                if part.sentence not in sentences:  # flagged or not: the person's words
                    sentences.append(part.sentence)
                    if part.moves:
                        gone.add(character)
                continue
            for action in proposal.actions:
                if action.listener is not None and (
                    {character, action.listener} & gone
                    or view.place_of(action.listener) != view.place_of(character)
                ):
                    left_out.add(character)
                    continue  # meant for someone who is not, or no longer, there
                if action.kind == "go" and character in stays:
                    left_out.add(character)
                    continue  # asked something here, this turn
                sentence = realise(view, character, action)
                if sentence and sentence not in flagged and sentence not in sentences:
                    sentences.append(sentence)
                    if action.kind == "go":
                        gone.add(character)
        if not sentences:
            raise StoryAtRest(
                "nobody in the planned scene does anything: "
                + "; ".join(f"{view.name(p.character)}: {p.intent}" for p in request.proposals),
                idle=True,
                story=view.story,
                branch=view.branch,
            )
        return Draft(
            text=" ".join(sentences), revision=request.revision, left_out=tuple(sorted(left_out))
        )
