"""The prose reader's sentence reader: its parts composed, and a sentence read in order.

:class:`_Sentence` reads one clause (or a whole sentence) of prose: its mentions, its
pronouns learnt, its verbs; then each verb with a subject, by the first of its classes
that reads (motion, an act on an object, perception, telling); then the sentence's
negative perception, its cues of not seeing, its stated placements, and
last its marks settled (:mod:`.settle`). Each concern is a part, a class of its own module
on :class:`.base._Base`; this module composes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.prose_parts.lexicon import _Lexicon
from fabula.agents.reading.prose_parts.mentions import _Mentions
from fabula.agents.reading.prose_parts.objects import _Objects
from fabula.agents.reading.prose_parts.perception import _Perception
from fabula.agents.reading.prose_parts.pronouns import _Pronouns
from fabula.agents.reading.prose_parts.settle import _Settling
from fabula.agents.reading.prose_parts.state import _Mention, _State, _tok, _Verb
from fabula.agents.reading.prose_parts.statements import _Statements
from fabula.agents.reading.prose_parts.telling import _Telling
from fabula.agents.reading.prose_parts.verbs import _Verbs
from fabula.agents.reading.prose_parts.words import _SPEECH, _WORD
from fabula.memory.actions import StoryAction


class _Sentence(
    _Mentions, _Pronouns, _Verbs, _Objects, _Perception, _Statements, _Telling, _Settling
):
    """One prose sentence's reading."""

    def __init__(
        self, text: str, start: int, lexicon: _Lexicon, state: _State, first: bool = True
    ) -> None:
        self.first_clause = first  # the sentence's first clause (else one after it)
        self.text = text
        self.start = start
        self.end = start + len(text)
        self.lex = lexicon
        self.state = state
        self.toks = [_tok(m) for m in _WORD.finditer(text)]
        self.mentions: list[_Mention] = []
        # each character's mentions so far, in order: (last token, place among the ids)
        self.named_at: dict[str, list[tuple[int, int]]] = {}
        self.by_token: dict[int, _Mention] = {}
        self.unsure: str | None = None
        self.actions: list[StoryAction] = []
        self.spoken = False  # a verb of telling read: the sentence is speech (:mod:`.telling`)
        self.events: list[int] = []  # indexes in self.actions of object events
        self.known_before = set(state.located)  # objects placed before this sentence
        self.undirected: set[int] = set()  # ids of the takes a move verb with no destination made
        self.looked: list[tuple[tuple[str, ...], str]] = []  # who saw which thing
        self._latest: list[tuple[int, int]] | None = None  # see :func:`_latest_marks`

    # -- reading ----------------------------------------------------------------------
    def read(self) -> list[StoryAction]:
        self._find_mentions()
        self._learn_pronouns()
        verbs = self._find_verbs()
        # ("seen" | "unseen" | "unaware", who), or ("believed", (holder, *who))
        marks: list[tuple[str, tuple[str, ...]]] = []
        subjects: list[tuple[str, ...]] = []
        perceivers: list[str] = []
        believed = self._believed(verbs)
        believers: dict[int, tuple[str, ...]] = {}
        for k, verb in enumerate(verbs):
            who, why = self._subject(verbs, k)
            if "believe" in verb.classes[:1]:
                believers[k] = who
            holder = next((believers[b] for b in believed.get(k, ())), None)
            if holder is not None and who != holder:
                continue  # the believer's view of another's act or feeling, not the story's
            if not who:
                continue
            subjects.append(who)
            self.state.doers.append((self.start + self.toks[verb.at].start, who))
            lo, hi = self._segment(verbs, k)
            if why is None and len(who) == 1 and self._named_subject(verb.at):
                self._learn_bound(who[0], lo, hi)
            for cls in verb.classes:
                done = self._apply(cls, verb, who, why, lo, hi, marks, perceivers)
                if done:
                    break
        self._negative_perception(marks)
        held = self._unseen_cues(verbs, marks)
        if not self.spoken and not any(a.kind in _SPEECH for a in self.actions):
            # what a sentence of speech says is its speaker's word to its hearers, no
            # narrator's statement that all present see ("Ann whispered to Ben that the
            # scarf is in the box" told Cal, out in the garden, where the scarf was)
            self._statements(perceivers)
            self._seen_where_it_is()
        # where a thing is, stated in a sentence that says who did not see ("Behind Ann's
        # back, Ben tucked the scarf into the box." with the tucking not read), is not seen
        # by them either
        blind = tuple(dict.fromkeys(w for kind, who in marks if kind == "unseen" for w in who))
        for i, a in enumerate(self.actions):
            if blind and a.kind == "state":
                unseen = tuple(dict.fromkeys((*a.unseen_by, *blind)))
                self.actions[i] = a.model_copy(update={"unseen_by": unseen})
        self._settle(marks, subjects, held)
        return self.actions

    def _believed(self, verbs: Sequence[_Verb]) -> dict[int, tuple[int, ...]]:
        """The verbs in what a verb of believing holds true ("Believing that Ann hated
        plums, Bo ...", "He assumed she would love it"), from it to the clause's next
        comma, each with the verb of believing."""
        out: dict[int, tuple[int, ...]] = {}  # verb -> the verb of believing it is under
        scope = -1
        believer = -1
        # the commas and semicolons before each token, so that a range is asked in one step
        edges = [0]
        for tok in self.toks:
            edges.append(edges[-1] + (tok.low in (",", ";")))
        for k, verb in enumerate(verbs):
            if edges[verb.at] > edges[min(max(scope, 0), verb.at)]:
                scope = -1
            if scope >= 0:
                out[k] = (believer,)
            elif "believe" in verb.classes[:1] and not verb.negated:
                scope, believer = verb.end + 1, k
        return out

    def placements(self) -> list[StoryAction]:
        """Only the placements the sentence states (a second look at a whole sentence
        whose clauses, read alone, gave nothing)."""
        self._find_mentions()
        self._statements([])
        return self.actions

    def _apply(
        self,
        cls: str,
        verb: _Verb,
        who: tuple[str, ...],
        why: str | None,
        lo: int,
        hi: int,
        marks: list[tuple[str, tuple[str, ...]]],
        perceivers: list[str],
    ) -> bool:
        if cls in ("go", "enter", "leave"):
            return self._motion(cls, verb, who, why, lo, hi)
        if cls in ("put", "take", "discard", "give"):
            return self._object(cls, verb, who, why, lo, hi)
        if cls == "perceive":
            return self._perceive(verb, who, lo, hi, marks, perceivers)
        if cls == "tell":
            return self._tell(verb, who, why, lo, hi)
        return False

    def _action(self, kind: str, **fields: object) -> StoryAction:
        return StoryAction.model_validate(
            {"kind": kind, "start": self.start, "end": self.end, **fields}
        )

    def _first(self, lo: int, hi: int, kinds: Sequence[str]) -> _Mention | None:
        for k in range(lo, hi):
            m = self.by_token.get(k)
            if m is not None and m.kind in kinds and m.first >= lo:
                return m
        return None
