"""The planner on a chat model: the author's view in, a validated :class:`TurnPlan` out.

The prompt (``prompts/plan.v*.md``) is the instruction; the user message is a compact
rendering of the author's view: the roster, W, every character's beliefs labelled by holder
(false ones marked), the characters' goals, the open developments and hypotheses, the
outline, the world's lore the recent text and the direction activate (the author's books
only, no character's own: within the lore's own budget, ``FABULA_LORE_BUDGET``, see
:func:`planner_lore`), the
recent text, the direction and the notes on rejected plans. The reply must
name only characters, places, developments and hypotheses of the view (names are accepted
and turned into ids); anything else is shown back to the model and asked for again, within
the client's ``max_attempts`` replies, after which
:class:`~fabula.errors.ModelOutputError` is raised.

The JSON schema sent (:func:`plan_json_schema`, unless the role's ``schemas`` setting is
``generic``) is the view's: ``focal`` 1 to :data:`~fabula.agents.contracts.MAX_FOCAL` of its
character ids, ``place`` one of its places or null, ``developments`` and ``hypothesis`` its
open ones, beats and memory needs a few sentences each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import create_model, model_validator

from fabula.agents.contracts import LINE_CHARS, MAX_BEATS, MAX_FOCAL, PlanRequest, TurnPlan
from fabula.agents.prompts import load_prompt
from fabula.agents.schemas import array, cached, closed, line, maybe, one_of
from fabula.agents.views import AuthorView
from fabula.memory.records import slug
from fabula.settings import LORE_BUDGET
from fabula.worlds.recall import books_of, turn_lore

if TYPE_CHECKING:
    # OpenAI and LangChain (seconds to import): loaded by the factory, only for a model
    from fabula.agents.llm import ModelClient

MAX_DEVELOPMENTS = 3  # the most developments one plan says it moves


class ModelPlanner:
    """Plans a turn with a chat model (see the module docstring); ``lore_budget`` is the
    most tokens (words) of the world's lore its prompt shows."""

    def __init__(self, client: ModelClient, *, lore_budget: int = LORE_BUDGET) -> None:
        self.client = client
        self.prompt = load_prompt("planner", "plan")
        self.lore_budget = lore_budget

    async def plan(self, request: PlanRequest) -> TurnPlan:
        """The next turn's plan; raises ModelOutputError when no valid plan comes back."""
        view, direction = request.view, request.direction
        if not view.cast():
            raise ValueError("the story has no characters")
        messages = [
            SystemMessage(content=self.prompt.render(max_focal=MAX_FOCAL)),
            HumanMessage(
                content=render_author_view(
                    view,
                    direction,
                    request.attempt,
                    request.notes,
                    lore=planner_lore(view, direction, budget=self.lore_budget, said=request.said),
                )
            ),
        ]
        wire = plan_json_schema(view) if self.client.schemas == "story" else None
        checked = await self.client.structured(
            plan_schema(view), messages, shape=TurnPlan, json_schema=wire
        )
        return TurnPlan.model_validate(checked.model_dump())

    def unread(self, view: AuthorView, text: str, kind: str = "direction") -> str | None:
        """None: a model reads a direction or a note in plain words."""
        return None


def plan_json_schema(view: AuthorView) -> dict[str, Any]:
    """The strict JSON schema of a plan for ``view`` (see the module docstring); built once
    per set of ids (cached)."""
    parts = {
        "characters": view.cast(),  # who may be focal: never an extra
        "places": sorted(e.id for e in view.entities.values() if e.kind == "place"),
        "developments": sorted(d.id for d in view.open_developments()),
        "hypotheses": sorted(h.id for h in view.hypotheses.values() if h.status == "open"),
    }

    def build() -> dict[str, Any]:
        sentence = line(LINE_CHARS, min_chars=1)
        developments = parts["developments"]
        return closed(
            {
                "scene_goal": sentence,
                "place": maybe(one_of(parts["places"])),
                "focal": array(one_of(parts["characters"]), MAX_FOCAL, min_items=1),
                "beats": array(sentence, MAX_BEATS),
                "memory_needs": array(sentence, MAX_BEATS),
                "developments": array(
                    one_of(developments), min(MAX_DEVELOPMENTS, len(developments))
                ),
                "hypothesis": maybe(one_of(parts["hypotheses"])),
            }
        )

    return cached("planner", parts, build)


def plan_schema(view: AuthorView) -> type[TurnPlan]:
    """:class:`TurnPlan`, refusing ids the view does not have (names become ids)."""
    characters = set(view.cast())
    places = {e.id for e in view.entities.values() if e.kind == "place"}
    developments = {d.id for d in view.open_developments()}
    hypotheses = {h.id for h in view.hypotheses.values() if h.status == "open"}

    def known_ids(cls: type[TurnPlan], data: Any) -> Any:  # a before-validator
        # only well-shaped values are checked here; anything else fails field validation
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("focal"), list):
            focal = list(dict.fromkeys(_ids(data["focal"], characters, "character")))
            if len(focal) > MAX_FOCAL:
                raise ValueError(f"focal: at most {MAX_FOCAL} characters, not {len(focal)}")
            data["focal"] = focal
        if isinstance(data.get("place"), str):
            (data["place"],) = _ids([data["place"]], places, "place")
        if isinstance(data.get("developments"), list):
            data["developments"] = _ids(data["developments"], developments, "development")
        if isinstance(data.get("hypothesis"), str):
            (data["hypothesis"],) = _ids([data["hypothesis"]], hypotheses, "open hypothesis")
        return data

    validators: dict[str, Any] = {"known_ids": model_validator(mode="before")(known_ids)}
    return create_model("TurnPlan", __base__=TurnPlan, __validators__=validators)


def _ids(values: Sequence[object], known: set[str], what: str) -> list[str]:
    """``values`` as ids of ``known`` (an id or a name); ValueError naming the unknown ones."""
    out, unknown = [], []
    for value in values:
        text = str(value)
        sid = text if text in known else _slug(text)
        if sid in known:
            out.append(sid)
        else:
            unknown.append(text)
    if unknown:
        raise ValueError(
            f"no such {what}: {', '.join(unknown)} (known: {', '.join(sorted(known)) or 'none'})"
        )
    return out


def _slug(text: str) -> str:
    try:
        return slug(text)
    except ValueError:
        return ""


def planner_lore(
    view: AuthorView,
    direction: str | None = None,
    *,
    budget: int = LORE_BUDGET,
    said: Sequence[str] | None = None,
) -> list[str]:
    """The entries of the world's books (the pack's, the author's: no character's own book)
    activated for the turn at hand, within ``budget`` tokens, as lines for the planner's
    prompt: the story's turns ``said`` so far (None: the view's recent turns) and the
    direction as the newest, scanned as the writer's context scans them
    (:func:`fabula.worlds.recall.turn_lore`, with the story's World Info settings)."""
    if view.pack is None:
        return []
    lore = view.pack.lore
    books = books_of(lore.books_of(None), lore.world_info)
    turns = [t.text for t in view.recent] if said is None else said
    found = turn_lore(books, turns, direction or "", budget=budget)
    return [f"- {x.text}" for x in found.lit]


def render_author_view(
    view: AuthorView,
    direction: str | None = None,
    attempt: int = 0,
    notes: Sequence[str] = (),
    *,
    lore: Sequence[str] = (),
) -> str:
    """The author's view as compact sections (``## title`` over lines), for a prompt;
    ``lore`` the lines of :func:`planner_lore`."""
    sections = [
        ("Roster", _roster(view)),
        (f"W: the world after turn {view.turn}", _world(view)),
        *((f"B[{view.name(c)}]", _beliefs(view, c)) for c in view.characters()),
        ("Goals", _goals(view)),
        ("D: open developments", _developments(view)),
        ("H: open hypotheses", _hypotheses(view)),
        ("Outline", _outline(view)),
        ("Lore", "\n".join(lore)),
        ("Recent text", "\n".join(f"turn {t.turn}: {t.text}" for t in view.recent)),
        ("Direction", direction or ""),
    ]
    if attempt > 0:
        rejected = f"{attempt} earlier plan(s) for this turn were rejected."
        sections.append(("Rejected plans", "\n".join([rejected, *(f"- {n}" for n in notes)])))
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)


def _roster(view: AuthorView) -> str:
    lines = []
    for kind in ("character", "place", "object"):
        entities = sorted((e for e in view.entities.values() if e.kind == kind), key=lambda e: e.id)
        if entities:
            listed = ", ".join(e.id if e.id == e.name else f"{e.id} ({e.name})" for e in entities)
            lines.append(f"{kind}s: {listed}")
    return "\n".join(lines)


def _world(view: AuthorView) -> str:
    states = sorted(view.world.states.values(), key=lambda s: (s.subject, s.attribute))
    return "\n".join(
        f"- the {s.attribute} of {view.name(s.subject)} is "
        f"{'not ' if not s.polarity else ''}{view.name(s.value)} (since turn {s.valid_from})"
        for s in states
    )


def _beliefs(view: AuthorView, character: str) -> str:
    held = view.beliefs.get(character)
    if held is None:
        return ""
    lines = []
    for b in sorted(held.beliefs.values(), key=lambda b: (b.subject, b.attribute)):
        truth = view.world.value(b.subject, b.attribute)
        false = b.polarity and truth is not None and truth != b.value
        lines.append(
            f"- the {b.attribute} of {view.name(b.subject)} is "
            f"{'not ' if not b.polarity else ''}{view.name(b.value)} "
            f"({b.mode}, turn {b.valid_from}){' [FALSE]' if false else ''}"
        )
    return "\n".join(lines)


def _goals(view: AuthorView) -> str:
    return "\n".join(
        f"- {view.name(c)}: {'; '.join(goals)}"
        for c in view.characters()
        if (goals := view.goals_of(c))
    )


def _developments(view: AuthorView) -> str:
    return "\n".join(
        f"- {d.id} [{d.kind}, {d.status}] {d.title}"
        + (
            f" (participants: {', '.join(view.name(p) for p in d.participants)})"
            if d.participants
            else ""
        )
        for d in view.open_developments()
    )


def _hypotheses(view: AuthorView) -> str:
    lines = [
        f"- {h.id} (for {h.development}): {h.premise}"
        for h in view.hypotheses.values()
        if h.status == "open"
    ]
    if view.pursue:
        lines.append(f"this branch pursues {view.pursue}")
    return "\n".join(lines)


def _outline(view: AuthorView) -> str:
    if view.pack is None:
        return ""
    return "\n".join([view.pack.premise, *(f"- {step}" for step in view.pack.outline)])
