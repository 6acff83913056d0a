"""``fabula bench ...``: the benchmarks' command-line sub-app.

Mounted on the ``fabula`` command by :mod:`fabula.cli` (production packages never import
the benchmarks). Settings come from the root command's context; errors are printed by the
root command's one error wrapper.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from fabula.errors import NotFound
from fabula.memory.index.vectors import Embedder
from fabula.memory.server import redis_url
from fabula.settings import MODEL_TIMEOUT_S, WRITER_MAX_TOKENS, Settings

if TYPE_CHECKING:
    from fabula.agents.roles import MemoryBuilderRole

bench_app = typer.Typer(
    help="Benchmarks, each with its baselines in the same run.", rich_markup_mode=None
)


def _settings(ctx: typer.Context) -> Settings:
    """The settings the root command read (:func:`fabula.graph.cli.app.settings`: read once
    per command, or here when the sub-app runs alone)."""
    from fabula.graph.cli.app import settings

    return settings()


def _url(ctx: typer.Context) -> str:
    return redis_url(_settings(ctx))


def _ints(text: str, option: str) -> list[int]:
    """The positive whole numbers of ``option``'s value, separated by commas."""
    try:
        found = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"expected numbers separated by commas, got {text!r}") from None
    if not found or min(found) < 1:
        raise typer.BadParameter(f"{option} needs positive numbers, got {text!r}")
    return found


@bench_app.command("scale")
def bench_scale(
    ctx: typer.Context,
    turns: str = typer.Option("100,1000,10000", "--turns"),
    characters: str = typer.Option("5,20", "--characters"),
    cast: str | None = typer.Option(
        None,
        "--cast",
        help="Cast sizes (e.g. 5,20,50,100), everyone in one room: time, payload and memory "
        "per turn of the real memory-builder, growth over the first size (instead of --turns).",
    ),
    json_out: str | None = typer.Option(None, "--json"),
) -> None:
    """Commit and projection latency, round trips and memory as the story grows."""
    from fabula.bench.scale import run as run_scale
    from fabula.bench.scale import run_cast_sync

    if cast is not None:
        sizes = _ints(cast, "--cast")
        if min(sizes) < 3:
            raise typer.BadParameter(f"--cast needs casts of 3 or more, got {cast!r}")
        run_cast_sync(_url(ctx), sizes, json_out)
        return
    run_scale(_url(ctx), _ints(turns, "--turns"), _ints(characters, "--characters"), json_out)


@bench_app.command("lore")
def bench_lore(
    entries: str = typer.Option("100,1000", "--entries", help="Lorebook sizes."),
    repeat: int = typer.Option(50, "--repeat", min=1, help="Repetitions per figure."),
    assembly: bool = typer.Option(
        True, "--assembly/--no-assembly", help="Also time the writer's recall, with and without."
    ),
    json_out: str | None = typer.Option(None, "--json"),
) -> None:
    """Lore activation against the naive scan of every entry, and the writer's recall with
    and without a lorebook, in one run."""
    from fabula.bench.lore import run as run_lore

    run_lore(_ints(entries, "--entries"), repeat, json_out, assembly)


@bench_app.command("load")
def bench_load(
    ctx: typer.Context,
    stories: int = typer.Option(50, "--stories", min=1),
    turns: int = typer.Option(20, "--turns", min=1),
    workers: int = typer.Option(4, "--workers", min=1),
    json_out: str | None = typer.Option(None, "--json"),
    local_cluster: bool = typer.Option(
        False, "--local-cluster", help="Run on a local cluster (3 primaries, 3 replicas)."
    ),
) -> None:
    """Stories driven by several processes at once: committed once each, isolated, turns/s
    and p95 turn latency, with a one-process baseline."""
    from fabula.bench.load import run as run_load

    url = None if local_cluster else _url(ctx)
    run_load(url, stories, turns, workers, json_out, local_cluster=local_cluster)


@bench_app.command("loop")
def bench_loop(
    ctx: typer.Context,
    turns: int = typer.Option(200, "--turns", min=1),
    characters: int = typer.Option(5, "--characters", min=1),
    json_out: str | None = typer.Option(None, "--json"),
) -> None:
    """Offline turns per second and the memory-builder's overhead per turn."""
    from fabula.bench.loop import run as run_loop

    run_loop(_url(ctx), turns, characters, json_out)


@bench_app.command("commands")
def bench_commands(
    ctx: typer.Context,
    rounds: int = typer.Option(5, "--rounds", min=1, help="Times each command is run."),
    json_out: str | None = typer.Option(None, "--json"),
    bytecode: bool = typer.Option(
        True,
        "--bytecode/--no-bytecode",
        help="Let Python keep the bytecode it compiles (its default; a warm-up round "
        "compiles it), or compile everything in every process.",
    ),
) -> None:
    """Each offline story command (new, run, pending, approve, recall, chat, show, stories)
    as a whole process, against `python -c "import typer"` in the same run."""
    from fabula.bench.commands import run as run_commands

    _url(ctx)  # the embedded server started (if it is the one), so no round times its start
    run_commands(rounds, json_out, bytecode=bytecode)


@bench_app.command("town")
def bench_town(
    ctx: typer.Context,
    characters: int = typer.Option(25, "--characters", min=4),
    places: int = typer.Option(10, "--places", min=1),
    ticks: int = typer.Option(10, "--ticks", min=1),
    workers: int = typer.Option(
        0, "--workers", min=0, help="Play the scenes on this many RQ workers (0: in process)."
    ),
    kill_worker: bool = typer.Option(
        False, "--kill-worker", help="kill -9 one worker while it plays a scene."
    ),
    baseline_turns: int | None = typer.Option(
        None,
        "--baseline-turns",
        min=1,
        help="Turns of the narrative baseline (default: as many as the ticks played scenes).",
    ),
    time_budget: float | None = typer.Option(
        None,
        "--time-budget",
        min=1.0,
        help="Start no tick after this many seconds of the tick run (completed_ticks says "
        "how many ran).",
    ),
    json_out: str | None = typer.Option(None, "--json"),
) -> None:
    """A town run in ticks (every place's scene at once, each tick committed whole) with
    the narrative loop on the same pack as baseline: speed, memory, leaks, spread."""
    from fabula.bench.town import run as run_town

    run_town(
        _url(ctx),
        characters,
        places,
        ticks,
        workers,
        kill_worker,
        json_out,
        baseline_turns,
        time_budget,
    )


@bench_app.command("model")
def bench_model(
    ctx: typer.Context,
    turns: int | None = typer.Option(
        None, "--turns", min=1, help="Turns (default: 50 on the test server, 20 on a server)."
    ),
    seed: int = typer.Option(7, "--seed"),
    base_url: str | None = typer.Option(
        None, "--base-url", help="An OpenAI-compatible server to measure (its /v1 URL)."
    ),
    model: str | None = typer.Option(None, "--model", help="The model name to ask it for."),
    world: str = typer.Option("lighthouse", "--world", help="The world pack to play."),
    max_tokens: int = typer.Option(512, "--max-tokens", min=1, help="Each reply's limit."),
    writer_tokens: int = typer.Option(
        WRITER_MAX_TOKENS, "--writer-tokens", min=1, help="The writer's reply limit."
    ),
    timeout: float = typer.Option(
        MODEL_TIMEOUT_S, "--timeout", min=1.0, help="Seconds one reply may take."
    ),
    reader: str = typer.Option(
        "phased",
        "--reader",
        help="What reads a passage before the memory-builder's model is asked about the rest: "
        "phased (the default), prose (the reader of places alone, before the phases) or "
        "controlled (the baseline: controlled English only).",
    ),
    schemas: str = typer.Option(
        "story,generic",
        "--schemas",
        help="The schema styles to run, the first measured, the second its baseline.",
    ),
    json_out: str | None = typer.Option(None, "--json"),
) -> None:
    """Model mode against the test server with injected faults (429/503, truncation,
    malformed output): commits equal approvals, no partial commit, no leak. With
    --base-url and --model: any OpenAI-compatible server, story-shaped schemas against
    the generic ones (first replies valid, re-asks, truncations, latency and tokens by
    role, leaks, failures by cause)."""
    if base_url is None:
        if model is not None:
            raise typer.BadParameter("--model needs --base-url", param_hint="--model")
        from fabula.bench.model import run as run_model

        run_model(_url(ctx), turns or 50, seed, json_out)
        return
    if not model:
        raise typer.BadParameter("--base-url needs --model NAME", param_hint="--model")
    from fabula.bench.model import Server, run_against

    api_key = _settings(ctx).model.api_key  # FABULA_MODEL_API_KEY, else OPENAI_API_KEY
    modes = _schema_modes(reader, schemas)
    server = Server(
        base_url,
        model,
        api_key=api_key,
        seed=seed,
        max_tokens=max_tokens,
        writer_tokens=writer_tokens,
        timeout_s=timeout,
        reader=reader,
    )
    run_against(_url(ctx), server, world=world, turns=turns or 20, json_out=json_out, modes=modes)


def _schema_modes(reader: str, schemas: str) -> tuple[str, ...]:
    """The schema styles ``--schemas`` names, once ``--reader`` and they are checked."""
    if reader not in ("phased", "prose", "controlled"):
        raise typer.BadParameter("phased, prose or controlled", param_hint="--reader")
    modes = tuple(m.strip() for m in schemas.split(",") if m.strip())
    if not modes or any(m not in ("story", "generic") for m in modes):
        raise typer.BadParameter("story, generic or both", param_hint="--schemas")
    return modes


@bench_app.command("web")
def bench_web(
    ctx: typer.Context,
    stories: int = typer.Option(20, "--stories", min=1),
    turns: int = typer.Option(10, "--turns", min=1),
    clients: int = typer.Option(4, "--clients", min=1),
    concurrency: str = typer.Option(
        "150,400",
        "--concurrency",
        help="Levels of clients at once, each holding an event stream and loading the minds.",
    ),
    json_out: str | None = typer.Option(None, "--json"),
) -> None:
    """The studio under load: stories driven over HTTP by concurrent clients, every turn
    approved; page, approval and minds latencies against the service in process; then
    each concurrency level's errors and p95."""
    from fabula.bench.web import run as run_web

    levels = tuple(_ints(concurrency, "--concurrency"))
    # with FABULA_REDIS_URL unset the benchmark runs on a private, temporary Redis, with
    # FABULA_REDIS_FSYNC's policy
    settings = _settings(ctx)
    run_web(stories, turns, clients, settings.redis_url, json_out, settings.redis_fsync, levels)


@bench_app.command("story")
def bench_story(
    ctx: typer.Context,
    packs: int = typer.Option(20, "--packs", min=0, help="Generated world packs."),
    turns: int = typer.Option(40, "--turns", min=1, help="Autonomous turns per pack."),
    seed: int = typer.Option(7, "--seed"),
    json_out: str | None = typer.Option(None, "--json"),
) -> None:
    """The offline story: repeats, filler, variety of action, goals achieved or blocked,
    pursued hypotheses realised, belief fidelity, over generated and shipped packs."""
    from fabula.bench.story import run as run_story

    run_story(packs, turns, seed, _settings(ctx).redis_url, json_out)


def _dataset_bench(
    settings: Settings, name: str, path: Path, json_out: str | None, answers: str | None
) -> None:
    if not path.exists():
        raise NotFound(f"no such file: {path}", path=str(path))
    module = importlib.import_module(f"fabula.bench.{name}")
    run_fn = getattr(module, f"run_{name}")
    # with FABULA_REDIS_URL unset the benchmark runs on a private, temporary Redis
    asyncio.run(run_fn(path, redis_url=settings.redis_url, json_out=json_out, answers_out=answers))


def _register_dataset_bench(name: str, path_help: str, per: str, summary: str) -> None:
    """One ``fabula bench NAME PATH [--json OUT] [--answers OUT.jsonl]`` command."""

    @bench_app.command(name, help=summary)
    def command(
        ctx: typer.Context,
        path: Path = typer.Argument(..., help=path_help),
        json_out: str | None = typer.Option(None, "--json"),
        answers: str | None = typer.Option(None, "--answers", help=f"One JSON line per {per}."),
    ) -> None:
        _dataset_bench(_settings(ctx), name, path, json_out, answers)


_register_dataset_bench(
    "tomi",
    "A ToMi .txt file (its .trace beside it).",
    "question",
    "ToMi false-belief questions, with the shared-memory baseline.",
)
_register_dataset_bench(
    "hitom",
    "Hi-ToM items as JSON Lines.",
    "question",
    "Hi-ToM higher-order beliefs, communication and deception, with the baseline.",
)


@bench_app.command("opentom")
def bench_opentom(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="OpenToM's JSON (story key -> story)."),
    base_url: str | None = typer.Option(
        None, "--base-url", help="Also read with the model memory-builder on this server (/v1)."
    ),
    model: str | None = typer.Option(None, "--model", help="The model name to ask it for."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N stories."),
    reader: str = typer.Option(
        "phased",
        "--reader",
        help="The reader whose answers are written: phased (the offline reader, the default), "
        "prose or controlled; all run.",
    ),
    turns: str = typer.Option(
        "one", "--turns", help="The narrative as one turn, or its paragraphs as turns."
    ),
    json_out: str | None = typer.Option(None, "--json"),
    answers: str | None = typer.Option(
        None, "--answers", help="One JSON line per question: key, question, answer (or null)."
    ),
) -> None:
    """OpenToM: beliefs from ordinary prose, each story's memory read by the offline
    readers (and a model's), with the majority and nothing-read baselines in the same run."""
    from fabula.bench.opentom import ReaderName, TurnMode, model_system, run_opentom

    if reader not in ("prose", "controlled", "phased"):
        raise typer.BadParameter("prose, controlled or phased", param_hint="--reader")
    if turns not in ("one", "paragraphs"):
        raise typer.BadParameter("one or paragraphs", param_hint="--turns")
    if (base_url is None) != (model is None):
        raise typer.BadParameter("--base-url and --model go together", param_hint="--model")
    if not path.exists():
        raise NotFound(f"no such file: {path}", path=str(path))
    settings = _settings(ctx)
    system = None
    if base_url is not None:
        from fabula.agents.llm import make_client

        own = settings.model_for("memory_builder").model_copy(
            update={
                "base_url": base_url,
                "model": model,
                "api_key": settings.model_for("memory_builder").api_key or "bench",
                "temperature": 0.0,
            }
        )
        system = model_system(lambda: make_client(own, "memory_builder"))
    asyncio.run(
        run_opentom(
            path,
            redis_url=settings.redis_url,
            json_out=json_out,
            answers_out=answers,
            reader=cast("ReaderName", reader),
            limit=limit,
            mode=cast("TurnMode", turns),
            model=system,
        )
    )


@bench_app.command("bigtom")
def bench_bigtom(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="BigToM's ;-separated CSV (19 fields a row)."),
    reader: str = typer.Option(
        "phased", "--reader", help="The reader whose answers are written (all run)."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="Also read with the model memory-builder on this server (/v1)."
    ),
    model: str | None = typer.Option(None, "--model", help="The model name to ask it for."),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="Only the first N items of each part (file order)."
    ),
    json_out: str | None = typer.Option(None, "--json"),
    answers: str | None = typer.Option(
        None, "--answers", help="One JSON line per item: key, condition, init, answer, from, world."
    ),
) -> None:
    """BigToM: states and whether the agent saw them change, read by the offline readers
    (and a model's, with --base-url and --model), with the always-initial, always-final and
    W-alone baselines in the same run."""
    from fabula.bench.bigtom import READERS, run_bigtom

    if reader not in READERS:
        raise typer.BadParameter(" or ".join(READERS), param_hint="--reader")
    if (base_url is None) != (model is None):
        raise typer.BadParameter("--base-url and --model go together", param_hint="--model")
    if not path.exists():
        raise NotFound(f"no such file: {path}", path=str(path))
    settings = _settings(ctx)
    asyncio.run(
        run_bigtom(
            path,
            redis_url=settings.redis_url,
            json_out=json_out,
            answers_out=answers,
            reader=reader,
            limit=limit,
            model=None if base_url is None else _model_builder(settings, base_url, model),
        )
    )


def _model_builder(
    settings: Settings, base_url: str, model: str | None
) -> Callable[[], MemoryBuilderRole]:
    """What makes the model memory-builder a bench reads with: the memory-builder's model
    settings on ``base_url`` with ``model``, at temperature 0."""

    def make() -> MemoryBuilderRole:
        from fabula.agents.llm import make_client
        from fabula.agents.memory_builder.model import ModelMemoryBuilder

        mine = settings.model_for("memory_builder")
        own = mine.model_copy(
            update={
                "base_url": base_url,
                "model": model,
                "api_key": mine.api_key or "bench",
                "temperature": 0.0,
            }
        )
        return ModelMemoryBuilder(make_client(own, "memory_builder"))

    return make


@bench_app.command("longstory")
def bench_longstory(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="A long story as JSON Lines (turns and probes)."),
    budget: int = typer.Option(1200, "--budget", min=1, help="Tokens for each context."),
    json_out: str | None = typer.Option(None, "--json"),
    answers: str | None = typer.Option(None, "--answers", help="One JSON line per probe."),
) -> None:
    """Retention, knowledge boundaries, false belief and leakage over a long story."""
    from fabula.bench.longstory import run_longstory

    if not path.exists():
        raise NotFound(f"no such file: {path}", path=str(path))
    asyncio.run(
        run_longstory(
            path,
            redis_url=_settings(ctx).redis_url,
            json_out=json_out,
            answers_out=answers,
            budget=budget,
        )
    )


@bench_app.command("locomo")
def bench_locomo(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="LoCoMo conversations (its JSON file)."),
    budgets: str = typer.Option("500,1000", "--budgets", help="Token budgets, comma-separated."),
    json_out: str | None = typer.Option(None, "--json"),
    embeddings: str | None = typer.Option(
        None,
        "--embeddings",
        metavar="MODEL",
        help="Dense retrieval with this embedding model, on the model endpoint "
        "(FABULA_MODEL_BASE_URL / OPENAI_BASE_URL); off unless given.",
    ),
    embeddings_url: str | None = typer.Option(
        None,
        "--embeddings-url",
        metavar="URL",
        help="The OpenAI-compatible endpoint of --embeddings (default: the model endpoint).",
    ),
) -> None:
    """Evidence recall of the writer's planned recall on LoCoMo, with BM25 and recency baselines."""
    from fabula.bench.locomo import run as run_locomo

    if not path.exists():
        raise NotFound(f"no such file: {path}", path=str(path))
    chosen = _ints(budgets, "--budgets")
    if embeddings_url is not None and not embeddings:
        raise typer.BadParameter("--embeddings-url needs --embeddings MODEL")
    settings = _settings(ctx)
    embedder = _embedder(settings, embeddings, embeddings_url) if embeddings else None
    run_locomo(str(path), chosen, json_out, settings.redis_url, embedder, embeddings)


def _embedder(settings: Settings, model: str, url: str | None) -> Embedder:
    """The embedder the application would build with ``FABULA_EMBEDDING_MODEL=model`` (and
    the model endpoint at ``url`` when given)."""
    from fabula.agents.embeddings import make_embedder

    endpoint = (
        settings.model if url is None else settings.model.model_copy(update={"base_url": url})
    )
    embedder = make_embedder(
        settings.model_copy(update={"embedding_model": model, "model": endpoint})
    )
    if embedder is None:
        raise typer.BadParameter("--embeddings needs a model name")
    return embedder
