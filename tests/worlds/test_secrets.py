"""A pack's secrets are knowledge: facts of W held by who knows them, and nobody else.

A secret (``(character, "secret", <proposition>)``) starts in its character's mind alone;
it travels as any fact does — told privately (the listener only), told aloud (everyone
present overhears), believed under the world's trust rule — and a lie (a speaker asserting
what it believes false) gives the listener a false belief. These tests follow who holds
each secret after every turn, on real Redis, and check that no character's prompt or
schema carries a secret it does not hold.
"""

from __future__ import annotations

import json
import re

from fabula.agents.character.model import known_attributes, proposal_json_schema, render_mind
from fabula.agents.contracts import TurnPlan
from fabula.agents.reading.extract import parse_clause, parse_sentence
from fabula.agents.shared.brief import brief_for
from fabula.agents.shared.goals import Situation, read_goal, spread_tellings, step
from fabula.agents.views import author_view
from fabula.graph.service import Fabula
from fabula.graph.service.reading import minds
from fabula.memory.actions import Clause
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing.cli import fabula

CAST = ("ada", "ben", "cora", "dev")
SECRETS = {
    "ada": "Ada knows Ben lands brandy in the cove",
    "ben": "Ben smuggles brandy through the cove",
    "dev": "Dev saw Ben land brandy in the cove",
}
LIE = "Ben has nothing to hide"
_TOLD = re.compile(
    r"(?P<speaker>[A-Z]\w*) (?P<private>privately )?told (?P<listener>[A-Z]\w*) that "
    r"(?P<owner>[A-Z]\w*)'s secret is that (?P<text>[^.]+)\."
)


async def holders(store: StoryStore, turn: int | None = None) -> dict[str, dict[str, str]]:
    """By character, the secrets it holds (owner → proposition) at ``turn``."""
    out: dict[str, dict[str, str]] = {}
    for c in CAST:
        mind = await project_beliefs(store, c, as_of=turn)
        out[c] = {
            b.subject: b.value
            for b in mind.beliefs.values()
            if b.attribute == "secret" and b.polarity
        }
    return out


async def assert_no_prompt_carries_unheld_secrets(fab: Fabula, store: StoryStore) -> None:
    """Every character's prompt and schema, as its agent sends them, name no secret's
    proposition (true or a lie) that the character neither holds nor heard told."""
    view = await author_view(store)
    plan = TurnPlan(scene_goal="the plan", focal=("ada",))
    everything = {*SECRETS.values(), LIE}
    for character in view.characters():
        mind = await fab.minds.mind(store.story, character)
        beliefs, entities = await mind.beliefs(), await mind.entities()
        memories = await mind.memories(last=30)
        prompt = render_mind(brief_for(view, character, plan), beliefs, memories, entities)
        schema = json.dumps(proposal_json_schema(character, entities, known_attributes(beliefs)))
        held = {b.value for b in beliefs.beliefs.values() if b.attribute == "secret"}
        # what it said or heard itself (a lie it told) is its own memory
        heard = {text for text in everything if any(text in m.quote for m in memories)}
        for text in everything - held - heard:
            assert text not in prompt, (character, text)
            assert text not in schema, (character, text)


def test_secret_clause_forms() -> None:
    """``A's secret is that …`` is a clause about A's secret, told privately or aloud."""
    assert parse_clause("Ben's secret is that Ben smuggles brandy.") == Clause(
        subject="Ben", attribute="secret", value="Ben smuggles brandy"
    )
    assert parse_clause("Ada's secret 2 is that the key opens the cellar") == Clause(
        subject="Ada", attribute="secret 2", value="the key opens the cellar"
    )
    told = parse_sentence(
        "Dev privately told Cora that Ben's secret is that Ben has nothing to hide."
    )
    assert (told.kind, told.listeners, told.clause) == (
        "tell",
        ("Cora",),
        Clause(subject="Ben", attribute="secret", value=LIE),
    )
    aloud = parse_sentence("Ada told Cora that Ada's secret is that Ada knows Ben lands brandy.")
    assert aloud.kind == "inform" and aloud.clause is not None
    assert aloud.clause.attribute == "secret"


async def test_secrets_start_with_their_holders_only(redis_url: str) -> None:
    """At the start each secret is in W and in its character's mind, nobody else's; the
    who-knows-what grid and `fabula show STORY beliefs C` list it."""
    async with Fabula(redis_url, Settings()) as fab:
        store = fab.store(await fab.create_story("lighthouse", "secrets"))
        world = await project_world(store)
        assert {s.subject: s.value for s in world.states.values() if s.attribute == "secret"} == (
            SECRETS
        )
        assert await holders(store, 0) == {
            c: ({c: SECRETS[c]} if c in SECRETS else {}) for c in CAST
        }
        data = await minds(store)
        row = next(r for r in data.grid if (r.subject, r.attribute) == ("ben", "secret"))
        assert row.world == SECRETS["ben"]
        assert {c.character: c.status for c in row.cells} == {
            "ada": "unknown",
            "ben": "true",
            "cora": "unknown",
            "dev": "unknown",
        }
        await assert_no_prompt_carries_unheld_secrets(fab, store)
    shown = fabula(redis_url, "show", "secrets", "beliefs", "ben", "--json").stdout
    assert SECRETS["ben"] in {b["value"] for b in json.loads(shown)["beliefs"]}


async def test_secrets_are_told_overheard_and_lied_about(redis_url: str) -> None:
    """After every turn, who holds each secret is exactly who was told it or overheard it:
    a private telling reaches its listener only, a telling aloud everyone present, and a
    lie (Dev asserting what he believes false) is believed: a false belief in the grid."""
    async with Fabula(redis_url, Settings()) as fab:
        store = fab.store(await fab.create_story("lighthouse", "travel"))
        # after the opening: Ada and Cora in the lamp room, Ben and Dev in the cove
        expected = {c: ({c: SECRETS[c]} if c in SECRETS else {}) for c in CAST}
        turns = [
            (
                "Ben privately told Dev that Ben's secret is that Ben smuggles brandy through "
                "the cove.",
                {"dev": {"ben": SECRETS["ben"]}},
            ),
            (
                "Ada told Cora that Ada's secret is that Ada knows Ben lands brandy in the cove.",
                {"cora": {"ada": SECRETS["ada"]}},
            ),
            ("Dev went to the lamp room.", {}),
            # a lie, aloud: Ada and Cora both hear it and neither knew better
            (
                f"Dev told Cora that Ben's secret is that {LIE}.",
                {"cora": {"ben": LIE}, "ada": {"ben": LIE}},
            ),
        ]
        for text, learned in turns:
            await fab.commit_scripted(store, text)
            for c, got in learned.items():
                expected[c] = {**expected[c], **got}
            assert await holders(store) == expected, text
            await assert_no_prompt_carries_unheld_secrets(fab, store)
        # replayed as of each turn, the story still says who knew what then
        head = await store.head()
        assert (await holders(store, head - 1))["cora"] == {"ada": SECRETS["ada"]}
        data = await minds(store)
        row = next(r for r in data.grid if (r.subject, r.attribute) == ("ben", "secret"))
        cells = {c.character: (c.status, c.speaker) for c in row.cells}
        assert cells["cora"] == ("false", "dev") and cells["dev"] == ("true", "ben")


async def test_the_offline_story_trades_secrets(redis_url: str) -> None:
    """Run offline, the lighthouse's characters trade secrets by their goals: Dev confides
    his to Cora, Ben, asked for his, lies; after every turn the holders of each secret are
    its owner and whoever the text says was told it, and no prompt carries one it lacks."""
    async with Fabula(redis_url, Settings()) as fab:
        store = fab.store(await fab.create_story("lighthouse", "trade"))
        opening = await store.head()
        await fab.run(store, 20, auto=True)
        expected = {c: ({c: SECRETS[c]} if c in SECRETS else {}) for c in CAST}
        texts = await store.turn_texts(opening + 1)
        for t in texts:
            for m in _TOLD.finditer(t.text):
                assert m["private"], t.text  # the offline engine confides, privately
                listener = m["listener"].lower()
                expected[listener].setdefault(m["owner"].lower(), m["text"])
            assert await holders(store, t.turn) == expected, t.text
        assert expected["cora"] == {"dev": SECRETS["dev"], "ben": LIE}
        await assert_no_prompt_carries_unheld_secrets(fab, store)


async def test_goals_about_secrets_step_from_beliefs(redis_url: str) -> None:
    """`tell Cora my secret` is a private telling once Cora is there; `learn Ben's secret`
    asks Ben, and is done once Cora believes she knows it."""
    async with Fabula(redis_url, Settings()) as fab:
        store = fab.store(await fab.create_story("lighthouse", "steps"))
        await fab.commit_scripted(store, "Cora went to the cove.")
        view = await author_view(store)
        dev = Situation("dev", view.beliefs["dev"], view.entities)
        told = step(dev, read_goal(view.entities, "tell Cora my secret"))
        assert told.action is not None
        assert (told.action.kind, told.action.listener, told.action.attribute) == (
            "tell",
            "cora",
            "secret",
        )
        assert told.action.claim == SECRETS["dev"]
        cora = Situation("cora", view.beliefs["cora"], view.entities)
        asked = step(cora, read_goal(view.entities, "learn Ben's secret"))
        assert asked.action is not None and asked.action.listener == "ben"
        await fab.commit_scripted(
            store, f"Ben privately told Cora that Ben's secret is that {LIE}."
        )
        view = await author_view(store)
        cora = Situation("cora", view.beliefs["cora"], view.entities)
        assert step(cora, read_goal(view.entities, "learn Ben's secret")).status == "done"


async def test_news_is_told_to_each_one_here_who_has_not_shared_it(redis_url: str) -> None:
    """`spread my secret` tells it privately to everyone the holder believes is with it,
    and once someone else comes, to them too; `spread Dev's secret` held by nobody but Dev
    tells nothing (Ada does not hold it: blocked); told, a listener passes it on to
    everyone with it but its owner."""
    async with Fabula(redis_url, Settings()) as fab:
        store = fab.store(await fab.create_story("lighthouse", "news"))
        view = await author_view(store)
        dev = Situation("dev", view.beliefs["dev"], view.entities)
        here = dev.others_here()
        assert here  # the lighthouse's opening leaves Dev with company
        spread = read_goal(view.entities, "spread my secret")
        told = spread_tellings(dev, spread)
        assert [(a.kind, a.listener, a.attribute, a.claim) for a in told] == [
            ("tell", c, "secret", SECRETS["dev"]) for c in here
        ]
        assert step(dev, spread).status == "act"
        passed_on = read_goal(view.entities, "spread Dev's secret")
        ada = Situation("ada", view.beliefs["ada"], view.entities)
        assert spread_tellings(ada, passed_on) == []
        assert step(ada, passed_on).status == "blocked"
        place = view.name(dev.here or "")
        newcomer = next(c for c in ("ada", "cora", "ben") if c not in here)
        name = view.name(newcomer)
        await fab.commit_scripted(
            store,
            f"{name} went to the {place}. Dev privately told {name} that Dev's secret is "
            f"that {SECRETS['dev']}.",
        )
        view = await author_view(store)
        heard = Situation(newcomer, view.beliefs[newcomer], view.entities)
        assert [a.listener for a in spread_tellings(heard, passed_on)] == sorted(here)
