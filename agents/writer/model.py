"""The writer on a chat model: plan, proposals and budgeted memory in, a :class:`Draft` out.

The prompt (``prompts/write.v*.md``) is the instruction; the user message holds the plan,
each focal character's proposal, the memory context the graph assembled within its token
budget (``request.context``, passed on as it is: the writer reads no more of the store),
the approver's notes and the critic's findings on the previous draft. The reply is free
text; an empty one is asked for once more (:data:`EMPTY_FEEDBACK`), and a second empty one
is :class:`~fabula.memory.errors.ModelOutputError`.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from fabula.agents.contracts import Action, Draft, WriteRequest
from fabula.agents.llm import ModelClient
from fabula.agents.prompts import load_prompt
from fabula.agents.views import AuthorView
from fabula.memory.errors import ModelOutputError
from fabula.memory.logs import get_logger

__all__ = ["EMPTY_FEEDBACK", "ModelWriter", "render_request"]

MAX_SENTENCES = 8
# what the writer is told after an empty reply (the wording the structured re-asks use)
EMPTY_FEEDBACK = (
    "That reply could not be used: it was empty. Reply with the passage itself, as prose only."
)

log = get_logger(__name__)


class ModelWriter:
    """Writes a turn's passage with a chat model (see the module docstring)."""

    def __init__(
        self,
        client: ModelClient,
        *,
        max_sentences: int = MAX_SENTENCES,
        prompt_version: int | None = None,
    ) -> None:
        self.client = client
        self.max_sentences = max_sentences
        self.prompt = load_prompt("writer", "write", prompt_version)

    async def write(self, request: WriteRequest, view: AuthorView) -> Draft:
        """The draft for ``request``. An empty reply is asked for once more, with
        :data:`EMPTY_FEEDBACK`; raises :class:`ModelOutputError` when that one is empty too.
        """
        messages: list[BaseMessage] = [
            SystemMessage(content=self.prompt.render(max_sentences=self.max_sentences)),
            HumanMessage(content=render_request(request, view, version=self.prompt.version)),
        ]
        text = _unwrap(await self.client.text(messages))
        if not text:
            log.warning("writer_reply_empty", turn=view.turn + 1, attempt=1, max_attempts=2)
            text = _unwrap(await self.client.text([*messages, HumanMessage(EMPTY_FEEDBACK)]))
        if not text:
            raise ModelOutputError(
                "the writer's reply was empty twice", story=view.story, turn=view.turn + 1
            )
        return Draft(text=text, revision=request.revision)


def render_request(request: WriteRequest, view: AuthorView, *, version: int = 2) -> str:
    """The write request as compact sections (``## title`` over lines), for a prompt.

    Version 2 (``write.v2.md``) adds the story's premise and style line and the focal
    characters' voices, and states the plan once (what to keep in mind is in the memory
    the graph assembled for it); version 1 is kept for replaying recorded runs.
    """
    if version >= 2:
        return _render_v2(request, view)
    plan = request.plan
    proposals = []
    for p in request.proposals:
        lines = [f"{view.name(p.character)} (intent: {p.intent or 'none given'}):"]
        lines += [f"- {_action(view, a)}" for a in p.actions]
        proposals.append("\n".join(lines))
    sections = [
        (
            "Plan",
            "\n".join(
                [f"scene goal: {plan.scene_goal}"]
                + ([f"place: {view.name(plan.place)}"] if plan.place else [])
                + [f"focal: {', '.join(view.name(c) for c in plan.focal)}"]
                + [f"beat: {b}" for b in plan.beats]
                + [f"keep in mind: {m}" for m in plan.memory_needs]
            ),
        ),
        ("Proposals", "\n".join(proposals)),
        *_shared_sections(request),
    ]
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)


def _shared_sections(request: WriteRequest) -> list[tuple[str, str]]:
    """The sections every prompt version ends with: memory, notes, the critic's findings."""
    findings = "\n".join(
        f"- {f.severity} ({f.kind}): {f.message}" + (f' — "{f.quote}"' if f.quote else "")
        for f in request.findings
    )
    return [
        ("Memory", request.context),
        ("Notes", "\n".join(f"- {n}" for n in request.notes)),
        (f"Critic's findings on draft {request.revision}", findings),
    ]


def _render_v2(request: WriteRequest, view: AuthorView) -> str:
    plan = request.plan
    pack = view.pack
    story = [pack.premise, *([f"style: {pack.style}"] if pack.style else [])] if pack else []
    voices = []
    for c in plan.focal:
        spec = view.character_spec(c)
        if spec is not None and spec.voice:
            voices.append(f"- {view.name(c)}: {spec.voice}")
    scene = [
        *([f"place: {view.name(plan.place)}"] if plan.place else []),
        f"focal: {', '.join(view.name(c) for c in plan.focal)}",
        f"goal: {plan.scene_goal}",
        *(f"beat: {b}" for b in plan.beats),
    ]
    proposals = []
    for p in request.proposals:
        lines = [f"{view.name(p.character)} (intent: {p.intent or 'none given'}):"]
        lines += [f"- {_action(view, a)}" for a in p.actions]
        proposals.append("\n".join(lines))
    sections = [
        ("Story", "\n".join(story)),
        ("Voices", "\n".join(voices)),
        ("This turn", "\n".join(scene)),
        ("Proposals", "\n".join(proposals)),
        *_shared_sections(request),
    ]
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)


def _action(view: AuthorView, action: Action) -> str:
    parts: list[str] = [action.kind]
    for field in ("object", "target", "listener", "about"):
        value = getattr(action, field)
        if value:
            parts.append(f"{field}={view.name(value)}")
    if action.claim:
        claim = view.name(action.claim) if action.attribute == "location" else action.claim
        parts.append(f"claim: the {action.attribute} is {claim}")
    if action.line:
        parts.append(f'"{action.line}"')
    return " ".join(parts) + (f" ({action.reason})" if action.reason else "")


def _unwrap(text: str) -> str:
    """The passage without surrounding white space or a code fence around it."""
    text = text.strip()
    if text.startswith("```") and text.endswith("```"):
        text = text[3:-3].partition("\n")[2].strip() if "\n" in text else text.strip("`")
    return text.strip()
