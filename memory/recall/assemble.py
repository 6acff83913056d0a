"""Rendering a recall into a token budget, in sections, with a manifest of every line.

Sections, in this order: any preface the caller gives (the turn's plan), **W** (world facts
about what the request involves), **B** by holder (the beliefs of the characters involved;
a false one is marked for the author), **D** (developments the request touches, open
first), **H** (possible continuations, for writing only), **Earlier in the story** (the
summaries of the scenes and plotlines the request bears on whose episodes are not all
rendered, each ``[turns a-b, title] summary``, in story order), **Episodes** (grouped by
turn, each group headed by its date and place, each line with its speaker), and any trailer
(recent text). Facts go first because they are the current truth in a few tokens; episodes
get what the facts leave, which is most of it; the summaries get what everything else
leaves, at most ``SUMMARY_SHARE`` of the budget (taking space from the lowest-ranked
episodes instead measured worse: on LoCoMo, 5% of the budget cost 0.005 of evidence recall
and 15% cost 0.02 — an episode the ranking chose is worth more than a summary of its
scene); chosen last, they are laid out before the episodes they lead into. Nothing is ever
rendered over ``budget`` tokens under the given counter: a line that does not fit is
skipped and a smaller one may still go in (a summary is shortened to whole words that fit).

Every content line is traceable: :class:`Assembly.manifest` maps it to the record it came
from (a state, belief, development, hypothesis, episode with its span, a turn for a date
heading, or a scene or plotline with its member ids for a summary line, which
:func:`fabula.memory.hierarchy.unfold` expands). Section headings are the only lines
without an entry.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fabula.memory.episodes import Episode
from fabula.memory.index.general import the_place
from fabula.memory.projections import BeliefView, WorldView
from fabula.memory.recall.plan import RecallPlan
from fabula.memory.records import Belief, Development, Entity, HierarchyNode, Hypothesis, State
from fabula.memory.timeref import parse_clock
from fabula.memory.tokens import ApproximateCounter, TokenCounter

FACT_SHARE = 0.35  # at most this share of the budget for W, B, D and H together
SUMMARY_SHARE = 0.15  # at most this share of the budget for the hierarchy's summaries
SUMMARY_SECTION = "Earlier in the story"
MIN_SUMMARY_WORDS = 8  # a summary shortened below this many words is left out
MIN_FACT_TOKENS = 6  # no W or B line ("- Ann is in the hall (since turn 3)") costs less
MIN_SUMMARY_TOKENS = 12  # no summary line (its heading, eight words) costs less


def room_for_summaries(assembly: Assembly) -> bool:
    """Whether a rendering without summaries left room for at least one summary line."""
    return assembly.room >= MIN_SUMMARY_TOKENS


MIN_LINE = 2  # no line costs less: one token of text and its line break
_MEMO_SIZE = 100_000

_named: dict[tuple[type, str], dict[str, int]] = {}
_memos: weakref.WeakKeyDictionary[TokenCounter, dict[str, int]] = weakref.WeakKeyDictionary()


def _counting(counter: TokenCounter) -> Callable[[str], int]:
    """``counter.count`` with a memory: the same lines (facts, episodes, recent text) are
    costed again at every request, and a count is a pure function of the text (and of
    the counter: counters of one class with one ``name`` count alike)."""
    name = getattr(counter, "name", None)
    if isinstance(name, str):
        memo = _named.setdefault((type(counter), name), {})
    else:
        try:
            memo = _memos.setdefault(counter, {})
        except TypeError:  # a counter that cannot be weakly referenced: count every time
            return counter.count

    def count(text: str) -> int:
        known = memo.get(text)
        if known is None:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            known = memo[text] = counter.count(text)
        return known

    return count


@dataclass(frozen=True)
class ManifestEntry:
    """Where one rendered line came from: ``kind`` and ``id`` of the record (an episode's
    ``span`` is its ``(turn, start, end)`` in the turn's text; a summary's ``members`` are
    its node's children: a scene's episode ids, a plotline's scene ids)."""

    line: int
    section: str
    kind: str
    id: str
    span: tuple[int, int, int] | None = None
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """A line that may be rendered, with its record (``turn``: its place in story order
    within its section, where the section is ordered so)."""

    section: str
    text: str
    kind: str
    id: str
    score: float = 0.0
    span: tuple[int, int, int] | None = None
    members: tuple[str, ...] = ()
    turn: int = 0


@dataclass
class Assembly:
    """The rendered context, its manifest, and its token count under ``counter`` (counted
    when first asked: a writer that only sends the text never pays for it), and the plan
    it was retrieved for."""

    text: str
    counter: TokenCounter
    manifest: list[ManifestEntry] = field(default_factory=list)
    _tokens: int | None = field(default=None, repr=False)
    room: int = 0  # what rendering left of the budget (line by line), e.g. for summaries
    plan: RecallPlan | None = None  # what the request was read as

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = self.counter.count(self.text)
        return self._tokens

    def ids(self, kind: str | None = None) -> list[str]:
        return [m.id for m in self.manifest if kind is None or m.kind == kind]


def _name(entities: Mapping[str, Entity], entity_id: str) -> str:
    entity = entities.get(entity_id)
    return entity.name if entity is not None else entity_id


def _noun(entities: Mapping[str, Entity], entity_id: str) -> str:
    entity = entities.get(entity_id)
    if entity is not None and entity.kind in ("character", "group"):
        return entity.name
    if entity is not None and entity.kind == "place":
        return the_place(entity.name)
    return f"the {_name(entities, entity_id)}"


def _fact(record: State | Belief, entities: Mapping[str, Entity]) -> str:
    subject = _noun(entities, record.subject)
    negation = "" if record.polarity else " not"
    if record.attribute == "location":
        return f"{subject} is{negation} in {_noun(entities, record.value)}"
    return f"the {record.attribute} of {subject} is{negation} {record.value}"


def _relevance(record: State | Belief, plan: RecallPlan) -> float:
    score = 0.0
    if record.subject in plan.entities:
        score += 2.0
    if record.value in plan.entities:
        score += 1.0
    if record.attribute in plan.attributes:
        score += 1.5
    return score


def fact_candidates(
    plan: RecallPlan,
    entities: Mapping[str, Entity],
    world: WorldView | None,
    beliefs: Mapping[str, BeliefView],
    developments: Mapping[str, Development],
    hypotheses: Mapping[str, Hypothesis],
    *,
    budget: int | None = None,
) -> list[Candidate]:
    """W, B, D and H lines that bear on ``plan``, best first within each section; with a
    ``budget``, no more W or B lines a section than its share of it could hold (each is
    written out, and a story's W and B grow with it)."""
    out: list[Candidate] = []
    most = None if budget is None else max(1, int(budget * FACT_SHARE) // MIN_FACT_TOKENS)
    if world is not None:
        out.extend(_world_lines(plan, entities, world, most))
    for holder, view in beliefs.items():
        out.extend(_belief_lines(plan, entities, world, holder, view, most))
    for dev in sorted(developments.values(), key=lambda d: (d.id not in plan.developments, d.id)):
        if dev.id in plan.developments or dev.status not in ("resolved", "abandoned"):
            out.append(
                Candidate(
                    "D",
                    f"- {dev.title} ({dev.kind}, {dev.status} since turn {dev.history[-1].turn})",
                    "development",
                    dev.id,
                )
            )
    if plan.purpose == "write":
        for hyp in hypotheses.values():
            if hyp.status == "open":
                out.append(
                    Candidate(
                        "H", f"- {hyp.premise} (if {hyp.development} goes on)", "hypothesis", hyp.id
                    )
                )
    return out


def _world_lines(
    plan: RecallPlan, entities: Mapping[str, Entity], world: WorldView, most: int | None
) -> list[Candidate]:
    """The W lines that bear on ``plan`` (at most ``most`` looked at), best first."""
    facts = [(s, _relevance(s, plan)) for s in world.states.values() if s.polarity]
    ranked = sorted(facts, key=lambda f: (-f[1], -f[0].valid_from, f[0].slot))
    return [
        Candidate(
            "W",
            f"- {_fact(state, entities)} (since turn {state.valid_from})",
            "state",
            state.id,
            score,
        )
        for state, score in ranked[:most]
        if score > 0
    ]


def _belief_lines(
    plan: RecallPlan,
    entities: Mapping[str, Entity],
    world: WorldView | None,
    holder: str,
    view: BeliefView,
    most: int | None,
) -> list[Candidate]:
    """``holder``'s B lines that bear on ``plan`` (every one, for a character the plan is
    about; at most ``most`` looked at), best first, each with how it was come by and a
    false one marked."""
    out = []
    section = f"B[{_name(entities, holder)}]"
    held = [(b, _relevance(b, plan)) for b in view.beliefs.values() if b.polarity]
    ranked_beliefs = sorted(held, key=lambda f: (-f[1], -f[0].valid_from, f[0].slot))
    for belief, score in ranked_beliefs[:most]:
        if score <= 0 and holder not in plan.characters:
            continue
        mark = ""
        if world is not None:
            truth = world.value(belief.subject, belief.attribute)
            mark = " [false]" if truth is not None and truth != belief.value else ""
        how = belief.mode.replace("_", " ")
        if belief.speaker:
            how += f" by {_name(entities, belief.speaker)}"
        out.append(
            Candidate(
                section,
                f"- {_fact(belief, entities)} ({how}, turn {belief.valid_from}){mark}",
                "belief",
                belief.id,
                score,
            )
        )
    return out


def _heading(ep: Episode, entities: Mapping[str, Entity]) -> str:
    """A group's heading: its date where the story gives one (else its turn), and place."""
    parts = [_date_of(ep.clock) if ep.clock else f"turn {ep.turn}"]
    if ep.place:
        parts.append(f"in {_noun(entities, ep.place)}")
    return "[" + ", ".join(parts) + "]"


def _date_of(clock: str) -> str:
    """The date part of a clock ("1:56 pm on 8 May, 2023" → "8 May, 2023")."""
    parsed = parse_clock(clock)
    if parsed is None:
        return clock
    return f"{parsed.date.day} {parsed.date.strftime('%B')} {parsed.date.year}"


def _line(ep: Episode, entities: Mapping[str, Entity]) -> str:
    if ep.speaker is not None and ep.kind == "say" and not ep.text.startswith('"'):
        name = _name(entities, ep.speaker)
        if not ep.text.startswith(name):
            return f"{name}: {ep.text}"
    return ep.text


def _summary_line(node: HierarchyNode, summary: str) -> str:
    turns = (
        f"turn {node.first_turn}"
        if node.first_turn == node.last_turn
        else f"turns {node.first_turn}-{node.last_turn}"
    )
    return f"[{turns}, {node.title}] {summary}"


def _fitting_summary(node: HierarchyNode, room: int, count: Callable[[str], int]) -> str | None:
    """The node's summary line, shortened to the whole words that fit ``room`` tokens
    (line break included), or None when fewer than ``MIN_SUMMARY_WORDS`` would."""
    whole = _summary_line(node, node.summary)
    if count(whole) + 1 <= room:
        return whole
    words = node.summary.split()
    if len(words) <= MIN_SUMMARY_WORDS:
        return None
    shortest = _summary_line(node, " ".join(words[:MIN_SUMMARY_WORDS]) + " …")
    if count(shortest) + 1 > room:
        return None
    low, high = MIN_SUMMARY_WORDS + 1, len(words) - 1
    best = shortest
    while low <= high:
        mid = (low + high) // 2
        line = _summary_line(node, " ".join(words[:mid]) + " …")
        if count(line) + 1 <= room:
            best, low = line, mid + 1
        else:
            high = mid - 1
    return best


def render(
    plan: RecallPlan,
    facts: Sequence[Candidate],
    episodes: Sequence[Episode],
    entities: Mapping[str, Entity],
    budget: int,
    counter: TokenCounter,
    *,
    preface: Iterable[tuple[str, str]] = (),
    trailer: Iterable[tuple[str, str]] = (),
    summaries: Sequence[tuple[HierarchyNode, float]] = (),
) -> Assembly:
    """Fill ``budget`` tokens: preface, facts (up to ``FACT_SHARE``), episodes, trailer,
    then the ``summaries`` (scored hierarchy nodes, best first) in what is left, up to
    ``SUMMARY_SHARE`` of the budget; a scene whose episodes are all rendered is skipped."""
    fill = _Filler(_counting(counter), budget)
    for label, body in preface:
        fill.section(label, body, "preface")
    fill.facts(facts)
    rendered = fill.episodes(episodes, entities)
    for label, body in trailer:
        fill.section(label, body, "trailer")
    fill.summaries(summaries, rendered)
    by_id = {ep.id: ep for ep in episodes}
    assembly = _layout(fill.chosen, by_id, entities, counter, budget)
    assembly.room = max(0, budget - fill.used)
    assembly.plan = plan
    return assembly


class _Filler:
    """The lines chosen so far for one context, and the tokens they cost (a section's
    heading counted with its first line)."""

    def __init__(self, count: Callable[[str], int], budget: int) -> None:
        self.count = count
        self.budget = budget
        self.chosen: list[Candidate] = []
        self.used = 0
        self.sections_seen: set[str] = set()

    def take(self, candidate: Candidate, cost: int, cap: int) -> bool:
        if self.used + cost > cap:
            return False
        self.chosen.append(candidate)
        self.used += cost
        return True

    def section_cost(self, section: str) -> int:
        return 0 if section in self.sections_seen else self.count(f"## {section}") + 2

    def section(self, label: str, body: str, kind: str) -> None:
        """A preface's or trailer's section, line by line, each while it fits."""
        for text in body.split("\n"):
            cost = self.count(text) + 1 + self.section_cost(label)
            if self.take(Candidate(label, text, kind, label), cost, self.budget):
                self.sections_seen.add(label)

    def facts(self, facts: Sequence[Candidate]) -> None:
        """The facts, best first, up to ``FACT_SHARE`` of what is left."""
        fact_cap = self.used + int(FACT_SHARE * (self.budget - self.used))
        for cand in facts:
            if self.used + MIN_LINE > fact_cap:
                break
            cost = self.count(cand.text) + 1 + self.section_cost(cand.section)
            if self.take(cand, cost, fact_cap):
                self.sections_seen.add(cand.section)

    def episodes(self, episodes: Sequence[Episode], entities: Mapping[str, Entity]) -> set[str]:
        """The episodes that fit, each turn's first under its heading; their ids."""
        budget, count = self.budget, self.count
        groups_seen: set[int] = set()
        headings: dict[tuple[int, str | None, str | None], str] = {}
        rendered: set[str] = set()
        for ep in episodes:
            if self.used + MIN_LINE > budget:
                break
            text = _line(ep, entities)
            cost = count(text) + 1 + self.section_cost("Episodes")
            heading = None
            if ep.turn not in groups_seen:
                key = (ep.turn, ep.place, ep.clock)
                heading = headings.get(key) or headings.setdefault(key, _heading(ep, entities))
                cost += count(heading) + 1
            if self.used + cost > budget:
                continue
            self.sections_seen.add("Episodes")
            if heading is not None:
                groups_seen.add(ep.turn)
            rendered.add(ep.id)
            self.take(
                Candidate("Episodes", text, "episode", ep.id, span=(ep.turn, ep.start, ep.end)),
                cost,
                budget,
            )
        return rendered

    def summaries(
        self, summaries: Sequence[tuple[HierarchyNode, float]], rendered: set[str]
    ) -> None:
        """The summaries, best first, in what is left up to ``SUMMARY_SHARE`` of the
        budget; a scene whose episodes are all ``rendered`` is skipped."""
        summary_cap = min(self.budget, self.used + int(SUMMARY_SHARE * self.budget))
        for node, score in summaries:
            if self.used + MIN_SUMMARY_TOKENS > summary_cap:
                break  # no summary line is this short
            if node.level == "scene" and set(node.children) <= rendered:
                continue  # every episode of the scene is shown in full already
            room = summary_cap - self.used - self.section_cost(SUMMARY_SECTION)
            line = _fitting_summary(node, room, self.count)
            if line is None:
                continue
            cost = self.count(line) + 1 + self.section_cost(SUMMARY_SECTION)
            candidate = Candidate(
                SUMMARY_SECTION,
                line,
                node.level,
                node.id,
                score,
                members=node.children,
                turn=node.first_turn,
            )
            if self.take(candidate, cost, summary_cap):
                self.sections_seen.add(SUMMARY_SECTION)


def _bounded_by_lines(counter: TokenCounter, lines: Sequence[str]) -> bool:
    """Whether the line-by-line costs bound the whole text's count from above, so it need
    not be counted again to keep the budget: true of :class:`ApproximateCounter` for lines
    without surrounding space (its pieces never cross a line break, each break costs a
    token, and the sum of rounded-up counts is never less than the whole's)."""
    return isinstance(counter, ApproximateCounter) and all(line == line.strip() for line in lines)


def _layout(
    chosen: list[Candidate],
    by_id: Mapping[str, Episode],
    entities: Mapping[str, Entity],
    counter: TokenCounter,
    budget: int,
) -> Assembly:
    order: list[str] = []
    for cand in chosen:
        if cand.section not in order:
            order.append(cand.section)
    if SUMMARY_SECTION in order and "Episodes" in order:  # the summaries lead into episodes
        order.remove(SUMMARY_SECTION)
        order.insert(order.index("Episodes"), SUMMARY_SECTION)
    lines: list[str] = []
    manifest: list[ManifestEntry] = []
    for section in order:
        if lines:
            lines.append("")
        lines.append(f"## {section}")
        members = [c for c in chosen if c.section == section]
        if section == "Episodes":
            members.sort(key=lambda c: (by_id[c.id].turn, by_id[c.id].seq))
            last_turn = None
            for cand in members:
                ep = by_id[cand.id]
                if ep.turn != last_turn:
                    manifest.append(ManifestEntry(len(lines), section, "turn", f"t{ep.turn}"))
                    lines.append(_heading(ep, entities))
                    last_turn = ep.turn
                manifest.append(ManifestEntry(len(lines), section, "episode", ep.id, cand.span))
                lines.append(cand.text)
            continue
        if section == SUMMARY_SECTION:
            members.sort(key=lambda c: (c.turn, c.kind != "scene", c.id))
        for cand in members:
            if cand.kind not in ("preface", "trailer"):
                manifest.append(
                    ManifestEntry(len(lines), section, cand.kind, cand.id, cand.span, cand.members)
                )
            lines.append(cand.text)
    text = "\n".join(lines)
    if _bounded_by_lines(counter, lines):
        return Assembly(text, counter, manifest)
    tokens = counter.count(text)
    while tokens > budget and manifest:
        # the line-by-line estimate was short (a counter that is not additive): drop the
        # last content line and its now-empty heading, and count again
        last = manifest.pop()
        del lines[last.line :]
        while lines and (lines[-1] == "" or lines[-1].startswith("## ")):
            lines.pop()
        if manifest and manifest[-1].kind == "turn" and manifest[-1].line >= len(lines) - 1:
            lines.pop()
            manifest.pop()
        text = "\n".join(lines)
        tokens = counter.count(text)
    return Assembly(text, counter, manifest, tokens)
