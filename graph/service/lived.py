"""The story as one character lived it (``fabula export STORY --as C``): the passages of
what it witnessed, turn by turn, in the words it saw or heard, and what it believes.

Every read of the character's side goes through its
:class:`~fabula.memory.acl.CharacterMind`, on its own Redis user, which can read nothing but
its keyspace: its first-person memories (each event it witnessed, with the text that tells
it), its beliefs and the names of the entities it knows of. So the export cannot hold what
the character did not witness or was not told: the story's text, the world and another mind
are out of its reach. Only the story's title is read as the admin.
"""

from __future__ import annotations

from collections.abc import Mapping

from fabula.graph.service.reading import check_as_of, markdown_text
from fabula.graph.service.responses.stories import LivedBelief, LivedOut, LivedTurn
from fabula.memory.acl import MindPool
from fabula.memory.records import Belief, Entity
from fabula.memory.sentences import fact_sentence
from fabula.memory.store.view import StoryReads

_ALL = 1 << 30  # every memory of the branch (a list read in one LRANGE)


def belief_sentence(belief: Belief, entities: Mapping[str, Entity]) -> str:
    """``belief`` as a sentence of names (see :func:`fact_sentence`)."""
    return fact_sentence(belief.subject, belief.attribute, belief.value, belief.polarity, entities)


async def lived(
    store: StoryReads, character: str, *, minds: MindPool, as_of: int | None = None
) -> LivedOut:
    """``character``'s story on ``store``'s branch (``as_of``: up to that turn): what it
    witnessed, and what it believes, read from its own mind only.

    Raises :class:`~fabula.errors.NotFound` for an unknown story, branch or character (by id
    or name, any case), :class:`~fabula.errors.InvalidInput` for an ``as_of`` outside it.
    """
    await store.require()
    as_of = await check_as_of(store, as_of)
    me = await store.resolve(character, "character")
    title = (await store.info()).title
    mind = await minds.mind(store.story, me.id, store.branch)
    entities = await mind.entities(as_of=as_of)
    turns: dict[int, list[str]] = {}
    for memory in await mind.memories(last=_ALL):
        if as_of is not None and memory.turn > as_of:
            continue
        lines = turns.setdefault(memory.turn, [])
        quote = " ".join(memory.quote.split())
        if quote and quote not in lines:
            lines.append(quote)
    view = await mind.beliefs(as_of=as_of)
    found = sorted(view.beliefs.values(), key=lambda b: (b.subject, b.attribute))
    return LivedOut(
        story=store.story,
        branch=store.branch,
        character=me.id,
        name=me.name,
        title=title,
        as_of=as_of,
        turns=[LivedTurn(turn=t, lines=lines) for t, lines in sorted(turns.items()) if lines],
        beliefs=[
            LivedBelief(
                id=b.id,
                subject=b.subject,
                attribute=b.attribute,
                value=b.value,
                polarity=b.polarity,
                sentence=belief_sentence(b, entities),
            )
            for b in found
        ],
    )


def lived_markdown(found: LivedOut) -> str:
    """A character's story as markdown: the title, a heading per turn it witnessed with
    what it saw and heard, then what it believes (each text as
    :func:`~fabula.graph.service.reading.markdown_text` gives it)."""
    md = markdown_text
    parts = [f"# {md(found.title)}\n\n*As {md(found.name)} lived it.*\n\n"]
    for turn in found.turns:
        lines = "".join(md(line) + "\n\n" for line in turn.lines)
        parts.append(f"## Turn {turn.turn}\n\n" + lines)
    if found.beliefs:
        parts.append(f"## What {md(found.name)} believes\n\n")
        parts.append("".join(f"- {md(b.sentence)}\n" for b in found.beliefs) + "\n")
    return "".join(parts)
