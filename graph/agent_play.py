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
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from fabula.errors import AccessDenied, FabulaError, InvalidInput
from fabula.graph.agent_server import application, visible

PLAY_GRAPH = "fabula_play"
"""The graph's id in ``langgraph.json``."""


class PlayInput(TypedDict, total=False):
    """A run's input: the story, its branch (``main`` unless named), and, for an author only,
    the character to look as (a player's is its own, whatever is given)."""

    story: str
    branch: str
    character: str | None


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
        character = asked or None
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
    }
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


def build_play_graph() -> Any:
    """The one-node graph: ``look``."""
    builder = StateGraph(PlayState, input_schema=PlayInput)
    builder.add_node("look", look)
    builder.add_edge(START, "look")
    builder.add_edge("look", END)
    return builder.compile()


graph = build_play_graph()
