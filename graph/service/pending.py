"""A turn between runs: a draft awaiting a decision, an edit that was not taken, and what a
listener hears while a turn is written (the web page's live view, the CLI's streamed prose).

:class:`fabula.graph.service.Fabula` finds pending turns in the turn graph's checkpoints
(:func:`pending_in`) and relays the graph's stream to a :data:`Listener` (:func:`tell`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from fabula.agents.contracts import Draft
from fabula.errors import EditRefused, InvalidInput, Remedy
from fabula.graph.state import ApprovalRequest, PartRequest

if TYPE_CHECKING:  # annotations only: the command line imports this module for its bounds
    from langgraph.checkpoint.base import CheckpointTuple
    from langgraph.types import StateSnapshot

    from fabula.memory.store.view import StoryReads

# One set of bounds for the command line, the JSON API and the pages.
MAX_RUN_TURNS = 1000
"""The most turns one run writes."""
MAX_DIRECTION_CHARS = 2000
"""The longest note for the planner (``--direction``)."""
MAX_NOTE_CHARS = 2000
"""The longest rejection note (``--note``)."""
MAX_PENDING_ID_CHARS = 80
"""The longest draft id a decision may name (``<turn>.<checkpoint>``: well under it)."""


def check_bounds(
    *,
    turns: int | None = None,
    direction: str | None = None,
    note: str | None = None,
    expect: str | None = None,
) -> None:
    """Raise :class:`InvalidInput` (one line naming the field) for a value beyond the
    bounds above; the command line, the API and the pages all check through here."""
    if turns is not None and not 1 <= turns <= MAX_RUN_TURNS:
        raise InvalidInput(f"turns: between 1 and {MAX_RUN_TURNS}, not {turns}")
    for field, text, most in (
        ("direction", direction, MAX_DIRECTION_CHARS),
        ("note", note, MAX_NOTE_CHARS),
        ("expect (pending_id)", expect, MAX_PENDING_ID_CHARS),
    ):
        if text is not None and len(text) > most:
            raise InvalidInput(f"{field}: at most {most} characters, not {len(text)}")


@dataclass(frozen=True)
class Pending:
    """A turn waiting for a human decision."""

    story: str
    branch: str
    turn: int
    request: ApprovalRequest
    # the checkpoint holding this draft: a rejected and rewritten draft has another
    checkpoint: str | None = None

    @property
    def id(self) -> str:
        """This draft's name, ``<turn>.<checkpoint>``: what a decision says it is about."""
        return f"{self.turn}.{self.checkpoint or ''}"


@dataclass(frozen=True)
class TurnEvent:
    """Something that happened while a turn was written, for a listener (the web page).

    ``step``: the graph node ``node`` finished; ``draft``: the writer's whole draft is
    ``text``; ``prose``: a piece of the draft a model is streaming.
    """

    kind: Literal["step", "draft", "prose"]
    story: str
    branch: str
    turn: int
    node: str = ""
    text: str = ""


Listener = Callable[[TurnEvent], Awaitable[None]]


def pending_in(store: StoryReads, turn: int, snapshot: StateSnapshot) -> Pending | None:
    """The turn awaiting a decision in ``snapshot`` (its graph's state), if any."""
    checkpoint = snapshot.config.get("configurable", {}).get("checkpoint_id")
    for task in snapshot.tasks:
        for intr in task.interrupts:
            if _asks_part(intr.value):
                continue  # a played character's part, not a draft
            request = ApprovalRequest.model_validate(intr.value)
            return Pending(store.story, store.branch, turn, request, checkpoint)
    return None


INTERRUPT_CHANNEL = "__interrupt__"
"""The channel LangGraph writes an interrupt to (``langgraph.constants.INTERRUPT``; a test
holds it to LangGraph's own)."""


def pending_in_checkpoint(
    store: StoryReads, turn: int, saved: CheckpointTuple | None
) -> Pending | None:
    """The turn awaiting a decision in ``saved`` (the newest checkpoint of the turn's
    thread, as the checkpointer reads it), if any: what :func:`pending_in` finds in the
    graph's state, read without compiling the turn graph. A turn stops at an interrupt
    (an exit checkpoint) with the interrupt among that checkpoint's pending writes, which
    is where the graph's state finds it too."""
    if saved is None:
        return None
    checkpoint = saved.config.get("configurable", {}).get("checkpoint_id")
    values = [
        intr.value
        for _task, channel, value in saved.pending_writes or ()
        if channel == INTERRUPT_CHANNEL
        for intr in (value if isinstance(value, list | tuple) else [value])
    ]
    return pending_in_values(store, turn, checkpoint, values)


def pending_in_values(
    store: StoryReads, turn: int, checkpoint: str | None, values: list[Any]
) -> Pending | None:
    """The turn awaiting a decision among the interrupts' ``values`` of checkpoint
    ``checkpoint`` (in the order of their writes), if any: the first that asks for a
    decision, not for a played character's part. :func:`pending_in_checkpoint` reads them
    from a checkpoint tuple, ``Core._pending`` straight from Redis
    (:func:`~fabula.graph.checkpoint.waiting.waiting_at`)."""
    for value in values:
        if _asks_part(value):
            continue  # a played character's part, not a draft
        request = ApprovalRequest.model_validate(value)
        return Pending(store.story, store.branch, turn, request, checkpoint)
    return None


def _asks_part(value: Any) -> bool:
    if isinstance(value, PartRequest):
        return True
    return isinstance(value, dict) and value.get("kind") == "part"


def parts_in(snapshot: StateSnapshot) -> dict[str, PartRequest]:
    """The played characters' parts the turn in ``snapshot`` waits for, by the id of the
    interrupt that asks (one per played character)."""
    return {
        intr.id: PartRequest.model_validate(intr.value)
        for task in snapshot.tasks
        for intr in task.interrupts
        if _asks_part(intr.value)
    }


def edit_problem(request: ApprovalRequest) -> str | None:
    """Why the last edit of a pending turn was not taken, if it was not."""
    if request.edit_error:
        return f"the last edit could not be read: {request.edit_error}"
    if request.edit_refused:
        found = request.edit_refused
        return "the critic refused the last edit: " + "; ".join(
            f"{f.kind}: {f.message}" for f in found
        )
    return None


def raise_if_edit_not_taken(request: ApprovalRequest | None, where: dict[str, Any]) -> None:
    """After an edit, the turn is back at approval: raise if the edit was not taken (it could
    not be read, or the critic refused it); the turn then awaits a decision as it was."""
    if request is None:
        return
    if request.edit_error:
        raise InvalidInput(
            f"the edit could not be read ({request.edit_error}); turn {where['turn']} "
            "still awaits a decision, as it was",
            **where,
        )
    if request.edit_refused:
        errors = request.edit_refused
        listed = "; ".join(
            f"{f.kind}: {f.message}" + (f" ({f.quote!r})" if f.quote else "") for f in errors
        )
        raise EditRefused(
            f"the critic found {len(errors)} error(s) in the edit: {listed} — nothing was written",
            remedy=Remedy("force"),
            **where,
        )


async def tell(listener: Listener, store: StoryReads, turn: int, mode: str, chunk: Any) -> bool:
    """Pass one streamed chunk of the turn's graph to ``listener``; True at the interrupt."""
    interrupted = False

    def event(kind: Literal["step", "draft", "prose"], node: str = "", text: str = "") -> TurnEvent:
        return TurnEvent(kind, store.story, store.branch, turn, node, text)

    if mode == "updates" and isinstance(chunk, dict):
        for node, update in chunk.items():
            if node == "__interrupt__":
                interrupted = True
                continue
            await listener(event("step", node))
            draft = update.get("draft") if isinstance(update, dict) else None
            if node == "write" and isinstance(draft, Draft):
                await listener(event("draft", node, draft.text))
    elif mode == "messages":
        message, meta = chunk
        if meta.get("langgraph_node") == "write":
            text = message.content if isinstance(message.content, str) else ""
            if text:
                await listener(event("prose", "write", text))
    elif mode == "custom" and isinstance(chunk, dict) and chunk.get("prose"):
        await listener(event("prose", "write", str(chunk["prose"])))
    return interrupted
