"""OpenToM: who believes what after ordinary prose, read by the memory-builder.

Input: OpenToM's JSON (one object, story key → metadata and ``questions``; see the data
README). This module is the only code that knows OpenToM: its file, its fields and its
question templates. Of a story it reads

* ``narrative``: the only text a reader reads;
* ``plot_info``: the names of the two characters (``mover``, ``observer``), the entity
  (``eoi``) and its two containers (``original_place``, ``move_to_place``) — names only:
  which container the entity starts in is never told to the memory;
* ``plot``: only the place names of its ``A entered the P.`` lines, nothing else;
* ``questions``: ``question``, ``file`` (the group) and ``answer`` (the label, for scoring).

Each narrative becomes a story in a private Redis whose turn 0 declares those names as
entities (characters, places, the entity as an object, the containers as containers) with
no fact; the narrative is then committed through the real memory-builder as one turn (or
its paragraphs as turns) with the default world rules, and every question is answered
from the memory at the end: W for the narrator, B[c] for first order, B[c>d] for second
order. What the memory does not hold is unanswered (``None``), counted and scored wrong,
never guessed:

* a character that perceived nothing about the entity knows of no change to it: to it,
  the entity is where the story first had it (W's first location); so, to c, is d's
  belief where c knows of no perception of d's;
* fine location: the believed location's name (a container's as OpenToM spells it; a
  character's or a place's name when it is believed to be there, scored wrong);
* coarse location: whether the latest belief is the earliest one (the holder's earliest,
  else W's first location);
* fullness of a container: the entity's presence in it, earliest against latest belief;
* accessibility: ``equally accessible`` where the holder believes it did not move; where it
  moved into (out of) a container the pack names as a character's own (``Ava's closet``),
  less (more) accessible to others and more (less) to that character; otherwise unanswered;
* attitude: ``neutral`` where the observer believes the entity never moved (it perceived
  no action); where it did, from the observer's own feeling about the entity (likes,
  dislikes) and the accessibility change for the observer; otherwise unanswered.

Scores: macro-F1 (over the group's label set) and accuracy per question group (a fine
location scored as the initial or the new container), by perspective (mover, observer,
narrator), the answered share, the share answered by assumption (``assumed``: the holder
perceived nothing about the entity, so to it nothing changed; ``right_assumed``: those
right) and the reader's time per 1,000 words, for the chosen reader
and, in the same run, the majority answer, "nothing read" (as if the entity never moved),
the controlled-English reader, the prose reader and, with a model, the model memory-builder.
Each system's figures are also given per part (``"parts"``: ``working`` and ``checking``,
split by the SHA-256 of the story's key, :func:`~fabula.bench.common.part_of`): rules are
tuned on the working part only, and both are reported.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import redis.asyncio as aredis

from fabula.agents.memory_builder.offline import OfflineMemoryBuilder, Reader, read_controlled
from fabula.agents.reading.phases import read_story
from fabula.agents.reading.prose import read_prose
from fabula.agents.roles import MemoryBuilderRole
from fabula.bench import common
from fabula.bench.common import bench_redis, commit_path, create_story, run_id, write_answers
from fabula.bench.data import malformed, read_json
from fabula.bench.report import print_table, write_json
from fabula.errors import ModelError, NotFound
from fabula.graph.commit import commit_text
from fabula.memory.actions import StoryAction
from fabula.memory.answer import UNKNOWN, Question, answer
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.records import CONTAINER, Entity, slug
from fabula.memory.rules import WorldRules
from fabula.memory.store import StoryStore

KIND = "OpenToM"
OPENTOM_RULES = WorldRules()
GROUPS = (
    "location_cg_fo",
    "location_cg_so",
    "location_fg_fo_new",
    "location_fg_so_new",
    "multihop_fo",
    "multihop_so",
    "attitude",
)
CONCURRENCY = 16
ReaderName = Literal["prose", "controlled", "phased"]
TurnMode = Literal["one", "paragraphs"]
Form = Literal["coarse", "fine", "initial", "fullness", "accessibility", "attitude"]
Perspective = Literal["mover", "observer", "narrator"]

LABELS: dict[str, tuple[str, ...]] = {
    "coarse": ("Yes", "No"),
    "fine": ("initial", "new"),
    "fullness": ("more full", "less full", "equally full"),
    "accessibility": ("more accessible", "less accessible", "equally accessible"),
    "attitude": ("positive", "negative", "neutral"),
}
# the answer each form gets "as if the entity never moved" (the nothing-read baseline)
UNMOVED = {
    "coarse": "Yes",
    "fine": "initial",
    "fullness": "equally full",
    "accessibility": "equally accessible",
    "attitude": "neutral",
}
POSITIVE = frozenset({"likes", "loves", "adores", "enjoys"})
NEGATIVE = frozenset({"dislikes", "hates", "despises", "detests", "loathes"})

# --- the question templates, per group (``who`` and ``other`` are character names) ---------
_PERSP = r"^From (?P<who>.+?)'s perspective, "
_END = r" by the end of the story\?$"
_TEMPLATES: dict[str, list[tuple[Form, re.Pattern[str]]]] = {
    "location_cg_fo": [
        ("coarse", re.compile(_PERSP + r"is the (?P<eoi>.+) in its initial location" + _END)),
    ],
    "location_cg_so": [
        (
            "coarse",
            re.compile(
                _PERSP + r"does (?P<other>.+?) think that the (?P<eoi>.+) is in its initial "
                r"location" + _END
            ),
        ),
    ],
    "location_fg_fo_new": [
        (
            "initial",
            re.compile(
                r"^From narrator's perspective, where is (?P<eoi>.+) located in "
                r"the beginning of the story\?$"
            ),
        ),
        ("fine", re.compile(r"^From narrator's perspective, where is (?P<eoi>.+) located" + _END)),
        ("fine", re.compile(_PERSP + r"where is the (?P<eoi>.+) located precisely" + _END)),
    ],
    "location_fg_so_new": [
        (
            "fine",
            re.compile(
                _PERSP + r"where precisely does (?P<other>.+?) think that the (?P<eoi>.+) is "
                r"located" + _END
            ),
        ),
    ],
    "multihop_fo": [
        ("fullness", re.compile(_PERSP + r"how does (?P<box>.+)'s fullness change" + _END)),
        (
            "accessibility",
            re.compile(_PERSP + r"how would (?P<eoi>.+)'s accessibility change" + _END),
        ),
    ],
    "multihop_so": [
        (
            "fullness",
            re.compile(
                _PERSP + r"how does (?P<other>.+?) think (?P<box>.+)'s fullness would change" + _END
            ),
        ),
        (
            "accessibility",
            re.compile(
                _PERSP + r"how would (?P<eoi>.+)'s accessibility change for (?P<other>.+?)" + _END
            ),
        ),
    ],
    "attitude": [
        (
            "attitude",
            re.compile(
                r"^As (?P<who>.+?), what is your attitude towards (?P<other>.+?)'s action of "
                r"moving (?P<eoi>.+) from (?P<src>.+) to (?P<dst>.+)\?$"
            ),
        ),
    ],
}
_ENTERED = re.compile(r"\bentered the ([^.]+?)\.")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_OWNER = re.compile(r"^(?P<owner>[A-Z][\w-]*)'s\s")
_PARAGRAPHS = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class OtQuestion:
    index: int  # in the file, across stories
    key: str  # the story's key
    question: str
    gold: str
    group: str
    form: Form
    perspective: Perspective
    chain: tuple[str, ...]  # character names: () the narrator, (c,) first, (c, d) second order
    box: str | None = None  # the container a fullness question is about, as written

    @property
    def kind(self) -> str:
        """The label set the question draws on (multihop groups mix two)."""
        return "fine" if self.form == "initial" else self.form


@dataclass(frozen=True)
class OtStory:
    key: str
    narrative: str
    mover: str
    observer: str
    eoi: str
    original: str  # OpenToM's names, as written (scoring maps answers onto them)
    moved_to: str
    places: tuple[str, ...]
    questions: tuple[OtQuestion, ...]

    @property
    def containers(self) -> tuple[str, str]:
        return (self.original, self.moved_to)

    def label(self, question: OtQuestion, value: str | None) -> str | None:
        """An answer (or gold) as its label: a fine location as ``initial`` or ``new``."""
        if value is None or question.kind != "fine":
            return value
        if value == self.original:
            return "initial"
        if value == self.moved_to:
            return "new"
        return value


def display(name: str) -> str:
    """A pack name from one of OpenToM's: ``_`` as a space, a leading article dropped
    (``the trash can`` → ``trash can``, ``living_room`` → ``living room``)."""
    return _ARTICLE.sub("", " ".join(name.replace("_", " ").split()))


def _text(story: Mapping[str, Any], key: str, path: Path, name: str) -> str:
    value = story.get(name) if isinstance(story, Mapping) else None
    if not isinstance(value, str) or not value.strip():
        raise malformed(path, KIND, f"story {key}", f"field {name!r} is not a non-empty string")
    return value


def _parse_question(
    path: Path, key: str, k: int, raw: Any, index: int, names: Mapping[str, str]
) -> OtQuestion:
    where = f"story {key}"
    field_name = f"questions[{k}]"
    if not isinstance(raw, Mapping):
        raise malformed(path, KIND, where, f"field {field_name!r} is not an object")
    for name in ("question", "answer", "file"):
        if not isinstance(raw.get(name), str):
            raise malformed(path, KIND, where, f"field '{field_name}.{name}' is not a string")
    group, text = raw["file"], " ".join(raw["question"].split())
    if group not in _TEMPLATES:
        raise malformed(path, KIND, where, f"field '{field_name}.file': unknown {group!r}")
    matched = [(form, m) for form, pattern in _TEMPLATES[group] if (m := pattern.match(text))]
    if not matched:
        raise malformed(
            path, KIND, where, f"field '{field_name}.question' is not a {group} question"
        )
    form, m = matched[0]
    found = m.groupdict()
    roles: dict[str, Perspective] = {names["mover"]: "mover", names["observer"]: "observer"}
    chain: tuple[str, ...] = ()
    if "who" in found:
        chain = (found["who"],)
        if found.get("other") and form != "attitude":
            chain += (found["other"],)
    for name in chain:
        if name not in roles:
            raise malformed(
                path, KIND, where, f"field '{field_name}.question' names {name!r}, not a character"
            )
    perspective: Perspective = roles[chain[0]] if chain else "narrator"
    return OtQuestion(
        index=index,
        key=key,
        question=raw["question"],
        gold=raw["answer"],
        group=group,
        form=form,
        perspective=perspective,
        chain=chain,
        box=found.get("box"),
    )


def load_opentom(path: str | Path, limit: int | None = None) -> list[OtStory]:
    """The stories of an OpenToM file (the first ``limit``). Raises
    :class:`~fabula.errors.InvalidInput` naming the story and field of a malformed one."""
    path = Path(path)
    data = read_json(path, KIND)
    if not isinstance(data, dict) or not data:
        raise malformed(path, KIND, "", "not an object of stories")
    stories: list[OtStory] = []
    index = 0
    for key, story in data.items():
        if limit is not None and len(stories) >= limit:
            break
        where = f"story {key}"
        if not isinstance(story, Mapping):
            raise malformed(path, KIND, where, "not an object")
        narrative = _text(story, key, path, "narrative")
        plot = story.get("plot", "")  # optional: read for its entered places only
        if not isinstance(plot, str):
            raise malformed(path, KIND, where, "field 'plot' is not a string")
        info = story.get("plot_info")
        if not isinstance(info, Mapping):
            raise malformed(path, KIND, where, "field 'plot_info' is not an object")
        names = {}
        for name in ("mover", "observer", "eoi", "original_place", "move_to_place"):
            value = info.get(name)
            if not isinstance(value, str) or not slug(display(value)):
                raise malformed(path, KIND, where, f"field 'plot_info.{name}' is not a name")
            names[name] = value
        if len({slug(display(v)) for v in names.values()}) < len(names):
            raise malformed(path, KIND, where, "field 'plot_info': two names are the same")
        questions = story.get("questions")
        if not isinstance(questions, list):
            raise malformed(path, KIND, where, "field 'questions' is not a list")
        parsed = []
        for k, raw in enumerate(questions):
            parsed.append(_parse_question(path, key, k, raw, index, names))
            index += 1
        places = tuple(dict.fromkeys(display(p) for p in _ENTERED.findall(plot)))
        stories.append(
            OtStory(
                key=str(key),
                narrative=narrative,
                mover=names["mover"],
                observer=names["observer"],
                eoi=names["eoi"],
                original=names["original_place"],
                moved_to=names["move_to_place"],
                places=places,
                questions=tuple(parsed),
            )
        )
    return stories


def setup_delta(story: OtStory) -> TurnDelta:
    """Turn 0: the pack's names as entities, with no fact (a place named like a container
    or a character is left out: the other is what the story names)."""
    builder = DeltaBuilder(0, "")
    taken: set[str] = set()

    def declare(kind: Literal["character", "place", "object"], name: str, container: bool) -> None:
        sid = slug(name)
        if sid in taken:
            return
        taken.add(sid)
        builder.entity(kind, name, attributes={"role": CONTAINER} if container else None)

    for name in (story.mover, story.observer):
        declare("character", display(name), False)
    declare("object", display(story.eoi), False)
    for name in story.containers:
        declare("object", display(name), True)
    for name in story.places:
        declare("place", name, False)
    return builder.build()


def turns(narrative: str, mode: TurnMode) -> list[str]:
    """The narrative as one turn, or its paragraphs as turns."""
    if mode == "one":
        return [narrative]
    return [p.strip() for p in _PARAGRAPHS.split(narrative) if p.strip()]


# --- reading ------------------------------------------------------------------------------


@dataclass
class Clock:
    """What a reader took: seconds reading, words read, stories it failed on."""

    seconds: float = 0.0
    words: int = 0
    failed: list[str] = field(default_factory=list)

    def per_1000_words_ms(self) -> float:
        return round(self.seconds * 1000 * 1000 / self.words, 3) if self.words else 0.0


def timed(reader: Reader, clock: Clock) -> Reader:
    """``reader``, its time and words counted on ``clock``."""

    def read(text: str, entities: Mapping[str, Entity]) -> list[StoryAction]:
        started = time.perf_counter()
        try:
            return reader(text, entities)
        finally:
            clock.seconds += time.perf_counter() - started
            clock.words += len(text.split())

    return read


@dataclass(frozen=True)
class System:
    """A memory-builder the run measures: ``make`` gives its builder, ``timed_build`` says
    whether the clock is kept by the bench around the whole build (a model's call)."""

    name: str
    make: Callable[[Clock], MemoryBuilderRole]
    timed_build: bool = False


def offline_system(name: str, reader: Reader) -> System:
    return System(name, lambda clock: OfflineMemoryBuilder(timed(reader, clock)))


# --- answering from memory ----------------------------------------------------------------


@dataclass
class Minds:
    """Where the entity is believed to be, first and last, by each holder chain (ids)."""

    story: OtStory
    ids: Mapping[str, str]  # OpenToM name → entity id
    names: Mapping[str, str]  # entity id → the name an answer gives
    first: dict[tuple[str, ...], str | None] = field(default_factory=dict)
    last: dict[tuple[str, ...], str | None] = field(default_factory=dict)
    feeling: str | None = None  # the observer's own feeling about the entity, as it holds it
    # second-order chains that hold nothing, read as the initial location (read_minds)
    assumed: set[tuple[str, ...]] = field(default_factory=set)


async def _first(store: StoryStore, chain: tuple[str, ...], subject: str) -> str | None:
    value = await answer(store, Question(kind="where_initially", subject=subject, chain=chain))
    return None if value == UNKNOWN else slug(value)


async def read_minds(store: StoryStore, story: OtStory) -> Minds:
    ids = {n: slug(display(n)) for n in (story.mover, story.observer, story.eoi, *story.containers)}
    known = await store.entities()
    names = {sid: e.name for sid, e in known.items()}
    names.update({sid: name for name, sid in ids.items()})  # OpenToM's spelling
    minds = Minds(story, ids, names)
    eoi = ids[story.eoi]
    m, o = ids[story.mover], ids[story.observer]
    world_first = await _first(store, (), eoi)
    minds.first[()] = world_first
    minds.last[()] = (await project_world(store)).where(eoi)
    for chain in ((m,), (o,), (m, o), (o, m)):
        try:
            view = await project_beliefs(store, chain)
        except NotFound:
            minds.last[chain] = None
            continue
        minds.last[chain] = view.where(eoi)
        minds.first[chain] = await _first(store, chain, eoi) or world_first
        if len(chain) == 1 and minds.last[chain] is None and world_first is not None:
            # c perceived nothing about the entity, so no change to it: to c it is where
            # the story first had it (as a second-order chain holding nothing is, below)
            minds.last[chain] = minds.first[chain] = world_first
            minds.assumed.add(chain)
        if len(chain) > 1 and minds.last[chain] is None:
            # c knows of no perception of d's about the entity: to c, d holds what was
            # so before any change c knows d saw, the initial location as c knows it
            minds.last[chain] = minds.first[chain] = minds.first.get(chain[:1]) or world_first
            minds.assumed.add(chain)
        if chain == (o,):
            minds.feeling = view.value(o, f"feeling about {eoi}")
    return minds


def _owner(name: str, characters: Mapping[str, str]) -> str | None:
    """The character id a container's name makes it the own of (``Ava's closet``)."""
    m = _OWNER.match(name)
    return characters.get(m["owner"]) if m else None


def _access(minds: Minds, chain: tuple[str, ...], target: str | None) -> str | None:
    """The entity's accessibility change as ``chain`` believes it (for ``target``, a
    character id, or for others when None)."""
    first, last = minds.first.get(chain), minds.last.get(chain)
    if last is None or first is None:
        return None
    if first == last:
        return "equally accessible"
    story = minds.story
    characters = {story.mover: minds.ids[story.mover], story.observer: minds.ids[story.observer]}
    owner = {minds.ids[c]: _owner(c, characters) for c in story.containers}
    into, out_of = owner.get(last), owner.get(first)
    if into is not None and into != out_of:
        return "more accessible" if into == target else "less accessible"
    if out_of is not None and into is None:
        return "less accessible" if out_of == target else "more accessible"
    return None


def answer_question(minds: Minds, q: OtQuestion) -> str | None:
    """``q``'s answer from the memory, or None where the memory does not hold it."""
    ids = minds.ids
    chain = tuple(ids[c] for c in q.chain)
    first, last = minds.first.get(chain), minds.last.get(chain)
    if q.form == "initial":
        return minds.names.get(first, first) if first is not None else None
    if q.form == "fine":
        return minds.names.get(last, last) if last is not None else None
    if q.form == "coarse":
        # "its initial location" is the story's (the narrator's first), a fixed place: the
        # holder's latest belief is there or not, whether or not it saw it there first
        initial = minds.first.get(()) or first
        if last is None or initial is None:
            return None
        return "Yes" if last == initial else "No"
    if q.form == "fullness":
        box = ids.get(q.box or "")
        if box is None or last is None or first is None:
            return None  # a container the pack does not name
        before, after = first == box, last == box
        if after and not before:
            return "more full"
        if before and not after:
            return "less full"
        return "equally full"
    if q.form == "accessibility":
        return _access(minds, chain, chain[-1] if len(chain) > 1 else None)
    # attitude: the observer's, toward the mover's moving the entity
    change = _access(minds, chain, chain[0])
    if change is None:
        return None
    if change == "equally accessible":
        return "neutral"  # it perceived no move
    if minds.feeling in POSITIVE:
        return "positive" if change == "more accessible" else "negative"
    if minds.feeling in NEGATIVE:
        return "negative" if change == "more accessible" else "positive"
    return None


async def run_story(
    client: aredis.Redis,
    story_id: str,
    story: OtStory,
    builder: MemoryBuilderRole,
    mode: TurnMode,
    clock: Clock | None = None,
) -> list[Answered]:
    """``story`` read by ``builder`` and its questions answered from memory, each with
    whether it was assumed (its chain held nothing about the entity) (``clock``: the
    commits are timed here)."""
    store = await create_story(
        client, story_id, OPENTOM_RULES, world="opentom", title=story.key, setup=setup_delta(story)
    )
    try:
        path = commit_path(builder)
        for turn, text in enumerate(turns(story.narrative, mode), start=1):
            begun = time.perf_counter()
            await commit_text(path, store, turn, text)
            if clock is not None:
                clock.seconds += time.perf_counter() - begun
                clock.words += len(text.split())
        minds = await read_minds(store, story)
        out: list[Answered] = []
        for q in story.questions:
            got = answer_question(minds, q)
            chain = tuple(minds.ids[c] for c in q.chain)
            out.append((got, got is not None and chain in minds.assumed))
        return out
    finally:
        await store.delete()


async def run_system(
    client: aredis.Redis, system: System, stories: Sequence[OtStory], mode: TurnMode
) -> tuple[list[Answered], Clock, float]:
    """Every story read by ``system``, concurrently: the answers in question order."""
    clock = Clock()
    builder = system.make(clock)
    tag = run_id()
    gate = asyncio.Semaphore(CONCURRENCY)
    started = time.perf_counter()

    async def one(k: int, story: OtStory) -> list[Answered]:
        async with gate:
            story_id = f"opentom-{system.name}-{tag}-{k}"
            try:
                return await run_story(
                    client, story_id, story, builder, mode, clock if system.timed_build else None
                )
            except ModelError:
                clock.failed.append(story.key)
                return [(None, False)] * len(story.questions)

    done = await asyncio.gather(*(one(k, s) for k, s in enumerate(stories)))
    return [a for batch in done for a in batch], clock, round(time.perf_counter() - started, 3)


# --- scoring ------------------------------------------------------------------------------


def macro_f1(pairs: Iterable[tuple[str | None, str | None]], labels: Sequence[str]) -> float:
    """The mean over ``labels`` of each label's F1 on ``(gold, predicted)`` pairs; an answer
    outside the labels (None: unanswered) is a miss of its gold label, a false positive of
    none. A label with no gold and no prediction has F1 0 (it cannot be averaged away)."""
    items = list(pairs)
    if not labels:
        return 0.0
    total = 0.0
    for label in labels:
        tp = sum(1 for g, p in items if g == label and p == label)
        fp = sum(1 for g, p in items if g != label and p == label)
        fn = sum(1 for g, p in items if g == label and p != label)
        total += 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return round(total / len(labels), 4)


# an answer, and whether it was assumed rather than read from a mind
Answered = tuple[str | None, bool]


@dataclass(frozen=True)
class Row:
    question: OtQuestion
    gold: str | None  # labels (a fine location as initial / new)
    answer: str | None
    assumed: bool = False  # answered by assumption: the chain held nothing about the entity


def _labels(rows: Sequence[Row]) -> tuple[str, ...]:
    kinds = list(dict.fromkeys(r.question.kind for r in rows))
    return tuple(label for kind in kinds for label in LABELS[kind])


def _cell(rows: Sequence[Row], f1: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "n": len(rows),
        "accuracy": round(sum(r.answer == r.gold for r in rows) / len(rows), 4) if rows else 0.0,
        "answered": round(sum(r.answer is not None for r in rows) / len(rows), 4) if rows else 0.0,
        "assumed": round(sum(r.assumed for r in rows) / len(rows), 4) if rows else 0.0,
        "right_assumed": (
            round(sum(r.assumed and r.answer == r.gold for r in rows) / len(rows), 4)
            if rows
            else 0.0
        ),
    }
    if f1:
        out["macro_f1"] = macro_f1(((r.gold, r.answer) for r in rows), _labels(rows))
    return out


def figures(rows: Sequence[Row]) -> dict[str, Any]:
    """A system's figures: per group (and each multihop group's two kinds), by perspective,
    overall."""
    by_group: dict[str, list[Row]] = defaultdict(list)
    by_view: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_group[r.question.group].append(r)
        if r.question.group.startswith("multihop"):
            by_group[f"{r.question.group}.{r.question.kind}"].append(r)
        by_view[r.question.perspective].append(r)
    order = [g for g in GROUPS if g in by_group]
    order += sorted(set(by_group) - set(order))
    return {
        "groups": {g: _cell(by_group[g]) for g in order},
        "by_perspective": {
            p: _cell(by_view[p], f1=False)
            for p in ("mover", "observer", "narrator")
            if p in by_view
        },
        "all": _cell(rows, f1=False),
    }


def _majority(questions: Sequence[tuple[OtStory, OtQuestion]]) -> list[str | None]:
    """Each question's group's most frequent gold label (per kind of answer)."""
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for story, q in questions:
        counts[(q.group, q.kind)][story.label(q, q.gold) or ""] += 1
    top = {k: c.most_common(1)[0][0] for k, c in counts.items()}
    return [top[(q.group, q.kind)] for _, q in questions]


# --- the run ------------------------------------------------------------------------------


# long (over 60 lines): the keyword-only options of the bench are most of its lines
async def run_opentom(
    path: str | Path,
    *,
    redis_url: str | None,
    json_out: str | Path | None = None,
    answers_out: str | Path | None = None,
    reader: ReaderName = "phased",
    limit: int | None = None,
    mode: TurnMode = "one",
    model: System | None = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """Run OpenToM on ``path``; print a table, write the JSON and the chosen reader's
    answers if asked; return the JSON."""
    stories = load_opentom(path, limit)
    questions = [(s, q) for s in stories for q in s.questions]
    systems = [
        offline_system("controlled", read_controlled),
        offline_system("prose", read_prose),
        offline_system("phased", read_story),
    ]
    if model is not None:
        systems.append(model)
    answers: dict[str, list[str | None]] = {}
    assumed: dict[str, list[bool]] = {}
    clocks: dict[str, Clock] = {}
    seconds: dict[str, float] = {}
    async with bench_redis(redis_url) as client:
        for system in systems:
            got, clocks[system.name], seconds[system.name] = await run_system(
                client, system, stories, mode
            )
            answers[system.name] = [a for a, _ in got]
            assumed[system.name] = [flag for _, flag in got]
    labelled = {
        name: [s.label(q, a) for (s, q), a in zip(questions, got, strict=True)]
        for name, got in answers.items()
    }
    labelled["majority"] = _majority(questions)
    labelled["nothing_read"] = [UNMOVED.get(q.kind) for _, q in questions]
    gold = [s.label(q, q.gold) for s, q in questions]
    result: dict[str, Any] = {
        "benchmark": "opentom",
        "reader": reader,
        "turns": mode,
        "stories": len(stories),
        "questions": len(questions),
        "systems": {},
    }
    for name in (reader, *(n for n in labelled if n != reader)):
        flags = assumed.get(name, [False] * len(questions))
        rows = [
            Row(q, g, a, f)
            for (_, q), g, a, f in zip(questions, gold, labelled[name], flags, strict=True)
        ]
        entry = figures(rows)
        entry["parts"] = {
            part: figures([r for r in rows if common.part_of(r.question.key) == part])
            for part in ("working", "checking")
        }
        if name in clocks:
            entry["reader_ms_per_1000_words"] = clocks[name].per_1000_words_ms()
            entry["words"] = clocks[name].words
            entry["seconds"] = seconds[name]
            entry["failed_stories"] = clocks[name].failed
        result["systems"][name] = entry
    if not quiet:
        show(result)
    write_json(json_out, result)
    write_answers(
        answers_out,
        (
            {"key": q.key, "question": q.question, "answer": a}
            for (_, q), a in zip(questions, answers[reader], strict=True)
        ),
    )
    return result


def _short(group: str) -> str:
    return group.removeprefix("location_").removesuffix("_new").replace("multihop", "mh")


def show(result: dict[str, Any]) -> None:
    """The figures as a table: a system a column, macro-F1/accuracy a cell."""
    systems = result["systems"]
    names = list(systems)
    first = systems[names[0]]

    def cell(figure: dict[str, Any]) -> str:
        return f"{figure['macro_f1']:.3f}/{figure['accuracy']:.3f}"

    rows: list[list[str]] = [
        [_short(g)] + [cell(systems[n]["groups"][g]) for n in names] for g in first["groups"]
    ]
    rows += [
        [f"{view} acc"] + [f"{systems[n]['by_perspective'][view]['accuracy']:.3f}" for n in names]
        for view in first["by_perspective"]
    ]
    rows.append(["all acc"] + [f"{systems[n]['all']['accuracy']:.3f}" for n in names])
    rows.append(["answered"] + [f"{systems[n]['all']['answered']:.3f}" for n in names])
    rows.append(["assumed"] + [f"{systems[n]['all']['assumed']:.3f}" for n in names])
    rows.append(
        ["ms/1k words"] + [str(systems[n].get("reader_ms_per_1000_words", "-")) for n in names]
    )
    title = (
        f"OpenToM: {result['questions']} questions, {result['stories']} stories; "
        f"macro-F1/accuracy (reader {result['reader']}, turns {result['turns']})"
    )
    print_table(title, ["group", *names], rows)
    parts = first["parts"]
    print_table(
        f"OpenToM, reader {result['reader']}: working / checking (by the story key's hash)",
        ["group", "working", "checking"],
        [
            [_short(g), cell(parts["working"]["groups"][g]), cell(parts["checking"]["groups"][g])]
            for g in first["groups"]
            if g in parts["working"]["groups"] and g in parts["checking"]["groups"]
        ],
    )


def model_system(client_factory: Callable[[], Any]) -> System:
    """The model memory-builder on the client ``client_factory`` gives (one per run)."""
    from fabula.agents.memory_builder.model import ModelMemoryBuilder

    return System("model", lambda clock: ModelMemoryBuilder(client_factory()), timed_build=True)
