"""The docs' generated reference pages, rendered from the code when the site is built.

``mkdocs.yml`` names this file under ``hooks:``: :func:`on_files` adds the pages of
:data:`GENERATED` to the site, each rendered from what it documents, so they cannot drift
from the code:

- ``reference/world-pack.md``: every field of a world pack, from the pydantic models of
  ``worlds/pack.py`` (and the models they hold: the rules, the lore) — each field's type,
  default and constraints from ``model_fields``, its meaning from its ``description=``,
  else its comment in the source, else :data:`MEANINGS`;
- ``reference/settings.md``: every environment variable, from ``fabula/settings.py``
  (:data:`fabula.settings.VARIABLES`, rendered by :func:`fabula.settings.markdown_table`);
- ``reference/cli.md``: every command and option of ``fabula``, from the Typer app, and the
  exit statuses, from ``fabula/errors.py``.

``python tools/docs_hooks.py PAGE`` prints one (``world-pack``, ``settings``, ``cli``).
"""

from __future__ import annotations

import inspect
import io
import sys
import textwrap
import tokenize
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]

# the meanings of the fields that have neither a description nor a comment in the source;
# an entry naming a field the model no longer has fails the build (see _meaning)
MEANINGS: dict[tuple[str, str], str] = {
    ("WorldPack", "id"): "the pack's id: lower-case letters, digits, `_` and `-`",
    ("WorldPack", "title"): "the story's title",
    ("WorldPack", "premise"): "what the story is about, in a few sentences (the planner and "
    "a model writer read it)",
    ("WorldPack", "outline"): "the beats the story is meant to pass through, in order",
    ("WorldPack", "rules"): "the rules of knowledge: how characters come to know things",
    ("WorldPack", "places"): "the places of the world",
    ("WorldPack", "characters"): "the cast",
    ("WorldPack", "objects"): "the objects, containers included",
    ("WorldPack", "developments"): "the developments open at the start",
    ("WorldPack", "opening"): "the scripted opening turns and the greetings",
    ("PlaceSpec", "name"): "its name; the id is made from it",
    ("PlaceSpec", "description"): "how it looks",
    ("PlaceSpec", "aliases"): "other names: a nickname, the name in another script",
    ("CharacterSpec", "name"): "its name; the id is made from it",
    ("CharacterSpec", "location"): "the place it starts in",
    ("CharacterSpec", "description"): "who it is",
    ("CharacterSpec", "goals"): "what it wants, in the goal language (see "
    "[World packs](../guides/world-packs.md#goals)); other goals are kept for a model",
    ("CharacterSpec", "secrets"): "facts it alone holds at the start (each a fact of W that "
    "travels as any fact does)",
    ("CharacterSpec", "voice"): "how it speaks, in a line (a card's `personality`)",
    ("ObjectSpec", "name"): "its name; the id is made from it",
    ("ObjectSpec", "location"): "where it starts: a place, a container object or a character",
    ("ObjectSpec", "description"): "how it looks",
    ("ObjectSpec", "container"): "things can be put in it",
    ("ObjectSpec", "attributes"): 'its attributes (`colour = "dull gold"`), facts of W',
    ("DevelopmentSpec", "kind"): "what kind of development",
    ("DevelopmentSpec", "title"): "its title, as the plot lists it",
    ("DevelopmentSpec", "participants"): "the characters it concerns",
    ("DevelopmentSpec", "description"): "what it is about",
    ("Opening", "turns"): "turns of controlled English, committed when the story is made",
    ("Opening", "greetings"): "prose openings to choose from (`fabula import --greeting N`)",
    ("Greeting", "text"): "the greeting's prose",
    ("Greeting", "character"): "who greets (unset: the narrator)",
    ("Greeting", "group_only"): "a card's group-only greeting",
    ("WorldRules", "open_containers"): "entering a place reveals where every object in it "
    "is, containers' contents included (default: only what lies in the open)",
    ("WorldRules", "trust"): "whether a listener adopts what it is told: `fresher` (when it "
    "has no belief of its own, or the speaker's is fresher), `always` or `never`",
    ("WorldRules", "belief_depth"): "how deep nested beliefs are kept (`a` thinks `b` thinks ...)",
    ("Lore", "books"): "the lorebooks: a book with no owner is the world's (the author's), "
    "one owned by a character is what that character knows",
    ("Lore", "cards"): "for each character imported from a card, every source field the "
    "pack has no place for, verbatim",
    ("Lore", "kept"): "everything else an import read and the pack has no place for, by source",
    ("LoreEntry", "keys"): "the keys that activate it",
    ("LoreEntry", "secondary_keys"): "keys combined with the primary match by `logic`",
    ("LoreEntry", "logic"): "how the secondary keys combine: AND ANY, NOT ALL, NOT ANY, AND ALL",
    ("LoreEntry", "enabled"): "a disabled entry never activates",
    ("LoreEntry", "whole_words"): "a one-word key must stand as a word (unset: the book's "
    "or the engine's default)",
    ("LoreEntry", "position"): "where a source placed it, kept for export",
    ("LoreBook", "name"): "its name",
    ("LoreBook", "description"): "what it holds",
    ("LoreBook", "owner"): "the character whose knowledge it is (unset: the world's book)",
    ("LoreBook", "scan_depth"): "how many recent turns activation reads",
    ("LoreBook", "token_budget"): "the most tokens its entries may take in a context",
    ("LoreBook", "recursive_scanning"): "activated entries' text activates others (unset: "
    "off, as in SillyTavern)",
    ("LoreBook", "entries"): "its entries",
    ("LoreBook", "kept"): "the source's other fields, verbatim",
    ("KeptCard", "spec_version"): "the card's `spec_version`",
}

# what a world pack's models are called in world.toml (a model reached through a list is
# an array of tables: `[[characters]]`)
_INTRO = """\
# World pack reference

*Generated from `worlds/pack.py` when the site is built: this page is the models' own
fields, types and defaults.*

A world pack is a folder with a `world.toml` (or one `.toml` file). Every table and field
below is what the file may hold; anything else is refused on load, with the file and the
field named. Names become identifiers (`"brass key"` → `brass_key`), and every reference
(a character's `location`, an object's, a development's `participants`) must name a place,
an object or a character of the pack. [World packs](../guides/world-packs.md) explains
them with examples; `worlds/hollow_book/world.toml` is a whole one.

`lore` is the exception: in `world.toml` it is the name of a JSON file beside it
(`lore = "lore.json"`, since lore holds JSON that TOML cannot), whose content is the
`Lore` table below. `fabula import` writes it.
"""


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """Each field's comment in the model's source: the one on its line, else the comment
    lines right above it."""
    try:
        source = textwrap.dedent(inspect.getsource(model))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    found: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        name = stripped.split(":", 1)[0]
        if not (line.startswith("    ") and not line.startswith("     ")):
            continue
        if ":" not in stripped or not name.isidentifier() or name not in model.model_fields:
            continue
        if number in comments and not stripped.startswith("#"):
            found[name] = comments[number]
            continue
        above: list[str] = []
        n = number - 1
        while n in comments and lines[n - 1].strip().startswith("#"):
            above.insert(0, comments[n])
            n -= 1
        if above:
            found[name] = " ".join(above)
    return found


def _models(root: type[BaseModel]) -> Iterator[tuple[str, type[BaseModel]]]:
    """(the table's path in world.toml, model) of ``root`` and every model its fields hold,
    breadth first, each once."""
    seen: set[type[BaseModel]] = set()
    queue: list[tuple[str, type[BaseModel]]] = [("", root)]
    while queue:
        path, model = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        yield path, model
        for name, info in model.model_fields.items():
            for inner, many in _held_models(info.annotation):
                sub = f"{path}.{name}" if path else name
                queue.append((sub + ("[]" if many else ""), inner))


def _held_models(annotation: Any) -> Iterator[tuple[type[BaseModel], bool]]:
    """The models an annotation holds, and whether as a list."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, False
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (tuple, list):
        for arg in args:
            if arg is not Ellipsis:
                for inner, _ in _held_models(arg):
                    yield inner, True
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from _held_models(arg)


def _type(annotation: Any) -> str:
    """An annotation in the words of a TOML file."""
    if annotation is type(None):
        return "unset"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    simple = {str: "text", bool: "boolean", int: "integer", float: "number", Any: "any JSON"}
    if annotation in simple:
        return simple[annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (tuple, list):
        inner = [a for a in args if a is not Ellipsis]
        return f"list of {_type(inner[0])}" if inner else "list"
    if origin is dict:
        return f"table of {_type(args[1])}" if len(args) == 2 else "table"
    if origin in (typing.Union, types.UnionType):
        named = [_type(a) for a in args if a is not type(None)]
        optional = len(named) < len(args)
        return " or ".join(named) + (" (optional)" if optional else "")
    return f"`{annotation}`"


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "**required**"
    if info.default_factory is not None:
        made = info.default_factory()  # type: ignore[call-arg]
        if isinstance(made, BaseModel):
            return "its defaults"
        return "`{}`" if made == {} else "`[]`" if made in ((), []) else f"`{made!r}`"
    value = info.default
    if value is None or value is PydanticUndefined:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (tuple, list)):
        return "`[]`" if not value else f"`{list(value)!r}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value!r}`"


def _constraints(info: FieldInfo) -> str:
    words = []
    for item in info.metadata:
        for attr, say in (
            ("min_length", "at least {}"),
            ("max_length", "at most {} long"),
            ("ge", "≥ {}"),
            ("gt", "> {}"),
            ("le", "≤ {}"),
            ("lt", "< {}"),
        ):
            value = getattr(item, attr, None)
            if value is not None:
                words.append(
                    "not empty" if (attr, value) == ("min_length", 1) else say.format(value)
                )
        pattern = getattr(item, "pattern", None)
        if pattern is not None:
            words.append(f"matches `{pattern}`")
    return "; ".join(words)


def _meaning(model: type[BaseModel], name: str, info: FieldInfo, comments: dict[str, str]) -> str:
    if info.description:
        return info.description.replace("``", "`")
    if name in comments:
        return comments[name].replace("``", "`")
    return MEANINGS.get((model.__name__, name), "")


def _check_meanings(models: list[type[BaseModel]]) -> None:
    """A meaning for a field no model has is stale: fail the build rather than keep it."""
    by_name = {m.__name__: m for m in models}
    for model_name, field in MEANINGS:
        model = by_name.get(model_name)
        if model is None or field not in model.model_fields:
            raise ValueError(f"tools/docs_hooks.py MEANINGS: {model_name}.{field} is no field")


def world_pack_page() -> str:
    """The world pack's field reference, from its models."""
    from fabula.worlds.pack import WorldPack

    models = list(_models(WorldPack))
    _check_meanings([m for _, m in models])
    parts = [_INTRO]
    for path, model in models:
        where = f"`[{path}]`" if path and not path.endswith("[]") else f"`[[{path[:-2]}]]`"
        title = "The top level of `world.toml`" if not path else where
        if path == "lore":
            title = 'The whole lore JSON file (`lore = "lore.json"` in `world.toml`)'
        elif path.startswith("lore"):
            title = f"`{path}` in the lore JSON file"
        doc = inspect.cleandoc(model.__doc__ or "").split("\n\n")[0].replace("\n", " ")
        for aside in (" (see the module docstring)", " (see the module's docstring)"):
            doc = doc.replace(aside, "")
        doc = doc.replace("``", "`")
        parts.append(f"\n## {model.__name__}\n\n{title}. {doc}\n")
        parts.append("| field | type | default | meaning |\n| --- | --- | --- | --- |")
        comments = _comments(model)
        for name, info in model.model_fields.items():
            rule = _constraints(info)
            meaning = _meaning(model, name, info, comments)
            if rule:
                meaning = f"{meaning} ({rule})" if meaning else rule
            meaning = meaning.replace("|", "\\|")
            kind = _type(info.annotation)
            parts.append(f"| `{name}` | {kind} | {_default(info)} | {meaning} |")
    return "\n".join(parts) + "\n"


def settings_page() -> str:
    """The settings table, from :data:`fabula.settings.VARIABLES`."""
    from fabula import settings

    return (
        "# Settings reference\n\n"
        "*Generated from `fabula/settings.py` when the site is built: one row per variable "
        "of `VARIABLES`, the table `Settings.from_env` reads, made from the settings' "
        "fields.*\n\n"
        "Fabula reads its settings from the environment, once, when a command (or the "
        "studio, or a worker) starts. Unset, every role runs on the offline engine and "
        "Redis is the embedded server of `FABULA_HOME`. "
        "`OPENAI_API_KEY` and `OPENAI_BASE_URL` are read when `FABULA_MODEL_API_KEY` and "
        "`FABULA_MODEL_BASE_URL` are unset. A value a setting cannot take is refused in "
        "one line naming the variable (exit status 78). "
        "[Model mode](../guides/model-mode.md) shows them in use.\n\n"
        + settings.markdown_table()
        + "\n## Per role\n\n"
        "`FABULA_MODEL_*` set every role's defaults. A role's own `FABULA_MODEL_<ROLE>_*` "
        "override them for that role, and `FABULA_MODEL_<ROLE>` alone names its model; a "
        "role with no model runs on the offline engine. The roles: "
        + ", ".join(f"`{role.upper()}`" for role in settings.ROLES)
        + ". The memory-builder reads at temperature 0 unless "
        "`FABULA_MODEL_MEMORY_BUILDER_TEMPERATURE` says otherwise; its former name, "
        "`FABULA_MODEL_EXTRACTOR_*`, is still read and logged as deprecated.\n\n"
        "```bash\nexport FABULA_MODEL=gpt-4o-mini FABULA_MODEL_WRITER=gpt-4o "
        "FABULA_MODEL_WRITER_MAX_TOKENS=900\n```\n"
    )


def _commands() -> Iterator[tuple[str, Any]]:
    """(the command line, click command) of every command of ``fabula``."""
    import typer

    from fabula.cli import app

    root = typer.main.get_command(app)

    def walk(command: Any, path: str, ctx: Any) -> Iterator[tuple[str, Any]]:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if hasattr(sub, "real"):  # a lazily loaded command or sub-app
                    sub = sub.real()
                sub_ctx = sub.make_context(name, [], parent=ctx, resilient_parsing=True)
                yield from walk(sub, f"{path} {name}", sub_ctx)
        else:
            yield path, command

    yield from walk(root, "fabula", root.make_context("fabula", [], resilient_parsing=True))


def _option_default(param: Any) -> str:
    default = param.default
    if getattr(param, "is_flag", False) or default in (None, "", (), []):
        return ""
    if callable(default):
        return ""
    return f"`{default}`"


def cli_page() -> str:
    """Every command of ``fabula``, with its options, from the Typer app; the exit
    statuses, from the error classes."""
    parts = [
        "# Command line reference\n",
        "*Generated from the Typer app (`fabula/cli.py`, `graph/cli/`, `bench/cli.py`) when "
        "the site is built: what `fabula COMMAND --help` prints.*\n",
        "Every command takes `--help`. Every `show`, `pending` and `stories` takes `--json`. "
        "`fabula -v ...` logs more.\n",
    ]
    for line, command in _commands():
        anchor = line.removeprefix("fabula ").replace(" ", "-")
        usage = " ".join(
            ["[OPTIONS]"]
            + [
                p.name.upper() + ("..." if p.nargs == -1 else "")
                for p in command.params
                if p.param_type_name == "argument"
            ]
        )
        parts.append(f"\n## {line} {{#{anchor}}}\n\n```text\n{line} {usage}\n```\n")
        text = inspect.cleandoc(command.help or "").replace("\b\n", "")
        parts.append(text.replace("``", "`") + "\n")
        rows = []
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
            help_text = (getattr(param, "help", None) or "").replace("\n", " ")
            help_text = help_text.replace("|", "\\|")
            if param.param_type_name == "argument":
                names = f"`{param.name.upper()}`"
            rows.append(f"| {names} | {help_text} | {_option_default(param)} |")
        if rows:
            parts.append("| argument or option | meaning | default |\n| --- | --- | --- |")
            parts.extend(rows)
    parts.append(_exit_statuses())
    return "\n".join(parts) + "\n"


def _exit_statuses() -> str:
    from fabula import errors

    rows = ["\n## Exit statuses\n"]
    rows.append(
        "An error is one line on stderr and the exit status its class says (the studio "
        "answers with the HTTP status beside it); bad input changes nothing. From "
        "`fabula/errors.py`:\n"
    )
    rows.append("| error | exit | HTTP | meaning |\n| --- | --- | --- | --- |")

    def walk(cls: type[errors.FabulaError], depth: int) -> None:
        doc = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].replace("\n", " ")
        doc = doc.replace("``", "`")
        name = ("&nbsp;&nbsp;" * depth) + f"`{cls.__name__}`"
        rows.append(f"| {name} | {cls.exit_code} | {cls.http_status} | {doc} |")
        for sub in cls.__subclasses__():
            if sub.__module__ == errors.__name__:
                walk(sub, depth + 1)

    walk(errors.FabulaError, 0)
    return "\n".join(rows) + "\n"


GENERATED: dict[str, Callable[[], str]] = {
    "reference/world-pack.md": world_pack_page,
    "reference/settings.md": settings_page,
    "reference/cli.md": cli_page,
}
"""The generated pages, by their path under ``docs/``."""


def on_files(files: Any, config: Any) -> Any:
    """mkdocs: add the generated pages to the site (``hooks:`` in ``mkdocs.yml``)."""
    from mkdocs.structure.files import File

    _this_checkout()
    for path, render in GENERATED.items():
        files.append(File.generated(config, path, content=render()))
    return files


def _this_checkout() -> None:
    """Import ``fabula`` from this checkout, whoever runs the hook or the script."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


if __name__ == "__main__":
    _this_checkout()
    pages = {Path(p).stem: render for p, render in GENERATED.items()}
    if len(sys.argv) != 2 or sys.argv[1] not in pages:
        sys.exit(f"usage: python tools/docs_hooks.py {{{','.join(pages)}}}")
    sys.stdout.write(pages[sys.argv[1]]())
