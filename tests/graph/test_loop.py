"""The turn loop on the offline engine, through real LangGraph, the Redis checkpointer and
the real store: the demo story, the writer/memory-builder round trip, the critic, consolidation."""

from __future__ import annotations

import asyncio
import zlib
from urllib.parse import urlsplit

import pytest
import redis
from langgraph.checkpoint.memory import InMemorySaver
from rq import Queue, SimpleWorker
from rq.job import Job

from fabula.agents.contracts import Action, TurnPlan
from fabula.agents.critic.offline import OfflineCritic
from fabula.agents.memory_builder.offline import OfflineMemoryBuilder
from fabula.agents.reading.extract import extract
from fabula.agents.views import author_view
from fabula.agents.writer.context import writer_context
from fabula.agents.writer.offline import realise
from fabula.graph.build import thread_id
from fabula.graph.runtime import Committed
from fabula.graph.service import Fabula
from fabula.graph.service.consolidation import consolidator, summarise_job
from fabula.memory.hierarchy import scenes
from fabula.memory.jobs import QUEUE, enqueue_consolidation
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.records import HierarchyNode
from fabula.memory.store import StoryStore
from fabula.memory.tokens import ApproximateCounter
from fabula.settings import Settings
from fabula.testing.redis import on_cluster
from fabula.worlds.loader import load_world
from fabula.worlds.pack import WorldPack


async def _demo(fab: Fabula, story: str, turns: int, pack: WorldPack | None = None) -> StoryStore:
    pack = pack or load_world("hollow_book")
    store = fab.store(await fab.create_story(pack, story, opening=False))
    for text in pack.opening.turns:
        await fab.commit_scripted(store, text)
    for _ in range(turns):
        assert (await fab.run(store, auto=True)).outcome == "committed"
    return store


class TestDemoStory:
    async def test_leo_acts_on_his_false_belief_until_he_sees(self, redis_url: str) -> None:
        """Leo's belief and the world disagree about the key until he learns otherwise; what
        Leo does follows what he believes; Mara, who wants the key hidden from him, does not
        tell him; he finds it by searching, takes it, and the story comes to rest; the critic
        reports nothing on accepted turns."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "demo", 0)
            ran = await fab.run(store, 20, auto=True)
            head = await store.head()
            assert ran.rest is not None and "Leo: done: get the brass key" in ran.rest
            assert head == 3 + ran.written < 3 + 20  # at rest: it stopped by itself
            texts = {t.turn: t.text for t in await store.turn_texts(1)}
            world = {t: (await project_world(store, as_of=t)).where("brass_key") for t in texts}
            leo = {
                t: (await project_beliefs(store, "leo", as_of=t)).where("brass_key") for t in texts
            }

            assert world[3] == "hollow_book" and leo[3] == "desk_drawer"
            learned = next(t for t in sorted(texts) if t > 3 and leo[t] == world[t])
            assert "Leo searched the hollow book" in texts[learned]
            for t in range(3, learned):
                assert leo[t] != world[t], t  # a false (or no) belief until he sees it

            searched = next(t for t in texts if "Leo searched the desk drawer" in texts[t])
            assert leo[searched - 1] == "desk_drawer"  # he searched where he believed it was
            assert leo[searched] is None  # and learned it is not there
            took = next(t for t in texts if "Leo took the brass key" in texts[t])
            assert leo[took - 1] == "hollow_book" and took > learned
            assert world[head] == "leo"
            asked = next(t for t in texts if "Leo asked Mara where the brass key was" in texts[t])
            kept = next(
                t for t in texts if '"I do not know where the brass key is," said Mara' in texts[t]
            )
            assert searched < asked < kept < learned  # she keeps it from him
            assert len(set(texts.values())) == len(texts)  # no turn repeats another

            for turn in range(4, head + 1):
                config = {"configurable": {"thread_id": thread_id("demo", "main", turn)}}
                state = (await fab.graph.aget_state(config)).values  # type: ignore[arg-type]
                assert state["outcome"] == "committed"
                assert state["findings"] == [], (turn, state["findings"])


class TestSettings:
    async def test_the_token_counter_is_the_settings(self, redis_url: str) -> None:
        """The ``token_counter`` setting (``FABULA_TOKEN_COUNTER``) is what counts the
        turn's budgets: nothing reads the variable behind the settings' back."""
        async with Fabula(redis_url, Settings(token_counter="approximate")) as fab:
            assert isinstance(fab.counter, ApproximateCounter)
        async with Fabula(redis_url, Settings()) as fab:
            assert not isinstance(fab.counter, ApproximateCounter)


class TestRoundTrip:
    @pytest.mark.parametrize(
        ("character", "action", "kind"),
        [
            ("leo", Action(kind="go", target="hallway"), "go"),
            ("leo", Action(kind="search", target="desk_drawer"), "search"),
            ("mara", Action(kind="take", object="brass_key", target="hollow_book"), "take"),
            ("mara", Action(kind="ask", listener="leo", about="brass_key"), "ask"),
            (
                "mara",
                Action(kind="tell", listener="leo", about="brass_key", claim="hollow_book"),
                "inform",
            ),
            ("mara", Action(kind="say", line="It is colder today"), "say"),
        ],
    )
    async def test_writer_output_parses_back(
        self, redis_url: str, character: str, action: Action, kind: str
    ) -> None:
        """Every sentence the offline writer produces is read back by the offline extractor
        as the action it realises, and committed as that event."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "rt", 0)
            view = await author_view(store)
            sentence = realise(view, character, action)
            (parsed,) = extract(sentence)
            assert parsed.kind == kind, sentence
            assert parsed.actors == (view.name(character),)
            delta = await OfflineMemoryBuilder().build(store, view.turn + 1, sentence)
            event = delta.events[0]
            assert event.actor == character and event.span.quote == sentence
            if action.object:
                assert action.object in event.participants
            if action.listener and kind == "ask":
                assert action.listener in event.participants
            if kind == "inform":
                assert event.content is not None and event.content.value == action.claim

    async def test_a_proper_place_name_is_written_bare_and_read_back(self, redis_url: str) -> None:
        """A place's proper name takes no article ("went to Castle Eldmoor", never "the Castle
        Black"), and the offline reader reads it back as the same move."""
        pack = load_world("hollow_book")
        places = tuple(
            p.model_copy(update={"name": "Castle Eldmoor", "aliases": ("hallway",)})
            if p.name == "hallway"
            else p
            for p in pack.places
        )
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "proper", 0, pack.model_copy(update={"places": places}))
            view = await author_view(store)
            (castle,) = [e for e in view.entities.values() if e.name == "Castle Eldmoor"]
            sentence = realise(view, "mara", Action(kind="go", target=castle.id))
            assert sentence == "Mara went to Castle Eldmoor."
            delta = await OfflineMemoryBuilder().build(store, view.turn + 1, sentence)
            assert [(e.kind, e.actor) for e in delta.events] == [
                ("exit", "mara"),
                ("enter", "mara"),
            ]
            assert delta.events[1].place == castle.id


class TestNoFiller:
    async def test_waiting_is_not_written(self, redis_url: str) -> None:
        """A character that only waits stays out of the passage: no "thought about X for a
        while", no "waited"."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "idle", 0)
            view = await author_view(store)
            assert realise(view, "mara", Action(kind="wait", object="hollow_book")) == ""
            assert realise(view, "mara", Action(kind="wait", line="the cellar")) == ""


class TestCritic:
    @pytest.mark.parametrize(
        ("text", "kind"),
        [
            ("The brass key is in the desk drawer.", "contradiction"),
            ("Leo told Mara that the colour of the hollow book is red.", "knowledge"),
            ("Mara gave the brass key to Leo.", "contradiction"),
        ],
    )
    async def test_finds_problems(self, redis_url: str, text: str, kind: str) -> None:
        """A statement against the world, an assertion beyond the speaker's beliefs and an
        action the world does not allow are each reported, quoting the sentence."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "crit", 0)
            view = await author_view(store)
            delta = await OfflineMemoryBuilder().build(store, view.turn + 1, text)
            findings = OfflineCritic().critique(view, delta, None)
            assert any(f.kind == kind and f.quote == text for f in findings), findings

    async def test_lie_is_a_warning_and_truth_is_clean(self, redis_url: str) -> None:
        """Telling what one believes is clean; telling the opposite is reported as a lie
        (a warning: characters may lie), never as an error."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "lie", 0)
            view = await author_view(store)
            critic = OfflineCritic()
            truth = "Mara told Leo that the brass key is in the hollow book."
            lie = "Mara told Leo that the brass key is in the desk drawer."
            for text, expected in ((truth, []), (lie, ["warning"])):
                delta = await OfflineMemoryBuilder().build(store, view.turn + 1, text)
                found = [f.severity for f in critic.critique(view, delta, None)]
                assert found == expected, (text, found)

    async def test_future_reference(self, redis_url: str) -> None:
        """On a branch, an entity that enters the story later on main is a future leak."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "fut", 0)
            early = fab.store(await fab.fork(store, 1, "early"))
            await fab.commit_scripted(store, "Mara put the brass key in the silver box.")
            view = await author_view(early)
            text = "Leo searched the silver box."
            delta = await OfflineMemoryBuilder().build(early, view.turn + 1, text)
            findings = OfflineCritic().critique(view, delta, None)
            assert any(f.kind == "future" for f in findings), findings


class TestCritiqueObserver:
    async def test_every_critique_is_told_with_its_turn(self, redis_url: str) -> None:
        """``on_critique`` hears each critique of a run (a benchmark counts what sends drafts
        back): the turn it judged, and its findings as the turn state holds them."""
        heard: list[tuple[int, list[str]]] = []
        observe = lambda turn, found: heard.append((turn, [f.severity for f in found]))  # noqa: E731
        async with Fabula(redis_url, Settings(), on_critique=observe) as fab:
            store = await _demo(fab, "observed", 0)
            head = await store.head()
            ran = await fab.run(store, 2, auto=True)
            assert ran.written == 2
        assert [turn for turn, _ in heard] == [head + 1, head + 2]
        assert all("error" not in severities for _, severities in heard)  # both committed


class TestWriterContext:
    @pytest.mark.parametrize("budget", [5, 40, 120, 2000])
    async def test_budget_never_exceeded(self, redis_url: str, budget: int) -> None:
        """The writer's memory context never counts more than its budget."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "ctx", 0)
            view = await author_view(store)
            plan = TurnPlan(scene_goal="test", place="study", focal=("leo", "mara"))
            counter = ApproximateCounter()
            assembly = await writer_context(store, view, plan, budget, counter)
            text = assembly.text
            assert counter.count(text) <= budget
            if budget >= 2000:
                assert "B[Leo]" in text and "[false]" in text  # Leo's false belief is marked


class TestConsolidation:
    def test_rq_job_builds_scenes(
        self, redis_url: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Commits enqueue consolidation on RQ; a worker builds scenes with their closure.

        (A synchronous test: RQ jobs are synchronous edges that run their own event loop.)
        On a cluster the queue lives on a plain Redis (RQ 3.0 cannot use a cluster) and the
        jobs work on the cluster's stories.
        """
        queue_url = request.getfixturevalue("embedded_redis").url if on_cluster() else redis_url

        async def setup() -> int:
            async with Fabula(redis_url, Settings()) as fab:
                store = await _demo(fab, "rq", 0)
                return await store.head()

        async def read() -> list[HierarchyNode]:
            async with Fabula(redis_url, Settings()) as fab:
                return await scenes(fab.store("rq"))

        head = asyncio.run(setup())
        for turn in range(1, head + 1):
            enqueue_consolidation(queue_url, "rq", "main", turn)
        # the worker takes its connection from its own environment, not from the job
        monkeypatch.setenv("FABULA_REDIS_URL", redis_url)
        connection = redis.Redis.from_url(queue_url)
        queue = Queue(QUEUE, connection=connection)
        assert queue.count == head
        SimpleWorker([queue], connection=connection).work(burst=True)
        assert queue.count == 0
        built = asyncio.run(read())
        assert built, "no scene was built"
        events = [e for node in built for e in node.closure.events]
        assert len(events) == len(set(events)) and events
        assert all(span.quote for node in built for span in node.closure.spans)

    def test_rq_job_carries_no_credentials(self, redis_url: str) -> None:
        """A consolidation job names the story, branch and turn, never the Redis URL: the
        admin's secret is in neither its description (which the worker logs) nor its pickled
        data, so a job carries no credentials."""
        connection = redis.Redis.from_url(redis_url)
        secret = urlsplit(redis_url).password or "no-secret-in-this-url"
        assert consolidator(redis_url, "rq", redis_url) is not None
        job_id = enqueue_consolidation(redis_url, "s2", "main", 17, then=summarise_job)
        for jid in (job_id, "summarise-s2-main-17"):
            job = Job.fetch(jid, connection=connection)
            assert redis_url not in job.args and job.args[0] == "s2"
            assert secret not in str(job.description)
            raw = connection.hgetall(f"rq:job:{jid}")
            blob = b"".join(raw.values())
            assert secret.encode() not in blob
            assert secret.encode() not in zlib.decompress(raw[b"data"])
        connection.close()


class TestCharacterSocial:
    async def test_newcomer_sees_who_is_there(self, redis_url: str) -> None:
        """Entering a room, a character comes to believe where everyone there is."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "social", 0)
            await fab.commit_scripted(store, "Mara went to the hallway.")
            await fab.commit_scripted(store, "Leo went to the study.")
            leo = await project_beliefs(store, "leo")
            assert leo.where("mara") == "hallway"  # he saw her come into the hallway
            await fab.commit_scripted(store, "Mara went to the study.")
            assert (await project_beliefs(store, "leo")).where("mara") == "study"
            await fab.commit_scripted(store, "Leo went to the hallway.")
            await fab.commit_scripted(store, "Leo entered the study.")
            assert (await project_beliefs(store, "leo")).where("mara") == "study"

    async def test_request_granted_or_refused(self, redis_url: str) -> None:
        """Asked for an object, a character that does not want it hands it over; one that
        wants it (a branch pursuing "Mara ends up with the brass key") refuses."""
        demo = load_world("hollow_book")
        # a Mara with no goal that names the key
        calm = demo.model_copy(
            update={
                "characters": tuple(
                    c.model_copy(update={"goals": ("learn Leo's secret",)})
                    if c.name == "Mara"
                    else c
                    for c in demo.characters
                )
            }
        )
        async with Fabula(redis_url, Settings()) as fab:
            store = await _demo(fab, "ask", 0, calm)
            await fab.commit_scripted(store, "Leo went to the study.")
            at = await store.head()
            mara = next(
                h.id
                for h in (await author_view(store)).hypotheses.values()
                if h.premise.startswith("Mara ends up")
            )
            branch = fab.store(await fab.fork(store, at, realise=mara))

            await fab.commit_scripted(store, "Mara took the brass key.")
            await fab.run(store, 3, auto=True)
            texts = " ".join(t.text for t in await store.turn_texts(at + 1))
            assert '"Give me the brass key, Mara," said Leo.' in texts
            assert "Mara gave the brass key to Leo." in texts
            assert (await project_world(store)).where("brass_key") == "leo"

            await fab.run(branch, 5, auto=True)
            texts = " ".join(t.text for t in await branch.turn_texts(at + 1))
            assert '"I am keeping the brass key," said Mara.' in texts
            assert (await project_world(branch)).where("brass_key") == "mara"


class TestInjectedCheckpointer:
    async def test_the_injected_saver_is_the_only_one(self, redis_url: str) -> None:
        """With another checkpointer the app makes no Redis saver and writes no checkpoint
        key; deleting the story deletes its threads from the injected saver; the commit
        observer is told of every committed turn."""
        saver = InMemorySaver()
        committed: list[Committed] = []
        async with Fabula(
            redis_url, Settings(), checkpointer=saver, on_commit=committed.append
        ) as fab:
            assert fab.saver is saver
            store = await _demo(fab, "tale", 2)
            assert [c.turn for c in committed][-2:] == [4, 5]
            assert all(c.status == "committed" and c.memory_ms > 0 for c in committed)
            assert {t.config["configurable"]["thread_id"] async for t in saver.alist(None)}
            client = redis.Redis.from_url(redis_url)
            assert not client.keys("fab:ckpt:*")
            await fab.delete_story(store.story)
            assert not [t async for t in saver.alist(None)]
            client.close()
