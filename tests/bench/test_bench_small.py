"""Each benchmark end to end on a small excerpt of our own making, through real Redis."""

from __future__ import annotations

import json
from pathlib import Path

from fabula.bench.hitom import run_hitom
from fabula.bench.longstory import run_longstory
from fabula.bench.tomi import TYPES, run_tomi

TOMI_STORY = [
    "Nora entered the attic.",
    "Owen entered the attic.",
    "The plum is in the red_box.",
    "Nora exited the attic.",
    "Owen hates the plum",
    "Owen moved the plum to the blue_tin.",
]
TOMI_QUESTIONS = [  # question, answer, trace type
    ("Where was the plum at the beginning?", "red_box", "memory,false_belief"),
    ("Where is the plum really?", "blue_tin", "reality,false_belief"),
    ("Where will Owen look for the plum?", "blue_tin", "first_order_0_no_tom,false_belief"),
    ("Where will Nora look for the plum?", "red_box", "first_order_1_tom,false_belief"),
    (
        "Where does Owen think that Nora searches for the plum?",
        "red_box",
        "second_order_0_tom,false_belief",
    ),
    (
        "Where does Nora think that Owen searches for the plum?",
        "red_box",
        "second_order_1_no_tom,false_belief",
    ),
]


def write_tomi(directory: Path) -> Path:
    lines: list[str] = []
    trace: list[str] = []
    for question, gold, kind in TOMI_QUESTIONS:
        lines += [f"{i} {s}" for i, s in enumerate(TOMI_STORY, start=1)]
        lines.append(f"{len(TOMI_STORY) + 1} {question}\t{gold}\t1")
        trace.append(f"enter_agent_0,enter_agent_1,agent_1_exits,agent_0_moves_obj,{kind}")
    path = directory / "mini.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.with_suffix(".trace").write_text("\n".join(trace) + "\n", encoding="utf-8")
    return path


async def test_tomi_small(redis_url: str, tmp_path: Path) -> None:
    """All six question types answered by the rules; the shared memory fails false beliefs."""
    out, answers = tmp_path / "tomi.json", tmp_path / "tomi.jsonl"
    result = await run_tomi(
        write_tomi(tmp_path), redis_url=redis_url, json_out=out, answers_out=answers, quiet=True
    )
    assert result == json.loads(out.read_text())
    assert result["benchmark"] == "tomi" and result["items"] == 6
    assert result["accuracy"] == 1.0
    assert set(result["by_type"]) == set(TYPES)  # every type of question
    assert result["seconds"] >= 0 and result["stories"] == 1
    shared = result["baselines"]["shared_memory"]
    assert shared["by_type"]["first_order_false_belief"] == 0.0
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [r["index"] for r in rows] == list(range(6))
    assert {"index", "question", "answer", "gold"} <= set(rows[0])


HITOM_STORY = "\n".join(
    [
        "1 Ava, Ben and Cal entered the pantry.",
        "2 The pear is in the red_box.",
        "3 Ava made no movements and stayed in the pantry for 1 minute.",
        "4 Ava exited the pantry.",
        "5 Ben moved the pear to the green_tin.",
        "6 Ben exited the pantry.",
        "7 Cal moved the pear to the blue_jar.",
        "8 Cal exited the pantry.",
        "9 Ava, Ben and Cal entered the waiting_room.",
        "10 Dan saw a cat.",
        "11 Ben publicly claimed that pear is in the red_box.",
        "12 Cal privately told Ben that the pear is in the green_tin.",
    ]
)
HITOM_QUESTIONS = [  # question, order, answer
    ("Where is the pear really?", 0, "blue_jar"),
    ("Where does Ava really think the pear is?", 1, "red_box"),  # told by Ben, fresher
    ("Where does Cal really think the pear is?", 1, "blue_jar"),  # left last: no uptake
    ("Where does Ben really think the pear is?", 1, "green_tin"),  # Cal is fresher
    ("Where does Cal think Ben thinks the pear is?", 2, "green_tin"),
    ("Where does Ava think Ben thinks the pear is?", 2, "red_box"),
    ("Where does Cal think Ben thinks Ava thinks the pear is?", 3, "red_box"),
    ("Where does Cal think Ben thinks Cal thinks Ava thinks the pear is?", 4, "red_box"),
]


async def test_hitom_small(redis_url: str, tmp_path: Path) -> None:
    path = tmp_path / "mini.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "deception": order > 1,
                    "story_length": 1,
                    "question_order": order,
                    "story": HITOM_STORY,
                    "question": q,
                    "choices": "",
                    "answer": gold,
                }
            )
            + "\n"
            for q, order, gold in HITOM_QUESTIONS
        ),
        encoding="utf-8",
    )
    out, answers = tmp_path / "hitom.json", tmp_path / "hitom.jsonl"
    result = await run_hitom(
        path, redis_url=redis_url, json_out=out, answers_out=answers, quiet=True
    )
    assert result == json.loads(out.read_text())
    assert result["benchmark"] == "hitom" and result["items"] == len(HITOM_QUESTIONS)
    assert result["accuracy"] == 1.0, result["misses"]
    assert set(result["by_order"]) == {"0", "1", "2", "3", "4"}
    assert set(result["by_deception"]) == {"true", "false"}
    assert result["baselines"]["shared_memory"]["accuracy"] < 1.0
    assert len(answers.read_text().splitlines()) == len(HITOM_QUESTIONS)


LONG_STORY = [
    {
        "type": "meta",
        "title": "A small house",
        "characters": ["Leo", "Mara", "Iona"],
        "places": ["study", "kitchen"],
        "containers": {"study": ["desk_drawer", "hollow_book"]},
    },
    {
        "type": "turn",
        "turn": 1,
        "text": "Leo went to the study. Mara went to the kitchen. "
        "Iona went to the kitchen. A cold wind came off the hills.",
    },
    {
        "type": "turn",
        "turn": 2,
        "text": "Leo saw that the symbol of the stamp is a silver heron. "
        'The colour of the scarf is crimson. "That was strange," said Mara.',
    },
    {
        "type": "turn",
        "turn": 3,
        "text": "Iona saw that the state of the lamp is broken. "
        "Leo put the recorder in the hollow_book. Mara thought about the recorder for a while.",
    },
    {
        "type": "turn",
        "turn": 4,
        "text": "Leo privately told Mara that the symbol of the stamp "
        "is a silver heron. Iona privately told Leo that the state of the lamp is working.",
    },
    {
        "type": "probe",
        "turn": 1,
        "asker": None,
        "question": "What is the symbol of the stamp?",
        "expect": "refuse",
        "answer": "a silver heron",
        "kind": "as_of",
    },
    {
        "type": "probe",
        "turn": 2,
        "asker": None,
        "question": "What is the symbol of the stamp?",
        "expect": "answer",
        "answer": "a silver heron",
        "kind": "retention",
    },
    {
        "type": "probe",
        "turn": 3,
        "asker": "Leo",
        "question": "Where is the recorder?",
        "expect": "answer",
        "answer": "hollow_book",
        "kind": "known",
    },
    {
        "type": "probe",
        "turn": 3,
        "asker": "Mara",
        "question": "Where is the recorder?",
        "expect": "refuse",
        "answer": "hollow_book",
        "kind": "unknown",
    },
    {
        "type": "probe",
        "turn": 3,
        "asker": "Mara",
        "question": "What is the symbol of the stamp?",
        "expect": "refuse",
        "answer": "a silver heron",
        "kind": "unknown",
    },
    {
        "type": "probe",
        "turn": 4,
        "asker": "Mara",
        "question": "What is the symbol of the stamp?",
        "expect": "answer",
        "answer": "a silver heron",
        "kind": "known",
    },
    {
        "type": "probe",
        "turn": 4,
        "asker": None,
        "question": "What is the state of the lamp?",
        "expect": "answer",
        "answer": "broken",
        "kind": "reality",
    },
    {
        "type": "probe",
        "turn": 4,
        "asker": "Leo",
        "question": "What is the state of the lamp?",
        "expect": "answer",
        "answer": "working",
        "kind": "false_belief",
    },
    {
        "type": "probe",
        "turn": 4,
        "asker": "Iona",
        "question": "What is the state of the lamp?",
        "expect": "answer",
        "answer": "broken",
        "kind": "known",
    },
]


async def test_longstory_small(redis_url: str, tmp_path: Path) -> None:
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LONG_STORY), encoding="utf-8")
    out, answers = tmp_path / "ls.json", tmp_path / "ls.jsonl"
    result = await run_longstory(
        path, redis_url=redis_url, json_out=out, answers_out=answers, quiet=True
    )
    assert result == json.loads(out.read_text())
    assert result["benchmark"] == "longstory" and result["probes"] == 9
    assert result["answers"]["accuracy"] == 1.0, result["misses"]
    assert set(result["answers"]["by_kind"]) == {
        "retention",
        "known",
        "unknown",
        "reality",
        "false_belief",
        "as_of",
    }
    shared = result["baselines"]["shared_memory"]
    assert shared["by_kind"]["unknown"] == 0.0 and shared["by_kind"]["false_belief"] == 0.0
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [r["index"] for r in rows] == list(range(9))
    assert rows[3]["answer"] == "unknown" and rows[3]["gold"] == "unknown"


async def test_model_small(redis_url: str, tmp_path: Path) -> None:
    """`fabula bench model` on a few turns: every turn commits what its checkpoint holds or
    leaves the story as it was; no leak; the JSON has the issue's shape."""
    from fabula.bench.model import run_model

    out = tmp_path / "model.json"
    result = await run_model(redis_url, 8, seed=3, json_out=out)
    assert json.loads(out.read_text()) == result
    for run in (result, result["baselines"]["no_faults"]):
        assert run["turns"] == 8
        assert run["committed"] + run["failed"] + run["abandoned"] == 8
        assert run["leaks"] == run["partial_commits"] == run["mismatched"] == 0
        assert set(run["tokens"]) == {"planner", "character", "writer", "memory_builder"}
        assert run["problems"] == []
    assert result["baselines"]["no_faults"]["committed"] == 8
    assert result["baselines"]["no_faults"]["retries"] == 0
    assert result["benchmark"] == "model" and result["faults_injected"]


async def test_model_against_a_server(redis_url: str, tmp_path: Path) -> None:
    """`fabula bench model --base-url URL --model NAME` against the test server playing a
    model (no faults): the issue's JSON shape, every turn committed, the usage by role the
    server's, the planner's goal (marked SECRET) never in a character's prompt."""
    import random

    from fabula.bench.model import NO_FAULTS, Server, StoryModel, run_server, schema_modes
    from fabula.testing.fake_openai import FakeOpenAI
    from fabula.worlds.loader import load_world

    out = tmp_path / "server.json"
    with FakeOpenAI() as server:
        server.fallback = StoryModel(load_world("lighthouse"), NO_FAULTS, random.Random(3))
        url = server.base_url
        result = await run_server(redis_url, Server(url, "fake-model"), turns=3, json_out=out)
    assert json.loads(out.read_text()) == result
    assert result["server"] == url and result["model"] == "fake-model"
    runs = [result, *([result["baseline"]] if len(schema_modes()) == 2 else [])]
    for run in runs:
        assert run["turns"] == 3 and run["committed"] == 3 and run["failed"] == 0
        assert run["leaks"] == run["mismatched"] == run["partial_commits"] == 0
        assert run["critic_errors"] == {} and run["critic_samples"] == []
        assert set(run["by_role"]) == {"planner", "character", "writer", "memory_builder"}
        for role in run["by_role"].values():
            assert set(role) >= {
                "first_valid",
                "reasks",
                "truncated",
                "p50_s",
                "p95_s",
                "tokens_in",
                "tokens_out",
            }
            assert role["first_valid"] == 1.0 and role["reasks"] == 0
        tokens_in = sum(r["tokens_in"] for r in run["by_role"].values())
        assert tokens_in == run["server_tokens"]["prompt"] > 0
        # what the memory-builder's model was asked a turn (issue 33: the prose reader first)
        reader = run["by_role"]["memory_builder"]
        calls = reader["first_replies"] + reader["reasks"]
        assert run["memory_builder_calls_per_turn"] == round(calls / 3, 2)
        spent = reader["tokens_in"] + reader["tokens_out"]
        assert run["memory_builder_tokens_per_turn"] == round(spent / 3, 1)


def test_real_leaks_catch_a_prompt_or_schema_telling_too_much() -> None:
    """The leak checker of `bench model --base-url` reads real requests: an unwitnessed
    sentence, the planner's goal, or an entity the schema names that the prompt never
    mentions is each a leak."""
    from fabula.bench.model import real_leaks
    from fabula.worlds.loader import load_world

    pack = load_world("lighthouse")
    ada = pack.characters[0]
    prompt = f"## Who you are\n{ada.name} (id ada)\nYou remember: Ben hid the logbook."
    schema = {"type": "object", "properties": {"target": {"enum": ["cove"]}}}
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "CharacterProposal", "schema": schema},
        },
    }
    goal = "Ben must never learn where the logbook is"
    problems: list[str] = []
    assert real_leaks([body], pack, {"ada": set()}, [goal], [], problems) == 1  # the schema
    assert "cove" in problems[0]
    told = {"ada": {"Ben hid the logbook."}}
    body["messages"][0]["content"] = prompt + " cove. " + goal
    assert real_leaks([body], pack, told, [goal], [], []) == 2


def test_load_small(redis_url: str, tmp_path: Path) -> None:
    """`bench load`: stories over two processes, every turn committed once, minds isolated,
    the JSON in the issue's shape (with its one-process baseline)."""
    from fabula.bench.load import run_load

    out = tmp_path / "load.json"
    result = run_load(redis_url, stories=4, turns=2, workers=2, json_out=str(out))
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(result))
    for key in ("benchmark", "stories", "turns", "committed", "duplicates"):
        assert key in written
    assert (written["benchmark"], written["stories"], written["turns"]) == ("load", 4, 8)
    assert written["committed"] == 8 and written["duplicates"] == 0
    assert written["turns_per_second"] > 0 and written["p95_ms"] > 0
    for run in (written["run"], written["baselines"]["one_process"]):
        assert run["missing"] == run["misfiled_events"] == run["cross_story_reads"] == 0


async def test_lore_small(redis_url: str, tmp_path: Path) -> None:
    from fabula.bench.lore import run_lore

    out = tmp_path / "lore.json"
    result = await run_lore([60], 2, str(out), url=redis_url)
    assert json.loads(out.read_text())["activation"][0]["entries"] == 60
    (row,) = result["activation"]
    assert row["same"] and row["activated"] > 0
    (assembled,) = result["assembly"]
    assert assembled["world_lore_ms"]["p50"] > 0


def test_the_model_bench_gives_the_writer_its_own_limit() -> None:
    """`bench model --writer-tokens N` limits the writer's replies alone: every other role
    keeps --max-tokens (the memory-builder's lists are sized from it)."""
    from fabula.bench.model import Server, server_settings
    from fabula.settings import MODEL_TIMEOUT_S, WRITER_MAX_TOKENS

    server = Server("http://y/v1", "m", max_tokens=512, writer_tokens=160)
    settings = server_settings("redis://x", server, "story")
    assert settings.model_for("writer").max_tokens == 160
    assert settings.model_for("memory_builder").max_tokens == 512
    assert settings.model_for("planner").max_tokens == 512
    unset = Server("http://y/v1", "m", writer_tokens=None)
    assert server_settings("redis://x", unset, "story").roles == {}
    # by default the writer's limit is the settings' own (what worked on llama.cpp)
    default = server_settings("redis://x", Server("http://y/v1", "m"), "story")
    assert default.model_for("writer").max_tokens == WRITER_MAX_TOKENS
    assert Server("http://y/v1", "m").timeout_s == MODEL_TIMEOUT_S


def test_the_model_bench_counts_what_sent_drafts_back() -> None:
    """Against a real engine the turns failed after drafts were sent back, and nobody could
    say why: the critic's errors are counted by kind, the first few kept to read."""
    from fabula.agents.contracts import Finding
    from fabula.bench.model import ServerRun

    run = ServerRun()
    wrong = Finding(
        kind="contradiction",
        severity="error",
        message="the lamp is not there",
        quote="Cora took the lamp.",
    )
    run.critiqued(4, [wrong, Finding(kind="unparsed", severity="warning", message="kept")])
    run.critiqued(5, [wrong, Finding(kind="knowledge", severity="error", message="unknown")])
    assert run.critic_errors == {"contradiction": 2, "knowledge": 1}
    assert run.critic_samples[0] == (
        'turn 4: contradiction: the lamp is not there — "Cora took the lamp."'
    )


def test_bench_model_options_are_checked_before_anything_runs(tmp_path: Path) -> None:
    """`bench model`: --model needs --base-url and --base-url needs --model; --reader is
    prose or controlled, --schemas story, generic or both; each a usage error (2) naming
    the option, before any server is asked."""
    from typer.testing import CliRunner

    from fabula.cli import app

    base = ["bench", "model", "--base-url", "http://127.0.0.1:9/v1"]
    cases = [
        (["bench", "model", "--model", "m"], "--model needs --base-url"),
        (base, "--base-url needs --model NAME"),
        ([*base, "--model", "m", "--reader", "loud"], "prose or controlled"),
        ([*base, "--model", "m", "--schemas", "story,odd"], "story, generic or both"),
        ([*base, "--model", "m", "--schemas", ","], "story, generic or both"),
    ]
    for args, needle in cases:
        done = CliRunner().invoke(app, args, env={"FABULA_HOME": str(tmp_path)})
        assert done.exit_code == 2, (args, done.output)
        assert needle in " ".join(done.output.split()), (args, done.output)


def test_commands_bench_runs_its_commands_offline() -> None:
    """`bench commands` times the commands with no model: every variable that would
    configure one (or an embedder) is dropped from their environment, the rest kept."""
    from fabula.bench.commands import offline_environment

    env = offline_environment(
        {
            "FABULA_MODEL": "m",
            "FABULA_MODEL_BASE_URL": "http://127.0.0.1:9/v1",
            "FABULA_EMBEDDING_MODEL": "e",
            "OPENAI_API_KEY": "k",
            "FABULA_HOME": "/tmp/h",
            "PATH": "/bin",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    assert env == {"FABULA_HOME": "/tmp/h", "PATH": "/bin"}  # bytecode kept, as by default
    cold = offline_environment({"PYTHONDONTWRITEBYTECODE": "1"}, bytecode=False)
    assert cold == {"PYTHONDONTWRITEBYTECODE": "1"}
