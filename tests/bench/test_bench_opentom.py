"""The OpenToM bench on a small file of our own making (OpenToM-shaped, not its stories)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fabula.bench.common import part_of
from fabula.bench.opentom import (
    OtStory,
    load_opentom,
    macro_f1,
    run_opentom,
    setup_delta,
)
from fabula.cli import app
from fabula.errors import InvalidInput


def _questions(mover: str, observer: str, eoi: str, first: str, new: str) -> list[dict[str, str]]:
    """Every template of OpenToM's groups, answers left to the caller (``?``)."""
    m, o = mover, observer

    def q(file: str, text: str) -> dict[str, str]:
        return {"question": text, "answer": "?", "file": file, "type": file}

    end = "by the end of the story?"
    out = [
        q("location_cg_fo", f"From {m}'s perspective, is the {eoi} in its initial location {end}"),
        q("location_cg_fo", f"From {o}'s perspective, is the {eoi} in its initial location {end}"),
        q(
            "location_cg_so",
            f"From {m}'s perspective, does {o} think that the {eoi} is in its initial "
            f"location {end}",
        ),
        q(
            "location_cg_so",
            f"From {o}'s perspective, does {m} think that the {eoi} is in its initial "
            f"location {end}",
        ),
        q("location_fg_fo_new", f"From narrator's perspective, where is {eoi} located {end}"),
        q(
            "location_fg_fo_new",
            f"From narrator's perspective, where is {eoi} located in the beginning of the story?",
        ),
        q(
            "location_fg_fo_new",
            f"From {m}'s perspective, where is the {eoi} located precisely {end}",
        ),
        q(
            "location_fg_fo_new",
            f"From {o}'s perspective, where is the {eoi} located precisely {end}",
        ),
        q(
            "location_fg_so_new",
            f"From {m}'s perspective, where precisely does {o} think that the {eoi} is "
            f"located {end}",
        ),
        q(
            "location_fg_so_new",
            f"From {o}'s perspective, where precisely does {m} think that the {eoi} is "
            f"located {end}",
        ),
        q("multihop_fo", f"From {m}'s perspective, how does {first}'s fullness change {end}"),
        q("multihop_fo", f"From {o}'s perspective, how does {new}'s fullness change {end}"),
        q("multihop_fo", f"From {m}'s perspective, how would {eoi}'s accessibility change {end}"),
        q("multihop_fo", f"From {o}'s perspective, how would {eoi}'s accessibility change {end}"),
        q(
            "multihop_so",
            f"From {m}'s perspective, how does {o} think {first}'s fullness would change {end}",
        ),
        q(
            "multihop_so",
            f"From {o}'s perspective, how would {eoi}'s accessibility change for {m} {end}",
        ),
        q(
            "multihop_fo",
            f"From {m}'s perspective, how does new hiding spot's fullness change {end}",
        ),
        q(
            "attitude",
            f"As {o}, what is your attitude towards {m}'s action of moving {eoi} from {first} "
            f"to {new}?",
        ),
    ]
    return out


# Story A: the observer leaves before the move (a false belief); the entity goes into the
# mover's own box. Story B: the observer, who likes the entity, watches it go.
A_GOLD = [
    "No", "Yes", "Yes", "Yes",
    "Nora's box", "the crate", "Nora's box", "the crate", "the crate", "the crate",
    "less full", "equally full", "less accessible", "equally accessible",
    "equally full", "equally accessible", "more full", "neutral",
]  # fmt: skip
A_ANSWERS = [*A_GOLD[:16], None, "neutral"]  # "new hiding spot": not a container of the pack
B_GOLD = [
    "No", "No", "No", "No",
    "Ivo's shelf", "basket", "Ivo's shelf", "Ivo's shelf", "Ivo's shelf", "Ivo's shelf",
    "less full", "more full", "less accessible", "less accessible",
    "less full", "more accessible", "equally full", "negative",
]  # fmt: skip


PLUM = {  # Nora moves the plum from the crate to her box while Owen watches or not
    "mover": "Nora",
    "observer": "Owen",
    "eoi": "plum",
    "original_place": "the crate",
    "move_to_place": "Nora's box",
}


def _story(**fields: Any) -> dict[str, Any]:
    info = fields.pop("plot_info")
    questions = _questions(
        info["mover"], info["observer"], info["eoi"], info["original_place"], info["move_to_place"]
    )
    for q, gold in zip(questions, fields.pop("gold"), strict=True):
        q["answer"] = gold
    return {
        "plot": fields.pop("plot"),
        "plot_info": dict(info),
        "preferences": "not an input",
        "narrative": fields.pop("narrative"),
        "questions": questions,
    }


STORIES = {
    "a1": _story(
        plot="Nora entered the attic. Owen entered the attic. The plan: never read.",
        plot_info=PLUM,
        narrative=(
            "Nora and Owen entered the attic.\nThe plum is in the crate.\n"
            "Owen exited the attic.\n\nNora moved the plum to the Nora's box."
        ),
        gold=A_GOLD,
    ),
    "b2": _story(
        plot="Ivo entered the living_room. Pia entered the living_room.",
        plot_info={
            "mover": "Ivo",
            "observer": "Pia",
            "eoi": "scarf",
            "original_place": "basket",
            "move_to_place": "Ivo's shelf",
        },
        narrative=(
            "Ivo and Pia entered the living room. The scarf is in the basket. "
            "Pia likes the scarf.\n\nIvo moved the scarf to the Ivo's shelf."
        ),
        gold=B_GOLD,
    ),
    "c3": _story(  # prose nobody reads yet: every answer unanswered
        plot="Uma entered the garden. Teo entered the garden.",
        plot_info={
            "mover": "Uma",
            "observer": "Teo",
            "eoi": "kite",
            "original_place": "shed",
            "move_to_place": "trunk",
        },
        narrative=(
            "On a windy morning Uma carried the kite out of the shed and hid it away. "
            "The sky was grey above Uma."
        ),
        gold=A_GOLD[:4] + ["trunk", "shed"] + ["trunk"] * 4 + A_GOLD[10:],
    ),
}


def write(tmp_path: Path, stories: dict[str, Any] = STORIES) -> Path:
    path = tmp_path / "opentom.json"
    path.write_text(json.dumps(stories), encoding="utf-8")
    return path


async def _answers(
    tmp_path: Path, redis_url: str, key: str, story: dict[str, Any]
) -> list[str | None]:
    """The controlled reader's answers to one story's questions, in order."""
    answers = tmp_path / "answers.jsonl"
    await run_opentom(
        write(tmp_path, {key: story}),
        redis_url=redis_url,
        answers_out=answers,
        reader="controlled",
        quiet=True,
    )
    return [json.loads(line)["answer"] for line in answers.read_text().splitlines()]


def test_parsing_reads_templates_names_and_entered_places(tmp_path: Path) -> None:
    stories = load_opentom(write(tmp_path))
    assert [s.key for s in stories] == ["a1", "b2", "c3"]
    a = stories[0]
    assert (a.mover, a.observer, a.eoi, a.original, a.moved_to) == (
        "Nora",
        "Owen",
        "plum",
        "the crate",
        "Nora's box",
    )
    assert stories[1].places == ("living room",)
    forms = [q.form for q in a.questions]
    assert forms[:10] == ["coarse"] * 4 + ["fine", "initial"] + ["fine"] * 4
    mixed = ("fullness", "accessibility")
    assert forms[10:] == [*mixed[:1] * 2, *mixed[1:] * 2, *mixed, "fullness", "attitude"]
    assert [q.chain for q in a.questions[:4]] == [
        ("Nora",),
        ("Owen",),
        ("Nora", "Owen"),
        ("Owen", "Nora"),
    ]
    assert a.questions[5].chain == () and a.questions[5].perspective == "narrator"
    assert a.questions[15].chain == ("Owen", "Nora")  # accessibility "for Nora", as Owen sees it
    assert a.questions[17].chain == ("Owen",) and a.questions[17].perspective == "observer"
    assert a.questions[11].box == "Nora's box"
    assert [q.index for q in stories[1].questions][:2] == [18, 19]  # across the file


def test_the_pack_holds_names_only(tmp_path: Path) -> None:
    """No fact at turn 0: which container the entity starts in is never told."""
    story: OtStory = load_opentom(write(tmp_path))[0]
    delta = setup_delta(story)
    assert {(e.kind, e.name, e.is_container) for e in delta.entities} == {
        ("character", "Nora", False),
        ("character", "Owen", False),
        ("object", "plum", False),
        ("object", "crate", True),
        ("object", "Nora's box", True),
        ("place", "attic", False),
    }
    assert not delta.states and not delta.beliefs


def test_macro_f1_on_a_known_confusion() -> None:
    """gold a,a,b,b,c; predicted a,b,b,None,a: F1 a = 2/(2+1+1) = .5, b = 2/(2+1+1) = .5,
    c = 0 → .3333; the unanswered one is a miss of b, a false positive of nothing."""
    pairs = [("a", "a"), ("a", "b"), ("b", "b"), ("b", None), ("c", "a")]
    assert macro_f1(pairs, ("a", "b", "c")) == pytest.approx(0.3333)
    assert macro_f1([("Yes", "Yes"), ("No", "No")], ("Yes", "No")) == 1.0
    assert macro_f1([("Yes", None), ("No", None)], ("Yes", "No")) == 0.0


@pytest.mark.parametrize(
    ("breaking", "says"),
    [
        (lambda s: s["b2"].pop("narrative"), "story b2: field 'narrative'"),
        (lambda s: s["b2"]["plot_info"].pop("eoi"), "story b2: field 'plot_info.eoi'"),
        (
            lambda s: s["a1"]["questions"][3].update(question="Where is it?"),
            "story a1: field 'questions[3].question' is not a location_cg_so question",
        ),
        (
            lambda s: s["c3"]["questions"][0].update(
                question=s["c3"]["questions"][0]["question"].replace("Uma", "Zed")
            ),
            "story c3: field 'questions[0].question' names 'Zed'",
        ),
    ],
)
def test_a_malformed_file_is_one_line(
    tmp_path: Path, redis_url: str, breaking: Any, says: str
) -> None:
    stories = copy.deepcopy(STORIES)
    breaking(stories)
    path, out = write(tmp_path, stories), tmp_path / "out.json"
    with pytest.raises(InvalidInput, match="not an OpenToM file"):
        load_opentom(path)
    done = CliRunner().invoke(
        app,
        ["bench", "opentom", str(path), "--json", str(out)],
        env={"FABULA_REDIS_URL": redis_url, "FABULA_HOME": str(tmp_path)},
    )
    assert done.exit_code == InvalidInput.exit_code
    assert says in done.stderr and done.stderr.count("\n") == 1
    assert not out.exists()


async def test_end_to_end_answers_from_memory(redis_url: str, tmp_path: Path) -> None:
    out, answers = tmp_path / "out.json", tmp_path / "answers.jsonl"
    result = await run_opentom(
        write(tmp_path),
        redis_url=redis_url,
        json_out=out,
        answers_out=answers,
        reader="controlled",
        quiet=True,
    )
    assert result == json.loads(out.read_text())
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [set(r) for r in rows] == [{"key", "question", "answer"}] * 54
    got = {k: [r["answer"] for r in rows if r["key"] == k] for k in STORIES}
    assert got["a1"] == A_ANSWERS
    assert got["b2"] == [*B_GOLD[:16], None, "negative"]
    assert got["c3"] == [None] * 18  # nothing read: unanswered, never guessed
    ours = result["systems"]["controlled"]
    assert list(result["systems"])[:2] == ["controlled", "prose"]
    assert ours["all"]["answered"] == round(34 / 54, 4)  # 17 each of a1 and b2
    assert ours["all"]["accuracy"] == round(34 / 54, 4)  # every answer right; nulls wrong
    # location_cg_fo: gold No, Yes, No, No all right, then c3's No, Yes unanswered:
    # F1 No = 6/7 (3 right, 1 missed), F1 Yes = 2/3 (1 right, 1 missed)
    assert ours["groups"]["location_cg_fo"]["accuracy"] == round(4 / 6, 4)
    assert ours["groups"]["location_cg_fo"]["macro_f1"] == pytest.approx(
        (6 / 7 + 2 / 3) / 2, abs=1e-3
    )
    assert ours["by_perspective"]["narrator"]["accuracy"] == round(4 / 6, 4)
    assert ours["reader_ms_per_1000_words"] > 0 and ours["failed_stories"] == []
    assert ours["all"]["assumed"] == 0.0  # c3's chains hold nothing, and nothing is answered
    parts = ours["parts"]
    counted = {p: parts[p]["all"]["n"] for p in ("working", "checking")}
    assert counted == {
        p: 18 * sum(part_of(k) == p for k in STORIES) for p in ("working", "checking")
    }
    nothing = result["systems"]["nothing_read"]
    assert nothing["groups"]["location_cg_fo"]["accuracy"] == round(2 / 6, 4)
    assert nothing["all"]["answered"] == 1.0
    assert result["systems"]["majority"]["groups"]["location_cg_fo"]["accuracy"] == round(4 / 6, 4)


async def test_paragraphs_as_turns_read_the_same(redis_url: str, tmp_path: Path) -> None:
    result = await run_opentom(
        write(tmp_path, {"a1": STORIES["a1"]}),
        redis_url=redis_url,
        reader="controlled",
        mode="paragraphs",
        quiet=True,
    )
    assert result["systems"]["controlled"]["all"]["accuracy"] == round(17 / 18, 4)


def test_the_model_memory_builder_reads_the_same_narratives(redis_url: str, tmp_path: Path) -> None:
    """With --base-url the model memory-builder is one more system of the run: the prose
    reader reads first and the model is asked only about the sentences it leaves as
    narration (c3's last), here reading nothing: the prose reader's figures."""
    from fabula.testing.fake_openai import FakeOpenAI, Reply

    out = tmp_path / "out.json"
    args = ["bench", "opentom", str(write(tmp_path)), "--reader", "controlled", "--json", str(out)]
    with FakeOpenAI() as server:
        server.fallback = lambda body: Reply(content='{"actions": []}')
        done = CliRunner().invoke(
            app,
            [*args, "--base-url", server.base_url, "--model", "fake"],
            env={"FABULA_REDIS_URL": redis_url, "FABULA_HOME": str(tmp_path)},
        )
        asked = [json.dumps(r) for r in server.requests]
    assert done.exit_code == 0, done.output
    systems = json.loads(out.read_text())["systems"]
    assert list(systems) == ["controlled", "prose", "phased", "model", "majority", "nothing_read"]
    assert systems["model"]["failed_stories"] == []
    assert systems["model"]["groups"] == systems["prose"]["groups"]  # the prose reader first
    assert asked and all("The sky was grey" in r for r in asked)


async def test_second_order_with_nothing_held_and_coarse_against_the_story(
    redis_url: str, tmp_path: Path
) -> None:
    """Owen sees the plum in the crate alone and leaves; Nora comes in and moves it. Owen
    knows of nothing Nora perceived: to Owen, Nora holds the initial location as Owen knows
    it (not unanswered). Nora never saw the crate: her first belief is the box, yet the plum
    is not in its initial location (the story's) from her perspective."""
    story = _story(
        plot="Owen entered the attic. Nora entered the attic.",
        plot_info=PLUM,
        narrative=(
            "Owen entered the attic.\nThe plum is in the crate.\nOwen exited the attic.\n"
            "Nora entered the attic.\nNora moved the plum to the Nora's box."
        ),
        gold=A_GOLD,
    )
    got = await _answers(tmp_path, redis_url, "d4", story)
    assert got[0] == "No"  # Nora: her first belief is the box, the story's first the crate
    assert got[1] == "Yes"  # Owen
    assert got[3] == "Yes" and got[9] == "the crate"  # Owen on Nora: nothing held


async def test_a_character_that_perceived_nothing_knows_of_no_change(
    redis_url: str, tmp_path: Path
) -> None:
    """Owen comes and goes while the plum lies unseen by him: he perceived nothing about
    it, so no change to it either: to him it is where the story first had it."""
    story = _story(
        plot="Nora entered the attic. Owen entered the attic.",
        plot_info=PLUM,
        narrative=(
            "Nora entered the attic.\nThe plum is in the crate.\nNora exited the attic.\n"
            "Owen entered the attic.\nOwen exited the attic.\nNora entered the attic.\n"
            "Nora moved the plum to the Nora's box."
        ),
        gold=A_GOLD,
    )
    got = await _answers(tmp_path, redis_url, "e5", story)
    assert got[1] == "Yes" and got[7] == "the crate"  # Owen: no change he knows of
    assert got[0] == "No" and got[6] == "Nora's box"  # Nora saw it all
    result = await run_opentom(
        write(tmp_path, {"e5": story}), redis_url=redis_url, reader="controlled", quiet=True
    )
    ours = result["systems"]["controlled"]
    # Owen's first-order answers (and the chains about him) are assumed, Nora's are read
    assert ours["by_perspective"]["observer"]["assumed"] > 0
    assert (
        ours["by_perspective"]["mover"]["assumed"] < ours["by_perspective"]["observer"]["assumed"]
    )
    assert ours["all"]["right_assumed"] <= ours["all"]["assumed"] < 1.0
