"""``fabula bench locomo`` on a tiny LoCoMo-shaped file of our own, in this process, through
real Redis; with ``--embeddings`` against the local test server (dense retrieval)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from fabula.cli import app
from fabula.errors import InvalidInput, ModelUnavailable
from fabula.testing.model import FakeOpenAI

CALM = {"relaxed": "calm", "unwind": "calm"}  # one meaning, two words

SESSION_1 = [
    ("Cal", "Morning, Ann! The market was busy today."),
    ("Ann", "I relaxed by the harbour before it opened."),
    ("Cal", "Did you find the lamps?"),
    ("Ann", "Two brass ones, and a blue teapot for my aunt."),
    ("Cal", "Your aunt collects teapots?"),
]
SESSION_2 = [
    ("Cal", "How was the week?"),
    ("Ann", "Long. The ledger still needs a new binding."),
    ("Cal", "Take it to the bindery."),
    ("Ann", "I will take it there on Friday."),
    ("Ann", "The violin is back in the hall."),
]
QUESTIONS = [  # (question, evidence, category)
    ("What did Ann buy for her aunt?", ["D1:4"], 1),
    ("How does Ann unwind?", ["D1:2"], 4),  # no word in common with its evidence
    ("What does the ledger need?", ["D2:2", "D9:9"], 2),  # D9:9 names no line: left out
]


VOCABULARY: dict[str, int] = {}


def meaning(text: str) -> list[float]:
    """A toy embedding: one dimension per word (no two words collide), words of one meaning
    sharing theirs."""
    vector = [0.0] * 256
    for raw in text.lower().split():
        word = raw.strip("?.,!:'")
        word = CALM.get(word, word)
        vector[VOCABULARY.setdefault(word, len(VOCABULARY) % 256)] += 1.0
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]


def write_locomo(path: Path) -> Path:
    conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Cal"}
    for n, (date, lines) in enumerate(
        [("1:56 pm on 8 May, 2023", SESSION_1), ("10:02 am on 15 May, 2023", SESSION_2)], start=1
    ):
        conversation[f"session_{n}_date_time"] = date
        conversation[f"session_{n}"] = [
            {"speaker": who, "dia_id": f"D{n}:{i}", "text": text}
            for i, (who, text) in enumerate(lines, start=1)
        ]
    qa = [{"question": q, "answer": "-", "evidence": e, "category": c} for q, e, c in QUESTIONS]
    path.write_text(json.dumps([{"sample_id": "tiny", "conversation": conversation, "qa": qa}]))
    return path


def bench(redis_url: str, tmp_path: Path, *args: str, **env: str) -> tuple[Result, Any]:
    out = tmp_path / "out.json"
    out.unlink(missing_ok=True)
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "locomo",
            str(write_locomo(tmp_path / "tiny.json")),
            "--budgets",
            "40",
            "--json",
            str(out),
            *args,
        ],
        env={
            "FABULA_REDIS_URL": redis_url,
            "FABULA_HOME": str(tmp_path),
            "COLUMNS": "200",
            "FABULA_MODEL_BASE_URL": "",
            "OPENAI_BASE_URL": "",
            **env,
        },
    )
    return result, json.loads(out.read_text()) if out.exists() else None


class TestLocomoEmbeddings:
    def test_dense_retrieval_on_the_test_server(
        self, redis_url: str, tmp_path: Path, fake_openai: FakeOpenAI
    ) -> None:
        """``--embeddings MODEL`` embeds every line as it is indexed and each request (at
        the model endpoint of the settings), reports the model and its timings, and finds
        a line by meaning that the lexical run does not; without it nothing is embedded."""
        fake_openai.embed = meaning
        done, lexical = bench(redis_url, tmp_path)
        assert done.exit_code == 0, done.output
        assert lexical["embeddings"] is None and "embed_ms" not in lexical
        assert fake_openai.requests == []

        done, dense = bench(
            redis_url,
            tmp_path,
            "--embeddings",
            "fake-embed",
            FABULA_MODEL_BASE_URL=fake_openai.base_url,
        )
        assert done.exit_code == 0, done.output
        assert "dense retrieval: fake-embed" in done.output
        assert dense["embeddings"] == "fake-embed"
        assert dense["questions"] == 3 and dense["missing_evidence_ids"] == 1
        assert dense["episodes_embedded"] >= len(SESSION_1) + len(SESSION_2)
        assert dense["embedding_failures"] == 0 and dense["embed_ms"]["p50"] > 0
        assert {r["model"] for r in fake_openai.requests} == {"fake-embed"}
        asked = [r["input"] for r in fake_openai.requests]
        assert sum(x == ["How does Ann unwind?"] or x == "How does Ann unwind?" for x in asked) == 1
        assert lexical["budgets"]["40"]["by_category"]["4"] == 0.0
        assert dense["budgets"]["40"]["by_category"]["4"] == 1.0
        assert dense["baselines"] == lexical["baselines"]  # the baselines stay lexical
        # the first speaker's own mind, through its own Redis user, recalls the words it
        # heard ("Two brass ones, and a blue teapot for my aunt."), not that Ann spoke
        mind = lexical["character"]["40"]
        assert mind["by_category"]["1"] == 1.0 and mind["mean_tokens"] <= 40
        assert "character" in done.output

    def test_explicit_url_and_unreachable_endpoint(
        self, redis_url: str, tmp_path: Path, fake_openai: FakeOpenAI
    ) -> None:
        """``--embeddings-url`` overrides the settings' endpoint; an endpoint that gives no
        vector stops the run with one line before anything is measured or written."""
        fake_openai.embed = meaning
        done, dense = bench(
            redis_url,
            tmp_path,
            "--embeddings",
            "fake-embed",
            "--embeddings-url",
            fake_openai.base_url,
            FABULA_MODEL_BASE_URL="http://127.0.0.1:9/v1",
        )
        assert done.exit_code == 0, done.output
        assert dense["embeddings"] == "fake-embed" and fake_openai.requests

        done, out = bench(
            redis_url,
            tmp_path,
            "--embeddings",
            "fake-embed",
            FABULA_MODEL_BASE_URL="http://127.0.0.1:9/v1",
            FABULA_MODEL_MAX_RETRIES="0",
        )
        assert done.exit_code == ModelUnavailable.exit_code and out is None
        assert done.stderr.startswith("error: the embedder gives no vector")
        assert done.stderr.count("\n") == 1

        done, _ = bench(redis_url, tmp_path, "--embeddings-url", fake_openai.base_url)
        assert done.exit_code == 2 and "--embeddings-url needs --embeddings" in done.output


class TestLocomoShapes:
    """What a conversation kept aside may hold that the public ones do not show."""

    def _odd(self, path: Path, speaker: str = "Mo") -> Path:
        write_locomo(path)
        data = json.loads(path.read_text())
        conv = data[0]["conversation"]
        conv["session_1"][1]["speaker"] = "Ann "  # a name with a trailing space
        conv["session_2"].append(
            {"speaker": speaker, "dia_id": "D2:6", "text": "I tuned the violin in the hall."}
        )
        data[0]["qa"].append(
            {
                "question": "Who tuned the violin?",
                "answer": "Mo",
                "evidence": ["D2:6; D2:5"],
                "category": 4,
            }
        )
        data[0]["qa"].append(
            {"question": "Who tuned it?", "answer": "Mo", "evidence": ["D2:6"], "category": 4}
        )
        path.write_text(json.dumps(data))
        return path

    def test_a_third_speaker(self, redis_url: str, tmp_path: Path) -> None:
        """A third speaker is a character too (the run does not stop at an unknown actor),
        and a name is read without its spaces; "D2:6; D2:5" is no id of the dialogue: left
        out and counted, as the dataset's README asks."""
        from fabula.bench.locomo import load_locomo

        path = self._odd(tmp_path / "odd.json")
        conv = load_locomo(path)[0]
        assert conv.speakers == ("Ann", "Cal", "Mo")
        assert conv.sessions[0].lines[1].speaker == "Ann"
        assert [q.evidence for q in conv.questions[3:]] == [("D2:6",)]  # not "D2:6; D2:5"
        out = tmp_path / "out.json"
        done = CliRunner().invoke(
            app,
            ["bench", "locomo", str(path), "--budgets", "60", "--json", str(out)],
            env={"FABULA_REDIS_URL": redis_url, "FABULA_HOME": str(tmp_path)},
        )
        assert done.exit_code == 0, done.output
        result = json.loads(out.read_text())
        assert result["questions"] == 4 and result["missing_evidence_ids"] == 2

    def test_a_speaker_who_names_no_one(self, redis_url: str, tmp_path: Path) -> None:
        path = self._odd(tmp_path / "odd.json", speaker="  ")
        done = CliRunner().invoke(
            app,
            ["bench", "locomo", str(path)],
            env={"FABULA_REDIS_URL": redis_url, "FABULA_HOME": str(tmp_path)},
        )
        assert done.exit_code == InvalidInput.exit_code
        assert "session_2 line D2:6: the speaker '  ' names no one" in done.stderr
        assert done.stderr.count("\n") == 1
