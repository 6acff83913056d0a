"""A character's goals as steps, from what the character believes.

Goals are written in the packs' goal language (:mod:`fabula.worlds.goals`: get, find, keep
hidden, give to, learn where, learn a secret, tell where, hide from, meet, avoid, go to,
tell a secret, keep one's secret, visit, ask someone about something, keep to a place for
the hour, spread a piece of news);
:func:`step` turns one goal into the character's next step from a :class:`Situation` —
its own beliefs (true or not) and first-person memories:

- **act**: one action that moves the goal (go where it believes the thing is, search a
  container, ask someone present, take, put away, give, tell, ask for it);
- **done**: the goal holds, as far as the character believes;
- **waiting**: it asked and has had no answer yet;
- **blocked**: nothing it believes leaves a way forward (it was refused, nobody it can
  reach knows, every container it could search is searched), said with why.

The same function serves the offline character (its own mind) and the offline planner,
which asks it, from the author's side, who has something to do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fabula.agents.contracts import Action
from fabula.agents.reading.extract import parse_sentence
from fabula.memory.places import place_of
from fabula.memory.projections import BeliefView
from fabula.memory.records import SECRET, Belief, Entity, Memory, slug
from fabula.memory.sentences import called
from fabula.worlds.goals import Goal, natural_goal, parse_goal

# a name as the story writes it: capitalised words, joined by a space or an interpunct
_NAME = r"[A-Z][\w'-]*(?:[ ·][A-Z][\w'-]*)*"
ASK = re.compile(
    rf"^(?P<asker>{_NAME}) asked (?P<listener>{_NAME}) where the (?P<obj>.+?) (?:is|was)[.?]?$"
)
REFUSAL = "I am keeping the"
SECRET_QUESTION = "What are you hiding"
SECRET_REFUSAL = "That is my own business"

_ASKS = re.compile(
    r"^(?:What|Where|Who|Whom|Whose|Why|How|When|Which|Do|Does|Did|Are|Is|Was|Were|Can|"
    r"Could|Will|Would|Shall|Should|Have|Has|May)\b"
)


def asks(line: str) -> bool:
    """Whether a line is a question: it ends with a question mark, or it opens as one
    does and has no mark of its own ("What are you hiding, Mara")."""
    words = line.strip().rstrip(".,;:")
    return words.endswith("?") or (_ASKS.match(words) is not None and not words.endswith("!"))


def _plain(words: str) -> str:
    """Words as compared: without case, spacing or the marks that end them."""
    return " ".join(words.split()).rstrip(".,;:?! ").casefold()


class Situation:
    """What a character believes about where things and people are, read from its mind."""

    def __init__(
        self,
        me: str,
        beliefs: BeliefView,
        entities: dict[str, Entity],
        memories: Sequence[Memory] = (),
    ) -> None:
        self.me = me
        self.beliefs = beliefs
        self.entities = entities
        self.memories = list(memories)
        self._whereabouts: list[tuple[str, str]] | None = None

    def name(self, entity: str) -> str:
        """The entity's name as written."""
        e = self.entities.get(entity)
        return e.name if e else entity.replace("_", " ")

    def kind(self, entity: str) -> str | None:
        e = self.entities.get(entity)
        return e.kind if e else None

    def is_container(self, entity: str) -> bool:
        e = self.entities.get(entity)
        return e is not None and e.is_container

    def place_of(self, entity: str) -> str | None:
        """Where the character believes ``entity`` is, through containers and holders."""
        return place_of(entity, self.beliefs.where, lambda e: self.kind(e) == "place")

    @property
    def here(self) -> str | None:
        return self.place_of(self.me)

    def places(self) -> list[str]:
        return sorted(e for e, ent in self.entities.items() if ent.kind == "place")

    def containers_in(self, place: str | None) -> list[str]:
        return sorted(
            e for e in self.entities if self.is_container(e) and self.place_of(e) == place
        )

    def whereabouts(self) -> list[tuple[str, str]]:
        """Every other character it places somewhere, with the place, sorted by id: read
        once per situation (a goal's step asks several times, and a town's character knows
        a thousand others; the situation is a snapshot of its mind, never changed)."""
        if self._whereabouts is None:
            self._whereabouts = [
                (c, place)
                for c, e in sorted(self.entities.items())
                if e.kind == "character" and c != self.me and (place := self.place_of(c))
            ]
        return self._whereabouts

    def is_here(self, who: str) -> bool:
        """Whether it believes ``who``, another character, is where it is (as
        ``who in self.others_here()``, without placing everyone else)."""
        here = self.here
        return (
            bool(here)
            and who != self.me
            and self.kind(who) == "character"
            and (self.place_of(who) == here)
        )

    def others_here(self) -> list[str]:
        here = self.here
        return [c for c, place in self.whereabouts() if here and place == here]

    def others_elsewhere(self) -> list[tuple[str, str]]:
        here = self.here
        return [(c, place) for c, place in self.whereabouts() if place != here]

    def has_said(self, line: str) -> bool:
        """Whether the character remembers saying ``line`` aloud, in any order of the
        story's dialogue and whatever mark ends it (``"What are you hiding, Leo?" said
        Mara.`` is "What are you hiding, Leo")."""
        me, wanted = self.name(self.me), _plain(line)
        for memory in self.memories:
            action = parse_sentence(" ".join(memory.quote.split()))
            if action.kind != "say" or action.actors[:1] != (me,) or not action.utterance:
                continue
            if _plain(action.utterance) == wanted:
                return True
        return False

    def said(self, prefix: str) -> bool:
        """Whether the character's memories hold a line starting with ``prefix``."""
        return any(m.quote.startswith(prefix) for m in self.memories)

    def visited(self) -> set[str]:
        """The places it remembers going to (and the one it is in)."""
        out = {self.here} if self.here else set()
        went = f"{self.name(self.me)} went to "
        for m in self.memories:
            if not m.quote.startswith(went):
                continue
            where = m.quote[len(went) :].rstrip(".")
            # "went to the study", "went to Sable Crossing", "went to the Old Mill"
            for said in (where, re.sub(r"^the ", "", where)):
                if slug(said) in self.entities:
                    out.add(slug(said))
                    break
            else:
                out.add(slug(re.sub(r"^the ", "", where)))
        return out

    def went_to(self, place: str) -> str:
        """How the story writes the character going to ``place`` ("Leo went to the study",
        "Marta went to Sable Crossing"): a place's name as a sentence says it."""
        return f"{self.name(self.me)} went to {called(place, self.entities, place=True)}"


@dataclass(frozen=True)
class Step:
    """The next step toward a goal: an action, or why there is none."""

    status: Literal["act", "done", "waiting", "blocked"]
    action: Action | None = None
    why: str = ""


@dataclass(frozen=True)
class Kinds:
    """The ids of the entities a mind knows of, by kind: in the entities' order (what a
    goal in other words names first) and as sets (what a goal's form is checked against).
    Made once for the goals read against the same entities (:meth:`of`)."""

    ordered: dict[str, list[str]]
    sets: dict[str, frozenset[str]]

    @classmethod
    def of(cls, entities: dict[str, Entity]) -> Kinds:
        """The kinds of ``entities`` (objects, characters and places at least)."""
        ordered: dict[str, list[str]] = {"object": [], "character": [], "place": []}
        for ident, e in entities.items():
            ordered.setdefault(e.kind, []).append(ident)
        return cls(ordered, {k: frozenset(v) for k, v in ordered.items()})


def read_goal(entities: dict[str, Entity], text: str, kinds: Kinds | None = None) -> Goal:
    """``text`` read as a goal against the entities a mind knows of; an object the goal
    names that the mind has not met yet is read as one (the goal itself names it); a goal
    in other words naming one character or place, as one about it
    (:func:`~fabula.worlds.goals.natural_goal`). ``kinds``: :meth:`Kinds.of` ``entities``,
    when the caller reads several goals against them (made here otherwise)."""
    known = kinds if kinds is not None else Kinds.of(entities)
    sets = known.sets
    goal = parse_goal(text, sets["object"], sets["character"], sets["place"], natural=False)
    if goal.kind != "motive":
        return goal
    loose = parse_goal(text)
    others = {"character": loose.character, "place": loose.place, "owner": loose.owner}
    if (
        loose.object is not None
        and loose.object not in entities
        and all(
            v is None
            or (v in entities and entities[v].kind == ("place" if k == "place" else "character"))
            for k, v in others.items()
        )
    ):
        return loose
    return natural_goal(text, known.ordered["character"], known.ordered["place"])


def _done(why: str) -> Step:
    return Step("done", why=why)


def _blocked(why: str) -> Step:
    return Step("blocked", why=why)


def _act(why: str, **fields: str | None) -> Step:
    return Step("act", Action(reason=why, **fields))


def refused(sit: Situation, obj: str) -> bool:
    """Whether the character was refused the object it asked for."""
    return any(REFUSAL + " " + sit.name(obj) in m.quote for m in sit.memories)


def answered(quote: str, speaker: str, listener: str, obj: str) -> bool:
    """Whether a remembered line is ``speaker`` telling where ``obj`` is (to ``listener``,
    when the line names who it was told to), or saying it does not know; names as written.
    A telling is remembered in the text's words or, when those are not safe to keep, as
    the event ("Cora said that the key is in the box.")."""
    told = rf"^{re.escape(speaker)} (?:privately )?(?:told {re.escape(listener)}|said) that "
    if re.match(told + rf"the {re.escape(obj)} is ", quote):
        return True
    return quote.startswith(f'"I do not know where the {obj} is," said {speaker}')


def asked_recently(sit: Situation, obj: str) -> bool:
    """Whether the character asked about ``obj`` and has heard no answer since."""
    memories = sit.memories
    for i in range(len(memories) - 1, -1, -1):
        m = ASK.match(memories[i].quote)
        if m and slug(m["asker"]) == sit.me and slug(m["obj"]) == obj:
            return not any(
                answered(later.quote, m["listener"], m["asker"], m["obj"])
                for later in memories[i + 1 :]
            )
    return False


def asked_before(sit: Situation, other: str, obj: str) -> bool:
    """Whether the character has already asked ``other`` about ``obj``."""
    for memory in sit.memories:
        m = ASK.match(memory.quote)
        if m and (slug(m["asker"]), slug(m["listener"]), slug(m["obj"])) == (sit.me, other, obj):
            return True
    return False


def ruled_out(sit: Situation, obj: str, box: str) -> bool:
    """Whether the character knows ``obj`` is not in ``box``: it learned so, or it searched
    the box (a search shows everything inside) and does not believe the object is there."""
    belief = sit.beliefs.get(obj, "location")
    if belief is not None and belief.value == box:
        return not belief.polarity
    return sit.said(f"{sit.name(sit.me)} searched the {sit.name(box)}")


def _locate(sit: Situation, obj: str) -> Step:
    """Steps toward knowing where ``obj`` is: ask who is here, search what is here, go on."""
    if asked_recently(sit, obj):
        return Step("waiting", why=f"asked where the {sit.name(obj)} is")
    for other in sit.others_here():
        if not asked_before(sit, other, obj):
            return _act("does not know where it is", kind="ask", listener=other, about=obj)
    for box in sit.containers_in(sit.here):
        if not ruled_out(sit, obj, box):
            return _act(f"looks for the {obj}", kind="search", target=box, about=obj)
    for other, place in sit.others_elsewhere():
        if not asked_before(sit, other, obj):
            return _act(
                f"looks for someone who may know where the {obj} is", kind="go", target=place
            )
    for place in sit.places():
        if place != sit.here and any(
            not ruled_out(sit, obj, box) for box in sit.containers_in(place)
        ):
            return _act(f"looks for the {obj} elsewhere", kind="go", target=place)
    return _blocked(
        f"nobody it can ask knows where the {sit.name(obj)} is, and it has searched everywhere"
    )


def _reach(sit: Situation, who: str) -> Step:
    """Steps toward being where ``who`` is."""
    if sit.is_here(who):
        return _done(f"is with {sit.name(who)}")
    place = sit.place_of(who)
    if place is not None and place != sit.here:
        return _act(f"goes to {sit.name(who)}", kind="go", target=place)
    seen = sit.beliefs.get(who, "location")
    gone_from = seen.value if seen is not None and not seen.polarity else None
    candidates = [p for p in sit.places() if p not in (sit.here, gone_from)]
    # where it has not been yet first, then anywhere it has not seen them leave
    been = sit.visited()
    for candidate in [*(p for p in candidates if p not in been), *candidates]:
        return _act(f"looks for {sit.name(who)}", kind="go", target=candidate)
    return _blocked(f"does not know where {sit.name(who)} is")


def _get(sit: Situation, obj: str, *, find: bool = False) -> Step:
    """Steps toward holding ``obj`` (``find``: toward seeing where it is)."""
    belief = sit.beliefs.get(obj, "location")
    if belief is None or not belief.polarity:
        return _locate(sit, obj)
    holder = belief.value
    name = sit.name(obj)
    if holder == sit.me:
        return _done(f"holds the {name}")
    if sit.kind(holder) == "character":
        if find and sit.is_here(holder):
            return _done(f"sees the {name} with {sit.name(holder)}")
        if refused(sit, obj):
            return _blocked(f"{sit.name(holder)} refused to give the {name}")
        if sit.is_here(holder):
            line = f"Give me the {name}, {sit.name(holder)}"
            if sit.said(f'"{line}," said {sit.name(sit.me)}'):
                return Step("waiting", why=f"asked {sit.name(holder)} for the {name}")
            return _act(
                f"believes {holder} has the {obj}",
                kind="say",
                listener=holder,
                about=obj,
                line=line,
            )
        return _reach(sit, holder)
    place = sit.place_of(holder)
    if place is None:
        return _locate(sit, obj)
    if place != sit.here:
        return _act(f"believes the {obj} is in the {holder}", kind="go", target=place, about=obj)
    if find:
        if belief.mode in ("observed", "participated") or holder == place:
            return _done(f"has seen where the {name} is")
        return _act(f"looks in the {holder}", kind="search", target=holder, about=obj)
    return _act(f"believes the {obj} is in the {holder}", kind="take", object=obj, target=holder)


def _put_away(sit: Situation, obj: str, away_from: str | None) -> Step:
    """Holding ``obj``: put it in a container here, away from watchers (``away_from``, or
    anyone, when a place with a container and nobody in it is believed to exist)."""
    watchers = sit.others_here()
    unwanted = [w for w in watchers if away_from is None or w == away_from]
    here_boxes = sit.containers_in(sit.here)
    if unwanted or not here_boxes:
        occupied = {p for _, p in sit.others_elsewhere()}
        for place in sit.places():
            if place != sit.here and sit.containers_in(place) and place not in occupied:
                return _act(f"takes the {obj} where nobody will see", kind="go", target=place)
        if not here_boxes:
            return _blocked(f"knows no place to put the {sit.name(obj)} away")
        if away_from is not None:
            return Step("waiting", why=f"waits for {sit.name(away_from)} to go")
    return _act(
        f"holds the {obj} and wants it hidden", kind="put", object=obj, target=here_boxes[0]
    )


def step(sit: Situation, goal: Goal) -> Step:
    """The next step toward ``goal`` from what the character believes (see the module
    docstring); a goal naming nothing of this story is blocked, with why."""
    # an object its goal names but it never met is still one to look for (its goal names
    # it); a character or place it does not know of leaves no way forward
    missing = [
        a
        for a in (goal.character, goal.place, goal.owner)
        if a is not None and a not in sit.entities
    ]
    if goal.kind == "motive" or missing:
        return _blocked(f"cannot read {goal.text!r} as a goal")
    if goal.character == sit.me and goal.kind in (
        "meet",
        "avoid",
        "learn_secret",
        "give",
        "ask_about",
    ):
        return _blocked(f"{goal.text!r} is about itself")
    obj, who = goal.object or "", goal.character or ""
    belief = sit.beliefs.get(obj, "location") if obj else None
    held = belief.value if belief is not None and belief.polarity else None
    if goal.kind == "get":
        return _get(sit, obj)
    if goal.kind == "find":
        return _get(sit, obj, find=True)
    if goal.kind == "learn_where":
        return _done(f"knows where the {sit.name(obj)} is") if held else _locate(sit, obj)
    if goal.kind in ("keep_hidden", "hide_from"):
        return _hide(sit, obj, held, who if goal.kind == "hide_from" else None)
    if goal.kind == "give":
        return _give(sit, obj, who, held)
    if goal.kind == "tell_where":
        return _tell_where(sit, obj, who, held)
    if goal.kind == "keep_secret":
        return _done("keeps the secret (asked for it, it lies)")
    if goal.kind == "tell_secret":
        return _tell_secret(sit, goal.owner or sit.me, who)
    if goal.kind == "spread":
        return _spread(sit, goal)
    if goal.kind == "learn_secret":
        return _learn_secret(sit, who)
    if goal.kind == "meet":
        return _reach(sit, who)
    if goal.kind == "ask_about":
        return _ask_about(sit, who, goal.topic or "")
    if goal.kind == "avoid":
        return _avoid(sit, who)
    place = goal.place or ""
    if goal.kind == "visit" and place in sit.visited():
        return _done(f"has been in the {sit.name(place)}")
    if sit.here == place:
        return _done(f"is in the {sit.name(place)}")
    return _act(f"wants to be in the {place}", kind="go", target=place)


def _hide(sit: Situation, obj: str, held: str | None, away: str | None) -> Step:
    """Toward ``obj`` kept hidden (from ``away``, or anyone): put away if held, done if in
    a container, blocked if ``away`` has it, else got first."""
    if held == sit.me:
        return _put_away(sit, obj, away)
    if held is not None and sit.is_container(held):
        return _done(f"the {sit.name(obj)} is put away")
    if held is not None and held == away:
        return _blocked(f"{sit.name(away)} has the {sit.name(obj)}")
    return _get(sit, obj)


def _give(sit: Situation, obj: str, who: str, held: str | None) -> Step:
    """Toward ``who`` having ``obj``: got first, then given once ``who`` is here."""
    if held == who:
        return _done(f"{sit.name(who)} has the {sit.name(obj)}")
    if held != sit.me:
        return _get(sit, obj)
    if sit.is_here(who):
        return _act(f"gives the {obj} to {who}", kind="give", object=obj, listener=who)
    return _reach(sit, who)


def _tell_where(sit: Situation, obj: str, who: str, held: str | None) -> Step:
    """Toward ``who`` told where ``obj`` is: located first, told once ``who`` is here,
    done once remembered told."""
    if held is None:
        return _locate(sit, obj)
    me, thing = sit.name(sit.me), sit.name(obj)
    # told in private, or aloud where the listener heard it (remembered as "said that")
    if sit.said(f"{me} told {sit.name(who)} that the {thing} is") or sit.said(
        f"{me} said that the {thing} is"
    ):
        return _done(f"told {sit.name(who)}")
    if sit.is_here(who):
        return _act(
            f"tells {who} where the {obj} is", kind="tell", listener=who, about=obj, claim=held
        )
    return _reach(sit, who)


def _learn_secret(sit: Situation, who: str) -> Step:
    """Toward ``who``'s secret: asked for once ``who`` is here, then waited for; blocked
    once refused, done once believed known."""
    known = sit.beliefs.get(who, SECRET)
    if known is not None and known.polarity:
        return _done(f"believes it knows {sit.name(who)}'s secret")
    if sit.said(f'"{SECRET_REFUSAL}, {sit.name(sit.me)}," said {sit.name(who)}'):
        return _blocked(f"{sit.name(who)} will not tell")
    line = f"{SECRET_QUESTION}, {sit.name(who)}"
    if sit.has_said(line):
        return Step("waiting", why=f"asked {sit.name(who)}")
    if sit.is_here(who):
        return _act(f"wants {who}'s secret", kind="say", listener=who, line=line)
    return _reach(sit, who)


ASK_ABOUT = "What do you make of"
"""How a character asks another about a topic (an ``ask C about T`` goal): a question,
which the one asked answers in the next turn from what it holds."""


def asked_about(topic: str) -> str:
    """The question an ``ask C about T`` goal puts: "What do you make of the signal?"."""
    return f"{ASK_ABOUT} {topic}?"


def _ask_about(sit: Situation, who: str, topic: str) -> Step:
    """Toward ``who`` asked about ``topic``: go where ``who`` is, ask once; done once it
    remembers asking it (the answer is the other's to give)."""
    line = asked_about(topic)
    if sit.has_said(line):
        return _done(f"asked {sit.name(who)} about {topic}")
    if who in sit.others_here():
        return _act(
            f"wants to know what {who} makes of {topic}", kind="say", listener=who, line=line
        )
    return _reach(sit, who)


def _avoid(sit: Situation, who: str) -> Step:
    """Away from ``who``: to a place it is not believed to be in, if ``who`` is here."""
    if not sit.is_here(who):
        return _done(f"is away from {sit.name(who)}")
    elsewhere = {p for c, p in sit.others_elsewhere() if c == who}
    for place in sit.places():
        if place != sit.here and place not in elsewhere:
            return _act(f"keeps away from {who}", kind="go", target=place)
    return _blocked(f"has nowhere to go away from {sit.name(who)}")


def told_secret(sit: Situation, listener: str, owner: str) -> bool:
    """Whether the character remembers telling ``listener`` (or everyone, aloud) what
    ``owner``'s secret is."""
    me, to, of = sit.name(sit.me), sit.name(listener), sit.name(owner)
    told = (
        f"{me} privately told {to} that {of}'s secret",
        f"{me} told {to} that {of}'s secret",
        f"{me} said that {of}'s secret",
    )
    return any(m.quote.startswith(told) for m in sit.memories)


def _tell_secret(sit: Situation, owner: str, listener: str) -> Step:
    """Steps toward confiding ``owner``'s secret to ``listener``: learn it first (another's),
    then go where the listener is and tell it, privately."""
    held = sit.beliefs.get(owner, SECRET)
    if held is None or not held.polarity:
        if owner == sit.me:
            return _blocked("has no secret to tell")
        return step(sit, Goal("learn_secret", f"learn {sit.name(owner)}'s secret", character=owner))
    if told_secret(sit, listener, owner):
        return _done(f"told {sit.name(listener)}")
    if sit.is_here(listener):
        return _act(
            f"confides {owner}'s secret to {listener}",
            kind="tell",
            listener=listener,
            about=owner,
            attribute=SECRET,
            claim=held.value,
        )
    return _reach(sit, listener)


MAX_TELLINGS = 4
"""The most tellings of one piece of news a character makes in one scene (the rest of
those with it hear it from it in the next one, if they are still together)."""


def _spread_of(sit: Situation, goal: Goal) -> tuple[str, str, Belief | None]:
    """(owner, attribute, the character's own belief of it) a ``spread`` goal is about."""
    owner = goal.owner or sit.me
    attribute = goal.attribute or SECRET
    return owner, attribute, sit.beliefs.get(owner, attribute)


def shared_with(sit: Situation, other: str, owner: str, attribute: str) -> bool:
    """Whether the character remembers telling ``other`` ``owner``'s ``attribute`` (in
    private or aloud where they were), or being told it by ``other``."""
    me, them, of = sit.name(sit.me), sit.name(other), sit.name(owner)
    clause = f"{of}'s {attribute} is that "
    lines = (
        f"{me} privately told {them} that {clause}",
        f"{me} told {them} that {clause}",
        f"{me} said that {clause}",
        f"{them} privately told {me} that {clause}",
        f"{them} told {me} that {clause}",
    )
    return any(m.quote.startswith(lines) for m in sit.memories)


def spread_tellings(sit: Situation, goal: Goal) -> list[Action]:
    """The tellings a ``spread`` goal asks for now: ``owner``'s news confided to each one
    the character believes is with it (at most :data:`MAX_TELLINGS`, in id order) who is
    not the owner and with whom it has not shared it either way (:func:`shared_with`);
    none when it does not hold the news itself."""
    owner, attribute, held = _spread_of(sit, goal)
    if held is None or not held.polarity:
        return []
    listeners = [
        c for c in sit.others_here() if c != owner and not shared_with(sit, c, owner, attribute)
    ]
    return [
        Action(
            kind="tell",
            listener=c,
            about=owner,
            attribute=attribute,
            claim=held.value,
            reason=f"passes on {owner}'s news to {c}",
        )
        for c in listeners[:MAX_TELLINGS]
    ]


def _spread(sit: Situation, goal: Goal) -> Step:
    """Toward a piece of news passed on: tell it to the first one here who has not shared
    it with the character (:func:`spread_tellings` gives them all); done for now when
    everyone here has; blocked while the character does not hold it."""
    owner, attribute, held = _spread_of(sit, goal)
    if held is None or not held.polarity:
        return _blocked(f"does not know {sit.name(owner)}'s {attribute}")
    tellings = spread_tellings(sit, goal)
    if tellings:
        return Step("act", tellings[0])
    return _done(f"everyone here has heard {sit.name(owner)}'s {attribute}")


_DIRECTION_REST = re.compile(r"^(?P<verb>[a-z]+) ?(?P<rest>.*?)[.!]?$")
_ES = ("goes", "reaches", "fetches", "catches", "confesses")
DIRECTION_FORMS = "a character and a goal, e.g. 'Cora gets the logbook', 'Ada goes to the cove'"


def directed_goal(text: str, entities: dict[str, Entity]) -> tuple[str, Goal] | None:
    """A direction in controlled form — a character and a goal of the goal language in the
    third person ("Cora gets the logbook", "Ada goes to the cove", "Ben gives the map to
    Cora") — as (the character's id, its goal); None when it is not one."""
    text = text.strip()
    # the character it opens with, by its whole name, however many words ("Alice Liddell
    # meets Hatter"): the longest name that opens it
    names = sorted(
        ((e.name, i) for i, e in entities.items() if e.kind == "character"),
        key=lambda n: -len(n[0]),
    )
    opening = next(
        (
            (i, text[len(n) + 1 :])
            for n, i in names
            if text.casefold().startswith(n.casefold() + " ")
        ),
        None,
    )
    if opening is None:
        return None
    who, said = opening
    m = _DIRECTION_REST.match(said)
    if m is None:
        return None
    verb = m["verb"]
    base = verb[:-2] if verb in _ES else verb[:-1] if verb.endswith("s") else verb
    goal = read_goal(entities, f"{base} {m['rest']}".strip())
    return None if goal.kind == "motive" else (who, goal)
