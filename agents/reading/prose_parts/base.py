"""What the prose sentence reader's parts share: one sentence's state, and their methods.

The sentence reader (:class:`.sentence._Sentence`) is composed of parts, one per concern
(:mod:`.mentions`, :mod:`.pronouns`, :mod:`.verbs`, :mod:`.objects`, :mod:`.perception`,
:mod:`.statements`, :mod:`.feelings`, :mod:`.settle`). Each part is a class on
:class:`_Base`, which declares the state they share (set by the sentence's ``__init__``)
and, for the type checker only, the methods one part calls of another: at run time each
method is the one part's that defines it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabula.agents.reading.prose_parts.lexicon import _Lexicon
from fabula.agents.reading.prose_parts.state import _Mention, _State, _Tok, _Verb
from fabula.memory.actions import StoryAction


class _Base:
    """One sentence's reading as its parts share it: its state, and what each calls."""

    first_clause: bool  # the sentence's first clause (else one after it)
    text: str
    start: int
    end: int
    lex: _Lexicon
    state: _State
    toks: list[_Tok]
    mentions: list[_Mention]
    # each character's mentions so far, in order: (last token, place among the ids)
    named_at: dict[str, list[tuple[int, int]]]
    by_token: dict[int, _Mention]
    unsure: str | None
    actions: list[StoryAction]
    spoken: bool  # a verb of telling read: the sentence is speech
    events: list[int]  # indexes in self.actions of object events
    known_before: set[str]  # objects placed before this sentence
    undirected: set[int]  # ids of the takes a move verb with no destination made
    looked: list[tuple[tuple[str, ...], str]]  # who saw which thing
    _latest: list[tuple[int, int]] | None  # see :func:`_latest_marks`

    if TYPE_CHECKING:
        # the parts' methods that other parts call (each defined in one part)
        def _find_mentions(self) -> None: ...

        def _next_is_noun(self, i: int) -> bool: ...

        def _learn_pronouns(self) -> None: ...

        def _named_subject(self, at: int) -> bool: ...

        def _learn_bound(self, who: str, lo: int, hi: int) -> None: ...

        def _pronoun_of(self, who: str) -> str | None: ...

        def _lead_end(self) -> int: ...

        def _resolve(self, pronoun: str, at: int) -> tuple[str | None, str | None]: ...

        def _light_noun(self, i: int, hi: int) -> bool: ...

        def _find_verbs(self) -> list[_Verb]: ...

        def _negated(self, i: int) -> bool: ...

        def _modal(self, i: int) -> str | None: ...

        def _segment(self, verbs: Sequence[_Verb], k: int) -> tuple[int, int]: ...

        def _subject(
            self, verbs: Sequence[_Verb], k: int
        ) -> tuple[tuple[str, ...], str | None]: ...

        def _unseen_cues(
            self, verbs: Sequence[_Verb], marks: list[tuple[str, tuple[str, ...]]]
        ) -> list[tuple[str, tuple[str, ...]]]: ...

        def _action(self, kind: str, **fields: object) -> StoryAction: ...

        def _first(self, lo: int, hi: int, kinds: Sequence[str]) -> _Mention | None: ...

        def _motion(
            self, cls: str, verb: _Verb, who: tuple[str, ...], why: str | None, lo: int, hi: int
        ) -> bool: ...

        def _object(
            self, cls: str, verb: _Verb, who: tuple[str, ...], why: str | None, lo: int, hi: int
        ) -> bool: ...

        def _perceive(
            self,
            verb: _Verb,
            who: tuple[str, ...],
            lo: int,
            hi: int,
            marks: list[tuple[str, tuple[str, ...]]],
            perceivers: list[str],
        ) -> bool: ...

        def _negative_perception(self, marks: list[tuple[str, tuple[str, ...]]]) -> None: ...

        def _statements(self, perceivers: list[str]) -> None: ...

        def _seen_where_it_is(self) -> None: ...

        def _is_container(self, sid: str) -> bool: ...

        def _state(self, placed: tuple[str, str], perceivers: list[str]) -> None: ...

        def _tell(
            self, verb: _Verb, who: tuple[str, ...], why: str | None, lo: int, hi: int
        ) -> bool: ...

        def _settle(
            self,
            marks: list[tuple[str, tuple[str, ...]]],
            subjects: list[tuple[str, ...]],
            held: Sequence[tuple[str, tuple[str, ...]]] = (),
        ) -> None: ...
