"""The one table of variables (:data:`fabula.settings.VARIABLES`), generated from the
settings' fields: what reads it, and that nothing else reads the environment. The docs'
settings reference is generated from it (tests/system/test_docs.py)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import fabula
from fabula.errors import ConfigError
from fabula.settings import (
    MODEL_TIMEOUT_S,
    VARIABLES,
    WRITER_MAX_TOKENS,
    ModelSettings,
    Settings,
)

# fields no variable sets: passed in by code (tests, benchmarks) only
UNSET = {"max_revisions", "model.retry_initial_s", "model.retry_max_s"}


def test_every_field_has_its_variable() -> None:
    """Every settings field is set by exactly one variable of the table, or is one of the few
    that code passes in: a field added without its variable (``Env``) fails here."""
    fields = {f for f in Settings.model_fields if f != "model"} | {
        f"model.{f}" for f in ModelSettings.model_fields
    }
    named = [v.field for v in VARIABLES if v.field is not None]
    assert len(named) == len(set(named))
    assert set(named) <= fields
    assert fields - set(named) == UNSET


# variables any text is a value of
FREE = {
    "FABULA_HOME",
    "FABULA_MODEL",
    "FABULA_MODEL_BASE_URL",
    "FABULA_MODEL_API_KEY",
    "FABULA_EMBEDDING_MODEL",
    "FABULA_WEB_TOKEN",
    "FABULA_AGENT_TOKENS",
    "FABULA_MODEL_STOP",
    "FABULA_MODEL_CASSETTE",
    "FABULA_REDIS_ALLOW_OPEN",
    "FABULA_REDIS_LOAD_TRUNCATED",
    "FABULA_TEST_CLUSTER",
    "FABULA_CHROMIUM",
    "FABULA_CACHE",
    "FABULA_LLAMA_SERVER",
    "FABULA_LLAMA_MODEL",
}


@pytest.mark.parametrize(
    "name", [v.name for v in VARIABLES if v.field and "<" not in v.name and v.name not in FREE]
)
def test_a_bad_value_names_its_variable(name: str) -> None:
    """A value a field cannot take is refused in one line that names the variable."""
    env = {"FABULA_MODEL": "small", name: "\x01not a value"}
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(env)
    shown = str(caught.value)
    assert "\n" not in shown
    assert name in shown or (name.startswith("FABULA_MODEL_") and "FABULA_MODEL_*" in shown)


def test_the_values_are_read() -> None:
    """Each kind of variable reaches its field: a plain one, a flag, a path, JSON, a model's."""
    settings = Settings.from_env(
        {
            "FABULA_TOKEN_BUDGET": "300",
            "FABULA_TOKEN_COUNTER": "approximate",
            "FABULA_REDIS_ALLOW_OPEN": "1",
            "FABULA_MODEL_CASSETTE": "~/tape.yaml",
            "FABULA_MODEL_PRICES": '{"m": {"input": 1, "output": 2}}',
            "FABULA_MODEL": "m",
            "FABULA_MODEL_TIMEOUT": "9",
            "FABULA_MODEL_WRITER_MAX_TOKENS": "50",
            "FABULA_WEB_TOKEN": "t" * 20,
        }
    )
    assert settings.token_budget == 300 and settings.allow_open_redis
    assert settings.token_counter == "approximate"
    assert settings.model_cassette == Path("~/tape.yaml").expanduser()
    assert settings.prices["m"].output == 2
    assert settings.model.timeout_s == 9 and settings.model_for("writer").max_tokens == 50
    assert settings.web_token == "t" * 20


def test_the_table_is_generated_from_the_fields() -> None:
    """Each row's meaning is its field's description and its default the field's default,
    so neither is written twice: a default changed on the field changes the docs."""
    fields = Settings.model_fields | {
        f"model.{n}": info for n, info in ModelSettings.model_fields.items()
    }
    for v in VARIABLES:
        assert v.field is not None
        info = fields[v.field]
        assert v.doc and v.doc == info.description, v.name
        if info.default_factory is None and info.default not in (None, False, ()):
            value = info.default
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            assert v.default.startswith(f"`{shown}`"), (v.name, v.default)
    budget = next(v for v in VARIABLES if v.name == "FABULA_TOKEN_BUDGET")
    assert budget.default == f"`{Settings().token_budget}`"


def test_the_tools_variables_are_read() -> None:
    """The benchmarks' and the test helpers' variables are settings too."""
    settings = Settings.from_env(
        {
            "FABULA_TEST_CLUSTER": "1",
            "FABULA_CHROMIUM": "/opt/chromium",
            "FABULA_CACHE": "/var/cache/fabula",
            "FABULA_LLAMA_SERVER": "/opt/llama-server",
            "FABULA_LLAMA_MODEL": "/opt/gemma.gguf",
            "FABULA_LLAMA_THREADS": "1",
        }
    )
    assert settings.test_cluster and settings.chromium == Path("/opt/chromium")
    assert settings.cache == Path("/var/cache/fabula")
    assert settings.llama_server == Path("/opt/llama-server")
    assert settings.llama_model == Path("/opt/gemma.gguf") and settings.llama_threads == 1
    assert not Settings.from_env({}).test_cluster


PACKAGE = Path(fabula.__file__).resolve().parent

# the modules that read the environment themselves, and why: every other module is given
# its settings (Settings.from_env, read at an entry point)
READERS = {
    "settings.py": "the one reader of Fabula's variables",
    "warm.py": "before anything is imported: FABULA_WARM (read as the settings read it) "
    "and the whole environment, handed to the warm process's child that runs the command",
    "memory/tokens.py": "tiktoken reads TIKTOKEN_CACHE_DIR and DATA_GYM_CACHE_DIR from "
    "os.environ itself; the counter looks for a cached file where tiktoken will load it",
    "testing/cli.py": "a subprocess's environment: the test's own, plus the test Redis",
    "testing/agent_server.py": "`langgraph dev`'s environment: the test's own, less the "
    "stories' Redis (the server starts its own)",
    "bench/web.py": "a subprocess's environment: the benchmark's own, less the studio token",
    "bench/commands.py": "a subprocess's environment: the benchmark's own, less any model",
    "bench/town.py": "its RQ workers' environment: the benchmark's own, plus the stories' Redis",
    "graph/scene_jobs.py": "an RQ worker keeps its loop and connections across scenes, "
    "made again when its FABULA_* environment (what its settings are read from) changes",
}

ENVIRONMENT = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def _reads_environment(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr in ENVIRONMENT
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            lines += [node.lineno for a in node.names if a.name in ENVIRONMENT]
    return lines


def test_nothing_outside_the_settings_reads_the_environment() -> None:
    """No module of the package (the benchmarks and the test helpers included) reads
    ``os.environ`` or ``os.getenv`` but the settings and the few exceptions named, each with
    its reason: a variable read anywhere else would be a setting the docs do not list."""
    found: dict[str, list[int]] = {}
    for folder, _, files in os.walk(PACKAGE, followlinks=True):
        for name in files:
            if name.endswith(".py"):
                path = Path(folder) / name
                lines = _reads_environment(ast.parse(path.read_text(encoding="utf-8")))
                if lines:
                    found[path.relative_to(PACKAGE).as_posix()] = lines
    assert {m: lines for m, lines in found.items() if m not in READERS} == {}
    assert set(found) == set(READERS), "an exception that no longer reads: drop it"


def test_the_writer_replies_within_its_own_limit_by_default() -> None:
    """The writer's limit is WRITER_MAX_TOKENS where none is set (a small local model wrote
    to 512 every time and its turns ran past their timeout); a limit for every role, or the
    writer's own, is kept; the other roles keep the server's."""
    plain = Settings.from_env({"FABULA_MODEL": "m"})
    assert plain.model_for("writer").max_tokens == WRITER_MAX_TOKENS
    assert plain.model_for("planner").max_tokens is None
    assert plain.model.timeout_s == MODEL_TIMEOUT_S >= 300
    own_model = Settings.from_env({"FABULA_MODEL": "m", "FABULA_MODEL_WRITER": "big"})
    assert own_model.model_for("writer").max_tokens == WRITER_MAX_TOKENS
    shared = Settings.from_env({"FABULA_MODEL": "m", "FABULA_MODEL_MAX_TOKENS": "300"})
    assert shared.model_for("writer").max_tokens == 300
    both = Settings.from_env(
        {"FABULA_MODEL": "m", "FABULA_MODEL_MAX_TOKENS": "300", "FABULA_MODEL_WRITER": "big"}
    )
    assert both.model_for("writer").max_tokens == 300
    assert Settings().model_for("writer").max_tokens == WRITER_MAX_TOKENS


def _read_at_import(tree: ast.Module) -> list[int]:
    """Lines where ``from_env`` is called by code that runs when the module is imported
    (its top level and class bodies, not the bodies of its functions)."""
    lines: list[int] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "from_env"
        ):
            lines.append(node.lineno)
        todo.extend(ast.iter_child_nodes(node))
    return lines


def test_no_module_reads_the_settings_at_import() -> None:
    """Settings are read at an entry point, never when a module is imported: the test
    helpers read FABULA_CHROMIUM and FABULA_TEST_CLUSTER at import (`testing/browser.py`,
    `testing/redis.py`), so a test run could not choose its own."""
    found: dict[str, list[int]] = {}
    for folder, _, files in os.walk(PACKAGE, followlinks=True):
        for name in files:
            if name.endswith(".py"):
                path = Path(folder) / name
                lines = _read_at_import(ast.parse(path.read_text(encoding="utf-8")))
                if lines:
                    found[path.relative_to(PACKAGE).as_posix()] = lines
    assert found == {}
