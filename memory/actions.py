"""The action vocabulary: what a turn's text says happened, as typed, validated values.

A :class:`StoryAction` is read from a turn's text — by the controlled-English rules or
by a chat model — and handed to the tracker (:mod:`fabula.memory.tracking`), which decides
who witnessed or was told what. Names are kept as written; identifiers are assigned later.

Every kind of action declares the fields it needs (:data:`REQUIRED_FIELDS`), and a
:class:`StoryAction` that lacks one is refused when it is built (a pydantic
``ValidationError``), so the tracker never meets an action it cannot apply. Accessors such
as :attr:`StoryAction.actor` return the field as a non-optional value.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

ActionKind = Literal[
    "enter",
    "exit",
    "go",
    "locate",
    "stay",
    "move",
    "put",
    "take",
    "give",
    "drop",
    "state",
    "perceive",
    "see",
    "tell",
    "claim",
    "say",
    "feel",
    "think",
    "narration",
    "search",
    "ask",
    "inform",
]

# the fields the tracker needs for each kind of action (a narration needs none)
REQUIRED_FIELDS: dict[ActionKind, tuple[str, ...]] = {
    "enter": ("actors", "place"),
    "exit": ("actors", "place"),
    "go": ("actors", "place"),
    "locate": ("actors", "place"),
    "stay": ("actors", "place"),
    "move": ("actors", "obj", "target"),
    "put": ("actors", "obj", "target"),
    "take": ("actors", "obj"),
    "give": ("actors", "obj", "target"),
    "drop": ("actors", "obj"),
    "state": ("clause",),
    "perceive": ("actors", "clause"),
    "see": ("actors",),
    "search": ("actors", "target"),
    "ask": ("actors", "listeners", "obj"),
    "tell": ("actors", "listeners", "clause"),
    "inform": ("actors", "clause"),
    "claim": ("actors", "clause"),
    "say": ("actors",),
    "feel": ("actors", "obj"),
    "think": ("actors",),
    "narration": (),
}


STATE_ATTRIBUTES: tuple[str, ...] = ("location", "contents", "condition")
"""The attributes of a state every reader may write, whatever the pack declares: where a
thing is (``location``, its value an entity), what it holds (``contents``: "oat milk") and
how it is (``condition``: "locked", "wilted", "switched off", "dead" — open or locked, on
or off, alive or dead are conditions, one slot each thing). A pack's entities add their
own attributes ("colour")."""


class Clause(BaseModel):
    """A proposition as written: ``subject``'s ``attribute`` is ``value``.

    ``attribute == "location"`` means ``subject`` is in ``value`` (a container or place).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: str
    attribute: str
    value: str


class StoryAction(BaseModel):
    """One extracted action, names as written, with its span in the turn's text.

    ``actors`` do it; ``place`` for entries, exits and stays; ``obj`` the object acted on;
    ``target`` the container (put, move) or the recipient (give); ``listeners`` of a private
    telling; ``clause`` what is stated, seen, told or claimed; ``utterance`` the words of a
    dialogue line (or what was seen, for ``see``); ``verb`` for feelings.

    What the text says of perception, beyond where the tracker places everyone:
    ``seen_by`` perceived the action (whether or not the tracker has them there),
    ``unseen_by`` did not although present ("did not notice", "had already left"),
    ``unaware_of`` perceived it without the doer knowing ("unaware that he was watched"):
    such an observer learns the outcome and that the doer knows it, but the doer's view of
    that observer does not change. ``believed_seen_by`` did not perceive it, though the doer
    believes they did ("Unbeknownst to her, he was nowhere in sight"): the doer's view of
    each takes the outcome, as if they had seen it, and nothing of theirs changes.
    ``unsure`` says why a reading is uncertain (an ambiguous pronoun, a move with no
    destination), for the critic. ``by_force``: the actor of a ``state`` is a force, not
    a character ("the wind blew the hat off"): an entity with no mind, which perceives
    nothing. These six are left out of the generic JSON schema a
    model is given; the story-shaped one offers ``seen_by`` and ``unseen_by`` on a state,
    which the memory-builder holds against who is present before the tracker sees them.

    Validation refuses a span that ends before it starts and an action that lacks a field
    its kind needs (:data:`REQUIRED_FIELDS`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ActionKind
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    actors: tuple[str, ...] = ()
    place: str | None = None
    obj: str | None = None
    target: str | None = None
    listeners: tuple[str, ...] = ()
    clause: Clause | None = None
    utterance: str | None = None
    verb: str | None = None
    seen_by: SkipJsonSchema[tuple[str, ...]] = ()
    unseen_by: SkipJsonSchema[tuple[str, ...]] = ()
    unaware_of: SkipJsonSchema[tuple[str, ...]] = ()
    believed_seen_by: SkipJsonSchema[tuple[str, ...]] = ()
    unsure: SkipJsonSchema[str | None] = None
    by_force: SkipJsonSchema[bool] = False

    @model_validator(mode="after")
    def _complete(self) -> StoryAction:
        if self.end < self.start:
            raise ValueError(f"span {self.start}..{self.end} ends before it starts")
        missing = [f for f in REQUIRED_FIELDS[self.kind] if not getattr(self, f)]
        if missing:
            raise ValueError(f"a {self.kind} action needs {', '.join(missing)}")
        return self

    # Non-optional views of the fields a kind requires (validation guarantees them).
    @property
    def actor(self) -> str:
        """The first actor (every kind but ``state`` and ``narration`` has one)."""
        return _required(self.actors[0] if self.actors else None, self, "actors")

    @property
    def listener(self) -> str:
        """The first listener (``tell``, ``ask``)."""
        return _required(self.listeners[0] if self.listeners else None, self, "listeners")

    @property
    def place_name(self) -> str:
        """The place entered, left, gone to or stayed in."""
        return _required(self.place, self, "place")

    @property
    def object_name(self) -> str:
        """The object acted on."""
        return _required(self.obj, self, "obj")

    @property
    def target_name(self) -> str:
        """The container (put, move, search) or the recipient (give)."""
        return _required(self.target, self, "target")

    @property
    def proposition(self) -> Clause:
        """What is stated, seen, told or claimed."""
        if self.clause is None:
            raise ValueError(f"a {self.kind} action has no clause")
        return self.clause


def _required(value: str | None, action: StoryAction, name: str) -> str:
    if not value:
        raise ValueError(f"a {action.kind} action has no {name}")
    return value
