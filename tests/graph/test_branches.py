"""Branches that pursue a hypothesis, through the real graph, store and Redis."""

from __future__ import annotations

from fabula.graph.service import Fabula
from fabula.memory.projections import project_hypotheses, project_world
from fabula.settings import Settings
from fabula.worlds.loader import load_world


async def _story(fab: Fabula, story: str) -> None:
    pack = load_world("hollow_book")
    store = await fab.create_story(pack, story, opening=False)
    for text in pack.opening.turns:
        await fab.commit_scripted(store, text)
    assert (await fab.run(store, auto=True)).outcome == "committed"


class TestForkRealise:
    async def test_branch_pursues_hypothesis_parent_unchanged(self, redis_url: str) -> None:
        """A branch forked to realise "Mara ends up with the brass key" gives Mara that aim;
        the hypothesis is marked realised only when committed text makes it true, and the
        parent branch never sees any of it."""
        async with Fabula(redis_url, Settings()) as fab:
            await _story(fab, "tale")
            main = fab.store("tale")
            at = await main.head()
            hyps = await project_hypotheses(main)
            mara = next(h for h in hyps.values() if h.premise.startswith("Mara ends up"))
            assert mara.status == "open"
            main_world_before = (await project_world(main)).states

            branch = fab.store(await fab.fork(main, at, realise=mara.id))
            assert (await branch.branches())[branch.branch].pursue == mara.id
            for _ in range(4):
                await fab.run(branch, auto=True)
                if (await project_hypotheses(branch))[mara.id].status == "realised":
                    break
            realised = (await project_hypotheses(branch))[mara.id]
            assert realised.status == "realised"
            assert realised.realised_turn is not None and realised.realised_turn > at
            assert (await project_world(branch)).where("brass_key") == "mara"
            texts = [t.text for t in await branch.turn_texts(at + 1)]
            assert any("Mara took the brass key" in t for t in texts)
            # before it was realised, the branch's H shows it open
            before = await project_hypotheses(branch, as_of=realised.realised_turn - 1)
            assert before[mara.id].status == "open"
            # the parent is untouched
            assert (await project_hypotheses(main))[mara.id].status == "open"
            assert (await project_world(main)).states == main_world_before
            assert await main.head() == at
