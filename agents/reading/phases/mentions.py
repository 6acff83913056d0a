"""Phase 2: mentions — noun phrases, anchored on the story's entities, pronouns resolved by
salience.

A noun phrase is read from a run of tokens: its determiners dropped, it ends before a
preposition's phrase, a participle or a relative clause ("the package containing the
book" → ``package``; "the bag of walnuts" keeps its ``of`` phrase). A phrase names an
entity the story knows when the entity's name is in it, or ends it ("a different
package" → package), or by its plural ("scarves", "the strawberries"). A definite phrase
names the thing named before with its head noun, else the one declared object its head
is a general word for ("the tropical fruit" of a pineapple: WordNet's hypernyms). A noun
of an idea ("the story", "her plan", "his eyes": :func:`.lexicon.idea`) is no thing of
the scene unless the story declared it or brought it in ("found a letter"): a state of
it is none of the world's (:func:`in_scene`).

Pronouns follow centering: he, she and a plural "they" said of a person continue the
subject of the clause before (if a character), else the latest character named; "it" and
"them" the latest thing — an entity the story declared before any other thing. "He" and
"she" agree with the character's pronoun where the story has shown it (learnt by vote
from the sentences that name it alone, :meth:`Resolver.learn`); where neither salient
character agrees, the latest named that does is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.tokens import Token
from fabula.memory.index.general import general_table
from fabula.memory.index.terms import terms
from fabula.memory.records import Entity

_STOP = lx.PREPOSITIONS - {"of"} | lx.SUBORDINATORS | {"that", "which", "who", "where"}
_DEFINITE = frozenset(["the", "this", "that", "these", "those"])
# the determiners that bring a new thing into the story ("a letter", "some bread")
_INDEFINITE = frozenset(["a", "an", "some", "another"])
_CUT = frozenset(["once", "now", "still", "also", "just", "very", "already", "different", "too"])
# the object pronouns of the teller and the one told ("leaving us with"): never a thing
# ("I", "we", "you" may be a doer the story has: a subject is read as it comes)
_SPEAKERS = frozenset(["me", "us", "myself", "ourselves", "yourself", "yourselves"])
# the personal pronouns of a person, by the subject form ("her" is hers too)
_PERSON = {w: "he" for w in ("he", "him", "his", "himself")}
_PERSON |= {w: "she" for w in ("she", "her", "hers", "herself")}


@dataclass(frozen=True)
class Mention:
    """A noun phrase: its tokens, the name it gives, the entity it names (None: none the
    story knows), whether it is a character, whether the story tracks it (an entity it
    declared, a thing it named before, or a pronoun for one). ``doubt``: why a pronoun's
    character is uncertain (another was as salient), for the critic. ``introduced``: the
    phrase, or an earlier one of the same name, brought a new thing in ("a note", "some
    bread"), as a phrase of a thing already there ("the story", "her plan") does not."""

    tokens: tuple[Token, ...]
    name: str
    entity: str | None
    character: bool
    tracked: bool = False
    doubt: str | None = None
    introduced: bool = False

    @property
    def start(self) -> int:
        return self.tokens[0].start

    @property
    def end(self) -> int:
        return self.tokens[-1].end


def phrase(tokens: Sequence[Token]) -> tuple[Token, ...]:
    """The noun phrase at the start of ``tokens``: up to a preposition (other than "of"),
    a participle (an -ing or -ed verb form after a noun), a relative word or a verb."""
    if tokens and tokens[0].lower in lx.PRONOUNS:
        return (tokens[0],)
    first = tokens[0].lower if tokens else ""
    if first in lx.CONJUNCTIONS or (first in _STOP and first not in lx.DETERMINERS):
        return ()  # "and sighed", "while ...": no noun phrase begins there ("that jar" may)
    if first in lx.NEGATIONS and first != "no":
        return ()  # "not see the box" ("no milk" is a phrase)
    if first in ("there", "here") and (len(tokens) == 1 or tokens[1].lower not in lx.COPULAS):
        return ()  # "stood there in disbelief", "the story ends here": an adverb, no thing
    if lx.is_adverb(first):
        return ()  # "sitting innocently inside a suitcase", "neatly stacked": no thing
    if first in _SPEAKERS:
        return ()  # "leaving us with the image": the teller or the reader, no thing
    out: list[Token] = []
    for k, t in enumerate(tokens):
        w = t.lower
        if k and (w in _STOP or w in lx.COPULAS or w in lx.AUXILIARIES or w in lx.CONJUNCTIONS):
            break
        if k and w in lx.PRONOUNS:
            break  # a relative clause without "that": "the map he carries"
        # after a determiner or an owner's name, a verb form modifies the noun that
        # follows ("the aquarium's heating system")
        after_determiner = bool(out) and (
            out[-1].lower in lx.DETERMINERS or out[-1].lower.endswith("'s")
        )
        if k and w.endswith("ly") and not lx.is_adjective(w) and not after_determiner:
            break  # an adverb before the verb: "a dog suddenly barks" ("a carefully
            # raked pattern": after a determiner it is the adjective's)
        manner = bool(out) and out[-1].lower.endswith("ly") and len(out) > 1
        if k and out and lx.verb(w) is not None and not after_determiner and not manner:
            # a verb form after a noun ends the phrase, unless it modifies a noun that
            # follows it ("the sand covered hut" is rare; "the frost cracked the jar" not)
            nxt = tokens[k + 1].lower if k + 1 < len(tokens) else ""
            ends = not nxt or nxt in lx.DETERMINERS or nxt in lx.PREPOSITIONS or nxt in _STOP
            ends = ends or nxt in lx.PRONOUNS or nxt in lx.CONJUNCTIONS
            inflected = w.endswith(("ing", "ed", "s")) or w not in lx.verb_lemmas()
            # a bare form before a determiner is a past tense too ("the frost hit the jar")
            inflected = inflected or (nxt in lx.DETERMINERS and nxt != "that")
            verbal = out[-1].lower != "of" and (ends or not lx.is_adjective(w)) and inflected
            if verbal and (not _modifier(out) or nxt in lx.DETERMINERS):
                break  # before a determiner it is the verb ("an eruption nearby causes the")
        out.append(t)
    return tuple(out)


def _head(name: str) -> str:
    """A phrase's head noun: its last word before an "of" phrase ("bag of walnuts" → bag)."""
    words = name.split()
    return words[words.index("of") - 1] if "of" in words[1:] else words[-1]


def in_scene(mention: Mention) -> bool:
    """Whether a state of ``mention`` is a state of the story's world: a character or a
    thing the story declared, a thing it brought in, any noun that is no idea ("the
    basket", "the wind"); not an idea the story never made a thing ("the story ended",
    "her eyes locked on the jar", "his plan worked"), nor words that are no noun ("sure",
    "however", "the better of"). An attribute said with its thing, or definite, is the
    thing's or the scene's ("the water temperature dropped", "the temperature rose")."""
    words = mention.name.split()
    if mention.entity is not None or mention.character or mention.introduced:
        return True
    if words[-1] == "of":
        return False
    head = _head(mention.name)
    if not lx.is_noun(head):
        head = words[-1]  # a part of a whole: "most of the honey" names the honey
    kinds = lx.idea(head)
    if kinds[:1] == ("attribute",) and (len(words) > 1 or mention.tokens[0].lower in _DEFINITE):
        # a thing's attribute, or the scene's: "the water temperature", "the colors of the
        # paint", "the temperature dropped" (not a character's own: "made his way")
        return True
    return lx.is_noun(head) and not kinds


def _modifier(out: Sequence[Token]) -> bool:
    """Whether ``out`` ends on an adjective that modifies a noun still to come: an
    adjective is never a phrase's head ("his tired eyes" → eyes, not "tired"). A word
    that is also a noun ("the light", "the wet") may be the head; a participle used as
    an adjective ("tired", "broken") may not."""
    last = out[-1].lower
    if last in lx.DETERMINERS or not lx.is_adjective(last) or out[-1].capital:
        return False
    return lx.derived_verb(last) is None or last.endswith(("ed", "en"))


@dataclass(frozen=True)
class _Names:
    """The story's entity names, indexed by their first and last words, so that a mention
    is matched against the few names that share a word with it, not the whole cast (a
    town holds a thousand): each entry is ``(sid, name, its words, a character?)``, in
    the story's order."""

    entries: list[tuple[str, str, tuple[str, ...], bool]]
    first: dict[str, list[int]]
    last: dict[str, list[int]]

    @classmethod
    def of(cls, entities: Mapping[str, Entity]) -> _Names:
        entries: list[tuple[str, str, tuple[str, ...], bool]] = []
        first: dict[str, list[int]] = {}
        last: dict[str, list[int]] = {}
        for sid, entity in entities.items():
            name = (entity.name or sid).lower()
            parts = tuple(name.split())
            if not parts:
                continue
            first.setdefault(parts[0], []).append(len(entries))
            last.setdefault(parts[-1], []).append(len(entries))
            entries.append((sid, name, parts, entity.kind == "character"))
        return cls(entries, first, last)

    def sharing(self, words: Sequence[str], ends: bool = False) -> list[int]:
        """The entries whose first word is one of ``words`` (``ends``: or whose last word
        is the last of ``words``), in the story's order."""
        found = {k for w in set(words) for k in self.first.get(w, ())}
        if ends and words:
            found.update(self.last.get(words[-1], ()))
        return sorted(found)


@dataclass
class Resolver:
    """Anchors mentions on ``entities`` and resolves pronouns, clause by clause."""

    entities: Mapping[str, Entity]
    last_subject: Mention | None = None
    last_character: Mention | None = None
    things: list[Mention] = field(default_factory=list)
    people: list[Mention] = field(default_factory=list)  # the characters named, latest last
    group: tuple[Mention, ...] = ()  # the characters last joined by "and" ("they both")
    # each character's pronoun, learnt from the sentences that name it alone (:meth:`learn`)
    genders: dict[str, str] = field(default_factory=dict)
    _votes: dict[str, dict[str, int]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _index: _Names | None = field(default=None, init=False, repr=False, compare=False)
    # each general word (:meth:`_general`) -> the declared objects of that kind
    _kinds: dict[str, list[str]] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def _names(self) -> _Names:
        if self._index is None:
            self._index = _Names.of(self.entities)
        return self._index

    def _entity(self, words: Sequence[str]) -> tuple[str | None, bool]:
        joined = " ".join(words)
        best: tuple[int, str, bool] | None = None
        names = self._names
        for k in names.sharing(words, ends=True):
            sid, name, parts, character = names.entries[k]
            hit = f" {name} " in f" {joined} " or (words and words[-1] == parts[-1])
            if character:
                hit = hit or parts[0] in words
            if hit and (best is None or len(parts) > best[0]):
                best = (len(parts), sid, character)
        return (best[1], best[2]) if best else (None, False)

    def mention(self, tokens: Sequence[Token]) -> Mention | None:
        """The mention ``tokens`` begin with (a pronoun resolved), or None."""
        np = self._declared(tokens) or phrase(tokens)
        if not np:
            return None
        first = np[0].lower
        if first in lx.PRONOUNS and len(np) == 1:
            return self._pronoun(np[0])
        words = [t.lower for t in np if t.lower not in lx.DETERMINERS and t.lower not in _CUT]
        if len(words) > 1 and words[0] == "of" and first in lx.DETERMINERS:
            words = words[1:]  # a part of a whole names the whole: "one of the strings"
        if not words:
            return None
        sid, character = self._entity(words)
        if sid is None:
            sid = self._plural(words)  # "scarves", "the strawberries": the declared thing
        name = " ".join(words)
        if sid is not None:
            name = self.entities[sid].name or sid
            name = name if character else name.lower()
        elif first in _DEFINITE:
            # a definite phrase names the thing named before with the same head noun:
            # "a small stream ... the stream" is one stream
            before = next((m for m in reversed(self.things) if _head(m.name) == words[-1]), None)
            if before is not None:
                return Mention(np, before.name, before.entity, False, True, None, before.introduced)
            sid = self._general(words[-1])  # "the tropical fruit": the one fruit declared
            if sid is not None:
                return Mention(np, (self.entities[sid].name or sid).lower(), sid, False, True)
        tracked = sid is not None or any(m.name == name for m in self.things)
        introduced = first in _INDEFINITE or any(
            m.name == name and m.introduced for m in self.things
        )
        return Mention(np, name, sid, character, tracked, introduced=introduced)

    def _plural(self, words: Sequence[str]) -> str | None:
        """The declared thing (no character) a phrase names by its plural ("scarves",
        "the strawberries", "boxes"), or None."""
        word = words[-1]
        forms = [word[:-3] + "f", word[:-3] + "fe"] if word.endswith("ves") else []
        forms += [word[:-3] + "y"] if word.endswith("ies") else []  # "strawberries"
        for form in (*forms, lx.singular(word)):
            if form != word:
                sid, character = self._entity([*words[:-1], form])
                if sid is not None and not character:
                    return sid
        return None

    def _general(self, head: str) -> str | None:
        """The one declared object whose name's last word has ``head`` among its general
        words (WordNet's hypernyms, :func:`.general_table`: "fruit" of a pineapple,
        "garment" of a sweater), or None where no object, or more than one, is of it."""
        if self._kinds is None:
            table = general_table()
            kinds: dict[str, list[str]] = {}
            for sid, entity in self.entities.items():
                if entity.kind == "object":
                    for t in terms((entity.name or sid).split()[-1]):
                        for general in table.get(t, ()):
                            kinds.setdefault(general, []).append(sid)
            self._kinds = {g: sorted(set(sids)) for g, sids in kinds.items()}
        found = terms(lx.singular(head))
        sids = self._kinds.get(found[0], []) if len(found) == 1 else []
        return sids[0] if len(sids) == 1 else None

    def _declared(self, tokens: Sequence[Token]) -> tuple[Token, ...]:
        """The tokens up to the end of a declared entity's name at their start (after
        determiners and modifiers: "the once healthy coral formation"), or ()."""
        words = [t.lower for t in tokens[:8]]
        best: tuple[Token, ...] = ()
        names = self._names
        for n in names.sharing(words):
            parts = list(names.entries[n][2])
            if names.entries[n][3] and words[0] == parts[0] and tokens[0].capital and not best:
                # a character by its first name ("Mira adored scarves" of Mira Holt): the
                # name ends the phrase, never an adjective-like verb after it
                best = tuple(tokens[:1])
            for k in range(len(words) - len(parts) + 1):
                if words[k : k + len(parts)] == parts:
                    modifiers = all(
                        w in lx.DETERMINERS or w in _CUT or lx.is_adjective(w) for w in words[:k]
                    )
                    if modifiers and k + len(parts) > len(best):
                        best = tuple(tokens[: k + len(parts)])
                    break
        return best

    def _pronoun(self, token: Token) -> Mention | None:
        kind = lx.PRONOUNS[token.lower]
        if kind in ("he", "she") or (kind == "they" and token.lower == "they" and not self.things):
            person = (
                self.last_subject if self.last_subject and self.last_subject.character else None
            )
            person = person or self.last_character
            other = self.last_character
            if kind in ("he", "she"):
                # a pronoun agrees with its character's, where the story has shown it: one
                # known to agree first, then one whose pronoun is not known yet
                fits = [m for m in (person, other) if m is not None and self._agrees(m, kind)]
                fits.sort(key=lambda m: self.genders.get(m.entity or "") != kind)
                person = fits[0] if fits else self._latest_known(kind)
                other = fits[-1] if fits else None
            if person is None:
                return None
            doubt = None
            if other is not None and other.name != person.name:
                # centering: a pronoun continues the clause before's subject (of those it
                # agrees with); the character named after it was as near, and the text
                # does not say which
                subject = self.last_subject
                why = (
                    "whom the clause before was about"
                    if subject is not None and subject.name == person.name
                    else f'whose pronoun is "{token.lower}"'
                )
                doubt = f'"{token.text}" read as {person.name}, {why}; it may be {other.name}'
            return Mention((token,), person.name, person.entity, True, True, doubt)
        declared = [m for m in self.things if m.entity is not None]
        candidates = declared or self.things
        if not candidates:
            return None
        thing = candidates[-1]
        return Mention((token,), thing.name, thing.entity, False, True)

    def _latest_known(self, kind: str) -> Mention | None:
        """Where neither salient character agrees with ``kind`` ("Ann met Cal. Cal waved.
        He …" once Cal is known as she): the latest character named whose pronoun is
        known to be ``kind``, or None."""
        return next(
            (m for m in reversed(self.people) if self.genders.get(m.entity or "") == kind), None
        )

    def _agrees(self, person: Mention, kind: str) -> bool:
        """Whether ``person`` may be called ``kind`` ("he", "she"): its pronoun as learnt,
        or any where none was."""
        known = self.genders.get(person.entity or "")
        return known is None or known == kind

    def learn(self, tokens: Sequence[Token]) -> None:
        """Learn a character's pronoun from a sentence that names that character alone and,
        after the name, uses one personal pronoun of one person ("Ann smiled; she took her
        coat": she). A pronoun before the name stands for another ("Little did he know
        that Ann was there", "To her surprise, Bo walked in"), and so does the same
        pronoun after it. Each such sentence is a vote; the most voted is the character's
        (a tie: the one learnt first)."""
        named: dict[str, int] = {}
        for k, t in enumerate(tokens):
            if t.capital and t.lower.endswith("'s"):
                m = self.owner(tokens[: k + 1])  # "witnessed Simon's act": Simon is named
            elif t.capital and t.lower in self._names.first:
                m = self.mention(tokens[k:])
            else:
                continue
            if m is not None and m.character and m.entity:
                named.setdefault(m.entity, k)
        if len(named) != 1:
            return
        [(who, at)] = named.items()
        before = {_PERSON[t.lower] for t in tokens[:at] if t.lower in _PERSON}
        kinds = {_PERSON[t.lower] for t in tokens[at:] if t.lower in _PERSON} - before
        if len(kinds) == 1:
            votes = self._votes.setdefault(who, {})
            kind = kinds.pop()
            votes[kind] = votes.get(kind, 0) + 1
            self.genders[who] = max(votes, key=votes.__getitem__)

    def note_named(self, tokens: Sequence[Token]) -> None:
        """A character named after a clause's verb ("waved to Mara") is as salient for the
        next pronoun as the clause's subject: a "she" after it may be either."""
        for k, t in enumerate(tokens[1:], 1):
            if t.capital:
                found = self.mention(tokens[k:])
                if found is not None and found.character:
                    self.note(found, subject=False)
                    return

    def owner(self, tokens: Sequence[Token]) -> Mention | None:
        """The character whose possessive name ends ``tokens`` ("Elliot's", "Mira Holt's"),
        or None: the name is read without its "'s", from its last word back."""
        last = tokens[-1] if tokens else None
        if last is None or not last.lower.endswith("'s"):
            return None
        bare = Token(last.text[:-2], last.start, last.end - 2)
        for k in range(len(tokens) - 1, max(-1, len(tokens) - 4), -1):
            name = (*tokens[k:-1], bare)
            found = self.mention(name)
            if found is not None and found.character and len(found.tokens) == len(name):
                return found
        return None

    def note_owner(self, mention: Mention) -> None:
        """Make the character a thing's phrase names as its owner salient ("Elliot's
        nature kicked in, fueled by his dislike": "his" is Elliot's)."""
        for k, t in enumerate(mention.tokens[:3]):
            if t.lower.endswith("'s"):
                owner = self.owner(mention.tokens[: k + 1])
                if owner is not None:
                    self.note(owner, subject=False)
                return

    def note_things(self, tokens: Sequence[Token]) -> None:
        """Make each declared thing ``tokens`` name salient, in order ("had different
        opinions about boots. Ricardo loathed them": "them" names the boots)."""
        names = self._names
        k = 0
        while k < len(tokens):
            low = tokens[k].lower
            if low not in names.first and low not in names.last:
                k += 1
                continue
            found = self.mention(tokens[k:])
            if found is None or found.entity is None or found.character:
                k += 1
                continue
            self.note(found, subject=False)
            k += len(found.tokens)

    def note(self, mention: Mention, subject: bool) -> None:
        """Make ``mention`` salient (as the clause's subject, or another mention)."""
        if subject:
            self.last_subject = mention
        if mention.character:
            self.last_character = mention
            self.people = [m for m in self.people if m.name != mention.name] + [mention]
        elif mention.tokens[0].lower not in lx.PRONOUNS:
            self.things = [m for m in self.things if m.name != mention.name] + [mention]
