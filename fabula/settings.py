"""Settings: read once at an entry point and passed in, never read at import.

Model settings are per role. ``FABULA_MODEL_*`` set every role's defaults; a role's own
``FABULA_MODEL_<ROLE>_*`` (``PLANNER``, ``CHARACTER``, ``WRITER``, ``EXTRACTOR``,
``SUMMARISER``) override them, and ``FABULA_MODEL_<ROLE>`` alone names that role's model::

    FABULA_MODEL=gpt-4o-mini FABULA_MODEL_WRITER=gpt-4o FABULA_MODEL_WRITER_MAX_TOKENS=900

``FABULA_MODEL_SCHEMAS=generic`` (or per role, ``FABULA_MODEL_<ROLE>_SCHEMAS``) sends the
roles' generic schemas instead of the story-shaped ones (``story``, the default).

A role whose model is unset runs on the offline engine. The extractor (the memory-builder's
model) reads at temperature 0 unless ``FABULA_MODEL_EXTRACTOR_TEMPERATURE`` says otherwise.

Every variable is one row of :data:`VARIABLES` (variable, field, type, default, meaning):
:meth:`Settings.from_env` reads the environment through it, its errors name the variable
from it, and the docs' settings reference is generated from it when the site is built
(:func:`markdown_table`; a test holds every variable there). A new setting is a field and
a row.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fabula.errors import ConfigError
from fabula.limits import DEFAULT_DELTA_BYTES, DEFAULT_TURN_TEXT_BYTES, Limits

__all__ = [
    "LORE_BUDGET",
    "ROLES",
    "VARIABLES",
    "CounterName",
    "FsyncPolicy",
    "ModelSettings",
    "Price",
    "Role",
    "SchemaStyle",
    "Settings",
    "Variable",
    "default_home",
    "markdown_table",
]

Role = Literal["planner", "character", "writer", "extractor", "summariser"]
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
class Variable:
    """One environment variable Fabula reads: the field it sets and what it means.

    ``field`` is a :class:`Settings` field (``model.x``: a :class:`ModelSettings` field of
    ``FABULA_MODEL_*``, which ``FABULA_MODEL_<ROLE>_*`` override per role), or ``None`` for a
    variable read where it is used. ``read`` turns the variable's text into the field's value
    (``None``: the text as it is, validated by the field); ``type`` and ``default`` are
    shown as written in the docs' settings table, generated from this one
    (:func:`markdown_table`).
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

VARIABLES: tuple[Variable, ...] = (
    Variable(
        "FABULA_HOME",
        "home",
        "path",
        "`~/.local/share/fabula`",
        "data folder of the embedded Redis",
    ),
    Variable(
        "FABULA_REDIS_URL",
        "redis_url",
        "URL",
        "unset",
        "use this Redis instead of the embedded one",
    ),
    Variable(
        "FABULA_REDIS_FSYNC",
        "redis_fsync",
        "`always`, `everysec`",
        "`always`",
        "the embedded Redis's fsync: `always` (before each reply) or `everysec`",
    ),
    Variable(
        "FABULA_REDIS_ALLOW_OPEN",
        "allow_open_redis",
        "flag",
        "unset (refused)",
        "`1`: accept a Redis with an open user (enabled, no password)",
        _flag,
    ),
    Variable(
        "FABULA_REDIS_LOAD_TRUNCATED",
        "redis_load_truncated",
        "flag",
        "unset (refused, with how to repair)",
        "`1`: the embedded server loads a truncated append-only file, dropping its cut tail",
        _flag,
    ),
    Variable(
        "FABULA_REDIS_CLUSTER",
        "redis_cluster",
        "flag",
        "unset (asked)",
        "`1`/`0`: the Redis is (not) a cluster",
    ),
    Variable(
        "FABULA_RQ_URL",
        "rq_url",
        "URL",
        "`FABULA_REDIS_URL`",
        "the RQ queue's Redis (needed with a cluster and `FABULA_CONSOLIDATE=rq`)",
    ),
    Variable(
        "FABULA_CONSOLIDATE",
        "consolidate",
        "`inline`, `rq`, `off`",
        "`inline`",
        "`inline` (folded in the background by the running process; a turn never "
        "waits), `rq` (enqueued for workers: a job names only the story, branch and "
        "turn, and the worker connects with its own `FABULA_REDIS_URL`, so no secret "
        "is in a job or the worker's log) or `off`",
    ),
    Variable(
        "FABULA_TOKEN_BUDGET",
        "token_budget",
        "int",
        "`1200`",
        "the writer's memory context, in tokens",
    ),
    Variable(
        "FABULA_LORE_BUDGET",
        "lore_budget",
        "int",
        f"`{LORE_BUDGET}`",
        "the lore's own budget, in tokens, beside the memory's: the most the lorebook "
        "entries a context activates may hold (the writer's, a recall's, a chat's, a "
        "character's, the planner's); an entry that activates but does not fit is listed "
        "as left out, with its size (`fabula recall`, the studio's Lore and Recall pages)",
    ),
    Variable(
        "FABULA_TOKEN_COUNTER",
        "token_counter",
        "`o200k_base`, `cl100k_base`, `approximate`",
        "`o200k_base`",
        "how budgets are counted, offline (`memory/tokens.py`): `o200k_base` "
        "(tiktoken, from its cache or the copy shipped in `memory/data/`, checked "
        "against tiktoken's pinned hash), "
        "`cl100k_base` (if tiktoken has it cached), or `approximate` (an estimate that "
        "over-counts both, for models whose tokenizers split finer)",
    ),
    Variable(
        "FABULA_RECALL_PLANNER",
        "recall_planner",
        "`offline`, `model`",
        "`offline`",
        "who plans the writer's retrieval in model mode: `offline` (rules of English) "
        "or `model` (the planner's model, structured output)",
    ),
    Variable(
        "FABULA_EMBEDDING_MODEL",
        "embedding_model",
        "model name",
        "off",
        "dense retrieval (optional): an embedding model on the model endpoint "
        "(`FABULA_MODEL_BASE_URL`); episodes go into a Redis vector set and the "
        "writer's retrieval fuses their similarity with the lexical ranking",
    ),
    Variable(
        "FABULA_MAX_TURN_TEXT",
        "max_turn_text",
        "int",
        "`65536`",
        "the longest text a turn may have, in UTF-8 bytes",
    ),
    Variable(
        "FABULA_MAX_DELTA_BYTES",
        "max_delta_bytes",
        "int",
        "`16777216`",
        "the largest delta a commit may send to Redis, in bytes",
    ),
    Variable(
        "FABULA_MODEL",
        "model.model",
        "model name",
        "unset (offline)",
        "a chat model on any OpenAI-compatible server",
    ),
    Variable(
        "FABULA_MODEL_BASE_URL",
        "model.base_url",
        "URL",
        "`OPENAI_BASE_URL`, else OpenAI's",
        "the chat model's server",
    ),
    Variable(
        "FABULA_MODEL_API_KEY", "model.api_key", "text", "`OPENAI_API_KEY`", "the server's key"
    ),
    Variable(
        "FABULA_MODEL_TEMPERATURE",
        "model.temperature",
        "float",
        "`0.7` (the extractor: `0`)",
        "sampling temperature",
    ),
    Variable(
        "FABULA_MODEL_MAX_TOKENS",
        "model.max_tokens",
        "int",
        "the server's",
        "the longest reply, in tokens (a structured reply cut there is asked for once "
        "more with twice the limit, then is an error; the writer's prose cut there is "
        "kept up to its last complete sentence, with a warning for the critic and the "
        "approver)",
    ),
    Variable(
        "FABULA_MODEL_STOP",
        "model.stop",
        "JSON list, or text",
        "unset",
        'stop sequences: a JSON list of strings (`["\\n\\n\\n", "THE END"]`), or one '
        "sequence as it is",
    ),
    Variable(
        "FABULA_MODEL_TIMEOUT",
        "model.timeout_s",
        "float",
        "`60`",
        "seconds one reply may take in all, from its request to its last byte, its "
        "transport retries included (a reply still coming then is cut off: an error)",
    ),
    Variable(
        "FABULA_MODEL_MAX_REPLY_BYTES",
        "model.max_reply_bytes",
        "int",
        "`8388608` (8 MiB)",
        "the most bytes one reply may send, streamed or not, counted as they are read "
        "(a reply that passes it is cut off there: an error)",
    ),
    Variable("FABULA_MODEL_SEED", "model.seed", "int", "unset", "sent to servers that take a seed"),
    Variable(
        "FABULA_MODEL_MAX_RETRIES",
        "model.max_retries",
        "int",
        "`4`",
        "transport retries (429, 5xx, timeouts, lost connections; exponential backoff "
        "with jitter, `Retry-After` honoured)",
    ),
    Variable(
        "FABULA_MODEL_ATTEMPTS",
        "model.max_attempts",
        "int",
        "`3`",
        "replies per structured call (a malformed one is shown its error and asked for again)",
    ),
    Variable(
        "FABULA_MODEL_SCHEMAS",
        "model.schemas",
        "`story`, `generic`",
        "`story`",
        "the JSON schema of a structured call: `story` (built per call from what the "
        "role may see: ids as enums, bounded arrays and strings, an action as a union "
        "by kind) or `generic` (the role's pydantic type, the baseline)",
    ),
    Variable(
        "FABULA_MODEL_<ROLE>_<SETTING>",
        "roles",
        "as above",
        "`FABULA_MODEL_*`",
        "one role's model (`FABULA_MODEL_<ROLE>`) and settings (`PLANNER`, "
        "`CHARACTER`, `WRITER`, `EXTRACTOR`, `SUMMARISER`; e.g. "
        "`FABULA_MODEL_WRITER_MAX_TOKENS`); what a role does not set comes from "
        "`FABULA_MODEL_*`; a role with no model runs offline (the summariser: the "
        "hierarchy keeps its extractive summaries; with `FABULA_CONSOLIDATE=rq` the "
        "worker's own `FABULA_MODEL_*` settings are used)",
    ),
    Variable(
        "FABULA_MODEL_CONCURRENCY",
        "model_concurrency",
        "int",
        "`4`",
        "character agents calling the model at once",
    ),
    Variable(
        "FABULA_MODEL_CASSETTE",
        "model_cassette",
        "path",
        "unset",
        "a file: the first run (a CLI command, or `fabula serve` for its whole life) "
        "records every model exchange into it (keys left out), later runs replay it "
        "without a server (a request it does not hold is an error)",
        _path,
    ),
    Variable(
        "FABULA_MODEL_PRICES",
        "prices",
        "JSON",
        "unset",
        "JSON price table, US dollars per million tokens: "
        '`{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}`',
        _json,
    ),
    Variable(
        "FABULA_WEB_TOKEN",
        "web_token",
        "text",
        "unset (localhost only)",
        "the studio's token: with it, `fabula serve` may listen beyond this machine "
        "and asks every client for it",
    ),
)
"""Every variable Fabula reads, the one table: :meth:`Settings.from_env` reads it, its
errors name a variable from it, and the docs' settings table is generated from it."""


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

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    temperature: float | None = Field(default=0.7, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
    # a streamed reply sends ~200 bytes of envelope a token: 8 MiB holds a 64 KiB passage
    # (the turn text limit) streamed a token a chunk, twice over
    max_reply_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    seed: int | None = None
    max_retries: int = Field(default=4, ge=0)
    max_attempts: int = Field(default=3, ge=1)
    retry_initial_s: float = Field(default=0.5, ge=0)
    retry_max_s: float = Field(default=30.0, ge=0)
    # what a structured call's JSON schema is: built from what the role may see (ids as
    # enums, bounded arrays and strings: agents/schemas.py), or the role's generic pydantic
    # type made strict (the baseline a benchmark compares against)
    schemas: SchemaStyle = "story"
    stop: tuple[str, ...] = ()

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

    home: Path = Field(default_factory=default_home)
    redis_url: str | None = None
    # accept a Redis with a user that lets anyone in (FABULA_REDIS_ALLOW_OPEN=1)
    allow_open_redis: bool = False
    # start the embedded server on a truncated append-only file, dropping its cut tail
    # (FABULA_REDIS_LOAD_TRUNCATED=1); by default such a file is refused, with how to repair it
    redis_load_truncated: bool = False
    # the embedded server's fsync policy (FABULA_REDIS_FSYNC); a configured Redis keeps its own
    redis_fsync: FsyncPolicy = "always"
    # FABULA_REDIS_CLUSTER=1/0: the Redis is (not) a cluster; unset: asked once
    redis_cluster: bool | None = None
    # the RQ queue's Redis (FABULA_RQ_URL); unset: the Redis itself (RQ cannot use a cluster)
    rq_url: str | None = None
    model: ModelSettings = Field(default_factory=ModelSettings)
    roles: dict[Role, ModelSettings] = Field(default_factory=dict)  # per-role overrides
    model_concurrency: int = Field(default=4, ge=1)  # model calls of the character fan-out
    prices: dict[str, Price] = Field(default_factory=dict)  # by model name
    model_cassette: Path | None = None  # record model exchanges there, or replay them
    token_budget: int = Field(default=1200, ge=1)
    # the lore's own budget beside the memory's (FABULA_LORE_BUDGET)
    lore_budget: int = Field(default=LORE_BUDGET, ge=1)
    # how budgets are counted (FABULA_TOKEN_COUNTER); None: the best encoding there is
    token_counter: CounterName | None = None
    max_revisions: int = 2
    consolidate: Literal["inline", "rq", "off"] = "inline"  # after each commit (see jobs)
    # who plans the writer's retrieval in model mode: the offline planner, or the planner's
    # model with structured output (agents/recall)
    recall_planner: Literal["offline", "model"] = "offline"
    # dense retrieval: the embedding model on the model settings' endpoint (None: off)
    embedding_model: str | None = None
    # see fabula/limits.py: refused before anything is written
    max_turn_text: int = Field(default=DEFAULT_TURN_TEXT_BYTES, ge=1)
    max_delta_bytes: int = Field(default=DEFAULT_DELTA_BYTES, ge=1)
    # the studio's token (FABULA_WEB_TOKEN): beyond localhost, every client must send it
    web_token: str | None = None

    @property
    def limits(self) -> Limits:
        """The size limits of one turn."""
        return Limits(turn_text_bytes=self.max_turn_text, delta_bytes=self.max_delta_bytes)

    def model_for(self, role: Role) -> ModelSettings:
        """The settings ``role`` runs with: its own, else the defaults (the extractor at
        temperature 0)."""
        if role in self.roles:
            return self.roles[role]
        if role == "extractor":
            return self.model.model_copy(update={"temperature": 0.0})
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
            if own:
                if role == "extractor":
                    own.setdefault("temperature", 0.0)
                merged = base.model_dump(exclude_unset=True) | own
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


def _model_values(env: Mapping[str, str], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for suffix, field in _model_variables():
        value = env.get(prefix + suffix)
        if value:
            out[field] = value
    return out


def _model_settings(values: Mapping[str, Any], where: str) -> ModelSettings:
    try:
        return ModelSettings.model_validate(dict(values))
    except ValidationError as error:
        raise ConfigError(f"{where}: {_first(error)}") from None


def _first(error: ValidationError) -> str:
    e = error.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
