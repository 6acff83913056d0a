"""The writer on a chat model: plan, proposals and budgeted memory in, a :class:`Draft` out.

The prompt (``prompts/write.v*.md``) is the instruction; the user message holds the plan,
each focal character's proposal, the memory context the graph assembled within its token
budget (``request.context``, passed on as it is: the writer reads no more of the store),
the approver's notes and the critic's findings on the previous draft. The reply is free
text; an empty one is asked for once more (:data:`EMPTY_FEEDBACK`), and a second empty one
is :class:`~fabula.errors.ModelOutputError`.

A chat template's turn marker written out as text (``<|im_end|>``, ``<end_of_turn>``, ...)
ends the passage: what follows it is dropped (markers that open the reply, with the role
they name, are dropped first), and a reply that is only markers is empty. So is a passage
without a word in it (``"**"`` before a marker, seen from Gemma 3 270M): it tells nothing.

Prose cut at its token limit is prose, not an error: the passage is kept up to its last
complete sentence and returned as a :class:`CutDraft`, whose :func:`draft_findings` (a
warning) the graph gives the critic and the approver. A reply cut before its first
sentence ended is asked for once more, told so (:data:`UNFINISHED_FEEDBACK`: at
temperature 0 the same request would only continue the same run-on sentence) and with the
limit doubled, then is :class:`~fabula.errors.ModelTruncated`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from fabula.agents.contracts import Action, Draft, Finding, WriteRequest
from fabula.agents.prompts import load_prompt
from fabula.agents.views import AuthorView
from fabula.errors import ModelOutputError, ModelTruncated
from fabula.logs import get_logger
from fabula.memory.text import has_word, split_sentences

if TYPE_CHECKING:
    # OpenAI and LangChain (seconds to import): loaded by the factory, only for a model
    from fabula.agents.llm import ModelClient, Prose

MAX_SENTENCES = 8
# what the writer is told after an empty reply (the wording the structured re-asks use)
EMPTY_FEEDBACK = (
    "That reply could not be used: it was empty. Reply with the passage itself, as prose only."
)
UNFINISHED_FEEDBACK = (
    "That reply could not be used: it ran to its length limit before its first sentence "
    "ended. Write the passage again, in short sentences, each ending with a full stop."
)

log = get_logger(__name__)

# a chat template's turn markers, written out as text: a small base model (Gemma 3 270M on
# llama.cpp) ends its passage with "<|im_end|>" and then repeats it to the token limit
_MARKERS = r"<\|im_(?:end|start)\|>|<(?:end|start)_of_turn>|<\|eot_id\|>|<\|endoftext\|>|<\|end\|>"
_TURN_MARKER = re.compile(_MARKERS)
# markers that open the reply, each with the role it names ("<|im_start|>assistant")
_OPENING = re.compile(rf"\s*(?:{_MARKERS})(?:[ \t]*(?:assistant|model|user|system)\b)?\s*")
_ENDED = re.compile(r"[.!?…][\"”’')\]]*$")


class CutDraft(Draft):
    """A draft whose reply stopped at its token limit: ``text`` is the reply up to its last
    complete sentence; ``dropped`` the characters of the unfinished sentence left out."""

    dropped: int = 0


def complete_sentences(text: str) -> str:
    """``text`` up to the end of its last sentence that ends as a sentence does (``.``,
    ``!``, ``?`` or ``…``, closing quotes after it); empty when none does."""
    end = 0
    for start, stop in split_sentences(text):
        if _ENDED.search(text[start:stop]):
            end = stop
    return text[:end].rstrip()


def draft_findings(draft: Draft) -> list[Finding]:
    """What the writer itself marks in ``draft`` for the critic and the approver: a cut
    passage is a warning quoting its last kept sentence."""
    if not isinstance(draft, CutDraft):
        return []
    spans = list(split_sentences(draft.text))
    quote = draft.text[spans[-1][0] : spans[-1][1]] if spans else ""
    message = (
        "the writer's reply stopped at its token limit: the passage is kept up to its "
        f"last complete sentence ({draft.dropped} characters of an unfinished one left out)"
    )
    return [Finding(kind="plan", message=message, quote=quote, severity="warning")]


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
        A reply cut at its token limit gives a :class:`CutDraft` (see the module
        docstring).
        """
        messages: list[BaseMessage] = [
            SystemMessage(content=self.prompt.render(max_sentences=self.max_sentences)),
            HumanMessage(content=render_request(request, view, version=self.prompt.version)),
        ]
        prose = await self._prose(messages, view)
        if not prose.text:
            log.warning("writer_reply_empty", turn=view.turn + 1, attempt=1, max_attempts=2)
            prose = await self._prose([*messages, HumanMessage(EMPTY_FEEDBACK)], view)
        if not prose.text:
            raise ModelOutputError(
                "the writer's reply was empty twice", story=view.story, turn=view.turn + 1
            )
        if prose.cut:
            return CutDraft(text=prose.text, revision=request.revision, dropped=prose.dropped)
        return Draft(text=prose.text, revision=request.revision)

    async def _prose(self, messages: list[BaseMessage], view: AuthorView) -> _Passage:
        """One reply as a passage: unwrapped, and a cut one kept to its complete sentences
        (one cut before its first sentence ended is asked for again, told so, with the
        limit doubled, then is :class:`ModelTruncated`)."""
        limit: int | None = None
        for attempt in (1, 2):
            reply: Prose = await self.client.prose(messages, max_tokens=limit)
            text = _unwrap(reply.text)
            opened = False
            while (opening := _OPENING.match(text)) is not None and opening.end() > 0:
                text, opened = text[opening.end() :], True
            marker = _TURN_MARKER.search(text)
            if opened and not text:  # nothing but markers
                return _Passage("")
            if marker is not None:  # the reply ended there, whatever followed it
                log.warning("writer_reply_marker", turn=view.turn + 1, marker=marker[0])
                return _whole(_unwrap(text[: marker.start()]), view)
            if not reply.cut:
                return _whole(text, view)
            kept = complete_sentences(text)
            if has_word(kept):
                dropped = len(text[len(kept) :].strip())
                log.warning("writer_reply_cut", turn=view.turn + 1, kept=len(kept), dropped=dropped)
                return _Passage(kept, cut=True, dropped=dropped)
            limit = 2 * (self.client.max_tokens or 1024)
            log.warning(
                "writer_reply_cut_unfinished", turn=view.turn + 1, attempt=attempt, end=text[-160:]
            )
            began = [AIMessage(content=text[:400])] if text else []  # not the run-on rest
            messages = [*messages, *began, HumanMessage(UNFINISHED_FEEDBACK)]
        raise ModelTruncated(
            f"the writer's reply stopped at its token limit ({limit} tokens) before its "
            "first sentence ended, twice; raise its max_tokens",
            role="writer",
            story=view.story,
            turn=view.turn + 1,
        )


@dataclass(frozen=True)
class _Passage:
    """A reply as the writer keeps it."""

    text: str
    cut: bool = False
    dropped: int = 0


def _whole(text: str, view: AuthorView) -> _Passage:
    """A whole reply's passage: empty when no word is in it (logged with what it was)."""
    if has_word(text):
        return _Passage(text)
    if text:
        log.warning("writer_reply_wordless", turn=view.turn + 1, reply=text[:80])
    return _Passage("")


def render_request(request: WriteRequest, view: AuthorView, *, version: int = 2) -> str:
    """The write request as compact sections (``## title`` over lines), for a prompt.

    Version 2 (``write.v2.md``) adds the story's premise and style line and the focal
    characters' voices, and states the plan once (what to keep in mind is in the memory
    the graph assembled for it); version 1 is kept for replaying recorded runs.
    """
    if version >= 2:
        return _render_v2(request, view)
    plan = request.plan
    proposals = _proposals(request, view)
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
    proposals = _proposals(request, view)
    sections = [
        ("Story", "\n".join(story)),
        ("Voices", "\n".join(voices)),
        ("This turn", "\n".join(scene)),
        ("Proposals", "\n".join(proposals)),
        *_shared_sections(request),
    ]
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)


def _proposals(request: WriteRequest, view: AuthorView) -> list[str]:
    """Each character's proposal: its intent, then its actions, one a line."""
    proposals = []
    for p in request.proposals:
        if p.words:  # a played character: a person wrote its part, to be kept as meant
            proposals.append(f"{view.name(p.character)} (played by a person; write in): {p.words}")
            continue
        lines = [f"{view.name(p.character)} (intent: {p.intent or 'none given'}):"]
        lines += [f"- {_action(view, a)}" for a in p.actions]
        proposals.append("\n".join(lines))
    return proposals


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
