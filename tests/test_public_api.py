"""The public API of the one import name, and the README's Python example run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fabula

README = Path(__file__).resolve().parent.parent / "README.md"


class TestPublicApi:
    def test_every_name_resolves(self) -> None:
        """Each name in ``fabula.__all__`` is importable from ``fabula`` and documented."""
        assert sorted(dir(fabula)) == sorted(fabula.__all__)
        for name in fabula.__all__:
            value = getattr(fabula, name)
            assert value is not None, name
            assert name in (fabula.__doc__ or ""), f"{name} is not in the package docstring"

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        with pytest.raises(AttributeError, match="no attribute 'nothing'"):
            _ = fabula.nothing  # type: ignore[attr-defined]


def test_the_readme_example_runs(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's "As a library" example, as written, against the test Redis: it makes
    the story with its opening, commits a turn and prints a belief and the world."""
    section = README.read_text(encoding="utf-8").split("### As a library", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    monkeypatch.setenv("FABULA_REDIS_URL", redis_url)
    exec(compile(match.group(1), str(README), "exec"), {"__name__": "readme"})
    # the last line is the example's (unconfigured structlog also writes to stdout)
    outcome, believed, actual = capsys.readouterr().out.splitlines()[-1].split()
    assert outcome == "committed"
    assert (believed, actual) != ("None", "None")
