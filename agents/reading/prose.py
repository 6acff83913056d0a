"""The reader of ordinary narrative English (issue 33): prose → typed story actions.

:func:`read_prose` is a :data:`~fabula.agents.memory_builder.offline.Reader`. Each sentence
goes first through the controlled grammar (:func:`.extract.parse_sentence`): a sentence it
reads is kept exactly as it reads it, so controlled English reads as it always has. Any
other sentence is read as prose, anchored on the story's entities:

- **Mentions.** A character by its full name or its first name; a thing (object, container,
  place) by its name's last word with the others nearby ("the donation bin", "the bin";
  "the center of the table" for ``table center``), singular or plural, with its owner where
  the name has one ("her own wardrobe" for ``Zoe's own wardrobe``); ``he``/``she``/``they``/
  ``it``/``them`` by the last fitting entity of the right kind. A character's pronoun is
  learnt from a sentence that names that character alone; where two characters fit a
  pronoun, the reading is marked ``unsure``.
- **Verbs** are classed by WordNet's hierarchy (:mod:`.verbs`), never listed here; the
  sentence's frame picks the class: a verb of motion with a place ("strolled into the
  garden", "made his way out of the garden"), of placing with an object and where it ends
  ("dropped the scarf into the bin", "moved them to the top shelf"), of taking, giving,
  perceiving, telling (a feeling is the phases': :mod:`.phases.feeling`). Each verb
  reads the words up to the next verb; its subject is the nearest character before it (a
  sentence-initial participle's is the main clause's).
- **Perception.** A perception verb whose complement is an event ("watched as she moved
  it", "witnessed his action", or nothing: "Ben watched, puzzled") marks the event it is
  about as seen by its subject: an event of its own sentence, else the latest one read,
  else the next one. Its absence ("did not notice", "was absent", "had already left",
  "unaware", "oblivious", "unbeknownst to", "behind his back", "without her noticing")
  marks it unseen; a doer "unaware that it had not gone unnoticed" did not know of its
  watchers (``unaware_of``), and one from whom another's not seeing was kept ("Unbeknownst
  to Ann, Bo was nowhere in sight", "Little did she know, Bo never saw it", "Ann was
  unaware that Bo had not seen it") believes they saw (``believed_seen_by``).
- **Where things are.** An object's first placement stated in prose ("a bottle of peas on
  the counter", "the peas were in the bottle", "in the bucket there was a skirt") is a
  statement, or what its sentence's perceivers saw.
- **Co-presence.** Where the text names no place, characters that act together (a
  sentence's group subject: "Ann and Ben", "both", "they") are in one scene until one of
  them leaves; an event whose doer the reader cannot place is seen by the rest of that
  company (``seen_by``). Where places are named, the tracker decides.

Whatever it does not read stays ``narration`` with its sentence's span. Deterministic, no
model, linear in the text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from fabula.agents.reading.extract import parse_sentence
from fabula.agents.reading.prose_parts.lexicon import _Lexicon
from fabula.agents.reading.prose_parts.sentence import _Sentence
from fabula.agents.reading.prose_parts.state import _mention, _State
from fabula.agents.reading.prose_parts.words import _WORD
from fabula.limits import Limits
from fabula.memory.actions import Clause, StoryAction
from fabula.memory.records import Entity, slug
from fabula.memory.text import split_clauses, split_sentences


def read_prose(
    text: str,
    entities: Mapping[str, Entity],
    limits: Limits | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> list[StoryAction]:
    """``text`` as story actions anchored on ``entities`` (a :data:`.builder.Reader`).

    ``limits`` (the defaults of :class:`~fabula.limits.Limits` if none) bound the reading:
    of a sentence longer than ``sentence_words`` words and marks, only its first words are
    read; once ``reading_seconds`` have passed on ``clock``, the sentences left are not
    read. What is not read stays ``narration`` whose ``unsure`` says why (a ``reading``
    finding for the approver): a long text costs time and records in proportion to its
    length, never more."""
    state, controlled_at = _read(text, entities, limits or Limits(), clock)
    return _taken_from(state.out, controlled_at, entities)


def read_with_unseen(
    text: str, entities: Mapping[str, Entity], limits: Limits | None = None
) -> tuple[list[StoryAction], list[tuple[int, int, tuple[str, ...]]]]:
    """:func:`read_prose`'s actions, and who did not perceive what happens in each clause
    of ``text`` as the reader reads its cues ("Unbeknownst to Ben", "while Ann slept",
    "Ann was asleep." before it): each such clause's span with the character ids. What
    another reader finds happening there (a change of state) is unseen by them too."""
    state, controlled_at = _read(text, entities, limits or Limits(), time.monotonic)
    return _taken_from(state.out, controlled_at, entities), state.unseen_at


def read_doers(
    text: str, entities: Mapping[str, Entity], limits: Limits | None = None
) -> list[tuple[int, tuple[str, ...]]]:
    """Who ``text`` says does something, as the prose reader reads it: for each verb with a
    subject (a name, or a pronoun resolved as the reader resolves it) and each controlled
    sentence, its offset in ``text`` and the characters doing it, in order. What a
    character only believes another did is not there ("Ann thought Bo took it")."""
    return _read(text, entities, limits or Limits(), time.monotonic)[0].doers


def _read(
    text: str, entities: Mapping[str, Entity], limits: Limits, clock: Callable[[], float]
) -> tuple[_State, set[int]]:
    """Read ``text`` sentence by sentence within ``limits``: the reader's state after it,
    and the indices in its ``out`` the controlled grammar read."""
    deadline = clock() + limits.reading_seconds
    lexicon = _Lexicon(entities)
    state = _State()
    controlled_at: set[int] = set()  # the indices in ``state.out`` the grammar read
    for start, end in split_sentences(text):
        if clock() > deadline:
            state.out.append(_unread(start, end, _LATE.format(limits.reading_seconds)))
            continue
        cut = _cut(text, start, end, limits.sentence_words)
        _read_sentence(text, start, cut, entities, lexicon, state, controlled_at)
        if cut < end:
            state.out.append(_unread(cut, end, _LONG.format(limits.sentence_words)))
    return state, controlled_at


_LATE = "not read: the turn's reading passed its deadline of {:g} s (FABULA_READING_DEADLINE)"
_LONG = (
    "not read: the sentence is longer than the {:,} words and marks the reader reads of one "
    "sentence (FABULA_MAX_SENTENCE_WORDS)"
)


def _unread(start: int, end: int, why: str) -> StoryAction:
    """The span ``start..end`` kept as narration, unread for the reason ``why``."""
    return StoryAction(kind="narration", start=start, end=end, unsure=why)


def _cut(text: str, start: int, end: int, words: int) -> int:
    """Where the reading of the sentence ``text[start:end]`` stops: its end, or, past
    ``words`` words and marks, the start of the first word after them (one scan)."""
    for k, match in enumerate(_WORD.finditer(text, start, end)):
        if k == words:
            return match.start()
    return end


def _read_sentence(
    text: str,
    start: int,
    end: int,
    entities: Mapping[str, Entity],
    lexicon: _Lexicon,
    state: _State,
    controlled_at: set[int],
) -> None:
    """Read the sentence ``text[start:end]`` into ``state.out``: the grammar's reading if it
    has one in the story's names, else its clauses' as prose, else narration."""
    state.sentence += 1
    sentence = text[start:end]
    controlled = parse_sentence(sentence, start, lexicon.cast)
    if controlled.kind != "narration" and _own_names(controlled, entities):
        _follow(state, controlled, entities)
        controlled_at.add(len(state.out))
        state.out.append(controlled)
        if controlled.actors:
            state.doers.append((start, tuple(slug(a) for a in controlled.actors)))
        return
    before = len(state.out)
    clauses = split_clauses(text, start, end)
    for k, (a, b) in enumerate(clauses if len(clauses) > 1 else [(start, end)]):
        # each clause read alone, so that a clause's place phrase never attaches to
        # another clause's verb ("Ann took the key, and Bo waited in the hall")
        state.out.extend(_Sentence(text[a:b], a, lexicon, state, first=k == 0).read())
    if len(state.out) == before and len(clauses) > 1:
        # a placement stated across clauses ("There, in a box, was a plum")
        whole = _Sentence(sentence, start, lexicon, state)
        state.out.extend(whole.placements())
    state.named_before = state.named_now
    state.named_now = ()
    state.barred = set()
    if len(state.out) > before:
        return
    if controlled.kind != "narration":
        _follow(state, controlled, entities)
        controlled_at.add(len(state.out))
        state.out.append(controlled)
        if controlled.actors:
            state.doers.append((start, tuple(slug(a) for a in controlled.actors)))
        return
    state.out.append(StoryAction(kind="narration", start=start, end=end))


def _taken_from(
    actions: list[StoryAction], controlled_at: set[int], entities: Mapping[str, Entity]
) -> list[StoryAction]:
    """Each prose act on an object seen by its doer where the object was: one who takes a
    thing out of a container, or moves it from there, sees it there first (the place the
    reader last had it, from what another did or the text stated) — unless the text says
    the doer did not see it put there: what it did not perceive it never learns."""
    out: list[StoryAction] = []
    # object -> where it is, who put it or saw it there, who the text says did not see that
    where: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
    doers: dict[int, list[str]] = {}  # the actors of the actions that start at an offset
    for a in actions:
        doers.setdefault(a.start, []).extend(a.actors)
    for i, action in enumerate(actions):
        obj = action.obj
        if (
            i not in controlled_at
            and action.kind in ("move", "take", "put")
            and obj is not None
            and action.actors
            and obj in where
        ):
            box, by, blind = where[obj]
            known = entities.get(box)
            if (
                not set(action.actors) & {*by, *blind}
                and known is not None
                and known.kind != "character"
            ):
                seen = Clause(subject=obj, attribute="location", value=box)
                out.append(
                    StoryAction(
                        kind="perceive",
                        start=action.start,
                        end=action.end,
                        actors=action.actors[:1],
                        clause=seen,
                    )
                )
        clause = action.clause
        if action.kind in ("move", "put") and obj is not None and action.target:
            where[obj] = (slug(action.target), action.actors, action.unseen_by)
        elif action.kind in ("take", "give", "drop") and obj is not None:
            where.pop(obj, None)
        elif (
            action.kind in ("state", "perceive")
            and clause is not None
            and clause.attribute == "location"
        ):
            # who saw it there already: its seers, and whoever acts in the same sentence
            seers = (*action.seen_by, *(action.actors if action.kind == "perceive" else ()))
            same = tuple(doers.get(action.start, ()))
            where[slug(clause.subject)] = (slug(clause.value), (*seers, *same), action.unseen_by)
        out.append(action)
    return out


def _own_names(action: StoryAction, entities: Mapping[str, Entity]) -> bool:
    """Whether every name a controlled reading uses is the story's own, or the story knows
    nothing it could be a part of (a new entity, as controlled English introduces them)."""
    names = [*action.actors, *action.listeners, action.place, action.obj, action.target]
    words = {w for e in entities.values() for w in e.name.lower().replace("_", " ").split()}
    for name in names:
        if name is None:
            continue
        sid = slug(name)
        if sid not in entities and set(name.lower().split()) & words:
            return False
    return True


def _follow(state: _State, action: StoryAction, entities: Mapping[str, Entity]) -> None:
    """Keep the reader's places and referents up to date with a controlled sentence."""
    ids = [slug(a) for a in action.actors if a]
    if action.kind in ("enter", "go", "locate", "stay") and action.place:
        for who in ids:
            state.where[who] = slug(action.place)
    elif action.kind == "exit":
        for who in ids:
            state.where[who] = None
            state.company.discard(who)
    if ids:
        state.subjects.append(tuple(ids))
        _mention(state, ids)
    if action.obj:
        state.last_object = slug(action.obj)
    if action.kind in ("move", "put", "take", "give", "drop"):
        state.last_event = len(state.out)
        state.last_events, state.events_sentence = [len(state.out)], state.sentence
        if action.obj:
            state.located.add(slug(action.obj))
    if action.clause is not None and action.clause.attribute == "location":
        state.located.add(slug(action.clause.subject))
