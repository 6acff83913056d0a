"""Settings: read once at an entry point and passed in, never read at import.

Model settings are per role. ``FABULA_MODEL_*`` set every role's defaults; a role's own
``FABULA_MODEL_<ROLE>_*`` (``PLANNER``, ``CHARACTER``, ``WRITER``, ``MEMORY_BUILDER``,
``SUMMARISER``) override them, and ``FABULA_MODEL_<ROLE>`` alone names that role's model::

    FABULA_MODEL=gpt-4o-mini FABULA_MODEL_WRITER=gpt-4o FABULA_MODEL_WRITER_MAX_TOKENS=900

``FABULA_MODEL_SCHEMAS=generic`` (or per role, ``FABULA_MODEL_<ROLE>_SCHEMAS``) sends the
roles' generic schemas instead of the story-shaped ones (``story``, the default).

A role whose model is unset runs on the offline engine. The memory-builder reads at
temperature 0 unless ``FABULA_MODEL_MEMORY_BUILDER_TEMPERATURE`` says otherwise; the writer
replies within :data:`WRITER_MAX_TOKENS` unless ``FABULA_MODEL_MAX_TOKENS`` or
``FABULA_MODEL_WRITER_MAX_TOKENS`` says otherwise. The memory-builder's former name,
``FABULA_MODEL_EXTRACTOR_*``, is still read (the new name wins where both are set) and
logged once as deprecated.

Each setting is declared once, as a field: its type, its default and its meaning
(``description``), and the variable that sets it (:class:`Env`, in its ``Annotated``
metadata). :data:`VARIABLES` is generated from the fields (variable, field, type, default,
meaning): :meth:`Settings.from_env` reads the environment through it, its errors name the
variable from it, and the docs' settings reference is generated from it when the site is
built (:func:`markdown_table`; a test holds every variable there). A new setting is a field.

Nothing else in the package reads the environment (``tests/system/test_settings.py`` holds
it, with the few exceptions it names): the benchmarks' and the test helpers' variables are
fields here too.
"""

from __future__ import annotations

import json
import os
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo

from fabula.errors import ConfigError
from fabula.limits import (
    DEFAULT_DELTA_BYTES,
    DEFAULT_READING_SECONDS,
    DEFAULT_SENTENCE_WORDS,
    DEFAULT_TURN_TEXT_BYTES,
    Limits,
)
from fabula.logs import get_logger

log = get_logger(__name__)

Role = Literal["planner", "character", "writer", "memory_builder", "summariser"]
ROLES: tuple[Role, ...] = get_args(Role)

SchemaStyle = Literal["story", "generic"]

CounterName = Literal["o200k_base", "cl100k_base", "approximate"]
"""How token budgets are counted (``FABULA_TOKEN_COUNTER``; see ``memory/tokens.py``)."""

FsyncPolicy = Literal["always", "everysec"]
"""When the embedded server fsyncs its append-only file (``FABULA_REDIS_FSYNC``).

``always`` (the default): before it replies to a write, so every acknowledged write is on
disk; each pass of the server's event loop that has writes costs one fsync. ``everysec``:
once a second, so a power loss may lose the last second of autonomous turns, and a human
approval (acknowledged only once on disk, by ``WAITAOF``) waits up to a second for the next
fsync."""


@dataclass(frozen=True)
class Env:
    """The environment variable that sets a settings field, in the field's ``Annotated``
    metadata; the field's ``description`` is its meaning.

    ``read`` turns the variable's text into the field's value (``None``: the text as it is,
    validated by the field). ``type`` is the type the docs show where the field's own does
    not say it (a URL, a model name); ``note`` is said after the default (what unset means).
    """

    name: str
    type: str | None = None
    note: str | None = None
    read: Callable[[str], Any] | None = None


@dataclass(frozen=True)
class Variable:
    """One environment variable Fabula reads: the field it sets and what it means, as the
    docs' settings table shows it (:func:`markdown_table`), generated from the field.

    ``field`` is a :class:`Settings` field (``model.x``: a :class:`ModelSettings` field of
    ``FABULA_MODEL_*``, which ``FABULA_MODEL_<ROLE>_*`` override per role). ``read`` turns
    the variable's text into the field's value (``None``: the text as it is, validated by
    the field).
    """

    name: str
    field: str | None
    type: str
    default: str
    doc: str
    read: Callable[[str], Any] | None = None


def _flag(text: str) -> bool:
    return text in ("1", "true", "yes")


def _path(text: str) -> Path:
    return Path(text).expanduser()


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error.msg}") from None


MODEL_PREFIX = "FABULA_MODEL"

LORE_BUDGET = 1024
"""The lore's own budget, in tokens, beside the memory's (``FABULA_LORE_BUDGET``): the most
the activated lorebook entries of one context may hold — the writer's, a recall's, a
chat's, a character's or the planner's prompt. SillyTavern gives World Info its own share
of the context (``world_info_budget``: 25% of it, with no cap by default); this is that
share of a 4,096-token context, room for the 300-500-token entries real lorebooks hold,
two or three at once. An entry that activates but does not fit is listed as left out."""


WRITER_MAX_TOKENS = 192
"""The writer's reply limit, in tokens, where no ``FABULA_MODEL_MAX_TOKENS`` or
``FABULA_MODEL_WRITER_MAX_TOKENS`` sets one: a passage of a few sentences (about 140
words), and every token of it is read again by the memory-builder. On llama.cpp with
Gemma 3 270M (docs/benchmarks.md), a writer at 512 tokens wrote to its limit every time
and its turns ran past their timeout; at 192 the same run commits 18 of 20."""

MODEL_TIMEOUT_S = 900.0
"""Seconds one reply may take by default (``FABULA_MODEL_TIMEOUT``): room for a local
model on a busy CPU. On llama.cpp with Gemma 3 270M on two cores shared with other work,
the memory-builder's reply ran past 600 s (and 300 s failed turns); 900 s committed."""


def default_home(env: Mapping[str, str] | None = None) -> Path:
    """Fabula's data folder: ``$FABULA_HOME``, else the user's data folder."""
    env = os.environ if env is None else env
    if "FABULA_HOME" in env:
        home = env["FABULA_HOME"]
        if not home.strip():
            raise ConfigError(
                "FABULA_HOME is set but empty: set it to Fabula's data folder, or unset it "
                "for the default"
            )
        try:
            home.encode("utf-8")
        except UnicodeEncodeError:  # os.environ keeps undecodable bytes as surrogates
            raise ConfigError(
                f"FABULA_HOME is not UTF-8 text ({home.encode('utf-8', 'replace')!r}): "
                "name a folder whose path is"
            ) from None
        return Path(home).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fabula"


class ModelSettings(BaseModel):
    """One role's chat model; ``model`` unset means the offline engine.

    ``max_retries`` counts transport retries (429, 5xx, timeouts, lost connections), with
    exponential backoff and jitter from ``retry_initial_s`` up to ``retry_max_s``, honouring
    a server's ``Retry-After``, all within ``timeout_s``: one reply's whole time, from its
    request to its last byte, its retries included. ``max_reply_bytes`` bounds what one
    reply may send (see :mod:`fabula.agents.transport`). ``max_attempts`` counts replies
    per structured call (a malformed reply is shown its error and asked for again).
    ``max_tokens`` bounds a reply; ``seed`` is sent where set (servers that take one answer
    reproducibly). ``stop`` are stop sequences sent with every request
    (``FABULA_MODEL_STOP``: a JSON list of strings, or one sequence as it is).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: Annotated[
        str | None, Env("FABULA_MODEL_BASE_URL", "URL", "`OPENAI_BASE_URL`, else OpenAI's")
    ] = Field(default=None, description="the chat model's server")
    model: Annotated[str | None, Env("FABULA_MODEL", "model name", "offline")] = Field(
        default=None, description="a chat model on any OpenAI-compatible server"
    )
    api_key: Annotated[str | None, Env("FABULA_MODEL_API_KEY", note="`OPENAI_API_KEY`")] = Field(
        default=None, description="the server's key"
    )
    temperature: Annotated[
        float | None, Env("FABULA_MODEL_TEMPERATURE", note="the memory-builder: `0`")
    ] = Field(default=0.7, ge=0.0, le=2.0, description="sampling temperature")
    max_tokens: Annotated[
        int | None,
        Env("FABULA_MODEL_MAX_TOKENS", note=f"the server's; the writer's {WRITER_MAX_TOKENS}"),
    ] = Field(
        default=None,
        ge=1,
        description="the longest reply, in tokens (a structured reply cut there is asked "
        "for once more with twice the limit, then is an error; the writer's prose cut "
        "there is kept up to its last complete sentence, with a warning for the critic "
        "and the approver)",
    )
    timeout_s: Annotated[float, Env("FABULA_MODEL_TIMEOUT")] = Field(
        default=MODEL_TIMEOUT_S,
        gt=0,
        description="seconds one reply may take in all, from its request to its last byte, "
        "its transport retries included (a reply still coming then is cut off: an error)",
    )
    # a streamed reply sends ~200 bytes of envelope a token: 8 MiB holds a 64 KiB passage
    # (the turn text limit) streamed a token a chunk, twice over
    max_reply_bytes: Annotated[int, Env("FABULA_MODEL_MAX_REPLY_BYTES", note="8 MiB")] = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description="the most bytes one reply may send, streamed or not, counted as they are "
        "read (a reply that passes it is cut off there: an error)",
    )
    seed: Annotated[int | None, Env("FABULA_MODEL_SEED")] = Field(
        default=None, description="sent to servers that take a seed"
    )
    max_retries: Annotated[int, Env("FABULA_MODEL_MAX_RETRIES")] = Field(
        default=4,
        ge=0,
        description="transport retries (429, 5xx, timeouts, lost connections; exponential "
        "backoff with jitter, `Retry-After` honoured)",
    )
    max_attempts: Annotated[int, Env("FABULA_MODEL_ATTEMPTS")] = Field(
        default=3,
        ge=1,
        description="replies per structured call (a malformed one is shown its error and "
        "asked for again)",
    )
    retry_initial_s: float = Field(default=0.5, ge=0)
    retry_max_s: float = Field(default=30.0, ge=0)
    # the generic schema is the baseline a benchmark compares against
    schemas: Annotated[SchemaStyle, Env("FABULA_MODEL_SCHEMAS")] = Field(
        default="story",
        description="the JSON schema of a structured call: `story` (built per call from what "
        "the role may see: ids as enums, bounded arrays and strings, an action as a union by "
        "kind; agents/schemas.py) or `generic` (the role's pydantic type, made strict)",
    )
    stop: Annotated[tuple[str, ...], Env("FABULA_MODEL_STOP", "JSON list, or text")] = Field(
        default=(),
        description='stop sequences: a JSON list of strings (`["\\n\\n\\n", "THE END"]`), '
        "or one sequence as it is",
    )

    @field_validator("stop", mode="before")
    @classmethod
    def _stop(cls, value: object) -> object:
        """A JSON list of strings, or one sequence, as the environment holds them."""
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                try:
                    return json.loads(value)
                except json.JSONDecodeError as error:
                    raise ValueError(f"not a JSON list of strings: {error.msg}") from None
            return (value,)
        return value

    @property
    def offline(self) -> bool:
        return not self.model


class Price(BaseModel):
    """What a model costs, in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class Settings(BaseModel):
    """Everything Fabula reads from its environment, in one object."""

    home: Annotated[
        Path, Env("FABULA_HOME", note="`$XDG_DATA_HOME/fabula`, else `~/.local/share/fabula`")
    ] = Field(default_factory=default_home, description="data folder of the embedded Redis")
    redis_url: Annotated[str | None, Env("FABULA_REDIS_URL", "URL")] = Field(
        default=None, description="use this Redis instead of the embedded one"
    )
    allow_open_redis: Annotated[
        bool, Env("FABULA_REDIS_ALLOW_OPEN", note="refused", read=_flag)
    ] = Field(
        default=False,
        description="`1`: accept a Redis with an open user (enabled, no password)",
    )
    # by default such a file is refused, with how to repair it
    redis_load_truncated: Annotated[
        bool,
        Env("FABULA_REDIS_LOAD_TRUNCATED", note="refused, with how to repair", read=_flag),
    ] = Field(
        default=False,
        description="`1`: the embedded server loads a truncated append-only file, dropping "
        "its cut tail",
    )
    # a configured Redis keeps its own policy
    redis_fsync: Annotated[FsyncPolicy, Env("FABULA_REDIS_FSYNC")] = Field(
        default="always",
        description="the embedded Redis's fsync: `always` (before each reply) or `everysec`",
    )
    redis_cluster: Annotated[bool | None, Env("FABULA_REDIS_CLUSTER", note="asked")] = Field(
        default=None, description="`1`/`0`: the Redis is (not) a cluster"
    )
    # RQ cannot use a cluster
    rq_url: Annotated[str | None, Env("FABULA_RQ_URL", "URL", "`FABULA_REDIS_URL`")] = Field(
        default=None,
        description="the RQ queue's Redis (needed with a cluster and `FABULA_CONSOLIDATE=rq`)",
    )
    model: ModelSettings = Field(default_factory=ModelSettings)  # its fields: FABULA_MODEL_*
    roles: Annotated[
        dict[Role, ModelSettings],
        Env("FABULA_MODEL_<ROLE>_<SETTING>", "as above", "`FABULA_MODEL_*`"),
    ] = Field(
        default_factory=dict,
        description="one role's model (`FABULA_MODEL_<ROLE>`) and settings (`PLANNER`, "
        "`CHARACTER`, `WRITER`, `MEMORY_BUILDER`, `SUMMARISER`; e.g. "
        "`FABULA_MODEL_WRITER_MAX_TOKENS`); what a role does not set comes from "
        "`FABULA_MODEL_*`; a role with no model runs offline (the summariser: the "
        "hierarchy keeps its extractive summaries; with `FABULA_CONSOLIDATE=rq` the "
        "worker's own `FABULA_MODEL_*` settings are used)",
    )
    model_concurrency: Annotated[int, Env("FABULA_MODEL_CONCURRENCY")] = Field(
        default=4, ge=1, description="character agents calling the model at once"
    )
    prices: Annotated[dict[str, Price], Env("FABULA_MODEL_PRICES", "JSON", read=_json)] = Field(
        default_factory=dict,
        description="JSON price table, US dollars per million tokens, by model name: "
        '`{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}`',
    )
    model_cassette: Annotated[Path | None, Env("FABULA_MODEL_CASSETTE", read=_path)] = Field(
        default=None,
        description="a file: the first run (a CLI command, or `fabula serve` for its whole "
        "life) records every model exchange into it (keys left out), later runs replay it "
        "without a server (a request it does not hold is an error)",
    )
    token_budget: Annotated[int, Env("FABULA_TOKEN_BUDGET")] = Field(
        default=1200, ge=1, description="the writer's memory context, in tokens"
    )
    lore_budget: Annotated[int, Env("FABULA_LORE_BUDGET")] = Field(
        default=LORE_BUDGET,
        ge=1,
        description="the lore's own budget, in tokens, beside the memory's: the most the "
        "lorebook entries a context activates may hold (the writer's, a recall's, a chat's, "
        "a character's, the planner's); an entry that activates but does not fit is listed "
        "as left out, with its size (`fabula recall`, the studio's Lore and Recall pages)",
    )
    token_counter: Annotated[
        CounterName | None, Env("FABULA_TOKEN_COUNTER", note="the best there is: `o200k_base`")
    ] = Field(
        default=None,
        description="how budgets are counted, offline (`memory/tokens.py`): `o200k_base` "
        "(tiktoken, from its cache or the copy shipped in `memory/data/`, checked against "
        "tiktoken's pinned hash), `cl100k_base` (if tiktoken has it cached), or "
        "`approximate` (an estimate that over-counts both, for models whose tokenizers "
        "split finer)",
    )
    max_revisions: int = 2
    consolidate: Annotated[Literal["inline", "rq", "off"], Env("FABULA_CONSOLIDATE")] = Field(
        default="inline",
        description="after each commit: `inline` (consolidated in the background by the running "
        "process; a turn never waits), `rq` (enqueued for workers: a job names only the "
        "story, branch and turn, and the worker connects with its own `FABULA_REDIS_URL`, "
        "so no secret is in a job or the worker's log) or `off`",
    )
    scenes: Annotated[Literal["process", "rq"], Env("FABULA_SCENES")] = Field(
        default="process",
        description="where a tick's scenes are played (`fabula tick`): `process` (at once, in "
        "the running process) or `rq` (as jobs on the queue's workers: a worker killed "
        "mid-scene has its scene played again by another; the tick is committed once)",
    )
    recall_planner: Annotated[Literal["offline", "model"], Env("FABULA_RECALL_PLANNER")] = Field(
        default="offline",
        description="who plans the writer's recall in model mode: `offline` (rules of "
        "English) or `model` (the planner's model, structured output; agents/recall)",
    )
    embedding_model: Annotated[str | None, Env("FABULA_EMBEDDING_MODEL", "model name", "off")] = (
        Field(
            default=None,
            description="dense retrieval (optional): an embedding model on the model endpoint "
            "(`FABULA_MODEL_BASE_URL`); episodes go into a Redis vector set and the writer's "
            "recall fuses their similarity with the lexical ranking",
        )
    )
    # see fabula/limits.py: refused before anything is written
    max_turn_text: Annotated[int, Env("FABULA_MAX_TURN_TEXT")] = Field(
        default=DEFAULT_TURN_TEXT_BYTES,
        ge=1,
        description="the longest text a turn may have, in UTF-8 bytes",
    )
    max_delta_bytes: Annotated[int, Env("FABULA_MAX_DELTA_BYTES")] = Field(
        default=DEFAULT_DELTA_BYTES,
        ge=1,
        description="the largest delta a commit may send to Redis, in bytes",
    )
    max_sentence_words: Annotated[int, Env("FABULA_MAX_SENTENCE_WORDS")] = Field(
        default=DEFAULT_SENTENCE_WORDS,
        ge=1,
        description="the most words (and punctuation marks) of one sentence the offline "
        "reader reads; the rest of the sentence stays narration, with a reading finding",
    )
    # read before anything is imported, by fabula/warm.py (its idle_seconds reads it the same)
    warm_idle_s: Annotated[
        float, Env("FABULA_WARM", type="seconds", note="`0`: every command in its own process")
    ] = Field(
        default=600.0,
        ge=0,
        description="how long the warm process that runs the commands waits idle before it "
        "ends (`fabula.warm`: the first command starts it, the next ones run in it, with "
        "everything already imported)",
    )
    reading_deadline: Annotated[float, Env("FABULA_READING_DEADLINE", type="seconds")] = Field(
        default=DEFAULT_READING_SECONDS,
        gt=0,
        description="the most seconds the offline reader spends on one turn's text; the "
        "sentences left stay narration, with a reading finding",
    )
    web_token: Annotated[str | None, Env("FABULA_WEB_TOKEN", note="localhost only")] = Field(
        default=None,
        description="the studio's token: with it, `fabula serve` may listen beyond this "
        "machine and asks every client for it",
    )
    agent_tokens: Annotated[
        Path | None, Env("FABULA_AGENT_TOKENS", note="none: the author's own desk", read=_path)
    ] = Field(
        default=None,
        description="the Agent Server's tokens (`langgraph dev`, langgraph.json's auth): a JSON "
        "file of token -> identity, role (author, player, reader), stories and character",
    )
    # the benchmarks' and the test helpers' variables: the application reads none of them
    test_cluster: Annotated[bool, Env("FABULA_TEST_CLUSTER", read=_flag)] = Field(
        default=False,
        description="tests: `1` runs them on a local Redis Cluster "
        "(`fabula.testing.localcluster`) instead of the embedded server",
    )
    chromium: Annotated[
        Path | None,
        Env("FABULA_CHROMIUM", note="`chromium` on the path, else `/usr/bin/chromium`", read=_path),
    ] = Field(default=None, description="tests: the Chromium the browser tests drive")
    cache: Annotated[Path, Env("FABULA_CACHE", note="`~/.cache/fabula`", read=_path)] = Field(
        default_factory=lambda: Path.home() / ".cache" / "fabula",
        description="benchmarks: where `tools/llama.sh` builds llama.cpp's `llama-server`",
    )
    llama_server: Annotated[
        Path | None,
        Env(
            "FABULA_LLAMA_SERVER",
            note="the build in `FABULA_CACHE`, else `llama-server` on the path",
            read=_path,
        ),
    ] = Field(
        default=None,
        description="benchmarks and the real-engine tests: llama.cpp's `llama-server` binary",
    )
    llama_model: Annotated[
        Path | None,
        Env("FABULA_LLAMA_MODEL", note="the engine extra's Gemma 3 270M", read=_path),
    ] = Field(default=None, description="benchmarks and the real-engine tests: the GGUF served")
    llama_threads: Annotated[int | None, Env("FABULA_LLAMA_THREADS", note="the cores")] = Field(
        default=None,
        ge=1,
        description="benchmarks and the real-engine tests: `llama-server`'s threads (on a "
        "machine busy with other work, 1 thread decodes faster than threads that wait on "
        "each other)",
    )

    @property
    def limits(self) -> Limits:
        """The size limits of one turn."""
        return Limits(
            turn_text_bytes=self.max_turn_text,
            delta_bytes=self.max_delta_bytes,
            sentence_words=self.max_sentence_words,
            reading_seconds=self.reading_deadline,
        )

    def model_for(self, role: Role) -> ModelSettings:
        """The settings ``role`` runs with: its own, else the defaults (the memory-builder
        at temperature 0, the writer within :data:`WRITER_MAX_TOKENS` where no limit is set)."""
        if role in self.roles:
            return self.roles[role]
        if role == "memory_builder":
            return self.model.model_copy(update={"temperature": 0.0})
        if role == "writer" and "max_tokens" not in self.model.model_fields_set:
            return self.model.model_copy(update={"max_tokens": WRITER_MAX_TOKENS})
        return self.model

    @property
    def offline(self) -> bool:
        """True when no role runs on a model."""
        return all(self.model_for(r).offline for r in ROLES)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``FABULA_*`` variables (and ``OPENAI_API_KEY``,
        ``OPENAI_BASE_URL``). Raises :class:`ConfigError` naming a variable that does not
        hold a valid value."""
        env = os.environ if env is None else env
        base_values = _model_values(env, MODEL_PREFIX)
        base_values.setdefault("base_url", env.get("OPENAI_BASE_URL") or None)
        base_values.setdefault("api_key", env.get("OPENAI_API_KEY") or None)
        base = _model_settings(base_values, "FABULA_MODEL_*")
        roles: dict[Role, ModelSettings] = {}
        for role in ROLES:
            own = _model_values(env, f"{MODEL_PREFIX}_{role.upper()}")
            if role == "memory_builder":
                own = _deprecated_model_values(env) | own
            if own:
                if role == "memory_builder":
                    own.setdefault("temperature", 0.0)
                merged = base.model_dump(exclude_unset=True) | own
                if role == "writer":
                    merged.setdefault("max_tokens", WRITER_MAX_TOKENS)
                roles[role] = _model_settings(merged, f"{MODEL_PREFIX}_{role.upper()}_*")
        values: dict[str, Any] = {"home": default_home(env), "model": base, "roles": roles}
        for var in VARIABLES:
            text = env.get(var.name)
            if not text or var.field is None or var.field in ("home", "roles"):
                continue  # unset, read where it is used, or read above
            if var.field.startswith("model."):
                continue
            try:
                values[var.field] = var.read(text) if var.read is not None else text
            except ValueError as error:
                raise ConfigError(f"{var.name} is {error}", variable=var.name) from None
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            e = error.errors(include_url=False)[0]
            field = str(e["loc"][0]) if e["loc"] else ""
            variable = next((v.name for v in VARIABLES if v.field == field), None)
            if variable is not None:
                why = str(e["msg"]).removeprefix("Value error, ")
                raise ConfigError(
                    f"{variable}={env.get(variable, '')!r} is invalid: {why}"
                ) from None
            raise ConfigError(f"a setting is invalid: {_first(error)}") from None

    @field_validator("redis_url", "rq_url")
    @classmethod
    def _redis_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("expected a redis://, rediss:// or unix:// URL")
        return url


def _env(info: FieldInfo) -> Env | None:
    return next((m for m in info.metadata if isinstance(m, Env)), None)


def _shown_type(annotation: Any, env: Env) -> str:
    """The type the docs show: the variable's own words, else the field's type in words."""
    if env.type is not None:
        return env.type
    args = get_args(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        (annotation,) = (a for a in args if a is not type(None))  # X | None: X
        args = get_args(annotation)
    if get_origin(annotation) is Literal:
        return ", ".join(f"`{a}`" for a in args)
    words = {bool: "flag", int: "int", float: "float", str: "text", Path: "path"}
    if annotation in words:
        return words[annotation]
    raise TypeError(f"{env.name}: say its type in words (Env(type=...))")


def _shown_default(info: FieldInfo, env: Env) -> str:
    """The default the docs show: the field's, then the variable's note."""
    default = None if info.default_factory is not None else info.default
    if default in (None, False, ()):
        shown = "unset"
    elif isinstance(default, float):
        shown = f"`{default:g}`"
    else:
        shown = f"`{default}`"
    return f"{shown} ({env.note})" if env.note else shown


def _variables() -> tuple[Variable, ...]:
    """The table, from the fields: :class:`Settings`', with :class:`ModelSettings`' in the
    place of its ``model`` field."""
    fields: list[tuple[str, FieldInfo]] = []
    for name, info in Settings.model_fields.items():
        if name == "model":
            fields += [(f"model.{n}", i) for n, i in ModelSettings.model_fields.items()]
        else:
            fields.append((name, info))
    table = []
    for name, info in fields:
        env = _env(info)
        if env is None:
            continue  # passed in by code only
        shown = _shown_type(info.annotation, env)
        doc = info.description or ""
        table.append(Variable(env.name, name, shown, _shown_default(info, env), doc, env.read))
    return tuple(table)


VARIABLES: tuple[Variable, ...] = _variables()
"""Every variable Fabula reads, the one table, generated from the fields:
:meth:`Settings.from_env` reads it, its errors name a variable from it, and the docs'
settings table is generated from it."""


def markdown_table() -> str:
    """The docs' table of variables (docs/reference/settings.md), from :data:`VARIABLES`."""
    rows = ["| variable | field | type | default | meaning |", "| --- | --- | --- | --- | --- |"]
    for v in VARIABLES:
        field = f"`{v.field}`" if v.field else "—"
        rows.append(f"| `{v.name}` | {field} | {v.type} | {v.default} | {v.doc} |")
    return "\n".join(rows) + "\n"


def _model_variables() -> list[tuple[str, str]]:
    """(suffix after ``FABULA_MODEL``, ModelSettings field) of every model variable."""
    return [
        (v.name.removeprefix(MODEL_PREFIX), v.field.removeprefix("model."))
        for v in VARIABLES
        if v.field is not None and v.field.startswith("model.")
    ]


def _model_values(env: Mapping[str, str], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for suffix, field in _model_variables():
        value = env.get(prefix + suffix)
        if value:
            out[field] = value
    return out


DEPRECATED_PREFIXES = {"memory_builder": f"{MODEL_PREFIX}_EXTRACTOR"}
"""A role's former variable prefix, still read (the role's own variables win)."""

_warned: set[str] = set()  # the deprecated variables already logged (once a process)


def _deprecated_model_values(env: Mapping[str, str]) -> dict[str, Any]:
    """The memory-builder's model values under its former name, ``FABULA_MODEL_EXTRACTOR*``;
    each variable set is logged as deprecated, once."""
    prefix = DEPRECATED_PREFIXES["memory_builder"]
    values = _model_values(env, prefix)
    for suffix, _ in _model_variables():
        name = prefix + suffix
        if env.get(name) and name not in _warned:
            _warned.add(name)
            new = f"{MODEL_PREFIX}_MEMORY_BUILDER{suffix}"
            log.warning("deprecated_variable", variable=name, use=new)
    return values


def _model_settings(values: Mapping[str, Any], where: str) -> ModelSettings:
    try:
        return ModelSettings.model_validate(dict(values))
    except ValidationError as error:
        raise ConfigError(f"{where}: {_first(error)}") from None


def _first(error: ValidationError) -> str:
    e = error.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
