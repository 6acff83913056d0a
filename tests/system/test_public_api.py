"""The public API of the one import name, and the docs' Python example run as written."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

import fabula

LIBRARY = Path(__file__).resolve().parents[2] / "docs" / "guides" / "library.md"


class TestPublicApi:
    def test_every_name_resolves(self) -> None:
        """Each name in ``fabula.__all__`` is importable from ``fabula`` and documented."""
        assert sorted(dir(fabula)) == sorted(fabula.__all__)
        for name in fabula.__all__:
            value = getattr(fabula, name)
            assert value is not None, name
            assert name in (fabula.__doc__ or ""), f"{name} is not in the package docstring"

    def test_all_is_exactly_what_fabula_exports(self) -> None:
        """``fabula.__all__`` lists every public name the package holds once each is
        resolved, and nothing else (httpx's ``test_exported_members.py``): a name added to
        the lazy table but not to ``__all__``, or an implementation name left public, fails.
        The submodules (``fabula.errors``, ``fabula.memory``, ...) are imported by name."""
        for name in fabula.__all__:
            getattr(fabula, name)
        members = [
            name
            for name, value in vars(fabula).items()
            if not name.startswith("_") and not isinstance(value, ModuleType)
        ]
        assert fabula.__all__ == sorted(members)

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        with pytest.raises(AttributeError, match="no attribute 'nothing'"):
            _ = fabula.nothing  # type: ignore[attr-defined]


def test_the_service_facade_resolves_each_name_from_its_home() -> None:
    """Each name in ``fabula.graph.service.__all__`` resolves, lazily, to the object its
    defining module holds: a name added to ``__all__`` whose home the facade does not know
    fails here (the application no longer re-exports the pending and consolidation names)."""
    from fabula.graph import service
    from fabula.graph.service import application, consolidation, pending

    homes = (application, consolidation, pending)
    for name in service.__all__:
        value = getattr(service, name)
        assert any(vars(home).get(name) is value for home in homes), name
    assert service.Pending is pending.Pending
    assert service.consolidator is consolidation.consolidator


LAZY = ("fabula", "fabula.memory", "fabula.graph.service", "fabula.graph.checkpoint")


@pytest.mark.parametrize("package", LAZY)
def test_each_lazy_package_lists_its_names_once_for_the_runtime_and_once_for_types(
    package: str,
) -> None:
    """A lazy package's table (:mod:`fabula.lazy`) and its ``TYPE_CHECKING`` re-exports name
    the same homes, ``__all__`` holds every table name, and each resolves to its home's
    object: a name added to one list and not the other fails here."""
    import ast
    import importlib

    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                for alias in statement.names:
                    assert alias.asname == alias.name, f"{alias.name}: re-export it as itself"
                    typed[alias.name] = statement.module
    homes = vars(module)["_HOMES"]
    assert typed == homes
    assert set(homes) <= set(module.__all__)
    for name, home in homes.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), name), name
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nothing'"):
        _ = module.nothing


def test_the_library_example_runs(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docs' "As a library" example (docs/guides/library.md), as written, against the
    test Redis: it makes the story with its opening, commits a turn and prints a belief and
    the world."""
    section = LIBRARY.read_text(encoding="utf-8").split("## As a library", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    monkeypatch.setenv("FABULA_REDIS_URL", redis_url)
    exec(compile(match.group(1), str(LIBRARY), "exec"), {"__name__": "library"})
    # the last line is the example's (unconfigured structlog also writes to stdout)
    outcome, believed, actual = capsys.readouterr().out.splitlines()[-1].split()
    assert outcome == "committed"
    assert (believed, actual) != ("None", "None")
