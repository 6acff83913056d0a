"""The public API of the one import name, and the docs' Python example run as written.

Modules are private by default: only the modules of :data:`PUBLIC` declare ``__all__``."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from types import ModuleType

import pytest

import fabula

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "docs" / "guides" / "library.md"


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
    fails here (the application re-exports none of them: each is imported from its home)."""
    from fabula.graph import service
    from fabula.graph.service import (
        application,
        consolidation,
        core,
        decisions,
        handles,
        pending,
        stories,
    )

    homes = (application, consolidation, core, decisions, handles, pending, stories)
    for name in service.__all__:
        value = getattr(service, name)
        assert any(vars(home).get(name) is value for home in homes), name
    assert service.Pending is pending.Pending
    assert service.consolidator is consolidation.consolidator


LAZY = ("fabula", "fabula.memory", "fabula.graph.service", "fabula.graph.checkpoint")

PUBLIC = frozenset(
    {
        *LAZY,  # the names docs/guides/library.md and fabula/__init__.py document
        "fabula.errors",  # the hierarchy every error Fabula raises belongs to
        # the test helpers docs/guides/testing.md offers projects built on Fabula
        *(
            f"fabula.testing.{name}"
            for name in (
                "fake_openai",
                "localcluster",
                "redis",
                "model",
                "stories",
                "cli",
                "web",
                "imports",
                "busy",
                "fixtures",
                "browser",
                "leaks",
            )
        ),
    }
)
"""The public modules: each declares ``__all__``, and no other module does. Every other module
is private, however its names are spelled: a new module is private until it is added here."""

# the folders behind the one import name (fabula/<part> links to them), and the scripts
FOLDERS = ("fabula", "agents", "graph", "memory", "worlds", "bench", "tools")


def _module_name(path: Path) -> str:
    """``memory/store.py`` -> ``fabula.memory.store``; ``fabula/__init__.py`` -> ``fabula``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] not in ("fabula", "tools"):
        parts.insert(0, "fabula")
    return ".".join(parts)


def _declares_all(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def test_only_the_public_modules_declare_all() -> None:
    """Private by default: a module that declares ``__all__`` is one of :data:`PUBLIC`, and
    each of those declares it. A name shared between modules is imported from its home; a
    package (or a facade such as ``graph/service/handles.py``) that names another module's
    on purpose re-exports it as itself (``from m import X as X``)."""
    declaring = set()
    seen = set()
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            inside = path.relative_to(ROOT).parents
            if path.is_symlink() or any((ROOT / part).is_symlink() for part in inside):
                continue  # fabula/memory and the like: the folder itself is walked
            name = _module_name(path)
            seen.add(name)
            if _declares_all(path):
                declaring.add(name)
    assert seen >= PUBLIC, sorted(PUBLIC - seen)
    assert len(seen) > 200  # the walk found the modules, not an empty tree
    assert sorted(declaring - PUBLIC) == [], "private modules declaring __all__"
    assert sorted(PUBLIC - declaring) == [], "public modules without __all__"


@pytest.mark.parametrize("package", LAZY)
def test_each_lazy_package_lists_its_names_once_for_the_runtime_and_once_for_types(
    package: str,
) -> None:
    """A lazy package's table (:mod:`fabula.lazy`) and its ``TYPE_CHECKING`` re-exports name
    the same homes, ``__all__`` holds every table name, and each resolves to its home's
    object: a name added to one list and not the other fails here."""
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


INTERFACES = [
    *sorted((ROOT / "graph" / "web").rglob("*.py")),
    *sorted((ROOT / "graph" / "cli").rglob("*.py")),
    *sorted((ROOT / "graph").glob("agent_*.py")),
]


def test_the_interfaces_hold_a_story_by_its_ids() -> None:
    """The studio, the command line and the Agent Server never call ``Fabula.store`` (or
    any ``.store(...)``) nor name memory's ``StoryStore``, and the reader keeps its store
    private: they hold a ``StoryRef``, read through ``fab.read`` and write through
    ``Fabula``'s operations."""
    from fabula.graph.service.handles import StoryRef
    from fabula.graph.service.reader import Reader

    assert len(INTERFACES) > 30
    found = []
    for path in INTERFACES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if called and node.func.attr == "store":  # type: ignore[union-attr]
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .store()")
            named = node.id if isinstance(node, ast.Name) else getattr(node, "name", None)
            if isinstance(node, ast.Name | ast.alias) and named == "StoryStore":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} StoryStore")
    assert found == []
    assert [n for n in dir(Reader) if n == "store" or n.startswith("store")] == []
    assert [f.name for f in dataclasses.fields(StoryRef)] == ["story", "branch"]
