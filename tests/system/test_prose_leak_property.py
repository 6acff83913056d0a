"""Property: over stories told in ordinary English, no character sees what it did not witness.

Hypothesis writes stories of a kitchen and a garden (Ann, Ben and Cal; a scarf and a key; a
drawer, a basket and a box in the kitchen) as plain prose, one sentence a deed, a few
sentences a turn: people leave the kitchen ("Ben left the kitchen.", "Cal excused himself
and headed to the garden.") and come back ("strolled into the kitchen"); things are moved
and hidden into the containers ("Ann hid the key in the box.", "picked up … and placed it
in …"), before someone who is there but does not see it ("Unbeknownst to Ben, …", "Cal did
not notice when …", "Behind Cal's back, …", or the doer believing one saw who did not:
"… Unbeknownst to Ann, Ben was nowhere in sight.", or any form of
:data:`fabula.testing.unseen_forms.FORMS`: "Nobody saw …", "Ben, who was asleep, …", "…
while Cal slept", "secretly", "Ben closed his eyes, and …"), or with someone watching ("Ben
watched as …");
people tell each other where things are, aloud or in a whisper. Each turn is committed
through the real path: the offline memory-builder (the prose reader,
:func:`fabula.agents.reading.prose.read_prose`), the tracker and the store's commit,
into real Redis.

The oracle knows who saw each deed: a move is seen by everyone in the kitchen but those the
sentence says did not see it, and its doer sees where the thing was; a telling aloud is
heard by everyone in the teller's place, a whisper by the two. From it, each character may
know a (thing, container) pair it saw put together, was told, or believed from the start.
For every character, at the end and as of an earlier turn, none of

* its recall (``fabula recall … --as C``: its context, its voice, its lore),
* its chat (the answer and every record it rests on),
* its prompt as its agent renders it (brief, memories, recollections, own words, lore,
  voice) and the JSON schema sent with it,
* every value its own Redis user can read in the story (read through that connection),

holds the sentence of a move it did not witness, or puts together a pair it may not know.

In model mode (:func:`test_a_model_writers_passage_reaches_no_one_who_did_not_witness_it`)
the fake OpenAI server writes the last turn: the writer's reply is a generated passage, read
by the model-mode memory-builder (the reader first, the extractor on what it left), and every
character prompt the server received for the next turn is checked the same way.

Runtime: 8 + 3 examples, about 30 s on a shared 2-core machine (13 s of CPU).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis.asyncio as aredis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from fabula.agents.character.model import (
    known_attributes,
    mind_prompt,
    proposal_json_schema,
)
from fabula.agents.character.offline import OfflineCharacter
from fabula.agents.contracts import TurnPlan
from fabula.agents.factory import make_roles
from fabula.agents.shared.brief import brief_for
from fabula.agents.views import author_view
from fabula.graph.service import Fabula
from fabula.memory.index.build import index_through
from fabula.memory.projections import project_beliefs
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing.fake_openai import TEXT, FakeOpenAI, Reply, request_schema
from fabula.testing.kitchen import (
    BOXES,
    PACK,
    PEOPLE,
    PRONOUN,
    SELF,
    START_IN,
    THINGS,
)
from fabula.testing.model import model_settings, prompt_of
from fabula.testing.unseen_forms import FORMS

PAIRS = re.compile(r"[.;:!?]\s|\n|\},\s*\{|\}\s*\{|,\s*(?:and|while)\s")


def pairs(text: str) -> set[tuple[str, str]]:
    """The (thing, container) pairs one sentence, clause or record of ``text`` names together."""
    found = set()
    for part in PAIRS.split(text.lower()):
        words = set(re.findall(r"[a-z]+", part))
        found |= {(t, b) for t in THINGS for b in BOXES if t in words and b in words}
    return found


@dataclass
class Story:
    """A generated story: its turns (each a list of sentences), and the oracle's record of
    who saw what: the moves' sentences each character did not witness and the pairs each
    may know, after each turn."""

    turns: list[list[str]] = field(default_factory=list)
    unseen: dict[str, set[str]] = field(default_factory=lambda: {p: set() for p in PEOPLE})
    seen: dict[str, set[str]] = field(default_factory=lambda: {p: set() for p in PEOPLE})
    known: list[dict[str, set[tuple[str, str]]]] = field(default_factory=list)
    at: dict[str, str] = field(default_factory=lambda: dict(START_IN))  # where things are

    def hidden_from(self, name: str) -> set[str]:
        """The sentences of deeds ``name`` did not witness (nor the same deed, told alike)."""
        return self.unseen[name] - self.seen[name]

    @property
    def text(self) -> str:
        return " ".join(s for turn in self.turns for s in turn)


@st.composite
def stories(draw: st.DrawFn, *, turns: tuple[int, int] = (2, 4)) -> Story:
    where = dict.fromkeys(PEOPLE, "kitchen")
    believed = {p: dict(START_IN) for p in PEOPLE}  # what each believes, as the oracle sees it
    known: dict[str, set[tuple[str, str]]] = {p: set(START_IN.items()) for p in PEOPLE}
    story = Story()
    for _ in range(draw(st.integers(*turns))):
        sentences: list[str] = []
        for _ in range(draw(st.integers(1, 3))):
            deed = draw_deed(draw, where, believed, known, story)
            sentences += re.split(r"(?<=\.) ", deed)  # a deed may take two sentences
        story.turns.append(sentences)
        story.known.append({p: set(k) for p, k in known.items()})
    return story


def draw_deed(
    draw: st.DrawFn,
    where: dict[str, str],
    believed: dict[str, dict[str, str]],
    known: dict[str, set[tuple[str, str]]],
    story: Story,
) -> str:
    """One deed's sentence, with the oracle brought up to date."""
    here = [p for p in PEOPLE if where[p] == "kitchen"]
    kinds = ["move"] * 3 if here else []
    kinds += ["leave"] if len(here) > 1 else []
    kinds += ["come"] if len(here) < len(PEOPLE) else []
    if any(where[a] == where[b] for a in PEOPLE for b in PEOPLE if a != b):
        kinds.append("tell")
    kind = draw(st.sampled_from(kinds))
    if kind == "leave":
        who = draw(st.sampled_from(here))
        where[who] = "garden"
        return draw(
            st.sampled_from(
                [f"{who} left the kitchen.", f"{who} excused {SELF[who]} and headed to the garden."]
            )
        )
    if kind == "come":
        who = draw(st.sampled_from([p for p in PEOPLE if where[p] != "kitchen"]))
        where[who] = "kitchen"
        return draw(
            st.sampled_from(
                [f"{who} went back to the kitchen.", f"{who} strolled into the kitchen."]
            )
        )
    if kind == "tell":
        teller = draw(
            st.sampled_from(
                [p for p in PEOPLE if any(where[q] == where[p] for q in PEOPLE if q != p)]
            )
        )
        listener = draw(
            st.sampled_from([q for q in PEOPLE if q != teller and where[q] == where[teller]])
        )
        thing = draw(st.sampled_from(THINGS))
        box = believed[teller][thing]
        whisper = draw(st.booleans())
        hearers = (
            [teller, listener] if whisper else [p for p in PEOPLE if where[p] == where[teller]]
        )
        verb = f"whispered to {listener}" if whisper else f"told {listener}"
        sentence = f"{teller} {verb} that the {thing} is in the {box}."
        for p in PEOPLE:
            if p in hearers:
                known[p].add((thing, box))
                believed[p][thing] = box
                story.seen[p].add(sentence)
            else:
                story.unseen[p].add(sentence)
        return sentence
    doer = draw(st.sampled_from(here))
    thing = draw(st.sampled_from(THINGS))
    box = draw(st.sampled_from(BOXES))
    others = [p for p in here if p != doer]
    how = draw(
        st.sampled_from(
            [
                "plain",
                "hid",
                "picked",
                *(["unbeknownst", "unnoticed", "behind", "watched", "away"] if others else []),
                *(["form"] * 3 if others else []),
            ]
        )
    )
    blind: set[str] = set()
    after = ""  # a sentence about the deed, after it
    if how == "plain":
        sentence = f"{doer} moved the {thing} to the {box}."
    elif how == "hid":
        sentence = f"{doer} hid the {thing} in the {box}."
    elif how == "picked":
        sentence = f"{doer} picked up the {thing} and placed it in the {box}."
    else:
        other = draw(st.sampled_from(others))
        if how == "unbeknownst":
            blind = {other}
            sentence = f"Unbeknownst to {other}, {doer} slipped the {thing} into the {box}."
        elif how == "behind":
            blind = {other}
            sentence = f"Behind {other}'s back, {doer} tucked the {thing} into the {box}."
        elif how == "away":
            # the doer believes the other saw it; the other did not
            blind = {other}
            sentence = f"{doer} hid the {thing} in the {box}."
            after = f" Unbeknownst to {doer}, {other} was nowhere in sight."
        elif how == "form":
            form = draw(st.sampled_from(FORMS))
            blind = set(others) if form.nobody else {other}
            sentence = form.write(doer, other, thing, box, pronoun=PRONOUN[other])
        elif how == "unnoticed":
            blind = {other}
            sentence = f"{other} did not notice when {doer} stashed the {thing} in the {box}."
        else:
            sentence = f"{other} watched as {doer} put the {thing} in the {box}."
    # the doer sees where it takes the thing from ("Ben saw that the scarf is in the
    # basket" before he hid it in the box), though it did not see it put there
    known[doer].add((thing, story.at[thing]))
    story.at[thing] = box
    for p in PEOPLE:
        if p in here and p not in blind:
            known[p].add((thing, box))
            believed[p][thing] = box
            story.seen[p].add(sentence)
        else:
            story.unseen[p].add(sentence)
    return sentence + after


def assert_blind(
    text: str, name: str, known: set[tuple[str, str]], hidden: set[str], *about: object
) -> None:
    """``text`` holds none of the ``hidden`` sentences and no pair outside ``known``."""
    low = text.lower()
    for sentence in hidden:
        assert sentence.lower() not in low, (name, *about, sentence, text)
    extra = pairs(text) - known
    assert not extra, (name, *about, extra, text)


async def readable(store: StoryStore, client: aredis.Redis) -> list[str]:
    """Every value of the story's keys that ``client`` (a character's Redis user) can read,
    one string a value (a hash field, a set or sorted-set member, a stream entry)."""
    out: list[str] = []
    async for key in store.client.scan_iter(match=f"fab:{{{store.story}}}:*", count=1000):
        kind = await store.client.type(key)
        try:
            if kind == "string":
                out.append(str(await client.get(key)))
            elif kind == "hash":
                out += [f"{k} {v}" for k, v in (await client.hgetall(key)).items()]
            elif kind == "set":
                out += [str(m) for m in await client.smembers(key)]
            elif kind == "zset":
                out += [str(m) for m in await client.zrange(key, 0, -1)]
            elif kind == "list":
                out += [str(m) for m in await client.lrange(key, 0, -1)]
            elif kind == "stream":
                out += [json.dumps(fields) for _, fields in await client.xrange(key)]
        except aredis.ResponseError:  # NOPERM and the like: its user cannot read it
            continue
    return out


_stories = itertools.count()
QUESTIONS = ("Where is the key?", "What happened to the scarf?")


async def views(
    app: Fabula,
    store: StoryStore,
    character: str,
    hidden: set[str],
    *,
    as_of: int | None = None,
) -> list[str]:
    """What ``character`` is shown: its recall and chat (as of ``as_of``), and, at the
    head only, its prompt and schema as its agent renders them and every value its Redis
    user can read."""
    shown: list[str] = []
    for question in QUESTIONS:
        found = await app.read(store).recall(question, budget=600, character=character, as_of=as_of)
        shown += [found.text, *(v.text for v in found.voice), *(x.text for x in found.lore)]
        said = await app.read(store).chat(character, question, as_of=as_of)
        shown += [said.answer, *(r.text for r in said.records)]
    if as_of is not None:
        return shown
    view = await author_view(store)
    mind = await app.minds.mind(store.story, character)
    plan = TurnPlan(scene_goal="PLAN-GOAL", focal=(character,), beats=("PLAN-BEAT",))
    brief = brief_for(view, character, plan)
    seen = await mind_prompt(mind, brief)
    prompt, beliefs, entities = seen.prompt, seen.beliefs, seen.entities
    # the offline character's answer to each question, asked by another character
    asker = next(c for c in view.characters() if c != character)
    for question in QUESTIONS:
        shown.append((await OfflineCharacter().reply_to(mind, brief, asker, question)).line or "")
    schema = json.dumps(proposal_json_schema(character, entities, known_attributes(beliefs)))
    assert "PLAN-" not in prompt + schema
    # the schema names what it knows of as enums (no pairs): only the sentences are checked
    assert not any(s.lower() in schema.lower() for s in hidden), (character, schema)
    return [*shown, prompt, *await readable(store, mind.client)]


async def check(app: Fabula, store: StoryStore, story: Story, earlier: int) -> None:
    """Every character's views, at the head and as of turn ``earlier``, against the oracle."""
    head = len(story.turns)
    # what was done to a thing after turn ``earlier`` (a journey's sentence may be how an
    # earlier one is told: "Cal left the kitchen."; a deed told alike earlier is allowed,
    # also as a clause of an earlier sentence: "Ann closed her eyes, and Ben slipped the
    # scarf into the basket." before "Ben slipped the scarf into the basket.")
    before = " ".join(s.lower() for turn in story.turns[:earlier] for s in turn)
    later = {
        s
        for turn in story.turns[earlier:]
        for s in turn
        if any(t in s for t in THINGS) and s.lower().rstrip(".") not in before
    }
    for name in PEOPLE:
        character = name.lower()
        start = await project_beliefs(store, (character,), as_of=0)
        believed = {
            (b.subject, b.value) for b in start.beliefs.values() if b.attribute == "location"
        }
        hidden = story.hidden_from(name)
        for text in await views(app, store, character, hidden):
            assert_blind(text, name, story.known[head - 1][name] | believed, hidden, "head")
        if earlier:
            then = story.known[earlier - 1][name] | believed
            for text in await views(app, store, character, hidden, as_of=earlier):
                assert_blind(text, name, then, hidden | later, "as of", earlier)


@settings(
    max_examples=8,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_no_character_sees_a_prose_deed_it_did_not_witness(
    offline_fab: Fabula, data: st.DataObject
) -> None:
    story = data.draw(stories())
    store = offline_fab.store(
        await offline_fab.create_story(PACK, f"prose{next(_stories)}", opening=False)
    )
    for turn in story.turns:
        await offline_fab.commit_scripted(store, " ".join(turn))
    await index_through(store)
    await check(offline_fab, store, story, data.draw(st.integers(0, len(story.turns) - 1)))


QUIET = "The kettle sang."


def fake_model(passages: list[str]) -> Any:
    """The fake server's answer to each request of a model turn: a plan with everyone
    focal, characters that wait, the writer's passage (the next of ``passages``), and an
    extractor that reads nothing of what the reader left."""
    plan = {
        "scene_goal": "PLAN-GOAL",
        "place": "kitchen",
        "focal": [p.lower() for p in PEOPLE],
        "beats": ["PLAN-BEAT"],
        "memory_needs": [],
        "developments": [],
        "hypothesis": None,
    }
    wait = {"actions": [{"kind": "wait", "reason": "waits"}], "intent": "wait"}

    def answer(body: dict[str, Any]) -> Reply:
        schema = request_schema(body)
        if schema == "TurnPlan":
            return Reply(content=json.dumps(plan))
        if schema == "CharacterProposal":
            return Reply(content=json.dumps(wait))
        if schema == TEXT:
            return Reply(content=passages.pop(0) if passages else QUIET)
        if schema == "ExtractedActions":
            return Reply(content=json.dumps({"actions": []}))
        return Reply(status=400, error=f"unscripted request for {schema}")

    return answer


@settings(
    max_examples=3,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_a_model_writers_passage_reaches_no_one_who_did_not_witness_it(
    redis_url: str, fake_openai: FakeOpenAI, tmp_path: Path, data: st.DataObject
) -> None:
    """The last turn is a model writer's passage (a generated one), committed in model mode
    (the reader first, the model extractor on what it left); then the next turn's character
    prompts, as the server received them, and every view are checked against the oracle."""
    story = data.draw(stories(turns=(2, 3)))
    name = f"model{next(_stories)}"
    async with Fabula(redis_url, Settings(home=tmp_path)) as offline:
        store = offline.store(await offline.create_story(PACK, name, opening=False))
        for turn in story.turns[:-1]:
            await offline.commit_scripted(store, " ".join(turn))
    fake_openai.fallback = fake_model([" ".join(story.turns[-1])])
    fake_openai.requests.clear()
    model = model_settings(fake_openai, tmp_path)
    async with Fabula(redis_url, model, roles=make_roles(model)) as fab:
        store = fab.store(name)
        assert (await fab.run(store, auto=True)).outcome == "committed"
        assert await store.head() == len(story.turns)
        sent = len(fake_openai.requests)
        assert any(request_schema(r) == TEXT for r in fake_openai.requests)  # the writer
        assert (await fab.run(store, auto=True)).outcome == "committed"  # prompts after it
        story.turns.append([QUIET])
        story.known.append(story.known[-1])
        prompts = {
            p: [
                prompt_of(r)
                for r in fake_openai.requests[sent:]
                if request_schema(r) == "CharacterProposal" and f"You are {p}" in prompt_of(r)
            ]
            for p in PEOPLE
        }
        await index_through(store)
    async with Fabula(redis_url, Settings(home=tmp_path)) as offline:
        store = offline.store(name)
        assert any(prompts.values()), "no character prompt was sent"
        for person, seen in prompts.items():
            for prompt in seen:
                assert "PLAN-" not in prompt, prompt
                assert_blind(prompt, person, story.known[-1][person], story.hidden_from(person))
        await check(offline, store, story, data.draw(st.integers(0, len(story.turns) - 1)))


async def test_a_whisper_tells_no_one_out_of_earshot(offline_fab: Fabula) -> None:
    """Found by this property: the reader read "Ann whispered to Ben that the scarf is in
    the box." as Ann's word to Ben and also as the narrator's statement of where the scarf
    is, which everyone in the scene saw: Cal, out in the garden, came to believe it
    ("observed, turn 3") and recalled "The scarf is in the box."."""
    turns = [
        "Cal excused himself and headed to the garden.",
        "Ben moved the scarf to the box.",
        "Ann whispered to Ben that the scarf is in the box.",
    ]
    store = offline_fab.store(await offline_fab.create_story(PACK, "whisper", opening=False))
    for text in turns:
        await offline_fab.commit_scripted(store, text)
    await index_through(store)
    for character, hears in (("cal", False), ("ben", True)):
        found = await offline_fab.read(store).recall(
            "Where is the scarf?", budget=600, character=character
        )
        assert (("scarf", "box") in pairs(found.text)) == hears, (character, found.text)


async def test_a_stated_place_is_seen_where_the_thing_is_and_not_behind_a_back(
    offline_fab: Fabula,
) -> None:
    """Found by this property: the reader did not read the tucking in "Behind Ann's back,
    Ben tucked the scarf into the box." and kept where the scarf ends up as a statement,
    which the tracker gave to everyone in the scene — the garden, where Cal had just gone
    (the box is in the kitchen) — and to Ann, behind whose back it was done."""
    text = (
        "Cal excused himself and headed to the garden. Behind Ann's back, Ben tucked the "
        "scarf into the box."
    )
    store = offline_fab.store(await offline_fab.create_story(PACK, "behind", opening=False))
    await offline_fab.commit_scripted(store, text)
    await index_through(store)
    for character, sees in (("cal", False), ("ann", False), ("ben", True)):
        found = await offline_fab.read(store).recall(
            "Where is the scarf?", budget=600, character=character
        )
        assert (("scarf", "box") in pairs(found.text)) == sees, (character, found.text)
