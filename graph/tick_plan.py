"""A tick's plan: which places play a scene, who is there, who acts and with what goals.

:func:`plan_tick` prepares a tick from the author's view at the branch's head (see
:mod:`fabula.graph.ticks`, which plays the plan): each place where characters are is a
scene whose cast is everyone there, whose focal characters are those with a step to take
(at most :data:`~fabula.agents.contracts.MAX_FOCAL`; those with news to tell first, the
others from a place in the cast that turns with the ticks), and whose turn is the next free
one. A tick adds to a character's own goals a piece of news it holds that someone at its
place lacks, first, and its routine's hour, last (:func:`tick_goals`). Those of a scene's
cast not asked to act whose routine's hour is elsewhere are its ``movers``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabula.agents.contracts import MAX_FOCAL
from fabula.agents.shared.goals import Kinds, Situation, read_goal, step
from fabula.agents.views import AuthorView
from fabula.errors import InvalidInput, StoryAtRest
from fabula.memory.records import secret_attribute, slug
from fabula.memory.ticks import SceneRecord, TickRecord


@dataclass(frozen=True)
class ScenePlan:
    """One place's scene of a tick: who is there (``cast``), who acts (``focal``, empty
    for a quiet scene) and the turn its text will be (None when quiet)."""

    place: str
    cast: tuple[str, ...]
    focal: tuple[str, ...]
    turn: int | None
    goals: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Each focal character's goals this tick (:func:`tick_goals`)."""
    movers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Those of the cast outside ``focal`` whose routine's hour is elsewhere, each with
    the place it goes to: the scene ends with each going there (:func:`closing`), so that
    nobody misses an errand for not being among the scene's speakers."""


@dataclass(frozen=True)
class TickPlan:
    """A tick prepared from the view at the branch's head: its number and its scenes."""

    tick: int
    head: int
    scenes: tuple[ScenePlan, ...]

    @property
    def played(self) -> tuple[ScenePlan, ...]:
        """The scenes that are played (not quiet), in turn order."""
        return tuple(s for s in self.scenes if s.turn is not None)

    def record(self) -> TickRecord:
        """The tick's record as committed (its digest is filled in by the commit)."""
        played = self.played
        return TickRecord(
            tick=self.tick,
            first=played[0].turn if played and played[0].turn is not None else self.head + 1,
            last=played[-1].turn if played and played[-1].turn is not None else self.head,
            scenes=tuple(SceneRecord(place=s.place, cast=s.cast, turn=s.turn) for s in self.scenes),
        )


def acting(
    view: AuthorView,
    character: str,
    kinds: Kinds | None = None,
    goals: Sequence[str] | None = None,
) -> bool:
    """Whether ``character`` has a step to take toward one of its goals (judged from its
    beliefs, as the offline planner judges it). ``kinds``: the view's entities by kind,
    made once for a tick's characters (:meth:`Kinds.of`); ``goals``: its goals this tick
    (:func:`tick_goals`; by default the pack's)."""
    beliefs = view.beliefs.get(character)
    if beliefs is None:
        return False
    sit = Situation(character, beliefs, view.entities)
    texts = view.goals_of(character) if goals is None else goals
    return any(step(sit, read_goal(view.entities, g, kinds)).status == "act" for g in texts)


def news_facts(view: AuthorView) -> list[tuple[str, str]]:
    """The story's pieces of news, as (owner, attribute) slots: each character's ``news``
    in the pack, held after its secrets (:mod:`fabula.worlds.pack`)."""
    out: list[tuple[str, str]] = []
    for spec in view.pack.characters if view.pack is not None else ():
        for j in range(len(spec.news)):
            out.append((slug(spec.name), secret_attribute(len(spec.secrets) + j)))
    return out


def _holds(view: AuthorView, character: str, owner: str, attribute: str) -> bool:
    beliefs = view.beliefs.get(character)
    held = beliefs.get(owner, attribute) if beliefs is not None else None
    return held is not None and held.polarity


def _whose(view: AuthorView, character: str, owner: str) -> str:
    """``owner``'s secret as ``character`` names it in a goal: "my", or "Mara's"."""
    return "my" if owner == character else f"{view.name(owner)}'s"


def _spreads(goals: Sequence[str]) -> bool:
    """Whether a character's goals this tick open with news to tell."""
    return bool(goals) and goals[0].startswith("spread ")


def tick_extras(
    view: AuthorView,
    character: str,
    tick: int,
    cast: Sequence[str],
    news: Sequence[tuple[str, str]] = (),
) -> tuple[list[str], list[str]]:
    """The goals a tick adds to ``character``'s own, as (before, after): before, a piece of
    ``news`` (:func:`news_facts`) it holds that someone of its ``cast`` (everyone at its
    place) does not (``spread Mara's secret``: told on, once per listener); after, its
    routine's hour (``keep to the bakery``: tick ``t`` is hour ``(t - 1) mod`` the
    routine's length)."""
    before = [
        f"spread {_whose(view, character, owner)} {attribute}"
        for owner, attribute in news
        if _holds(view, character, owner, attribute)
        and any(c not in (character, owner) and not _holds(view, c, owner, attribute) for c in cast)
    ]
    hour = routine_place(view, character, tick)
    after = [f"keep to the {view.name(hour)}"] if hour is not None else []
    return before, after


def routine_place(view: AuthorView, character: str, tick: int) -> str | None:
    """The place ``character``'s routine has it in during tick ``tick`` (hour
    ``(tick - 1) mod`` the routine's length), or None for a character with no routine."""
    spec = view.character_spec(character)
    routine = spec.routine if spec is not None else ()
    return slug(routine[(tick - 1) % len(routine)]) if routine else None


def tick_goals(
    view: AuthorView,
    character: str,
    tick: int,
    cast: Sequence[str],
    news: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """``character``'s goals in tick ``tick``: news to tell first, its own (the pack's),
    its routine's hour last (:func:`tick_extras`)."""
    before, after = tick_extras(view, character, tick, cast, news)
    return [*before, *view.goals_of(character), *after]


def plan_tick(view: AuthorView, tick: int) -> TickPlan:
    """The scenes of tick ``tick`` from ``view`` (the branch at its head): one per place
    with characters, in the order of the places' ids. Raises :class:`StoryAtRest` when
    nobody anywhere has anything to do."""
    by_place: dict[str, list[str]] = {}
    for c in view.cast():  # an extra (a doer met in the text) takes no turn
        place = view.place_of(c)
        if place is not None:
            by_place.setdefault(place, []).append(c)
    scenes: list[ScenePlan] = []
    turn = view.turn + 1
    kinds = Kinds.of(view.entities)
    news = news_facts(view)
    for place in sorted(by_place):
        cast = tuple(by_place[place])
        goals = {c: tuple(tick_goals(view, c, tick, cast, news)) for c in cast}
        # the first MAX_FOCAL with a step to take, those with news to tell first, the others
        # from a place in the cast that turns with the ticks (nobody waits every tick): the
        # rest are not asked (a town's cost)
        turned = cast[tick % len(cast) :] + cast[: tick % len(cast)]
        ordered = sorted(turned, key=lambda c: not _spreads(goals[c]))
        found = (c for c in ordered if acting(view, c, kinds, goals[c]))
        focal = tuple(itertools.islice(found, MAX_FOCAL))
        # everyone else whose hour is elsewhere goes there as the scene ends
        hours = {c: routine_place(view, c, tick) for c in turned if c not in focal}
        movers = {c: h for c, h in hours.items() if h is not None and h != place}
        if not focal:  # nobody else acts here: the first of them act, the rest go
            focal = tuple(itertools.islice(movers, MAX_FOCAL))
            movers = {c: h for c, h in movers.items() if c not in focal}
        mine = {c: goals[c] for c in focal}
        scenes.append(ScenePlan(place, cast, focal, turn if focal else None, mine, movers))
        turn += 1 if focal else 0
    plan = TickPlan(tick=tick, head=view.turn, scenes=tuple(scenes))
    if not plan.played:
        raise StoryAtRest(
            f"tick {tick}: nobody in any place has anything to do",
            story=view.story,
            branch=view.branch,
        )
    return plan


def opening(view: AuthorView, place: str | None, cast: Sequence[str]) -> str:
    """The sentence a tick's scene opens with, so that its cast sees who is there: "Faye
    and Hal are in the bakery." naming everyone of ``cast`` whom someone of it does not
    believe to be at ``place`` (someone arrived since it last looked; those it finds
    there); empty when all know where all are. A move in another place's scene is not
    perceived here: this is how the people of a place come to see each other."""
    if place is None:
        return ""
    unseen = [
        c
        for c in cast
        if any(
            o != c and (b := view.beliefs.get(o)) is not None and b.where(c) != place for o in cast
        )
    ]
    if not unseen:
        return ""
    names = [view.name(c) for c in unseen]
    who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    verb = "is" if len(names) == 1 else "are"
    return f"{who} {verb} in the {view.name(place)}."


def with_parts(plan: TickPlan, parts: Mapping[str, str], view: AuthorView) -> TickPlan:
    """``plan`` with the played characters whose ``parts`` are given acting first in their
    scenes; a quiet scene with one is played, given a turn after the others (the tick's
    turns are numbered again when it is settled). A part for a character in no scene is
    :class:`~fabula.errors.InvalidInput`, naming where it is."""
    if not parts:
        return plan
    placed = {c for s in plan.scenes for c in s.cast}
    for character in parts:
        if character not in placed:
            raise InvalidInput(
                f"{view.name(character)} is in no place this tick, so has no scene to play "
                "a part in",
                character=character,
            )
    extra = plan.head + 1 + len(plan.played)
    scenes = []
    for s in plan.scenes:
        own = [c for c in s.cast if c in parts]
        if not own:
            scenes.append(s)
            continue
        focal = (*own, *(c for c in s.focal if c not in own))[: max(MAX_FOCAL, len(own))]
        turn = s.turn
        if turn is None:
            turn, extra = extra, extra + 1
        movers = {c: p for c, p in s.movers.items() if c not in own}
        goals = {c: s.goals.get(c, ()) for c in focal}
        scenes.append(dataclasses.replace(s, focal=focal, turn=turn, movers=movers, goals=goals))
    return dataclasses.replace(plan, scenes=tuple(scenes))
