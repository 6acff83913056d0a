"""Ticks at a person's pace (issue 47: "approve a whole tick or scene by scene, edit a
scene ... or let it run autonomous"): a tick played and kept, then approved exactly as
shown, a scene edited, or the tick rejected; each decision names the tick it was shown.

The story is the shipped town (every place plays its scene), offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabula.errors import Conflict, InvalidInput, NotFound, TurnConflict
from fabula.graph.service import Fabula
from fabula.graph.service.handles import StoryRef
from fabula.memory.ticks import pending_tick, tick_records
from fabula.testing.cli import Cli


async def _town(fab: Fabula) -> StoryRef:
    return await fab.create_story("town", "harvest")


async def test_a_kept_tick_commits_nothing_until_approved_as_shown(offline_fab: Fabula) -> None:
    story = await _town(offline_fab)
    store = offline_fab.store(story)
    kept = await offline_fab.draft_tick(story)
    assert kept.status == "pending" and kept.id and kept.tick == 1
    played = [s for s in kept.scenes if s.turn is not None]
    assert len(played) >= 2  # every place with something to do plays, at once
    assert await store.head() == 0 and await tick_records(store) == []  # nothing written
    assert (await offline_fab.read(story).pending_tick()) == kept
    with pytest.raises(Conflict, match="waits for a decision"):
        await offline_fab.draft_tick(story)  # one tick waits at a time

    with pytest.raises(Conflict, match="no longer waits"):
        await offline_fab.approve_tick(story, expect="1.000000000000")
    done = await offline_fab.approve_tick(story, expect=kept.id)
    assert done.status == "committed"
    texts = await offline_fab.read(story).turns(1, len(played))
    assert {t.turn: t.text for t in texts} == kept.texts  # exactly what was shown
    [record] = await tick_records(store)
    assert record.tick == 1 and [s.turn for s in record.scenes] == [s.turn for s in kept.scenes]
    assert await offline_fab.read(story).pending_tick() is None
    with pytest.raises(NotFound):
        await offline_fab.approve_tick(story)
    nxt = await offline_fab.draft_tick(story)
    assert nxt.tick == 2


async def test_a_scene_edited_is_read_against_the_tick_and_kept_to_its_cast(
    offline_fab: Fabula,
) -> None:
    story = await _town(offline_fab)
    kept = await offline_fab.draft_tick(story)
    scene = next(s for s in kept.scenes if s.turn is not None and len(s.cast) >= 2)
    first, second = scene.cast[:2]
    names = {c: c.capitalize() for c in scene.cast}
    text = f"{names[first]} smiled at {names[second]}."
    edited = await offline_fab.edit_tick(story, scene.place, text, expect=kept.id)
    assert edited.id != kept.id and edited.status == "pending"
    assert edited.texts[scene.turn] == text  # type: ignore[index]
    others = {t: x for t, x in kept.texts.items() if t != scene.turn}
    assert {t: x for t, x in edited.texts.items() if t != scene.turn} == others
    with pytest.raises(Conflict):  # the id shown before the edit no longer decides
        await offline_fab.approve_tick(story, expect=kept.id)

    # someone of another place acting here is refused, naming them; nothing changes
    outsider = next(c for s in kept.scenes if s.place != scene.place for c in s.cast)
    with pytest.raises(InvalidInput, match="is not in the scene at"):
        await offline_fab.edit_tick(
            story, scene.place, f"{outsider.capitalize()} went to the inn.", expect=edited.id
        )
    quiet = [s.place for s in kept.scenes if s.turn is None]
    if quiet:
        with pytest.raises(InvalidInput, match="it was quiet"):
            await offline_fab.edit_tick(story, quiet[0], text)
    with pytest.raises(InvalidInput, match="no played scene at 'nowhere'"):
        await offline_fab.edit_tick(story, "nowhere", text)
    still = await offline_fab.read(story).pending_tick()
    assert still is not None and (still.id, still.texts) == (edited.id, edited.texts)

    await offline_fab.approve_tick(story, expect=edited.id)
    assert (await offline_fab.read(story).turn(scene.turn)) == text  # type: ignore[arg-type]


async def test_a_rejected_tick_leaves_nothing_and_a_stale_one_cannot_commit(
    offline_fab: Fabula,
) -> None:
    story = await _town(offline_fab)
    store = offline_fab.store(story)
    kept = await offline_fab.draft_tick(story)
    dropped = await offline_fab.reject_tick(story, expect=kept.id)
    assert dropped.status == "rejected"
    assert await store.head() == 0 and await pending_tick(store) is None

    # a tick kept while another writer moved the branch on can never be committed
    stale = await offline_fab.draft_tick(story)
    with pytest.raises(Conflict, match="waits for a decision"):
        await offline_fab.tick(story, 1)  # no autonomous tick past one that waits
    await offline_fab.run(story, auto=True)  # a turn of narrative: the branch moves on
    with pytest.raises(TurnConflict):
        await offline_fab.approve_tick(story, expect=stale.id)
    assert await pending_tick(store) is None  # dropped with the refusal
    assert await tick_records(store) == [] and await store.head() == 1


async def test_an_approval_repeated_after_its_commit_writes_nothing_twice(
    offline_fab: Fabula,
) -> None:
    """Exactly once: a process that committed the tick and died before it dropped it
    leaves it waiting; approving it again is a duplicate, never a second write."""
    from fabula.graph.ticks import commit_scenes

    story = await _town(offline_fab)
    store = offline_fab.store(story)
    kept = await offline_fab.draft_tick(story)
    waiting = await pending_tick(store)
    assert waiting is not None
    ctx = offline_fab.context(auto=False)
    await commit_scenes(ctx, store, waiting.record, waiting.deltas)  # the commit, no drop
    head = await store.head()
    again = await offline_fab.approve_tick(story, expect=kept.id)
    assert again.status == "duplicate"
    assert await store.head() == head and len(await tick_records(store)) == 1


def test_run_keeps_a_tick_for_approval_and_the_decisions_take_it(
    redis_url: str, tmp_path: Path
) -> None:
    """`run` of a story in ticks stops at a tick to approve, as it stops at a turn;
    `pending`, `edit --scene`, `approve` and `reject` take it; `run --auto` commits."""
    cli = Cli(redis_url, tmp_path)
    wide = {"COLUMNS": "250"}
    assert cli("new", "--world", "town", "--id", "harvest").exit_code == 0
    ran = cli("run", "harvest", **wide)
    assert ran.exit_code == 0 and "tick 1 awaits approval" in ran.stdout
    assert "tick 1 awaits approval" in cli("pending", **wide).stdout
    said = cli.fails("edit", "harvest", "--scene", "nowhere", "--text", "Tom waved.")
    assert "no played scene at 'nowhere'" in said
    assert cli("reject", "harvest").exit_code == 0
    assert "nothing awaits approval" in cli("pending").stdout
    assert cli("run", "harvest", **wide).exit_code == 0
    approved = cli("approve", "harvest", **wide)
    assert approved.exit_code == 0 and "tick 1" in approved.stdout
    auto = cli("run", "harvest", "--auto", "--turns", "2", **wide)
    assert auto.exit_code == 0 and "tick 3" in auto.stdout
    assert "nothing awaits approval" in cli("pending").stdout


async def test_a_played_character_plays_its_part_in_its_scene_of_the_tick(
    offline_fab: Fabula,
) -> None:
    """A played character's part, given with the tick, is played in its own scene and in
    no other; a scene that would have been quiet plays for it (the turns numbered again);
    a part for a character not played is refused, naming it; nothing is committed."""
    story = await _town(offline_fab)
    plain = await offline_fab.draft_tick(story)
    await offline_fab.reject_tick(story, plain.id)
    quiet = next(s for s in plain.scenes if s.turn is None and s.cast)
    busy = next(s for s in plain.scenes if s.turn is not None and len(s.cast) >= 2)
    loner, player = quiet.cast[0], busy.cast[0]
    await offline_fab.set_played(story, [loner, player])
    with pytest.raises(InvalidInput, match="is not played"):
        await offline_fab.draft_tick(story, {busy.cast[1]: "Someone waved."})
    parts = {
        loner: f"{loner.capitalize()} sang a song.",
        player: f"{player.capitalize()} waved at {busy.cast[1].capitalize()}.",
    }
    kept = await offline_fab.draft_tick(story, parts)
    scenes = {s.place: s for s in kept.scenes}
    assert scenes[quiet.place].turn is not None  # played for its part
    for place, character in ((quiet.place, loner), (busy.place, player)):
        text = kept.texts[scenes[place].turn]  # type: ignore[index]
        assert parts[character] in text
        others = [
            t for p, s in scenes.items() if p != place and s.turn for t in [kept.texts[s.turn]]
        ]
        assert not any(parts[character] in t for t in others)
    turns = sorted(s.turn for s in kept.scenes if s.turn is not None)
    assert turns == list(range(1, len(turns) + 1))  # consecutive after the head
    assert await offline_fab.store(story).head() == 0


async def test_scene_by_scene_the_last_approval_commits_the_tick(offline_fab: Fabula) -> None:
    """Each played scene approved alone (an approval changes no text: the id stays); an
    edit takes its scene's approval back; the last scene approved commits the tick, as
    shown; a quiet or unknown place is refused."""
    story = await _town(offline_fab)
    store = offline_fab.store(story)
    kept = await offline_fab.draft_tick(story)
    played = [s.place for s in kept.scenes if s.turn is not None]
    first = await offline_fab.approve_tick(story, kept.id, played[0])
    assert first.status == "pending" and first.id == kept.id and first.approved == [played[0]]
    with pytest.raises(InvalidInput, match="no played scene"):
        await offline_fab.approve_tick(story, kept.id, "nowhere")
    scene = next(s for s in kept.scenes if s.place == played[0])
    text = f"{scene.cast[0].capitalize()} looked around."
    edited = await offline_fab.edit_tick(story, played[0], text, expect=kept.id)
    assert edited.approved == []  # read again: to be approved again
    for place in played[:-1]:
        step = await offline_fab.approve_tick(story, edited.id, place)
        assert step.status == "pending"
    assert await store.head() == 0  # nothing committed before the last scene
    done = await offline_fab.approve_tick(story, edited.id, played[-1])
    assert done.status == "committed"
    assert await offline_fab.read(story).turn(scene.turn) == text  # type: ignore[arg-type]
    assert len(await tick_records(store)) == 1 and await pending_tick(store) is None
