"""The one table of variables (:data:`fabula.settings.VARIABLES`): what reads it. The docs'
settings reference is generated from it (tests/system/test_docs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabula.errors import ConfigError
from fabula.settings import VARIABLES, ModelSettings, Settings

# fields no variable sets: passed in by code (tests, benchmarks) only
UNSET = {"max_revisions", "model.retry_initial_s", "model.retry_max_s"}


def test_every_field_has_its_variable() -> None:
    """Every settings field is set by exactly one variable of the table, or is one of the few
    that code passes in: a field added without its variable fails here."""
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
    "FABULA_MODEL_STOP",
    "FABULA_MODEL_CASSETTE",
    "FABULA_REDIS_ALLOW_OPEN",
    "FABULA_REDIS_LOAD_TRUNCATED",
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
