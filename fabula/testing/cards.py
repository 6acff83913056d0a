"""A card's story and what its character proposes when spoken to, for the tests of the
evening with a card (its answers, its requests, its voice).

Real Redis through the caller's :class:`~fabula.graph.service.Fabula`, the offline
character; the cards are the caller's (:func:`fabula.testing.imports.evening_cards`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabula.agents.character.offline import OfflineCharacter
from fabula.agents.contracts import Action, CharacterBrief
from fabula.agents.views import author_view
from fabula.graph.service import Fabula
from fabula.memory.store import StoryStore
from fabula.testing.imports import write_json
from fabula.worlds.imports import import_paths


async def card_story(fab: Fabula, tmp_path: Path, name: str, card: dict[str, Any]) -> StoryStore:
    """The story ``name`` imported from ``card`` (written as a JSON file under
    ``tmp_path``), opened for writing."""
    path = write_json(tmp_path / f"{name}.json", card)
    return fab.store(await fab.create_story(import_paths([path]).pack, name))


async def said_to(fab: Fabula, store: StoryStore, character: str, line: str) -> Action:
    """The one action ``character`` proposes, as an answer, once User has said ``line``
    aloud (committed as ``"<line>" said User.``); fails unless it answers."""
    await fab.commit_scripted(store, f'"{line}" said User.')
    view = await author_view(store)
    mind = await fab.minds.mind(store.story, character, store.branch)
    brief = CharacterBrief(character=character, name=view.name(character))
    proposal = await OfflineCharacter().propose(mind, brief)
    assert proposal.intent == "answer", proposal
    (action,) = proposal.actions
    return action
