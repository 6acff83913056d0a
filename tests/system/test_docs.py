"""The README is a front page and the docs site holds the rest: the README's length and its
two commands, every relative link of the README and the docs resolving, and the generated
reference pages listing every world-pack field, every setting and every command."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from fabula.settings import VARIABLES, markdown_table
from fabula.worlds.pack import WorldPack

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

DEMO = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && fabula demo"
TESTS = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev]" && pytest -q'

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _hooks() -> ModuleType:
    """tools/docs_hooks.py, the generator of the reference pages (not a package)."""
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "tools" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    return _hooks()


def _links(path: Path) -> list[str]:
    """The relative link targets of a markdown file, outside code blocks and code spans."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            continue  # a URL, an anchor on the same page, an absolute path
        targets.append(target.split("#", 1)[0])
    return targets


def test_the_readme_is_a_front_page() -> None:
    """At most 250 lines, with the two commands as a newcomer types them (.ci/run runs the
    second one's `pytest -q` after installing with the dev extra)."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert f"```bash\n{DEMO}\n```" in text
    assert f"```bash\n{TESTS}\n```" in text


def _markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path, hooks: ModuleType) -> None:
    """Every relative link (and image) names a file that exists, or a page the docs
    generate when they are built."""
    generated = {(DOCS / page).resolve() for page in hooks.GENERATED}
    broken = [
        target
        for target in _links(path)
        if not (path.parent / target).exists() and (path.parent / target).resolve() not in generated
    ]
    assert broken == []


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    """The check above reads links as mkdocs and GitHub do (code is no link)."""
    page = tmp_path / "page.md"
    page.write_text(
        "[a](missing.md#x) ![b](pic.png) [c](https://x.org) [d](#here)\n"
        "`[e](code.md)`\n```\n[f](fenced.md)\n```\n",
        encoding="utf-8",
    )
    assert _links(page) == ["missing.md", "pic.png"]


def test_every_docs_page_is_in_the_nav(hooks: ModuleType) -> None:
    """A page written but not in mkdocs.yml's nav would be unreachable."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    nav = {line.rsplit(" ", 1)[-1] for line in config.splitlines()}
    pages = [str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")] + list(hooks.GENERATED)
    assert [p for p in pages if p not in nav] == []


def test_the_world_pack_reference_lists_every_field(hooks: ModuleType) -> None:
    """Every field of the pack's top-level model, and of each model it holds, has its row:
    a field added to worlds/pack.py is documented by the build."""
    page = hooks.world_pack_page()
    for path, model in hooks._models(WorldPack):
        section = page.split(f"\n## {model.__name__}\n", 1)[1].split("\n## ", 1)[0]
        for name in model.model_fields:
            assert f"| `{name}` |" in section, f"{path or 'world.toml'}: {name}"
    assert {"places", "characters", "objects", "lore"} <= set(WorldPack.model_fields)


def test_the_settings_reference_lists_every_setting(hooks: ModuleType) -> None:
    """The settings page is the table of VARIABLES as generated: a variable added, renamed
    or re-documented in settings.py is on the page the next build."""
    page = hooks.settings_page()
    assert markdown_table() in page
    for variable in VARIABLES:
        assert f"| `{variable.name}` |" in page


def test_the_cli_reference_lists_every_command(hooks: ModuleType) -> None:
    """Every command of `fabula` (the benchmarks' included) has its section, with each of
    its options."""
    page = hooks.cli_page()
    commands = list(hooks._commands())
    assert {"fabula demo", "fabula server stop", "fabula bench story"} <= {c for c, _ in commands}
    for line, command in commands:
        section = page.split(f"\n## {line} ", 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            if param.param_type_name == "option" and not param.hidden:
                assert f"`{param.opts[0]}`" in section, f"{line} {param.opts[0]}"
