"""The offline character agent: acts on its own beliefs toward its goals, deterministically.

It reads only its :class:`fabula.memory.acl.CharacterMind` (its beliefs, first-person
memories, the entities it knows of and its own lore, on a Redis connection that cannot
read anything else) and its brief. What it proposes follows from what it *believes*, true
or not: a character who believes the key is in the drawer goes to the drawer.

Policy, in order:
1. A question put to it ("Leo asked Mara where the key is") that it has not answered, by
   someone it believes is still in the same place (one who has left is not answered): it
   answers from its own belief — or, when it wants the thing kept from the asker (a goal to
   keep it hidden, or hide it from the asker), with a lie: a container it believes the
   thing is not in and has not seen the asker search, or, with no such lie to tell, "I do
   not know" — or says it does not know. Asked for its secret ("What are you hiding,
   Mara?"), it keeps it: with a goal to keep it (``keep my secret``), by a lie ("X's
   secret is that X has nothing to hide"), else by refusing — unless a goal says to spread
   it (it is news: ``spread my secret``), when it tells it.
2. A request put to it ("Give me the key, Mara"): it gives the thing unless the first goal
   of its own that names the thing is not to give it to the asker (then it refuses, in
   words).
3. Any other question said aloud to it (by its name, or, naming no one, by the one other
   character it believes is with it: :mod:`fabula.agents.shared.replies`) that it has
   not answered, by someone still in the same place: "Where is the key?" as in 1; asked
   to go with the asker to a place it knows ("Can we go to Eastmere?"), it says so and
   goes; its card's example whose prompt matches; asked of the moment ("Where are we?",
   "Are you alone?", "How are you?"), what it believes of its place, who is with it and
   its own condition; else it says, in the first person, what it holds itself — the
   entries of its own lore (read from its own keyspace) the question names by a key (not
   those an earlier turn left lit), its own description when asked about itself (all of
   it asked who it is; the part the question names otherwise), what it believes of what
   the question names (never where a thing is that it keeps from the asker) — never a
   secret; with nothing to say, "I cannot say".
4. Its goals, in order (:func:`fabula.agents.shared.goals.step`): the first with a step
   to take gives the turn's action — unless it is a move it has made twice already (going
   to one place, searching one container): what it believes is sending it round in
   circles, and that goal counts as blocked (a routine's hour, ``keep to the P``, never
   is) — or a question it remembers putting already (answered, or to be answered in the
   turn that follows it): that goal waits. A goal to spread a piece of news tells it to
   everyone here who has not shared it with the character, in one turn
   (:func:`fabula.agents.shared.goals.spread_tellings`).
5. Nothing to do (every goal done, waiting or blocked): it proposes no action and stays out
   of the turn; its intent says why, goal by goal (``done: …``, ``blocked: … (why)``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from fabula.agents.contracts import Action, CharacterBrief, Proposal
from fabula.agents.shared.goals import (
    ASK,
    REFUSAL,
    SECRET_QUESTION,
    SECRET_REFUSAL,
    Kinds,
    Situation,
    Step,
    answered,
    asks,
    read_goal,
    spread_tellings,
    step,
)
from fabula.agents.shared.replies import (
    NO_ANSWER,
    addressed,
    addressed_to,
    asked_lore,
    asked_to_go,
    best_exchange,
    card_exchanges,
    company,
    example_reply,
    place_texts,
    reply,
    said_line,
    said_question,
    situated,
    tells,
)
from fabula.memory.acl import CharacterMind
from fabula.memory.projections import BeliefView
from fabula.memory.records import SECRET, Belief, Memory, is_secret, slug
from fabula.memory.sentences import called, fact_clause
from fabula.memory.store.reads import Naming, naming_words
from fabula.worlds.goals import Goal, may_spread
from fabula.worlds.recall import own_lore
from fabula.worlds.voice import parse_traits, parse_voice

_NAME = r"[A-Z][\w'-]*(?:[ ·][A-Z][\w'-]*)*"  # a name in one word or several
_REQUEST = re.compile(
    rf'^"Give me the (?P<obj>.+?), (?P<holder>{_NAME}),?" said (?P<asker>{_NAME})\.?$'
)
_SECRET = re.compile(rf'^"{SECRET_QUESTION}, (?P<holder>{_NAME})[,?]?" said (?P<asker>{_NAME})\.?$')
_WHERE = re.compile(r"^Where (?:is|are) (?:the )?(?P<thing>[\w' -]+?)\?$", re.IGNORECASE)
_SHOWN = 3  # beliefs an answer to a free question says at most


def _pending_request(me: str, memories: list[Memory]) -> tuple[str, str] | None:
    """The latest "give me the O" put to ``me`` that ``me`` has not answered: (asker, O)."""
    for i in range(len(memories) - 1, -1, -1):
        m = _REQUEST.match(memories[i].quote)
        if m and slug(m["holder"]) == me:
            asker, obj = slug(m["asker"]), slug(m["obj"])
            for later in memories[i + 1 :]:
                if later.quote.startswith(f"{later.quote.split(' ')[0]} gave the") or (
                    REFUSAL in later.quote
                ):
                    return None
            return asker, obj
    return None


def _pending_secret(sit: Situation) -> str | None:
    """Who asked ``me`` for its secret and has had no answer."""
    for i in range(len(sit.memories) - 1, -1, -1):
        m = _SECRET.match(sit.memories[i].quote)
        if m and slug(m["holder"]) == sit.me:
            asker, me = m["asker"], sit.name(sit.me)
            answers = (
                f'"{SECRET_REFUSAL}, {asker},"',
                f"{me} privately told {asker} that {me}'s secret",
            )
            if not any(later.quote.startswith(answers) for later in sit.memories[i + 1 :]):
                return slug(asker)
            return None
    return None


def _pending_question(me: str, memories: list[Memory]) -> tuple[str, str] | None:
    """The latest question put to ``me`` that ``me`` has not answered: (asker, object)."""
    for i in range(len(memories) - 1, -1, -1):
        m = ASK.match(memories[i].quote)
        if m and slug(m["listener"]) == me:
            if any(
                answered(later.quote, m["listener"], m["asker"], m["obj"])
                for later in memories[i + 1 :]
            ):
                return None
            return slug(m["asker"]), slug(m["obj"])
    return None


def _pending_said(sit: Situation) -> tuple[str, str] | None:
    """The latest question said aloud to the character (:func:`said_question`: by name,
    or, naming no one, by the one other character it believes is with it) that it has not
    answered: (asker, the words without its name). Its secret asked for is policy 1's."""
    names = {c: e.name for c, e in sit.entities.items() if e.kind == "character"}
    memories = sit.memories
    for i in range(len(memories) - 1, -1, -1):
        said = said_question(memories[i].quote)
        asker = slug(said.speaker) if said is not None else sit.me
        if said is None or asker == sit.me or _SECRET.match(memories[i].quote):
            continue
        to, words = addressed(said, names)
        if to is None and sit.others_here() == [asker]:
            to = sit.me
        if to != sit.me:
            continue
        # an answer comes in a later turn: what it said in the question's own turn was
        # proposed before the question was written (to an earlier one, perhaps)
        me, turn = sit.name(sit.me), memories[i].turn
        later = [m.quote for m in memories[i + 1 :] if m.turn > turn]
        others = [n for c, n in names.items() if c not in (sit.me, asker)]
        if any(_replied(quote, me, said.speaker, others) for quote in later):
            return None
        return asker, words
    return None


def _replied(quote: str, me: str, asker: str, others: Sequence[str] = ()) -> bool:
    """Whether a remembered line is ``me`` answering ``asker`` (names as written): a line
    it said to them (by name, or "… said to them"), in any order of the grammar's
    dialogue, a line said to no one by name and calling none of ``others`` (the other
    characters: an answer once the asker has been named, :func:`_calls_by_name`), its "I
    do not know where …", or a telling to them."""
    line = said_line(quote)
    if line is not None and line.speaker == me:
        to_them = line.to == asker or re.search(rf"\b{re.escape(asker)}\b", line.words)
        if to_them or line.words.startswith("I do not know where "):
            return True
        to_none = line.to is None and not any(
            re.search(rf"\b{re.escape(n)}\b", line.words) for n in others
        )
        if to_none and not line.words.endswith("?"):
            return True
    return (
        re.match(rf"^{re.escape(me)} (?:privately )?told {re.escape(asker)} that ", quote)
        is not None
    )


def _calls_by_name(sit: Situation, asker: str) -> bool:
    """Whether an answer to ``asker`` calls them by name, as people do: the first time the
    character answers them, or when others are there to tell them apart; otherwise its
    words alone ("I am an elf," said Seraphina — not "…, User," on every line)."""
    if [c for c in sit.others_here() if c != asker]:
        return True
    me, them = sit.name(sit.me), sit.name(asker)
    for memory in sit.memories:
        line = said_line(memory.quote)
        if line is None or line.speaker != me:
            continue
        if line.to == them or re.search(rf"\b{re.escape(them)}\b", line.words):
            return False
    return True


def _asked_where(sit: Situation, words: str) -> str | None:
    """The thing a said question asks the whereabouts of ("Where is the key?"), among the
    objects the character knows of (by its name, or the end of one name only)."""
    m = _WHERE.match(words)
    if m is None:
        return None
    wanted = m["thing"].casefold()
    objects = sorted(c for c, e in sit.entities.items() if e.kind == "object")
    exact = [c for c in objects if sit.name(c).casefold() == wanted]
    ends = [c for c in objects if sit.name(c).casefold().endswith(" " + wanted)]
    return exact[0] if exact else (ends[0] if len(ends) == 1 else None)


def _guarded(goals: list[Goal], asker: str) -> set[str]:
    """The things whose whereabouts the character keeps from ``asker``: a goal to keep one
    hidden, or to hide it from them."""
    return {
        g.object
        for g in goals
        if g.object is not None
        and (g.kind == "keep_hidden" or (g.kind == "hide_from" and g.character == asker))
    }


def _named(sit: Situation, words: str) -> list[str]:
    """The entities (not the character itself) a question names: by name, or by the last
    word of a name no other shares ("the key" for the brass key)."""
    said = " " + " ".join(re.findall(r"[\w'-]+", words.casefold())) + " "
    lasts: dict[str, list[str]] = {}
    for ident, e in sit.entities.items():
        lasts.setdefault(e.name.casefold().split(" ")[-1], []).append(ident)
    out = []
    for ident, e in sorted(sit.entities.items()):
        name = e.name.casefold()
        last = name.split(" ")[-1]
        if ident != sit.me and (
            f" {name} " in said or (len(lasts[last]) == 1 and f" {last} " in said)
        ):
            out.append(ident)
    return out


def _belief_line(sit: Situation, b: Belief) -> str:
    """One belief as a clause ("the brass key is in the desk drawer", "the colour of the
    key is not red"), names as the character knows them."""
    return fact_clause(b.subject, b.attribute, b.value, b.polarity, sit.entities)


def _known(sit: Situation, words: str, guarded: set[str]) -> list[str]:
    """What the character believes of what a question names, as clauses (at most
    :data:`_SHOWN`): never a secret, nor where a thing is that it keeps from the asker."""
    named = _named(sit, words)
    held = [
        b
        for b in sit.beliefs.beliefs.values()
        if b.subject in named
        and not is_secret(b.attribute)
        and not (b.attribute == "location" and b.subject in guarded)
    ]
    held.sort(key=lambda b: (named.index(b.subject), b.attribute != "location", b.attribute))
    return [_belief_line(sit, b) for b in held[:_SHOWN]]


CIRCLING = 2
"""How often a character may remember making the same move (going to one place,
searching one container) since it last got anything done (gave, took, put away, told)
before a goal that asks for it again counts as blocked: what it believes keeps sending it
round in circles."""


RECENT_DEEDS = 5
"""How many of its own latest deeds a character remembers before taking or putting away
the same thing again is no longer going round (see :func:`_circling`)."""


def _circling(sit: Situation, action: Action, goal: Goal) -> bool:
    """Whether ``action`` goes round: a search it has made :data:`CIRCLING` times since it
    last got anything done, a place it went to since then, or taking or putting away what
    it took or put away among its last :data:`RECENT_DEEDS` deeds (each of these wrote the
    same turn again and again). A routine's hour (``keep to the P``) sends it back to the
    same places day after day, and is never going round."""
    if goal.kind == "keep_to":
        return False
    me = sit.name(sit.me)
    if action.kind == "go" and action.target:
        done = sit.went_to(action.target)
        # going back where it went since it last got anything done is going round: two
        # places, one after the other, were the same turn written again and again (a
        # chase, or a goal to meet someone beside one to avoid them); a goal (or a
        # direction) to be in that very place may go back once
        limit = CIRCLING if goal.place == action.target else 1
    elif action.kind == "search" and action.target:
        done = f"{me} searched the {sit.name(action.target)}"
        limit = CIRCLING
    elif action.kind in ("take", "put") and action.object:
        # taking up what it put away, and putting it away again (a goal to hand it on
        # beside one to keep it hidden): a deed among its last few undone and done again
        verb = "took" if action.kind == "take" else "put"
        deed = f"{me} {verb} the {sit.name(action.object)}"
        own = [m.quote for m in sit.memories if m.quote.startswith(f"{me} ")]
        return any(q.startswith(deed) for q in own[-RECENT_DEEDS:])
    else:
        return False
    progress = tuple(f"{me} {verb} " for verb in ("gave", "took", "put", "told", "moved"))
    count = 0
    for memory in reversed(sit.memories):
        if memory.quote.startswith(progress):
            break  # it got somewhere since: moving on is no circle
        count += memory.quote.startswith(done)
    return count >= limit


def _asked_before(sit: Situation, found: Step) -> bool:
    """Whether a goal's step would put a question (said aloud) the character remembers
    putting already: asked once, it is answered in the turn that follows, or it was."""
    action = found.action
    if action is None or action.kind != "say" or not action.line or not asks(action.line):
        return False
    return sit.has_said(action.line)


COME = "Come with me"
"""What a character says as it sets off where it was asked to go with the asker."""


def _asked_to(sit: Situation, words: str) -> Action | None:
    """Asked to go somewhere with the asker ("Can you take me to Eastmere?", "take me up to
    the lamp"): to a place it knows of, by name (with or without its article), or to where
    it believes a thing it knows of is — it goes; already there, it says so; somewhere it
    does not know, it says it does not know where that is (a request, not a question its
    lore answers). None for another question."""
    wanted = asked_to_go(words)
    if wanted is None:
        return None
    bare = re.sub(r"^(?:the|a|an)\s+", "", wanted, flags=re.IGNORECASE).casefold()
    named = [e for e in sit.entities if sit.name(e).casefold() in (bare, wanted.casefold())]
    places = [p for p in sit.places() if p in named]
    if not places:  # a thing it knows of: where it believes the thing is
        wheres = [sit.beliefs.where(e) for e in named if e not in sit.places()]
        places = [w for w in wheres if w is not None and w in sit.places()]
    if not places:
        line = f"I do not know where {wanted} is"
        return Action(kind="say", line=line, reason="asked to go where it does not know")
    if places[0] == sit.here:
        line = f"We are in {called(places[0], sit.entities, place=True)} already"
        return Action(kind="say", line=line, reason="asked to go where it is")
    return Action(kind="go", target=places[0], reason="asked to go there with the asker")


def _here(sit: Situation, other: str) -> bool:
    """Whether ``other`` is, as far as the character believes, where it is itself: one
    answers, refuses or tells only someone in the same place (unknown: it may be)."""
    mine = sit.beliefs.where(sit.me)
    theirs = sit.beliefs.get(other, "location")
    if mine is None or theirs is None:
        return True
    # "not in the study": it saw the other leave the place it is in
    return theirs.value == mine if theirs.polarity else theirs.value != mine


def _keep_secret(sit: Situation, goals: list[Goal], asker: str) -> Action:
    """Asked for its own secret: with a goal to keep it (from anyone, or from the asker), a
    lie the asker may believe; otherwise a refusal, in words."""
    lies = any(
        g.kind == "keep_secret" and g.owner in (None, sit.me) and g.character in (None, asker)
        for g in goals
    )
    if lies and sit.beliefs.get(sit.me, SECRET) is not None:
        return Action(
            kind="tell",
            listener=asker,
            about=sit.me,
            attribute=SECRET,
            claim=f"{sit.name(sit.me)} has nothing to hide",
            reason="asked, and lies to keep its secret",
        )
    line = f"{SECRET_REFUSAL}, {sit.name(asker)}"
    return Action(kind="say", listener=asker, line=line, reason="keeps its secret")


def _spreads_own(sit: Situation, goals: list[Goal], asker: str) -> Action | None:
    """Its own (first) secret told to ``asker`` when a goal says to spread it (it is news)
    and it holds it; None otherwise."""
    for goal in goals:
        if (
            goal.kind == "spread"
            and goal.owner in (None, sit.me)
            and goal.attribute
            in (
                None,
                SECRET,
            )
        ):
            held = sit.beliefs.get(sit.me, SECRET)
            if held is not None and held.polarity:
                return Action(
                    kind="tell",
                    listener=asker,
                    about=sit.me,
                    attribute=SECRET,
                    claim=held.value,
                    reason="asked for its news, and tells it",
                )
    return None


async def _situation(mind: CharacterMind, brief: CharacterBrief) -> tuple[Situation, list[Goal]]:
    """What the character reads of its own mind (its beliefs, the entities it knows of, its
    last memories) and its goals as it reads them.

    Of the entities it knows of, only those it may name (:func:`_naming`): a town's
    character knows of the whole cast, and reading a thousand of them for every turn it
    takes would cost each turn the town's size."""
    beliefs = await mind.beliefs()
    # a goal to spread news reads more memories; only a goal of that form may be one
    may = any(may_spread(g) for g in brief.goals)
    memories = await mind.memories(last=TELLINGS_READ if may else MEMORIES_READ)
    entities = await mind.entities(naming=_naming(mind.character, beliefs, brief, memories))
    kinds = Kinds.of(entities)
    goals = [read_goal(entities, g, kinds) for g in brief.goals]
    if not any(g.kind == "spread" for g in goals):
        memories = memories[-MEMORIES_READ:]
    sit = Situation(mind.character, beliefs, entities, memories)
    return sit, goals


def _naming(
    me: str, beliefs: BeliefView, brief: CharacterBrief, memories: Sequence[Memory]
) -> Naming:
    """What the character's turn may name, all of it its own: itself, what its beliefs are
    about and hold, and the words of its brief and of its memories — every way the policy
    names an entity (an id from its beliefs, a name in its goals, in a line it heard).
    Every entity that is not a character is read besides (:meth:`~fabula.memory.store.
    reads.RecordReads.known_entities`)."""
    ids = {me}
    for b in beliefs.beliefs.values():
        ids.add(b.subject)
        ids.add(b.value)
    texts = [brief.name, *brief.goals, *brief.secrets, *(m.quote for m in memories)]
    return ids, naming_words(texts)


MEMORIES_READ = 30
"""How many of its last memories a character reads to act."""

TELLINGS_READ = 200
"""How many it reads when a goal is to spread a piece of news: whom it told, and who told
it, is read from its memories (:func:`~fabula.agents.shared.goals.shared_with`), and in a
town the comings and goings it sees soon push a telling out of the last
:data:`MEMORIES_READ`, so that it would tell the same listener twice."""


class OfflineCharacter:
    """Deterministic character agent (see module docstring)."""

    async def propose(self, mind: CharacterMind, brief: CharacterBrief) -> Proposal:
        """The character's proposal from its own beliefs and memories (policy in the module
        docstring)."""
        sit, goals = await _situation(mind, brief)
        answer = await self._answering(mind, sit, brief, goals)
        return answer if answer is not None else self._pursuing(sit, goals, brief.variant)

    async def reply_to(
        self, mind: CharacterMind, brief: CharacterBrief, asker: str, words: str
    ) -> Action:
        """What it says to ``words`` said to it by ``asker`` (policy 3), from its own mind and
        brief: the answer :meth:`propose` gives once it remembers the question. The leak
        properties ask it this directly."""
        sit, goals = await _situation(mind, brief)
        return await self._reply(mind, sit, brief, goals, asker, words)

    async def _answering(
        self, mind: CharacterMind, sit: Situation, brief: CharacterBrief, goals: list[Goal]
    ) -> Proposal | None:
        """What was put to the character and waits for it (policies 1 to 3), if anything."""
        me, memories = sit.me, sit.memories
        question = _pending_question(me, memories)
        if question is not None and _here(sit, question[0]):
            action = self._answer(sit, goals, *question)
            return Proposal(character=me, actions=(action,), intent="answer")
        secret = _pending_secret(sit)
        if secret is not None and _here(sit, secret):
            news = _spreads_own(sit, goals, secret)
            if news is not None:  # its secret is news: asked for it, it tells
                return Proposal(character=me, actions=(news,), intent="tell its news")
            return Proposal(
                character=me, actions=(_keep_secret(sit, goals, secret),), intent="keep a secret"
            )
        request = _pending_request(me, memories)
        if request is not None and _here(sit, request[0]):
            asker, obj = request
            # the first of its goals that names the thing decides: giving it to the asker,
            # or keeping it (no goal naming it: it gives)
            first = next((g for g in goals if g.object == obj), None)
            gives = first is None or (first.kind == "give" and first.character == asker)
            if sit.beliefs.where(obj) == me and gives:
                action = Action(kind="give", object=obj, listener=asker, reason="asked for it")
            else:
                action = Action(
                    kind="say",
                    listener=asker,
                    about=obj,
                    line=f"{REFUSAL} {sit.name(obj)}",
                    reason="wants it",
                )
            return Proposal(character=me, actions=(action,), intent="answer a request")
        said = _pending_said(sit)
        if said is not None and _here(sit, said[0]):
            action = await self._reply(mind, sit, brief, goals, *said)
            if action.kind == "go":  # asked to go somewhere with the asker: it says so, goes
                call = _calls_by_name(sit, said[0])
                line = addressed_to(COME, sit.name(said[0])) if call else COME
                agree = Action(kind="say", listener=said[0], line=line, reason=action.reason)
                return Proposal(character=me, actions=(agree, action), intent="answer")
            return Proposal(character=me, actions=(action,), intent="answer")
        return None

    def _pursuing(self, sit: Situation, goals: list[Goal], variant: int) -> Proposal:
        """A step toward its goals (policies 4 and 5)."""
        me = sit.me
        states: list[str] = []
        steps: list[Proposal] = []  # one per goal it can act on, in the brief's order
        for goal in goals:
            found = step(sit, goal)
            if found.status == "act" and found.action is not None and _asked_before(sit, found):
                # the same question again: the one asked has answered it, or will in the
                # turn that follows it
                found = replace(found, status="waiting", why="asked it already")
            if found.status == "act" and found.action is not None:
                if not _circling(sit, found.action, goal):
                    # news is told to everyone here who has not heard it from it, at once
                    told = spread_tellings(sit, goal) if goal.kind == "spread" else []
                    actions = tuple(told) or (found.action,)
                    steps.append(Proposal(character=me, actions=actions, intent=goal.text))
                    continue
                found = replace(found, status="blocked", why="it is going round in circles")
            states.append(f"{found.status}: {goal.text} ({found.why})")
        if steps:  # the first, or for another draft of the turn another (brief.variant)
            return steps[variant % len(steps)]
        return Proposal(character=me, actions=(), intent="; ".join(states) or "no goals")

    async def _reply(
        self,
        mind: CharacterMind,
        sit: Situation,
        brief: CharacterBrief,
        goals: list[Goal],
        asker: str,
        words: str,
    ) -> Action:
        """Its answer to a question said aloud (policy 3): where a thing is, as policy 1
        answers it; anything else in its own words (:func:`reply`) from its own lore the
        question activates, its own description and beliefs, keeping its secrets."""
        thing = _asked_where(sit, words)
        if thing is not None:
            return self._answer(sit, goals, asker, thing)
        me = sit.entities.get(sit.me)
        name, to = sit.name(sit.me), sit.name(asker)
        lore = asked_lore((await own_lore(mind, name, words)).lit, words)
        held = [b.value for b in sit.beliefs.beliefs.values() if is_secret(b.attribute)]
        secrets = [*brief.secrets, *held]
        document = await mind.voice()
        examples = [e.text for e in parse_voice(document)]
        found = best_exchange(
            words, card_exchanges(lore, name, to), card_exchanges(examples, name, to)
        )
        call = _calls_by_name(sit, asker)
        going = _asked_to(sit, words)
        if going is not None and found is not None and asked_to_go(found.prompt) is None:
            found = None  # asked to go: a request, answered as one, not by what is said of it
        if found is not None:
            said = example_reply(found, name, to)
            if said.words and not any(tells(x, secrets) for x in (said.words, said.gesture)):
                return Action(
                    kind="say",
                    listener=asker,
                    line=addressed_to(said.words, to) if call else said.words,
                    gesture=said.gesture or None,
                    reason="asked, and answers as its card's example does",
                )
        if going is not None and going.kind == "say":  # where it is already, or no way
            line = going.line or ""
            there = addressed_to(line, to) if call else line
            return going.model_copy(update={"listener": asker, "line": there})
        if going is not None:
            return going
        around = situated(words, company(sit, asker))
        if around is not None:
            return Action(
                kind="say",
                listener=asker,
                line=addressed_to(around, to) if call else around,
                reason="asked of the moment, and answers from what it believes of it",
            )
        answer = reply(
            words,
            name,
            description=me.description if me is not None else "",
            lore=lore,
            known=_known(sit, words, _guarded(goals, asker)),
            secrets=secrets,
            traits=parse_traits(document),
            places=place_texts(words, sit.entities),
        )
        return Action(
            kind="say",
            listener=asker,
            line=addressed_to(answer, to) if call else answer,
            reason="asked, and holds nothing that answers it"
            if answer == NO_ANSWER
            else "asked, and answers from what it holds",
        )

    def _answer(self, sit: Situation, goals: list[Goal], asker: str, obj: str) -> Action:
        where = sit.beliefs.where(obj)
        if where is None:
            return Action(
                kind="say",
                listener=asker,
                about=obj,
                line=f"I do not know where the {sit.name(obj)} is",
                reason="asked, and does not know",
            )
        if obj in _guarded(goals, asker):
            # a lie the asker could believe: a container it has not been seen to search
            decoys = [
                b
                for b in sorted(sit.entities)
                if sit.is_container(b)
                and b != where
                and not sit.said(f"{sit.name(asker)} searched the {sit.name(b)}")
            ]
            if decoys:
                return Action(
                    kind="tell",
                    listener=asker,
                    about=obj,
                    claim=decoys[0],
                    reason="asked, and lies to keep it hidden",
                )
            return Action(
                kind="say",
                listener=asker,
                about=obj,
                line=f"I do not know where the {sit.name(obj)} is",
                reason="asked, and keeps what it knows to itself",
            )
        return Action(
            kind="tell",
            listener=asker,
            about=obj,
            claim=where,
            reason="asked, and answers from what it believes",
        )
