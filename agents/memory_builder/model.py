"""The memory-builder on a chat model: free prose → typed story actions → the same tracker.

:class:`ModelExtractor` asks the model for the turn's :class:`~fabula.memory.actions.StoryAction`
values (an :class:`ExtractedActions`), each with the span of the sentence it comes from.
A reply whose spans do not lie in the text, whose actions lack a field their kind needs,
or that names an entity the story does not know (or of the wrong kind) without bringing it
in explicitly, is shown back to the model and asked for again, within ``max_attempts`` replies,
after which :class:`~fabula.memory.errors.ModelOutputError` is raised and nothing is built.
Every sentence no action covers is kept as ``narration``, as the offline extractor does.

:class:`ModelMemoryBuilder` then runs exactly what the offline builder runs — memory's build
sequence, :func:`~fabula.memory.ingest.build_turn` — so access tracking, beliefs and
validation are the same code in both modes. A text is read once: the graph keeps the delta
it gave in the checkpointed turn state and commits that on approval, from any process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, create_model, model_validator

from fabula.agents.llm import ModelClient
from fabula.agents.memory_builder.extract import split_sentences
from fabula.agents.memory_builder.referents import NewEntity, Referents
from fabula.agents.prompts import load_prompt
from fabula.memory.actions import StoryAction
from fabula.memory.delta import TurnDelta
from fabula.memory.errors import ModelOutputError
from fabula.memory.ingest import basis, build_turn
from fabula.memory.projections import project_world
from fabula.memory.records import Entity
from fabula.memory.store import CommitResult, StoryStore

__all__ = [
    "ExtractedActions",
    "ModelExtractor",
    "ModelMemoryBuilder",
    "actions_schema",
    "render_text",
    "with_narration",
]


class ExtractedActions(BaseModel):
    """The story actions one turn's text tells, in story order, each with its span, and the
    entities the text brings into the story for the first time (with their kinds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    actions: tuple[StoryAction, ...]
    new_entities: tuple[NewEntity, ...] = ()


def actions_schema(text: str, entities: Mapping[str, Entity]) -> type[ExtractedActions]:
    """:class:`ExtractedActions` for ``text``: every span inside it, every name a known
    entity of the right kind or one of ``new_entities`` (names become the entities' own;
    :mod:`.referents`), each action with its own fields (see
    :data:`~fabula.memory.actions.REQUIRED_FIELDS`)."""
    length = len(text)

    def checked(self: ExtractedActions) -> ExtractedActions:  # an after-validator
        problems = []
        referents = Referents(entities, self.new_entities)
        resolved = []
        for i, action in enumerate(self.actions):
            if not 0 <= action.start < action.end <= length:
                problems.append(
                    f"actions.{i}: span {action.start}..{action.end} is not inside the text "
                    f"(0..{length})"
                )
            fixed, found = referents.check(action, f"actions.{i}")
            problems += found
            resolved.append(fixed)
        if problems:
            raise ValueError("; ".join(problems))
        return self.model_copy(update={"actions": tuple(resolved)})

    validators: dict[str, Any] = {"checked": model_validator(mode="after")(checked)}
    return create_model("ExtractedActions", __base__=ExtractedActions, __validators__=validators)


def with_narration(text: str, actions: Sequence[StoryAction]) -> list[StoryAction]:
    """``actions`` in the order given (the story's order, as the model tells it: a span
    never reorders them) plus a ``narration`` action for every sentence none of them
    overlaps, each placed before the first action that comes after it in the text."""
    gaps = [
        StoryAction(kind="narration", start=start, end=end)
        for start, end in split_sentences(text)
        if not any(a.start < end and start < a.end for a in actions)
    ]
    out: list[StoryAction] = []
    for action in actions:
        while gaps and gaps[0].end <= action.start:
            out.append(gaps.pop(0))
        out.append(action)
    return out + gaps


@dataclass(frozen=True)
class Setting:
    """Where a turn starts, for resolving its pronouns: the scene (the place of the latest
    entry), where each character is, and the previous turn's text."""

    scene: str | None = None
    whereabouts: tuple[tuple[str, str], ...] = ()  # (character, place), by character
    previous: str = ""


class ModelExtractor:
    """Reads a turn's text into story actions with a chat model (see the module docstring)."""

    def __init__(self, client: ModelClient, *, prompt_version: int | None = None) -> None:
        self.client = client
        self.prompt = load_prompt("memory_builder", "extract", prompt_version)

    async def extract(
        self, text: str, entities: dict[str, Entity], setting: Setting | None = None
    ) -> list[StoryAction]:
        """Every action ``text`` tells, unread sentences as narration, in story order.

        ``entities`` are the story's (their names are shown, so the model reuses them);
        ``setting`` is where the turn starts (v2 prompts show it, for pronouns).
        Raises ModelOutputError when no valid reply comes within ``max_attempts``.
        """
        request = render_text(text, entities, setting if self.prompt.version >= 2 else None)
        messages = [SystemMessage(content=self.prompt.render()), HumanMessage(content=request)]
        reply = await self.client.structured(
            actions_schema(text, entities), messages, shape=ExtractedActions
        )
        return with_narration(text, reply.actions)


def render_text(text: str, entities: dict[str, Entity], setting: Setting | None = None) -> str:
    """The extraction request: known entities, where the turn starts, the text, and its
    sentences with spans."""
    known = []
    for kind in ("character", "place", "object"):
        names = sorted(e.name for e in entities.values() if e.kind == kind)
        if names:
            known.append(f"{kind}s: {', '.join(names)}")
    sentences = "\n".join(f"[{s}:{e}] {text[s:e]}" for s, e in split_sentences(text))
    scene: list[str] = []
    if setting is not None:

        def name(i: str) -> str:
            return entities[i].name if i in entities else i

        if setting.scene:
            scene.append(f"latest entry: {name(setting.scene)}")
        scene += [f"{name(c)} is in {name(p)}" for c, p in setting.whereabouts]
    sections = [
        ("Known entities", "\n".join(known)),
        ("Scene", "\n".join(scene)),
        ("Previous turn", setting.previous if setting is not None else ""),
        (f"Text ({len(text)} characters)", text),
        ("Sentences, with their spans [start:end]", sentences),
    ]
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)


async def setting_of(
    store: StoryStore, as_of: int | None, entities: Mapping[str, Entity]
) -> Setting:
    """Where a turn after ``as_of`` (None: the head) starts: the previous turn's scene,
    where each character is in W, and the previous turn's text."""
    last = await store.head() if as_of is None else as_of
    previous = await store.turn_texts(last, last) if last >= 1 else []
    if not previous:
        return Setting()
    world = await project_world(store, as_of)
    whereabouts = tuple(
        (c, place)
        for c in sorted(i for i, e in entities.items() if e.kind == "character")
        if (place := world.where(c)) is not None
    )
    return Setting(scene=previous[0].scene, whereabouts=whereabouts, previous=previous[0].text)


class ModelMemoryBuilder:
    """Builds and commits turns of free prose: the model extracts, the tracker tracks."""

    def __init__(self, client: ModelClient) -> None:
        self.extractor = ModelExtractor(client)

    async def build(self, store: StoryStore, turn: int, text: str) -> TurnDelta:
        """The delta of ``turn`` with ``text``, derived from the store's views before it.

        Raises :class:`~fabula.memory.errors.NotFound` when the story does not exist, and
        :class:`ModelOutputError` (with story, branch and turn) when the text cannot be read.
        """
        as_of = await basis(store, turn)
        actions = await self._actions(store, turn, text, as_of)
        return await build_turn(store, turn, text, actions, as_of=as_of)

    async def commit(self, store: StoryStore, turn: int, text: str) -> CommitResult:
        """Build ``turn`` and commit it atomically."""
        return await store.commit(await self.build(store, turn, text))

    async def _actions(
        self, store: StoryStore, turn: int, text: str, as_of: int | None
    ) -> list[StoryAction]:
        try:
            entities = await store.entities(as_of)
            setting = await setting_of(store, as_of, entities)
            return await self.extractor.extract(text, entities, setting)
        except ModelOutputError as error:
            error.context.update(story=store.story, branch=store.branch, turn=turn)
            raise
