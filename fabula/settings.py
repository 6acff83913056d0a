"""Settings: read once at an entry point and passed in, never read at import.

Model settings are per role. ``FABULA_MODEL_*`` set every role's defaults; a role's own
``FABULA_MODEL_<ROLE>_*`` (``PLANNER``, ``CHARACTER``, ``WRITER``, ``EXTRACTOR``,
``SUMMARISER``) override them, and ``FABULA_MODEL_<ROLE>`` alone names that role's model::

    FABULA_MODEL=gpt-4o-mini FABULA_MODEL_WRITER=gpt-4o FABULA_MODEL_WRITER_MAX_TOKENS=900

``FABULA_MODEL_SCHEMAS=generic`` (or per role, ``FABULA_MODEL_<ROLE>_SCHEMAS``) sends the
roles' generic schemas instead of the story-shaped ones (``story``, the default).

A role whose model is unset runs on the offline engine. The extractor (the memory-builder's
model) reads at temperature 0 unless ``FABULA_MODEL_EXTRACTOR_TEMPERATURE`` says otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fabula.errors import ConfigError
from fabula.limits import DEFAULT_DELTA_BYTES, DEFAULT_TURN_TEXT_BYTES, Limits

__all__ = [
    "ROLES",
    "FsyncPolicy",
    "ModelSettings",
    "Price",
    "Role",
    "SchemaStyle",
    "Settings",
    "default_home",
]

Role = Literal["planner", "character", "writer", "extractor", "summariser"]
ROLES: tuple[Role, ...] = get_args(Role)

SchemaStyle = Literal["story", "generic"]

FsyncPolicy = Literal["always", "everysec"]
"""When the embedded server fsyncs its append-only file (``FABULA_REDIS_FSYNC``).

``always`` (the default): before it replies to a write, so every acknowledged write is on
disk; each pass of the server's event loop that has writes costs one fsync. ``everysec``:
once a second, so a power loss may lose the last second of autonomous turns, and a human
approval (acknowledged only once on disk, by ``WAITAOF``) waits up to a second for the next
fsync."""

# environment suffix -> ModelSettings field (FABULA_MODEL<_ROLE><suffix>)
_MODEL_ENV: dict[str, str] = {
    "": "model",
    "_BASE_URL": "base_url",
    "_API_KEY": "api_key",
    "_TEMPERATURE": "temperature",
    "_MAX_TOKENS": "max_tokens",
    "_TIMEOUT": "timeout_s",
    "_SEED": "seed",
    "_MAX_RETRIES": "max_retries",
    "_ATTEMPTS": "max_attempts",
    "_SCHEMAS": "schemas",
    "_STOP": "stop",
}


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
    a server's ``Retry-After``. ``max_attempts`` counts replies per structured call (a
    malformed reply is shown its error and asked for again). ``max_tokens`` bounds a reply;
    ``seed`` is sent where set (servers that take one answer reproducibly). ``stop`` are
    stop sequences sent with every request (``FABULA_MODEL_STOP``: a JSON list of strings,
    or one sequence as it is).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    temperature: float | None = Field(default=0.7, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
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
        base_values = _model_values(env, "FABULA_MODEL")
        base_values.setdefault("base_url", env.get("OPENAI_BASE_URL") or None)
        base_values.setdefault("api_key", env.get("OPENAI_API_KEY") or None)
        base = _model_settings(base_values, "FABULA_MODEL_*")
        roles: dict[Role, ModelSettings] = {}
        for role in ROLES:
            own = _model_values(env, f"FABULA_MODEL_{role.upper()}")
            if own:
                if role == "extractor":
                    own.setdefault("temperature", 0.0)
                merged = base.model_dump(exclude_unset=True) | own
                roles[role] = _model_settings(merged, f"FABULA_MODEL_{role.upper()}_*")
        values: dict[str, Any] = {
            "home": default_home(env),
            "redis_url": env.get("FABULA_REDIS_URL") or None,
            "allow_open_redis": env.get("FABULA_REDIS_ALLOW_OPEN", "") in ("1", "true", "yes"),
            "redis_load_truncated": env.get("FABULA_REDIS_LOAD_TRUNCATED", "")
            in ("1", "true", "yes"),
            "rq_url": env.get("FABULA_RQ_URL") or None,
            "model": base,
            "roles": roles,
        }
        for name, var in _ENV.items():
            if env.get(var):
                values[name] = env[var]
        if env.get("FABULA_MODEL_CASSETTE"):
            values["model_cassette"] = Path(env["FABULA_MODEL_CASSETTE"]).expanduser()
        if env.get("FABULA_MODEL_PRICES"):
            values["prices"] = _json(env["FABULA_MODEL_PRICES"], "FABULA_MODEL_PRICES")
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            e = error.errors(include_url=False)[0]
            field = str(e["loc"][0]) if e["loc"] else ""
            variable: str | None = {
                **_ENV,
                "redis_url": "FABULA_REDIS_URL",
                "rq_url": "FABULA_RQ_URL",
            }.get(field)
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


# the plain settings and the variables they are read from
_ENV = {
    "redis_fsync": "FABULA_REDIS_FSYNC",
    "redis_cluster": "FABULA_REDIS_CLUSTER",
    "consolidate": "FABULA_CONSOLIDATE",
    "recall_planner": "FABULA_RECALL_PLANNER",
    "embedding_model": "FABULA_EMBEDDING_MODEL",
    "max_turn_text": "FABULA_MAX_TURN_TEXT",
    "max_delta_bytes": "FABULA_MAX_DELTA_BYTES",
    "token_budget": "FABULA_TOKEN_BUDGET",
    "model_concurrency": "FABULA_MODEL_CONCURRENCY",
}


def _model_values(env: Mapping[str, str], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for suffix, field in _MODEL_ENV.items():
        value = env.get(prefix + suffix)
        if value:
            out[field] = value
    return out


def _model_settings(values: Mapping[str, Any], where: str) -> ModelSettings:
    try:
        return ModelSettings.model_validate(dict(values))
    except ValidationError as error:
        raise ConfigError(f"{where}: {_first(error)}") from None


def _json(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{name} is not JSON: {error.msg}", variable=name) from None


def _first(error: ValidationError) -> str:
    e = error.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
