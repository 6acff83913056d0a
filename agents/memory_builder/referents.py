"""The names in a model's reading resolved to the story's entities, or refused.

Every name an extracted action gives must be a known entity of the kind its field needs
(a character for ``actors`` and ``listeners``, a place for ``place``, an object for
``obj``, ...), found by id, name or alias, case-insensitively, a leading article aside;
or an entity the reading explicitly brings in (``new_entities``, with its kind). A name is
replaced by the entity's own name, so the tracker's identifiers are the story's. Anything
else is a problem line the model is shown, so it can answer again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fabula.memory.actions import Clause, StoryAction
from fabula.memory.records import Entity, slug

RefKind = Literal["character", "place", "object", "container"]
_ARTICLES = ("the ", "a ", "an ")
_ARTICLE_WORDS = frozenset({"the", "a", "an", "of"})
_WORD = re.compile(r"[^\W_]+")
_THINGS: frozenset[RefKind] = frozenset({"object", "container"})
_ANYWHERE: frozenset[RefKind] = frozenset({"object", "container", "place"})
_ANY: frozenset[RefKind] = frozenset({"character", "place", "object", "container"})


class NewEntity(BaseModel):
    """An entity the text brings into the story for the first time, with its kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: RefKind


class Referents:
    """Resolves names against the story's entities and the reading's new ones."""

    def __init__(self, entities: Mapping[str, Entity], new: Sequence[NewEntity] = ()) -> None:
        self.known: dict[str, tuple[str, RefKind]] = {}
        self.by_kind: dict[RefKind, list[str]] = {}
        self._words: dict[str, set[str]] = {}  # by canonical name: the words that name it
        for e in entities.values():
            kind: RefKind = "container" if e.kind == "object" and e.is_container else _kind(e.kind)
            aliases = [a for a in e.attributes.get("aliases", "").split(",") if a.strip()]
            for form in (e.id, e.id.replace("_", " "), e.name, *aliases):
                self.known.setdefault(_key(form), (e.name, kind))
                self._words.setdefault(e.name, set()).update(words(form) - _ARTICLE_WORDS)
            self.by_kind.setdefault(kind, []).append(e.name)
        for n in new:
            self.known.setdefault(_key(n.name), (n.name.strip(), n.kind))
            self._words.setdefault(n.name.strip(), set()).update(words(n.name) - _ARTICLE_WORDS)

    def words(self, name: str) -> set[str]:
        """The words (lower case) of every form that names ``name``'s entity: its id, name
        and aliases (the words of ``name`` itself when it is no entity's)."""
        canonical = self.known.get(_key(name), (name, "character"))[0]
        return self._words.get(canonical) or (words(name) - _ARTICLE_WORDS)

    def resolve(self, name: str, allowed: frozenset[RefKind], where: str) -> tuple[str, str]:
        """``name``'s canonical form, and a problem line ("" when it is fine)."""
        found = self.known.get(_key(name))
        if found is None:
            wanted = _wanted(allowed)
            listed = sorted({n for k in allowed for n in self.by_kind.get(k, [])})
            return name, (
                f"{where}: no known {wanted} called {name!r} (known: {', '.join(listed) or 'none'}"
                "); to bring in a new one, list it in new_entities with its kind"
            )
        canonical, kind = found
        if kind not in allowed:
            wanted = _wanted(allowed)
            article = "an" if wanted[0] in "aeiou" else "a"
            return name, f"{where}: {name!r} is a {kind}, not {article} {wanted}"
        return canonical, ""

    def check(self, action: StoryAction, where: str) -> tuple[StoryAction, list[str]]:
        """``action`` with its names resolved, and the problems found."""
        problems: list[str] = []

        def one(value: str | None, allowed: frozenset[RefKind], field: str) -> str | None:
            if value is None:
                return None
            canonical, problem = self.resolve(value, allowed, f"{where}.{field}")
            if problem:
                problems.append(problem)
            return canonical

        def many(values: Sequence[str], allowed: frozenset[RefKind], field: str) -> tuple[str, ...]:
            return tuple(one(v, allowed, field) or v for v in values)

        kind = action.kind
        update: dict[str, object] = {
            "actors": many(action.actors, frozenset({"character"}), "actors"),
            "listeners": many(action.listeners, frozenset({"character"}), "listeners"),
            "place": one(action.place, frozenset({"place"}), "place"),
        }
        if kind != "think":  # a thought may be about anything, named or not
            update["obj"] = one(action.obj, _ANY if kind == "feel" else _THINGS, "obj")
        target_kinds: frozenset[RefKind] = frozenset({"character"}) if kind == "give" else _ANYWHERE
        update["target"] = one(action.target, target_kinds, "target")
        if action.clause is not None:
            update["clause"] = self._clause(action.clause, f"{where}.clause", problems)
        if problems:
            return action, problems
        return action.model_copy(update=update), []

    def _clause(self, clause: Clause, where: str, problems: list[str]) -> Clause:
        subject, problem = self.resolve(clause.subject, _ANY - {"place"}, f"{where}.subject")
        problems += [problem] if problem else []
        value = clause.value
        if clause.attribute == "location":
            value, problem = self.resolve(clause.value, _ANY, f"{where}.value")
            problems += [problem] if problem else []
        return clause.model_copy(update={"subject": subject, "value": value})


def words(text: str) -> set[str]:
    """The words of ``text``, in lower case (underscores split them, as in an id)."""
    return set(_WORD.findall(text.lower()))


def _key(name: str) -> str:
    text = " ".join(name.strip().lower().split())
    for article in _ARTICLES:
        if text.startswith(article):
            text = text[len(article) :]
            break
    try:
        return slug(text)
    except ValueError:
        return text


def _wanted(allowed: frozenset[RefKind]) -> str:
    """The kinds a field takes, in words (a container is an object)."""
    if allowed == _ANY:
        return "entity"
    kinds = sorted(allowed - {"container"} if "object" in allowed else allowed)
    return " or ".join(kinds)


def _kind(kind: str) -> RefKind:
    return kind if kind in ("character", "place", "object") else "object"  # type: ignore[return-value]
