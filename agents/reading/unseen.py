"""Who did not perceive: the cues of :mod:`.unseen_cues` found in a clause's words.

:func:`find_cues` reads a clause's words once, left to right, and returns each cue with
whom it is about, as a role for the caller to resolve against its own mentions (the prose
reader resolves names and pronouns; another reader may resolve them otherwise):

- ``subject``: the character named before the cue ("Bob was asleep"); a state that holds
  for the acts of its sentence and after it (``kind == "state"``), or ends one
  (``kind == "ends"``, "Bob woke up");
- ``after``: the character named right after the cue ("unseen by Bob"), for the
  sentence's act (``kind == "event"``);
- ``everyone``: everyone but the act's doer ("Nobody saw", "secretly"), for the sentence's
  act; told as a state ("No one was watching"), for what follows too, as ``subject``'s.

Linear in the words: the cues are indexed by their first word, and at each word the
longest cue that matches there is taken ("unseen by" over "unseen").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from fabula.agents.reading import unseen_cues

CueKind = Literal["state", "ends", "event"]
Role = Literal["subject", "after", "everyone"]
_NEAR = 4  # how many words after "nobody" may tell that it is about perceiving
_DENIABLE = frozenset(
    tuple(phrase.split())
    for phrase in (*unseen_cues.FROM, *unseen_cues.NOBODY, *unseen_cues.MANNER)
)


@dataclass(frozen=True)
class Cue:
    """One cue of not perceiving at words ``at..end - 1`` of a clause."""

    kind: CueKind
    role: Role
    at: int
    end: int


@cache
def _index() -> dict[str, list[tuple[tuple[str, ...], CueKind, Role]]]:
    """Each cue by its first word, longest first."""
    out: dict[str, list[tuple[tuple[str, ...], CueKind, Role]]] = {}
    tables: list[tuple[Sequence[str], CueKind, Role]] = [
        (unseen_cues.STATES, "state", "subject"),
        (unseen_cues.ENDS, "ends", "subject"),
        (unseen_cues.FROM, "event", "after"),
        (unseen_cues.NOBODY, "event", "everyone"),
        (unseen_cues.MANNER, "event", "everyone"),
    ]
    for phrases, kind, role in tables:
        for phrase in phrases:
            words = tuple(phrase.split())
            out.setdefault(words[0], []).append((words, kind, role))
    for cues in out.values():
        cues.sort(key=lambda cue: -len(cue[0]))
    return out


def _matches(words: Sequence[str], at: int, phrase: tuple[str, ...]) -> bool:
    if at + len(phrase) > len(words):
        return False
    return all(p == "*" or p == words[at + k] for k, p in enumerate(phrase))


def find_cues(words: Sequence[str], perceiving: Callable[[str], bool]) -> list[Cue]:
    """The cues of not perceiving in a clause of ``words`` (lower case, one per token).

    ``perceiving`` says whether a word is a verb of perceiving: a manner adverb before one
    ("Bob secretly watched") is about the watching, not about an act, and is left out.
    """
    index = _index()
    found: list[Cue] = []
    i = 0
    while i < len(words):
        for phrase, kind, role in index.get(words[i], ()):
            if not _matches(words, i, phrase):
                continue
            end = i + len(phrase)
            if not _about_an_act(words, i, end, phrase, perceiving):
                continue
            if role == "everyone" and any(w in ("was", "were") for w in words[end : end + 2]):
                kind = "state"  # "No one was watching.": for what follows, as a state
            found.append(Cue(kind, role, i, end))
            i = end - 1
            break
        i += 1
    return found


def _about_an_act(
    words: Sequence[str],
    at: int,
    end: int,
    phrase: tuple[str, ...],
    perceiving: Callable[[str], bool],
) -> bool:
    """Whether a cue found at ``at..end`` is about not perceiving an act (and is not
    denied: "had not gone unnoticed")."""
    if phrase in _DENIABLE and any(w in unseen_cues.NEGATIONS for w in words[max(0, at - 3) : at]):
        return False
    if phrase in (("nobody",), ("no", "one"), ("no-one",), ("none", "of", "them")):
        return any(w in unseen_cues.PERCEIVING for w in words[end : end + _NEAR])
    if " ".join(phrase) in unseen_cues.MANNER:
        return not any(perceiving(w) for w in words[end : end + 2])
    return True
