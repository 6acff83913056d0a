"""Settings: read once at an entry point and passed in, never read at import."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field

__all__ = ["ModelSettings", "Settings", "default_home"]


def default_home(env: Mapping[str, str] | None = None) -> Path:
    """Fabula's data folder: ``$FABULA_HOME``, else the user's data folder."""
    env = os.environ if env is None else env
    if env.get("FABULA_HOME"):
        return Path(env["FABULA_HOME"]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fabula"


class ModelSettings(BaseModel):
    """Where the chat model lives; ``model`` unset means the offline engine."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    temperature: float = 0.7
    max_retries: int = 2
    timeout_s: float = 60.0

    @property
    def offline(self) -> bool:
        return not self.model


class Settings(BaseModel):
    """Everything Fabula reads from its environment, in one object."""

    home: Path = Field(default_factory=default_home)
    redis_url: str | None = None
    model: ModelSettings = Field(default_factory=ModelSettings)
    token_budget: int = 1200
    max_revisions: int = 2
    log_json: bool | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``FABULA_*`` variables (and ``OPENAI_API_KEY``)."""
        env = os.environ if env is None else env
        model = ModelSettings(
            base_url=env.get("FABULA_MODEL_BASE_URL") or env.get("OPENAI_BASE_URL") or None,
            model=env.get("FABULA_MODEL") or None,
            api_key=env.get("FABULA_MODEL_API_KEY") or env.get("OPENAI_API_KEY") or None,
        )
        budget = env.get("FABULA_TOKEN_BUDGET")
        return cls(
            home=default_home(env),
            redis_url=env.get("FABULA_REDIS_URL") or None,
            model=model,
            token_budget=int(budget) if budget else 1200,
        )
