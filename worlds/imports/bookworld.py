"""BookWorld presets: a world, its places and map, its roles, read into pack parts.

A preset (``experiment_presets/*.json``) names its files relative to the folder that holds
``experiment_presets/``: ``world_file_path`` (``general.json``: the world's name and
description; ``world_details/*.jsonl`` beside it), ``loc_file_path`` (the places),
``map_file_path`` (a CSV of distances), and ``role_file_dir`` with ``<source>/<role_code>/``
folders (``role_info.json``, ``role_lines.jsonl``, ``icon.png``). ``role_agent_codes`` are the
cast; the other roles of the source become lore (who they are), so relations to them
resolve.

Ids must be ASCII (Redis users, keys): a role's name is its ``role_name`` when that is
written in Latin letters, else the readable form of its ``role_code`` (``Tywin-Lannister-zh``:
Tywin Lannister), and the ``role_name``/``nickname`` go to ``aliases``; places likewise
from ``location_code``.

Every path must stay inside the preset's folder: each file is resolved (symbolic links
followed, the folder's own too) before it is read, and one that leads out is refused, never
read — whether the preset names it or it lies in a role's folder. A role's ``icon.png``
must be a picture (PNG, JPEG or WebP by its first bytes; BookWorld's are often JPEGs) and is
kept as what it is; a file that is none of them is refused. What the files hold is taken
from the import's :class:`~fabula.worlds.imports.limits.Budget`.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabula.errors import LimitExceeded
from fabula.limits import read_bounded
from fabula.memory.records import slug
from fabula.worlds.imports.fields import BadSource, obj, parse_json, text
from fabula.worlds.imports.limits import Budget, ImportLimits
from fabula.worlds.imports.png import picture_format
from fabula.worlds.lore import Greeting, KeptCard, LoreBook, LoreEntry
from fabula.worlds.pack import PlaceSpec

_LANG = re.compile(r"[-_](?:[a-z]{2})$")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


@dataclass(frozen=True)
class RoleRead:
    """One role of the cast."""

    name: str
    aliases: tuple[str, ...]
    description: str
    examples: tuple[str, ...]
    book: LoreBook | None
    kept: KeptCard
    image: bytes | None = None


@dataclass(frozen=True)
class BookWorldRead:
    """A preset, read."""

    title: str
    premise: str
    outline: tuple[str, ...]
    places: tuple[PlaceSpec, ...]
    roles: tuple[RoleRead, ...]
    books: tuple[LoreBook, ...]
    greetings: tuple[Greeting, ...]
    kept: dict[str, Any] = field(default_factory=dict)


def is_preset(doc: Any) -> bool:
    """Whether a parsed JSON document is a BookWorld preset."""
    return isinstance(doc, dict) and "role_agent_codes" in doc and "world_file_path" in doc


def readable_code(code: str) -> str:
    """A code as a name: ``Tywin-Lannister-zh`` and ``TywinLannister-zh`` are Tywin Lannister,
    ``eldridge_corporation`` Eldridge Corporation."""
    words = re.split(r"[-_\s]+", _CAMEL.sub(" ", _LANG.sub("", code.strip())))
    return " ".join(w[:1].upper() + w[1:] for w in words if w)


def _latin(name: str) -> bool:
    letters = [ch for ch in name if ch.isalpha()]
    if not letters or not all(ch.isascii() for ch in letters):
        return False
    try:
        slug(name)
    except ValueError:
        return False
    return True


def _key(code: str) -> str:
    """Codes compared as the same role: ``Robb-Stark-zh`` and ``RobbStark-zh``."""
    return re.sub(r"[^a-z0-9]", "", _LANG.sub("", code.strip()).lower())


class _Files:
    """The preset's files, every path resolved and kept inside ``root``."""

    def __init__(self, root: Path, limits: ImportLimits, budget: Budget) -> None:
        self.root = root.resolve()
        self.limits = limits
        self.budget = budget

    def path(self, relative: str, where: str) -> Path:
        """``relative`` (a path the preset names) in the folder; BadSource if it leads out."""
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root):
            raise BadSource(f"{where}: {relative!r} climbs out of the preset's folder")
        return path

    def inside(self, path: Path, where: str) -> Path:
        """``path`` resolved (its links followed); BadSource if it leads out of the folder,
        or is a file with another name elsewhere (a hard link: no path shows where it
        leads, so a file linked so is not read as the preset's; issue 45)."""
        resolved = path.resolve()
        if not resolved.is_relative_to(self.root):
            raise BadSource(f"{where}: {path} leads out of the preset's folder")
        if resolved.is_file() and resolved.stat().st_nlink > 1:
            raise BadSource(
                f"{where}: {path} is a hard link (a file with another name elsewhere): not "
                "read as the preset's; copy the file in instead"
            )
        return resolved

    def found(self, path: Path, where: str) -> Path | None:
        """``path`` resolved if it is a file in the folder, None if there is none;
        BadSource if it leads out of the folder."""
        resolved = self.inside(path, where)
        return resolved if resolved.is_file() else None

    def raw(self, path: Path, where: str, limit: int) -> bytes:
        """The bytes of ``path`` (at most ``limit``), taken from the import's budget."""
        resolved = self.found(path, where)
        if resolved is None:
            raise BadSource(f"{where}: no file {path}")
        if resolved.stat().st_size > limit:
            raise BadSource(f"{where}: {path} is larger than {limit} bytes")
        try:
            data = read_bounded(resolved, limit)
        except LimitExceeded:
            raise BadSource(f"{where}: {path} is larger than {limit} bytes") from None
        self.budget.take(len(data), f"{where}: {path}")
        return data

    def read(self, path: Path, where: str) -> str:
        try:
            return self.raw(path, where, self.limits.max_card_bytes).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise BadSource(f"{where}: {path} is not UTF-8 text ({exc})") from None

    def json(self, path: Path, where: str) -> Any:
        return parse_json(self.read(path, where), f"{where}: {path}", self.limits.max_json_depth)

    def jsonl(self, path: Path, where: str) -> list[Any]:
        rows = []
        for n, line in enumerate(self.read(path, where).splitlines(), 1):
            if line.strip():
                rows.append(
                    parse_json(line, f"{where}: {path} line {n}", self.limits.max_json_depth)
                )
        return rows

    def picture(self, path: Path, where: str) -> bytes:
        """The picture at ``path``; BadSource when it is no PNG, JPEG or WebP."""
        data = self.raw(path, where, self.limits.max_file_bytes)
        if picture_format(data) is None:
            raise BadSource(f"{where}: {path} is not a picture (PNG, JPEG or WebP)")
        return data


def _places(
    files: _Files, preset: dict[str, Any]
) -> tuple[list[PlaceSpec], list[LoreEntry], dict[str, Any]]:
    where = "loc_file_path"
    raw = obj(files.json(files.path(text(preset, where, "(preset)"), where), where), where)
    places: list[PlaceSpec] = []
    entries: list[LoreEntry] = []
    kept: dict[str, Any] = {}
    for code, loc in raw.items():
        loc = obj(loc, f"{where}[{code!r}]")
        native = text(loc, "location_name", f"{where}[{code!r}]") or code
        name = (
            native if _latin(native) else readable_code(text(loc, "location_code", where) or code)
        )
        aliases = tuple(a for a in (native,) if a != name)
        places.append(
            PlaceSpec(name=name, description=text(loc, "description", where), aliases=aliases)
        )
        detail = text(loc, "detail", where)
        if detail:
            entries.append(
                LoreEntry(
                    keys=(name, *aliases), content=detail, name=name, kept={"location_code": code}
                )
            )
        rest = {k: v for k, v in loc.items() if k not in ("location_name", "description", "detail")}
        if rest:
            kept[code] = rest
    if not places:
        raise BadSource(f"{where}: the preset's world has no places")
    return places, entries, kept


def _map(files: _Files, preset: dict[str, Any]) -> dict[str, Any]:
    relative = text(preset, "map_file_path", "(preset)")
    if not relative:
        return {}
    rows = list(
        csv.reader(io.StringIO(files.read(files.path(relative, "map_file_path"), "map_file_path")))
    )
    if not rows:
        return {}
    return {
        "places": rows[0][1:],
        "rows": [{"place": r[0], "distances": r[1:]} for r in rows[1:] if r],
    }


def _role(files: _Files, folder: Path, where: str) -> dict[str, Any]:
    return obj(files.json(folder / "role_info.json", where), where)


def read_preset(
    path: Path, doc: dict[str, Any], limits: ImportLimits, budget: Budget | None = None
) -> BookWorldRead:
    """Read the preset at ``path`` (``doc``: its parsed JSON), what its files hold taken
    from ``budget``. Raises BadSource naming the field or file."""
    root = path.parent.parent if path.parent.name == "experiment_presets" else path.parent
    files = _Files(root, limits, budget or Budget(limits))
    world_path = files.path(text(doc, "world_file_path", "(preset)"), "world_file_path")
    world = obj(files.json(world_path, "world_file_path"), "world_file_path")
    places, place_entries, place_kept = _places(files, doc)
    source = text(doc, "source", "(preset)") or text(world, "source", "general.json")
    role_dir = files.path(f"{text(doc, 'role_file_dir', '(preset)')}/{source}", "role_file_dir")
    codes = doc.get("role_agent_codes")
    if not isinstance(codes, list) or not codes or not all(isinstance(c, str) for c in codes):
        raise BadSource("role_agent_codes: expected a list of role codes")
    found = _roles(files, role_dir)
    cast_keys, roles = _cast(files, role_dir, codes, found)
    others = _other_roles(found, cast_keys)
    details = _details(files, world_path)
    books = [
        LoreBook(
            name=f"{text(world, 'world_name', 'general.json')} places",
            format="bookworld",
            entries=tuple(place_entries),
        )
    ]
    if others:
        books.append(LoreBook(name="other roles", format="bookworld", entries=tuple(others)))
    if details:
        books.append(LoreBook(name="world details", format="bookworld", entries=tuple(details)))
    intervention = text(doc, "intervention", "(preset)").strip()
    script = text(doc, "script", "(preset)").strip()
    mapped = {
        "world_file_path",
        "loc_file_path",
        "map_file_path",
        "role_file_dir",
        "role_agent_codes",
        "intervention",
        "script",
    }
    title = text(world, "world_name", "general.json") or source or path.stem
    return BookWorldRead(
        title=title,
        premise=text(world, "description", "general.json") or title,
        outline=(script,) if script else (),
        places=tuple(places),
        roles=tuple(roles),
        books=tuple(b for b in books if b.entries),
        greetings=(Greeting(text=intervention),) if intervention else (),
        kept={
            "bookworld": {
                "preset": {k: v for k, v in doc.items() if k not in mapped},
                "agents": codes,
                "world": {k: v for k, v in world.items() if k not in ("world_name", "description")},
                "locations": place_kept,
                "map": _map(files, doc),
            }
        },
    )


_Found = tuple[str, dict[str, Any]]  # a role's folder name and its role_info


@dataclass
class _Roles:
    """The preset's role folders: each role by its code's key, a second folder of one role
    (a twin, by the same key), and every role's readable name by key."""

    known: dict[str, _Found]
    twins: list[tuple[str, _Found]]
    names: dict[str, str]


def _roles(files: _Files, role_dir: Path) -> _Roles:
    """The role folders under ``role_dir`` (those with a ``role_info.json``), read."""
    known: dict[str, _Found] = {}  # code key -> (folder name, role_info)
    twins: list[tuple[str, _Found]] = []  # a second folder of one role
    if role_dir.is_dir():
        for folder in sorted(role_dir.iterdir()):
            if files.found(folder / "role_info.json", f"roles/{folder.name}") is not None:
                found = (folder.name, _role(files, folder, f"roles/{folder.name}"))
                if _key(folder.name) in known:
                    twins.append((_key(folder.name), found))
                else:
                    known[_key(folder.name)] = found
    names: dict[str, str] = {}
    for key, (code, info) in known.items():
        native = text(info, "role_name", f"roles/{code}") or code
        names[key] = (
            native if _latin(native) else readable_code(text(info, "role_code", code) or code)
        )
    return _Roles(known, twins, names)


def _cast(
    files: _Files, role_dir: Path, codes: list[str], found: _Roles
) -> tuple[list[str], list[RoleRead]]:
    """The cast (``role_agent_codes``): their keys and their roles. Raises BadSource for a
    code with no role folder, or two roles whose names read the same."""
    cast_keys = []
    for code in codes:
        if _key(code) not in found.known:
            raise BadSource(f"role_agent_codes: no role {code!r} in {role_dir}")
        cast_keys.append(_key(code))
    roles = [_cast_role(files, role_dir, found.known[k], found.names) for k in cast_keys]
    seen: dict[str, str] = {}
    for role in roles:
        if slug(role.name) in seen:
            raise BadSource(
                f"role_agent_codes: roles {seen[slug(role.name)]!r} and "
                f"{role.kept.data.get('role_code')!r} both read as {role.name!r}"
            )
        seen[slug(role.name)] = str(role.kept.data.get("role_code"))
    return cast_keys, roles


def _other_roles(found: _Roles, cast_keys: list[str]) -> list[LoreEntry]:
    """The roles not cast, and every twin folder, as lore entries."""
    names = found.names
    return [
        LoreEntry(
            keys=_names(names[k], info),
            content=text(info, "profile", code),
            name=names[k],
            kept={"role_info": info},
        )
        for k, (code, info) in [*found.known.items(), *found.twins]
        if k not in cast_keys or (k, (code, info)) in found.twins
    ]


def _details(files: _Files, world_path: Path) -> list[LoreEntry]:
    """The world's details (``world_details/*.jsonl`` beside its file), as lore entries."""
    details: list[LoreEntry] = []
    for jsonl in sorted((world_path.parent / "world_details").glob("*.jsonl")):
        for n, row in enumerate(files.jsonl(jsonl, f"world_details/{jsonl.name}")):
            row = obj(row, f"world_details/{jsonl.name}[{n}]")
            term = text(row, "term", jsonl.name)
            detail = row.get("detail")
            content = "\n".join(detail) if isinstance(detail, list) else str(detail or "")
            details.append(
                LoreEntry(
                    keys=(term,) if term else (),
                    content=content,
                    name=term,
                    kept={k: v for k, v in row.items() if k not in ("term", "detail")},
                )
            )
    return details


def _names(name: str, info: dict[str, Any]) -> tuple[str, ...]:
    out = [name]
    for key in ("role_name", "nickname"):
        value = info.get(key)
        if isinstance(value, str) and value.strip() and value not in out:
            out.append(value)
    return tuple(out)


def _cast_role(
    files: _Files,
    role_dir: Path,
    found: tuple[str, dict[str, Any]],
    names: dict[str, str],
) -> RoleRead:
    code, info = found
    where = f"roles/{code}/role_info.json"
    name = names[_key(code)]
    aliases = _names(name, info)[1:]
    relation = obj(info.get("relation") or {}, f"{where}.relation")
    entries = []
    for other, rel in relation.items():
        rel = obj(rel, f"{where}.relation[{other!r}]")
        target = names.get(_key(other), readable_code(other))
        kinds = rel.get("relation") or []
        head = ", ".join(k for k in kinds if isinstance(k, str))
        detail = text(rel, "detail", f"{where}.relation[{other!r}]")
        content = f"{target}: {head}. {detail}".strip() if head else f"{target}: {detail}".strip()
        entries.append(
            LoreEntry(
                keys=(target,),
                content=content,
                name=f"{name} and {target}",
                kept={"role_code": other, "relation": rel},
            )
        )
    folder = role_dir / code
    lines = files.found(folder / "role_lines.jsonl", f"roles/{code}/role_lines.jsonl")
    examples: list[str] = []
    if lines is not None:
        for n, row in enumerate(files.jsonl(lines, f"roles/{code}/role_lines.jsonl")):
            if isinstance(row, dict) and isinstance(row.get("text"), str) and row["text"].strip():
                examples.append(row["text"].strip())
            else:
                raise BadSource(
                    f'roles/{code}/role_lines.jsonl line {n + 1}: expected {{"text": ...}}'
                )
    icon = files.found(folder / "icon.png", f"roles/{code}/icon.png")
    image = files.picture(icon, f"roles/{code}/icon.png") if icon is not None else None
    kept = KeptCard(
        character=name,
        spec="bookworld_role",
        data={k: v for k, v in info.items() if k not in ("profile", "relation")},
    )
    book = LoreBook(
        name=f"{name}'s relations", owner=name, format="bookworld", entries=tuple(entries)
    )
    return RoleRead(
        name=name,
        aliases=aliases,
        description=text(info, "profile", where),
        examples=tuple(examples),
        book=book if entries else None,
        kept=kept,
        image=image,
    )
