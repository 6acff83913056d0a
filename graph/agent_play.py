"""The player's and the reader's graph on LangGraph's Agent Server: ``langgraph.json`` names
it ``fabula_play`` beside the turn graph (``fabula``).

A turn's thread state holds the author's whole view (every character's beliefs, the briefs
and their secrets, the plan), which is more than a person playing a character may see. This
graph's state holds only what its caller may see, read through Fabula's one door for reads
(:meth:`fabula.graph.service.application.Fabula.read`):

- the **public story**: the branch's title, head and text, turn by turn (what a reader sees);
- for a **player** of character C (or an author looking as C, ``{"character": "leo"}``):
  what C lived (the passages it witnessed) and B[C], what C believes, a false belief as C
  holds it, both read from C's own mind on its own Redis user
  (:meth:`~fabula.graph.service.reader.Reader.lived`), so nothing of another mind, the world
  or the briefs can reach it.

A run's input names the story (and optionally the branch): ``{"story": "tale"}``. Whose mind
is read is the caller's grant's, not the input's: a player's runs read its own character's
(an input naming another is refused, 403, as is a story where it is not played), a reader's
none; the author (and the desk, where no tokens are configured) may name any character.
The grant comes from the server (``langgraph_auth_user``, which a client cannot set):
:mod:`fabula.graph.agent_auth` lets a player or a reader run this graph and no other.

A player also **writes its character's part** here (:mod:`fabula.graph.agent_part`): a run
with ``{"story": "tale", "part": "Leo searched the desk drawer."}`` writes it at once; one
with ``{"story": "tale", "write": true}`` stops at an interrupt asking for it (LangChain's
``HITLRequest``, action ``write_part``, with C's own view), resumed with a ``HITLResponse``
whose edit carries the words. Either way the part is committed as the studio commits it,
and the turn waits for the author's decision; the state's ``written`` says what was done
(the turn, the outcome, what of the words was left out), never the draft. A reader writes
nothing (403), a player no other character's part.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

from fabula.agents.character.played import PlayedView
from fabula.errors import AccessDenied, FabulaError, InvalidInput
from fabula.graph.agent_part import Written, answer_schema, part_answer, part_request, write_part
from fabula.graph.agent_server import application, visible
from fabula.graph.service import Fabula
from fabula.graph.service.handles import StoryRef
from fabula.graph.state import typed_part

PLAY_GRAPH = "fabula_play"
"""The graph's id in ``langgraph.json``."""


class PlayInput(TypedDict, total=False):
    """A run's input: the story, its branch (``main`` unless named), and, for an author only,
    the character to look as (a player's is its own, whatever is given)."""

    story: str
    branch: str
    character: str | None
    part: str | None
    """The player's character's part of the next turn, written at once (empty: take the
    character's own idea, where a turn asks for it)."""
    write: bool
    """Ask for the part (an interrupt) and write it."""


class Writing(TypedDict):
    """A part this run writes: whose, and the words given with the run (None: asked)."""

    character: str
    words: str | None


class PlayState(PlayInput, total=False):
    """What a player (or a reader) sees: the public story, and its own character's mind."""

    title: str
    """The story's title."""
    head: int
    """The branch's last committed turn."""
    text: list[dict[str, Any]]
    """The public story: ``{"turn", "text"}`` for each committed turn."""
    lived: list[dict[str, Any]]
    """What the character witnessed: ``{"turn", "lines"}``, in the words it saw or heard."""
    beliefs: list[dict[str, Any]]
    """B[C]: ``{"subject", "attribute", "value", "polarity", "sentence"}``, read from C's own
    mind (a false belief as C holds it)."""
    writing: Writing | None
    """The part this run writes, read from the input by ``look`` (None: it only reads)."""
    written: Written | None
    """What the last part written on this thread did (:class:`Written`)."""


def caller(config: RunnableConfig) -> tuple[str, str | None]:
    """The run's role and, for a player, its character: from the grant the server put in the
    run's configuration (``langgraph_auth_user``); without one (no auth handler: the author's
    desk), the author. A grant without a known role is a reader's."""
    user = (config.get("configurable") or {}).get("langgraph_auth_user")
    if user is None:
        return "author", None
    role = user.get("role")
    character = user.get("character")
    if role not in ("author", "player", "reader"):
        return "reader", None
    return role, character if isinstance(character, str) else None


async def look(state: PlayState, config: RunnableConfig) -> dict[str, Any]:
    """Read the caller's view of the story: the public text, and its character's mind."""
    try:
        return await _look(state, config)
    except FabulaError as error:
        raise visible(error) from error


async def _look(state: PlayState, config: RunnableConfig) -> dict[str, Any]:
    story, branch = state.get("story"), state.get("branch") or "main"
    if not isinstance(story, str) or not isinstance(branch, str):
        raise InvalidInput("input: story (and branch) must be text, as {'story': 'tale'}")
    role, own = caller(config)
    asked = state.get("character")
    reader = (await application()).read(story, branch)
    await reader.require()
    character: str | None
    if role == "player":
        if own is None:
            raise AccessDenied("a player's grant names no character", story=story)
        if asked and (await reader.resolve(asked, "character")).id != own:
            raise AccessDenied(f"a player of {own!r} reads {own!r}'s mind only", story=story)
        if own not in await reader.played():
            raise AccessDenied(f"{own!r} is not played in this story", story=story)
        character = own
    elif role == "reader":
        if asked:
            raise AccessDenied("a reader reads the public story, no character's mind")
        character = None
    else:
        character = (await reader.resolve(asked, "character")).id if asked else None
    writing = await _writing(state, role, character)
    text = await reader.text()
    view: dict[str, Any] = {
        "story": story,
        "branch": branch,
        "character": None,
        "title": text.title,
        "head": text.head,
        "text": [{"turn": t.turn, "text": t.text} for t in text.turns],
        "lived": [],
        "beliefs": [],
        "part": None,
        "write": False,
        "writing": writing,
    }
    if writing is not None:
        view["written"] = None
    if character is not None:
        mind = await reader.lived(character)
        view["character"] = mind.character
        view["lived"] = [{"turn": t.turn, "lines": list(t.lines)} for t in mind.turns]
        view["beliefs"] = [
            {
                "subject": b.subject,
                "attribute": b.attribute,
                "value": b.value,
                "polarity": b.polarity,
                "sentence": b.sentence,
            }
            for b in mind.beliefs
        ]
    return view


async def _writing(state: PlayState, role: str, character: str | None) -> Writing | None:
    """The part a run's input asks to write (``part``, or ``write``), for ``character``
    (the caller's, checked by :func:`_look`); None when it only reads. A reader writes
    nothing (:class:`AccessDenied`)."""
    words, write = state.get("part"), state.get("write")
    if words is None and not write:
        return None
    story = state.get("story")
    if role == "reader":
        raise AccessDenied("a reader writes no part: it reads the public story", story=story)
    if character is None:
        raise InvalidInput(
            "a part is a character's: name it, as {'character': 'leo', 'part': ...}", story=story
        )
    if words is not None and not isinstance(words, str):
        raise InvalidInput("part: the character's part is text", story=story)
    return {"character": character, "words": words}


async def part(state: PlayState, config: RunnableConfig) -> dict[str, Any]:
    """Write the part the run's input asked for: given with the run, or asked for (the
    interrupt: :func:`~fabula.graph.agent_part.part_request`) and then written
    (:func:`~fabula.graph.agent_part.write_part`); the view read again after."""
    try:
        return await _part(state, config)
    except FabulaError as error:
        raise visible(error) from error


async def _part(state: PlayState, config: RunnableConfig) -> dict[str, Any]:
    writing = state.get("writing")
    story, branch = state.get("story"), state.get("branch") or "main"
    if writing is None or not isinstance(story, str):  # pragma: no cover - routed by look
        return {"writing": None}
    app = await application()
    character, words = writing["character"], writing["words"]
    given = typed_part(words, story=story) if words is not None else None
    if words is None:
        view = await _view(app, story, branch, character)
        turn = await app.read(StoryRef(story, branch)).head() + 1
        names = (view.name,)
        answer = interrupt(
            part_request(view, story=story, branch=branch, turn=turn),
            response_schema=answer_schema(story, character, names),
        )
        given = part_answer(answer, story=story, character=character, names=names)
        if given is None:  # rejected: nothing written
            return {"writing": None}
    assert given is not None
    written = await write_part(app, story, branch, character, given)
    again = await _look({**state, "part": None, "write": False}, config)
    return {**again, "writing": None, "written": written}


async def _view(app: Fabula, story: str, branch: str, character: str) -> PlayedView:
    """``character``'s own view for its part's request: the one the waiting turn shows
    (with its agent's idea), or, with none waiting, the one the studio shows beside the
    part's field; read from its own mind only."""
    reader = app.read(StoryRef(story, branch))
    for asked in await reader.waiting_parts():
        if asked.character == character:
            return asked.view
    for view in await reader.played_views():
        if view.character == character:
            return view
    raise InvalidInput(f"{character!r} is not played in story {story!r}", story=story)


def _route(state: PlayState) -> str:
    """To ``part`` when the run writes one, else the end."""
    return "part" if state.get("writing") else END


def build_play_graph() -> Any:
    """``look``, then ``part`` when the run writes one."""
    builder = StateGraph(PlayState, input_schema=PlayInput)
    builder.add_node("look", look)
    builder.add_node("part", part)
    builder.add_edge(START, "look")
    builder.add_conditional_edges("look", _route, ["part", END])
    builder.add_edge("part", END)
    return builder.compile()


graph = build_play_graph()
