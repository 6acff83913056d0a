"""A mental state of phase 3: a character's liking or disliking of a thing, as a ``feel`` frame.

Said with a verb ("Mira adored scarves", "he hated it", "Bo did not like the lamp": a
negation turns the feeling over), or with a noun ("Bo had a fondness for plums", "Ann's
deep dislike of the scarf"), whose holder is the owner before it, else the clause's
character subject. A feeling may be a group's: characters joined by "and" ("Ann and Bo
shared a common love for plums"), or "they" / "both" after such a group ("Ann and Bo met;
they both despised pineapple"). "The same hatred" (or "sentiment") is the feeling said
before ("Bo shared the same hatred": Bo's too). Which verbs and nouns are feelings is
WordNet's: the verb table's ``like`` and ``dislike`` classes
(:mod:`fabula.agents.reading.verbs`), and a noun whose general words are a feeling's
(:func:`sign_of_noun`).

A feeling known or seen is stated ("Ana knew how much Bo hated the lamp": Bo's, by
:func:`known`, after a verb of :data:`.lexicon.FACTIVE` or of perceiving). No feeling is
read that the story does not state: not one another is believed to have
("Believing that Ana despised the lamp", "Bo assumed Ana loved it": the believer's view),
nor one under a modal or a negation of the clause ("hoped that Ana would love the lamp";
for a noun, "had no fondness for it" is left unread), nor "the taste of pineapple" (a
property of the thing).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.mentions import Mention, Resolver
from fabula.agents.reading.phases.readings import Feeling, Frame
from fabula.agents.reading.phases.tokens import Token
from fabula.agents.reading.verbs import verb_classes
from fabula.memory.index.general import general_table
from fabula.memory.index.terms import terms

# the verbs of a feeling said strongly: "loves", "hates" rather than "likes", "dislikes"
_STRONG = frozenset(["love", "adore", "hate", "despise", "detest", "loathe", "abhor"])
# the words after a feeling noun that name what it is about ("a fondness for plums")
_ABOUT = frozenset(["for", "of", "towards", "toward", "to"])
# modals: a feeling under one is not stated ("would love it")
MODALS = frozenset(["would", "could", "might", "should", "may", "will", "can", "must"])
# stems of liking and disliking, and of feeling in general, as WordNet's general words
# give them (:mod:`fabula.memory.index.general`)
_LIKING = frozenset(["like", "love", "fond", "ador", "admir", "penchant"])
_DISLIKING = frozenset(["dislik", "hate", "hatr", "loath", "detest", "disgust", "avers"])
# the words that say a group's members each hold what follows ("they both", "the two")
_GROUP = frozenset(["they", "both", "two", "the", "each", "all"])
# what "in her …" names as a view, not a place ("in her mind", "in his opinion")
_VIEW = frozenset(["mind", "view", "opinion", "imagination", "head", "estimation"])
# words between a subject and its verb that do not change what the verb says
_BETWEEN = frozenset(["both", "all", "each", "also", "always", "had", "have", "did", "do"])


def in_mind(tokens: Sequence[Token]) -> bool:
    """Whether a sentence tells someone's view ("In her mind, Bryan shared her love for
    it", "in Ann's opinion"): a feeling there is the viewer's belief, not the story's."""
    for k in range(len(tokens) - 2):
        owner = tokens[k + 1].lower
        owned = owner in lx.POSSESSIVES or owner.endswith("'s")
        if tokens[k].lower == "in" and owned and tokens[k + 2].lower in _VIEW:
            return True
    return False


def word_for(liked: bool, strong: bool) -> str:
    """The feeling's verb as the story's ``feel`` action holds it."""
    return ("loves" if strong else "likes") if liked else ("hates" if strong else "dislikes")


def verb_sign(word: str) -> tuple[bool, bool] | None:
    """Whether a verb form is one of liking (True) or disliking (False), and whether it
    says so strongly; None for any other verb. The verb table's first class decides
    ("adored": liking, strongly; "resented": disliking)."""
    found = verb_classes(word)
    if found is None:
        return None
    classes, lemma = found
    if classes[0] not in ("like", "dislike"):
        return None
    return classes[0] == "like", lemma in _STRONG


@functools.lru_cache(maxsize=1 << 14)
def _general(low: str) -> tuple[str, frozenset[str]] | None:
    """A noun's stem, and WordNet's general words for it with the stem; None for a word
    of no one stem."""
    stems = terms(low)
    if len(stems) != 1:
        return None
    return stems[0], frozenset([stems[0], *general_table().get(stems[0], ())])


def _feeling_noun(low: str) -> bool:
    """Whether a noun names a feeling of any kind ("sentiment", "hatred")."""
    found = _general(low)
    return found is not None and bool(found[1] & {"feel", "emot"})


def sign_of_noun(low: str) -> bool | None:
    """Whether a noun is a kind of liking (True) or of disliking (False), by its stem and
    WordNet's general words for it; None for any other word."""
    found = _general(low)
    if found is None:
        return None
    stem, general = found
    if not general & {"feel", "emot"} and stem not in _LIKING | _DISLIKING:
        return None
    if general & _DISLIKING:
        return False
    if general & _LIKING:
        return True
    return None


def believed_before(tokens: Sequence[Token], at: int) -> bool:
    """Whether a verb of believing comes before token ``at`` of a clause ("Assuming that
    Bo had a fondness for it"): what follows is the believer's view."""
    for t in tokens[:at]:
        found = verb_classes(t.lower)
        if found is not None and found[0][:1] == ("believe",):
            return True
    return False


def felt_object(r: Resolver, tokens: Sequence[Token]) -> Mention | None:
    """The thing a feeling is about, among the first words of ``tokens`` ("adored the
    plum", "hated it", "despised scarves"): a thing of the story, no character."""
    for k in range(min(len(tokens), 4)):
        if tokens[k].lower in (",", "and", "but", "that"):
            return None
        found = r.mention(tokens[k:])  # "adored scarves": the scarf (:meth:`.Resolver.mention`)
        if found is not None and found.entity is not None and not found.character:
            return found
        if found is not None and found.character:
            return None
    return None


def felt(frame: Frame, r: Resolver, head: str, after: Sequence[Token]) -> bool:
    """Read a character's clause whose verb ``head`` is one of feeling into ``frame``, a
    ``feel`` frame of its object (True); False where ``head`` is no such verb or it has
    no thing of the story for object. Under a modal it says nothing ("would love it")."""
    sign = verb_sign(head)
    if sign is None or frame.holder is None:
        return False
    if frame.modal:
        return True  # "hoping they would like it": no feeling the story states
    thing = felt_object(r, after)
    if thing is None:
        return False
    r.note(thing, subject=False)
    frame.kind = "feel"
    frame.felt = Feeling((frame.holder,), thing, word_for(sign[0] != frame.negated, sign[1]))
    return True


def known(r: Resolver, clause: Frame, tokens: Sequence[Token]) -> list[Frame]:
    """A feeling told as a fact in the clause ``tokens`` after a verb of knowing or
    perceiving (:data:`.lexicon.FACTIVE`: "knew that Bo hated the lamp", "saw how much Bo
    loved it"), as a ``feel`` frame of the feeler's; none where the knowing ``clause`` is
    denied or under a modal."""
    if clause.negated or clause.modal:
        return []
    k = 1 if tokens and tokens[0].lower in ("much", "deeply", "dearly") else 0
    feeler = r.mention(tokens[k:])
    if feeler is None or not feeler.character or len(tokens) <= k + len(feeler.tokens):
        return []
    after = tokens[k + len(feeler.tokens) :]
    told = Frame("event", clause.sentence, clause.start, clause.end)
    told.holder = feeler
    found = felt(told, r, after[0].lower, after[1:]) and told.kind == "feel"
    return [told] if found else []


def noun_frames(
    r: Resolver,
    clause: Frame,
    tokens: Sequence[Token],
    subject: Mention | None,
    latest: Feeling | None = None,
) -> list[Frame]:
    """The ``feel`` frames of the feelings said as nouns in the clause ``clause`` read from
    ``tokens`` (:func:`feeling_nouns`, ``latest`` the feeling said before): the owner's,
    else the character subject's."""
    out = []
    holder = (subject,) if subject is not None and subject.character else ()
    for owners, thing, word in feeling_nouns(r, tokens, latest):
        who = owners or holder
        if who:
            out.append(_frame(clause, Feeling(who, thing, word)))
            r.note(thing, subject=False)  # "It was in a box." next: the thing liked
    return out


def group_frames(r: Resolver, clause: Frame, tokens: Sequence[Token]) -> list[Frame] | None:
    """A group's feeling ("Ann and Bo despised pineapple", "they both shared a love for
    plums"), as one ``feel`` frame per feeling, or None where the clause is no group's or
    states no feeling. Characters joined by "and" at a clause's start are noted as the
    group a "they" or "both" of a later clause names."""
    members, k = conjoined(r, tokens)
    if members:
        r.group = members
    elif tokens and tokens[0].lower in ("they", "both") and len(r.group) > 1:
        members = r.group
        while k < len(tokens) and tokens[k].lower in _GROUP:
            k += 1
    else:
        return None
    rest = tokens[k:]
    if believed_before(tokens, len(tokens)):
        return None
    j, negated = 0, False
    while j < len(rest) and (rest[j].lower in _BETWEEN or rest[j].lower in lx.NEGATIONS):
        negated = negated or rest[j].lower in lx.NEGATIONS
        j += 1
    if j < len(rest) and (rest[j].lower in MODALS or rest[j].lower.endswith("n't")):
        return None
    sign = verb_sign(rest[j].lower) if j < len(rest) else None
    if sign is not None:
        thing = felt_object(r, rest[j + 1 :])
        if thing is None:
            return None
        word = word_for(sign[0] != negated, sign[1])
        return [_frame(clause, Feeling(members, thing, word))]
    if negated:
        return None
    found = [_frame(clause, Feeling(members, t, w)) for _, t, w in feeling_nouns(r, rest)]
    return found or None


def conjoined(r: Resolver, tokens: Sequence[Token]) -> tuple[tuple[Mention, ...], int]:
    """The characters joined by "and" at the start of ``tokens`` ("Ann and Bo", "Both
    Ann and Bo") and the index after them; ``((), 0)`` for fewer than two."""
    k = 1 if tokens and tokens[0].lower == "both" else 0
    if not any(t.lower == "and" for t in tokens[k + 1 : k + 5]):
        return (), 0  # no "and" near the start: no group (most clauses, asked cheaply)
    out: list[Mention] = []
    while k < len(tokens):
        m = r.mention(tokens[k:]) if tokens[k].capital else None
        if m is None or not m.character or m.entity is None:
            break
        out.append(m)
        k += len(m.tokens)
        if k + 1 < len(tokens) and tokens[k].lower == "and" and tokens[k + 1].capital:
            k += 1
            continue
        break
    return (tuple(out), k) if len(out) > 1 else ((), 0)


def feeling_nouns(
    r: Resolver, tokens: Sequence[Token], latest: Feeling | None = None
) -> list[tuple[tuple[Mention, ...], Mention, str]]:
    """Each feeling said as a noun in a clause's ``tokens``: (its owners, if said, the
    thing, the verb). The noun has a determiner or an owner within three words before it
    (no "took care of") and "for", "of", "towards" or "to" after it, not "the … of" ("the
    taste of it"), with no negation or modal before it in the clause; or "same" before it
    and no such word after ("Cal shared the same hatred", "the same sentiment"): the
    feeling ``latest``, the one said before, is the holder's too."""
    out: list[tuple[tuple[Mention, ...], Mention, str]] = []
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1].lower if i + 1 < len(tokens) else ""
        same = i > 1 and tokens[i - 1].lower == "same" and nxt not in _ABOUT
        if nxt not in _ABOUT and not same:
            continue
        before = tokens[max(0, i - 3) : i]
        if not any(t.lower in lx.DETERMINERS or t.lower.endswith("'s") for t in before):
            continue
        if nxt == "of" and i and tokens[i - 1].lower == "the":
            continue
        sign = sign_of_noun(tok.lower)
        if (sign is None and not (same and _feeling_noun(tok.lower))) or believed_before(tokens, i):
            continue
        if any(t.lower in lx.NEGATIONS or t.lower in MODALS for t in tokens[:i]):
            continue
        if same and latest is not None:
            # "shared the same hatred", "the same sentiment": the feeling said before
            out.append((_owners(r, tokens, i), latest.thing, latest.word))
            continue
        thing = None if same else felt_object(r, tokens[i + 2 :])
        if thing is not None and sign is not None:
            out.append((_owners(r, tokens, i), thing, word_for(sign, False)))
    return out


def _frame(clause: Frame, feeling: Feeling) -> Frame:
    frame = Frame("feel", clause.sentence, clause.start, clause.end)
    frame.felt = feeling
    return frame


def _owners(r: Resolver, tokens: Sequence[Token], i: int) -> tuple[Mention, ...]:
    """The characters whose feeling the noun at ``i`` is, said right before it: a name's
    possessive ("Mira Holt's deep dislike"), "his"/"her", or "their" of the group last
    named ("Ann and Bo met; their love for plums"); () where none is said."""
    for j in range(i - 1, max(-1, i - 4), -1):
        low = tokens[j].lower
        if low in ("his", "her"):
            # a possessive pronoun for the salient character; where another was as
            # salient (:attr:`.Mention.doubt`), no feeling is read: it may be theirs
            pronoun = tokens[j]
            found = r.mention((Token("he" if low == "his" else "she", pronoun.start, pronoun.end),))
            return (found,) if found is not None and found.character and not found.doubt else ()
        if low.endswith("'s"):
            found = r.owner(tokens[: j + 1])
            return (found,) if found is not None else ()
        if low == "their":
            return r.group
        if low in ("its", "a", "an", "the", "for", "with"):
            return ()
    return ()
