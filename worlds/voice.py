"""A character's voice: how it speaks, as exemplars, and the few nearest its situation.

Three sources, all the character's own:

- its card's example dialogues (``mes_example``, split at ``<START>``) and a BookWorld
  role's ``role_lines.jsonl``: the pack's ``characters[].examples``, written at story
  creation into that character's keyspace (:func:`minds_voice`, ``fab:{story}:c:<id>:_voice``)
  and read back by its own Redis user (``CharacterMind.voice``) — the author reads it too,
  for the writer;
- its card's traits (``characters[].traits``: its W++ or PList lists), in the same
  document (:func:`parse_traits`);
- the lines it said in the story, from its own episode index (``own_words``).

:func:`nearest` picks the few exemplars closest to a situation (whom it speaks to, where,
about what: a text of names, the place and the topic), by the words they share with it —
a non-Latin word by its character pairs, so a Chinese line is matched too — the earlier
exemplar first on a tie, within a token budget. Nothing here reads another character's
voice: each holder is given its own document and its own lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from fabula.memory.records import slug
from fabula.worlds.activation import count_words
from fabula.worlds.cardtext import Trait
from fabula.worlds.pack import WorldPack

VOICE_EXEMPLARS = 3
"""Exemplars of a character's voice given for one turn (to its agent, to the writer)."""
VOICE_SHARE = 8
"""The writer's voice section may take up to an eighth of its context's budget."""
VOICE_CHARS = 600
"""An exemplar longer than this is cut (at its last whole word) when it is stored."""
VOICE_KEPT = 200
"""Exemplars kept for one character (a BookWorld role may have thousands of lines)."""

Source = Literal["example", "said"]

_WORD = re.compile(r"\w+")
_STOP = frozenset(
    (
        "the",
        "and",
        "you",
        "are",
        "was",
        "for",
        "that",
        "this",
        "with",
        "not",
        "but",
        "have",
        "what",
        "your",
        "his",
        "her",
        "she",
        "him",
        "they",
        "them",
        "its",
        "into",
        "from",
        "all",
        "can",
        "out",
        "there",
        "their",
        "one",
        "who",
        "any",
        "had",
        "has",
        "been",
        "will",
        "would",
    )
)


@dataclass(frozen=True)
class Exemplar:
    """One line of a character's voice: its text and where it came from (``example``: its
    card or role lines; ``said``: the story)."""

    text: str
    source: Source = "example"


def _cut(text: str) -> str:
    text = text.strip()
    if len(text) <= VOICE_CHARS:
        return text
    head = text[:VOICE_CHARS]
    space = head.rfind(" ")
    return (head[:space] if space > VOICE_CHARS // 2 else head).rstrip() + " …"


def minds_voice(pack: WorldPack) -> dict[str, str]:
    """Each character's voice document, by character id, for its keyspace: its examples
    (cut to :data:`VOICE_CHARS`, at most :data:`VOICE_KEPT`) and its card's traits (by
    category); characters with neither have none."""
    out = {}
    for char in pack.characters:
        lines = [t for t in (_cut(e) for e in char.examples) if t][:VOICE_KEPT]
        if lines or char.traits:
            doc: dict[str, object] = {"examples": lines}
            if char.traits:
                doc["traits"] = {k: list(v) for k, v in char.traits.items()}
            out[slug(char.name)] = json.dumps(doc, ensure_ascii=False)
    return out


def parse_traits(document: str | None) -> tuple[Trait, ...]:
    """The traits a voice document holds (what :func:`minds_voice` wrote), in its order;
    none for None or a document that is not one."""
    if not document:
        return ()
    try:
        found = json.loads(document).get("traits", {})
    except (ValueError, AttributeError):
        return ()
    if not isinstance(found, dict):
        return ()
    return tuple(
        Trait(str(k), tuple(str(v) for v in vs))
        for k, vs in found.items()
        if isinstance(vs, list) and vs
    )


def parse_voice(document: str | None) -> tuple[Exemplar, ...]:
    """A voice document (what :func:`minds_voice` wrote) as exemplars; none for None or a
    document that is not one."""
    if not document:
        return ()
    try:
        lines = json.loads(document).get("examples", [])
    except (ValueError, AttributeError):
        return ()
    return tuple(Exemplar(str(t)) for t in lines if isinstance(t, str) and t.strip())


def terms(text: str) -> set[str]:
    """The words of ``text`` that say what it is about: a Latin word of three letters or
    more that is not a stop word, casefolded; any other word by its character pairs."""
    out: set[str] = set()
    for word in _WORD.findall(text.casefold()):
        if word.isascii():
            if len(word) > 2 and word not in _STOP and not word.isdigit():
                out.add(word)
        elif len(word) == 1:
            out.add(word)
        else:
            out.update(word[i : i + 2] for i in range(len(word) - 1))
    return out


def nearest(
    exemplars: Iterable[Exemplar],
    situation: str,
    *,
    k: int = VOICE_EXEMPLARS,
    budget: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
    skip: Sequence[str] = (),
) -> list[Exemplar]:
    """The ``k`` exemplars sharing the most words with ``situation`` (the earlier first on
    a tie; with none shared, the first ones: the character still has a voice), within
    ``budget`` tokens if given, without duplicates or the texts in ``skip``; the nearest
    first."""
    want = terms(situation)
    count = count_tokens or count_words
    seen = {" ".join(s.split()) for s in skip}
    pool: list[tuple[int, int, Exemplar]] = []
    for i, ex in enumerate(exemplars):
        key = " ".join(ex.text.split())
        if not key or key in seen:
            continue
        seen.add(key)
        pool.append((-len(terms(ex.text) & want), i, ex))
    chosen: list[Exemplar] = []
    spent = 0
    for _, _, ex in sorted(pool, key=lambda p: (p[0], p[1])):
        if len(chosen) >= k:
            break
        cost = count(ex.text)
        if budget is not None and spent + cost > budget:
            continue
        spent += cost
        chosen.append(ex)
    return chosen
