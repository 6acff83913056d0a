"""What a card's texts say, read from the shapes community cards are written in.

A card's description, its example dialogues and its lore entries are rarely prose. They
are written for a model to read, in a few shapes the community shares:

==================  ======================================================================
shape               looks like
==================  ======================================================================
W++                 ``[character("Flux") { Species("cat") Personality("smart" + "cool") }]``
W++ (lines)         ``[Seraphina's Personality= "caring", "protective"]``
PList               ``[Mara: baker, cheerful; Mara's clothes: apron, blue scarf]``
Ali:Chat            ``User: "What are your powers?"`` then ``Seraphina: *She smiles.* "…"``,
                    examples apart by ``<START>`` (in ``mes_example``, in the description,
                    in a lore entry)
labelled lines      ``Likes: fish, sunlight`` (a short label, then a list)
instructions        ``You are Vey, a smuggler.`` / ``Never speak for User.`` (to a model)
==================  ======================================================================

:func:`read_card_text` reads a text (its macros already resolved: ``{{char}}`` is the
character's name, ``{{user}}`` the user's) into :class:`CardText`: traits (a category and
its values), exchanges (what was said to the character, and its reply as the card's author
wrote it, ``*actions*`` kept), prose (the plain sentences about it: "You are Vey, a
smuggler" becomes "Vey is a smuggler") and the instructions to a model, set apart. Nothing
of the markup reaches the prose.

:func:`trait_sentences` says traits in the first person ("I am caring and protective.",
"I wear a black sundress."); :func:`speech_of` splits a reply into what the character
does and what it says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Trait:
    """A category of a character and its values, as its card lists them ("personality":
    "caring", "protective"); ``persona`` for a PList's bare list (``[Mara: baker, shy]``)."""

    category: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Exchange:
    """One example exchange: what someone (``asker``, as written) said to the character,
    and the character's ``reply`` as the card's author wrote it (``*actions*`` and quoted
    speech kept). ``prompt`` is "" where the character speaks first."""

    prompt: str
    reply: str
    asker: str = ""


@dataclass(frozen=True)
class CardText:
    """A card's text, read (see the module docstring)."""

    traits: tuple[Trait, ...] = ()
    exchanges: tuple[Exchange, ...] = ()
    prose: str = ""
    instructions: tuple[str, ...] = ()
    examples: tuple[str, ...] = field(default=())
    """The example blocks as written (``Name: …`` turns), one per ``<START>`` section:
    what a card's voice keeps of them."""
    headers: tuple[str, ...] = field(default=())
    """The headers of labelled records (``Falko·Weiss: friend, alumni.`` of
    ``Falko·Weiss: friend, alumni. Falko and Lacia have been friends…``): what a record
    is filed under, not what it says; its text is the prose."""


PERSONA = "persona"
"""The category of a PList's bare list (``[Mara: baker, shy]``)."""

_START = re.compile(r"<START>", re.IGNORECASE)
_WPP = re.compile(r"\[?\s*character\s*\(\s*\"?([^\")]*)\"?\s*\)\s*\{(.*?)\}\s*\]?", re.S | re.I)
_WPP_FIELD = re.compile(r"([A-Za-z][\w' -]*?)\s*\(([^()]*)\)")
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_TURN = re.compile(r"^\s*([^\s:*\"“][^:*\"“\n]{0,40}?):\s*(.*)$")
_LABEL = re.compile(r"^\s*([A-Za-z][\w' -]{0,40}?)\s*[=:]\s*(.+)$")
_USERS = frozenset({"user", "you", "anon", "human", "{{user}}", "<user>"})
_MODEL_WORDS = re.compile(
    r"\b(?:roleplay|role-play|role play|the AI|the assistant|the model|OOC|narrator|"
    r"responses?|replies|messages?|paragraphs?|third person|first person|second person|"
    r"in character|the chat|the story|the user|AI)\b",
    re.IGNORECASE,
)
_ORDERS = re.compile(
    r"^(?:never|always|do not|don't|avoid|write|stay|keep|use|describe|respond|reply|"
    r"remember|only|must|act|play|continue|narrate|speak|make|ensure|refrain|be|"
    r"include|portray|focus|note)\b",
    re.IGNORECASE,
)
_MODAL = re.compile(
    r"\b(?:will|must|should|shall|can|cannot|can't)\s+(?:not\s+|never\s+|always\s+)?"
    r"(?:speak|act|write|describe|narrate|respond|reply|talk|control|decide|impersonate)\b",
    re.IGNORECASE,
)


def _values(raw: str) -> tuple[str, ...]:
    """The values of a list (``"a", "b"``, ``"a" + "b"``, ``a, b``), quotes dropped."""
    parts = re.split(r"\s*(?:\+|,|/)\s*", raw)
    out = (p.strip().strip("\"'“”").strip() for p in parts)
    return tuple(v for v in out if v)


def _category(label: str, names: Sequence[str]) -> str:
    """The category a label names: ``Seraphina's Personality`` → personality, the
    character's own name → :data:`PERSONA`."""
    label = " ".join(label.split()).strip()
    for name in names:
        for own in (f"{name}'s ", f"{name}’s "):
            if label.casefold().startswith(own.casefold()):
                return label[len(own) :].strip().casefold()
        if label.casefold() in (name.casefold(), name.split(" ")[0].casefold()):
            return PERSONA
    return label.casefold()


def traits_of(body: str, names: Sequence[str]) -> list[Trait]:
    """The traits a bracket's body lists: its parts (apart by ``;`` or new lines), each
    ``label= values`` or ``label: values``; a part that is no list is none."""
    out = []
    for part in re.split(r"[;\n]", body):
        m = _LABEL.match(part)
        if m is None:
            continue
        values = _values(m[2])
        if values:
            out.append(Trait(_category(m[1], names), values))
    return out


def _wpp(text: str, names: Sequence[str]) -> tuple[list[Trait], str]:
    """The W++ blocks of ``text`` as traits, and the text without them."""
    traits: list[Trait] = []

    def take(m: re.Match[str]) -> str:
        for f in _WPP_FIELD.finditer(m[2]):
            values = _values(f[2])
            if values:
                traits.append(Trait(_category(f[1], names), values))
        return "\n"

    return traits, _WPP.sub(take, text)


def _brackets(text: str, names: Sequence[str]) -> tuple[list[Trait], list[str], str]:
    """The bracketed lists of ``text`` as traits (a bracket that lists nothing is an
    instruction: ``[Write in third person.]``), and the text without them."""
    traits: list[Trait] = []
    notes: list[str] = []

    def take(m: re.Match[str]) -> str:
        found = traits_of(m[1], names)
        if found:
            traits.extend(found)
        elif m[1].strip():
            notes.append(" ".join(m[1].split()))
        return "\n"

    return traits, notes, _BRACKET.sub(take, text)


def _speaker(label: str, me: Sequence[str]) -> str | None:
    """Who a turn's label names: "me" for the character, the label for someone else, None
    when the label is no speaker (a label of more than four words, a list's label)."""
    said = label.strip().casefold()
    if any(said == n.casefold() or said == n.split(" ")[0].casefold() for n in me if n):
        return "me"
    if said in _USERS or (len(said.split()) <= 3 and said[:1].isalpha()):
        return label.strip()
    return None


def _dialogue(block: str, me: Sequence[str], users: Sequence[str]) -> list[tuple[str, str]] | None:
    """The turns of an example block ((speaker, words); "me" for the character), or None
    when it is no dialogue (no turn of the character's, or none of anyone else's)."""
    turns: list[tuple[str, str]] = []
    others = {u.casefold() for u in users} | _USERS
    for line in block.splitlines():
        m = _TURN.match(line)
        who = _speaker(m[1], me) if m is not None else None
        if m is not None and who is not None and (who == "me" or who.casefold() in others):
            turns.append((who, m[2].strip()))
        elif m is not None and who is not None and turns:
            turns.append((who, m[2].strip()))  # a third speaker, once a dialogue is under way
        elif turns and line.strip():
            speaker, words = turns[-1]
            turns[-1] = (speaker, f"{words}\n{line.strip()}")
        elif line.strip():
            return None  # prose before any turn: not a dialogue
    if not any(w == "me" for w, _ in turns):
        return None
    return turns


def _exchanges(turns: list[tuple[str, str]]) -> list[Exchange]:
    out = []
    prompt: list[str] = []
    asker = ""
    for who, words in turns:
        if who == "me":
            out.append(Exchange(" ".join(prompt), words, asker))
            prompt, asker = [], ""
        else:
            prompt.append(words)
            asker = asker or who
    return out


def _blocks(text: str) -> list[str]:
    """``text`` in its parts: apart at ``<START>``, and a part's dialogue apart from the
    prose before it (a description that ends in an Ali:Chat example)."""
    out: list[str] = []
    for part in _START.split(text):
        out.extend(b for b in re.split(r"\n\s*\n", part) if b.strip())
    return out


def _sentences(text: str) -> list[str]:
    flat = " ".join(text.replace("*", "").split())
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"“])", flat) if s.strip()]


def _yours(sentence: str, me: str) -> str:
    """A sentence said to the character, of it: "your crew" is its crew."""
    return re.sub(r"\b[Yy]our\b", f"{me}'s", sentence)


def _prose(sentence: str, me: str) -> str | None:
    """A sentence as prose about the character (second person to it made third: "You are
    Vey, a smuggler." → "Vey is a smuggler."), or None for an instruction to a model."""
    m = re.match(rf"^You are (?:{re.escape(me)}\b,?\s*)?(.+)$", sentence)
    if m is not None and not _MODEL_WORDS.search(sentence):
        return _yours(f"{me} is {m[1]}", me)
    m = re.match(r"^Your (.+)$", sentence)
    if m is not None and not _MODEL_WORDS.search(sentence):
        return _yours(f"{me}'s {m[1]}", me)
    if re.match(r"^You\b", sentence) or _ORDERS.match(sentence):
        return None
    if _MODAL.search(sentence) or _MODEL_WORDS.search(sentence):
        return None
    return sentence


# a record's header: a name of capitalised words (joined by spaces or an interpunct), a
# colon, then its text ("Falko·Weiss: friend, alumni. Falko and Lacia have been …")
_RECORD = re.compile(
    r"^\s*(?P<label>[A-Z][\w'’-]*(?:[ ·][A-Z][\w'’-]*){0,3})\s*:\s+(?P<text>\S.*)$"
)


def _record(line: str) -> tuple[str, str] | None:
    """A labelled record's header and its text: the label, with the bare list that
    follows it as its first sentence ("friend, alumni."), is the header; None for a line
    that is no such record."""
    m = _RECORD.match(line)
    if m is None or not re.search(r"[.!?](?:\s|$)", m["text"]):
        return None  # "Name: Flux", "Age: 25": a field, not a record with a text
    text = m["text"]
    first = re.match(r"^(?P<list>[^.!?]+)[.!?]\s+(?P<rest>\S.*)$", text)
    if first is not None and _is_list(m["label"], first["list"]):
        return f"{m['label']}: {first['list']}.", first["rest"]
    return f"{m['label']}:", text


def _is_list(label: str, values: str) -> bool:
    """Whether a labelled line outside brackets is a list ("Likes: fish, sunlight"), not
    a sentence after a label ("Sera's powers: a bond with birds, who warn her. Her …")."""
    if len(label.split()) > 3 or "," not in values or re.search(r"[.!?](?:\s|$)", values):
        return False
    return all(len(v.split()) <= 4 for v in _values(values))


def read_card_text(
    text: str, me: str, *, aliases: Sequence[str] = (), users: Sequence[str] = ()
) -> CardText:
    """Read one card text (macros resolved) written of ``me`` (its name; ``aliases``
    are its other names, ``users`` the names the user goes by). See the module docstring."""
    names = [me, *aliases]
    traits, rest = _wpp(text, names)
    more, notes, rest = _brackets(rest, names)
    traits += more
    exchanges: list[Exchange] = []
    examples: list[str] = []
    prose: list[str] = []
    headers: list[str] = []
    for block in _blocks(rest):
        turns = _dialogue(block, names, users)
        if turns is not None:
            exchanges += _exchanges(turns)
            examples.append(block.strip())
            continue
        for line in block.splitlines():
            listed = _LABEL.match(line)
            if listed is not None and _is_list(listed[1], listed[2]):
                traits.append(Trait(_category(listed[1], names), _values(listed[2])))
                continue
            record = _record(line)
            if record is not None:  # answered from its text, not from what it is filed under
                headers.append(record[0])
                line = record[1]
            for sentence in _sentences(line):
                said = _prose(sentence, me)
                if said is None:
                    notes.append(sentence)
                else:
                    prose.append(said)
    return CardText(
        traits=tuple(traits),
        exchanges=tuple(exchanges),
        prose=" ".join(prose),
        instructions=tuple(notes),
        examples=tuple(examples),
        headers=tuple(headers),
    )


_WEAR = ("clothes", "clothing", "outfit", "wears", "attire", "wearing", "dress")
_HAVE = ("body", "appearance", "looks", "features", "physical", "face", "hair", "eyes")
_A = ("species", "race", "occupation", "job", "profession", "role", "class")
_BE = ("persona", "personality", "mind", "traits", "nature", "character", "attitude")
_LIKE = {"likes": "like", "loves": "love", "dislikes": "dislike", "hates": "hate"}
_FEARS = {"fears": "fear", "goal": "want", "goals": "want", "wants": "want", "desires": "want"}


def _joined(values: Sequence[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


_META = frozenset({"genre", "tags", "tag", "setting", "scenario", "world", "style", "format"})
"""Categories that say what kind of story a card is for, not what its character is."""
_OWNED = ("a ", "an ", "the ", "my ", "his ", "her ", "their ", "its ", "some ")


_BUILD = frozenset(
    {"tall", "short", "small", "big", "broad", "slim", "thin", "slender", "petite", "stocky"}
    | {"bald", "young", "old", "elderly", "pale", "fat", "lean", "skinny", "large", "tiny"}
    | {"heavy", "strong", "athletic", "curvy", "handsome", "beautiful", "pretty", "plain"}
    | {"wiry", "lanky", "muscular", "chubby", "plump", "frail", "gaunt", "burly", "freckled"}
)
"""Words a body is said to be, not to have ("I am tall and bald", not "I have tall")."""
_MASS = frozenset({"hair", "skin", "fur", "fuzz", "stubble", "makeup", "blood", "feathers"})
_AFTER_HEAD = re.compile(r"\s+(?:on|of|with|in|at|across|over|under|around|from)\s+")


_AGENT = re.compile(r"(?:er|or|ist|smith|man|woman|wife|ess|ian|eer|ard|ant)$")
_NOT_AGENT = frozenset(
    {"clever", "tender", "bitter", "sober", "eager", "proper", "slender", "other", "under"}
    | {"over", "silver", "hollow", "modest", "honest", "loyal", "gallant", "arrogant"}
    | {"elegant", "pleasant", "brilliant", "distant", "hesitant", "tolerant", "ignorant"}
    | {"reluctant", "radiant", "vibrant", "defiant", "hard", "awkward", "wayward"}
    | {"careless", "fearless", "restless", "ruthless", "helpless", "reckless", "shameless"}
)
"""Words with an agent noun's ending that are said of how one is ("clever", "loyal")."""


def _agent(value: str) -> bool:
    """Whether a bare list's value says what one is, a noun of a calling or a state
    ("baker", "widower", "early riser"), not how ("gruff", "proud of his work")."""
    words = value.strip().casefold().split(" ")
    last = words[-1]
    return len(words) <= 2 and _AGENT.search(last) is not None and last not in _NOT_AGENT


def _own(value: str) -> str:
    """A value of a list about the character said as its own ("proud of his work" →
    "proud of my work")."""
    return re.sub(r"\b(?:his|her|their)\b", "my", value)


def _build(value: str) -> bool:
    """Whether a body's trait is what it is ("tall", "well-built"), one word."""
    word = value.strip().casefold()
    return " " not in word and (word in _BUILD or word.endswith(("-built", "-boned")))


def _a(thing: str, body: bool = False) -> str:
    """One thing worn or had, with its article ("a black sundress", "a scar on the chin");
    a plural ("boots"), a mass ("pink hair", of a ``body``) or one with its own article as
    written."""
    head = _AFTER_HEAD.split(thing, maxsplit=1)[0].split(" ")[-1].casefold()
    plural = head.endswith("s") and not head.endswith("ss")
    if thing.casefold().startswith(_OWNED) or plural or not thing[:1].islower():
        return thing
    if body and head in _MASS:
        return thing
    return ("an " if thing[0] in "aeiou" else "a ") + thing


def trait_sentences(traits: Sequence[Trait]) -> list[str]:
    """Traits said in the first person, one sentence a trait: "I am caring and kind.",
    "I have pink hair and amber eyes.", "I wear a black sundress.", "I like fish.", else
    "My home: the glade." — the card's own words, in its own order; a category of the
    story (``genre``, ``tags``) is no trait of the character's and is not said."""
    out = []
    for t in traits:
        values = _joined(t.values)
        cat = t.category
        if cat in _META:
            continue
        if cat in _BE:
            who = [_a(_own(v)) for v in t.values if _agent(v)]  # "a baker", "an early riser"
            how = [_own(v) for v in t.values if not _agent(v)]  # "gruff", "proud of my work"
            out += [f"I am {_joined(who)}."] if who else []
            out += [f"I am {_joined(how)}."] if how else []
        elif cat in _A and all(v[:1].islower() for v in t.values):
            out.append(f"I am {_joined([_a(v) for v in t.values])}.")  # a ranger and a warden
        elif cat in _HAVE:
            build = [v for v in t.values if _build(v)]  # "tall": I am tall
            had = [_a(v, body=True) for v in t.values if not _build(v)]
            out += [f"I am {_joined(build)}."] if build else []
            out += [f"I have {_joined(had)}."] if had else []
        elif cat in _WEAR:
            out.append(f"I wear {_joined([_a(v) for v in t.values])}.")
        elif cat in _LIKE or cat in _FEARS:
            out.append(f"I {({**_LIKE, **_FEARS})[cat]} {values}.")
        else:
            out.append(f"My {cat}: {values}.")
    return out


_ACTION = re.compile(r"\*([^*]+)\*")
_QUOTED = re.compile(r"[\"“]([^\"“”]+)[\"”]")


def speech_of(reply: str) -> tuple[list[str], list[str]]:
    """A reply as the card wrote it, split: (what the character does, what it says).
    ``*actions*`` are deeds and the rest speech; with no asterisks, quoted words are speech
    and the rest deeds; with neither, it is all speech."""
    text = " ".join(reply.split())
    if "*" in text:
        deeds = [" ".join(a.split()) for a in _ACTION.findall(text)]
        said = _ACTION.sub("\n", text).replace("*", "")
        words = [" ".join(w.strip().strip('"“”').split()) for w in said.split("\n")]
        return [d for d in deeds if d], [w for w in words if w]
    if _QUOTED.search(text):
        words = [" ".join(w.split()) for w in _QUOTED.findall(text)]
        deeds = [" ".join(d.split()) for d in _QUOTED.split(text)[::2]]
        return [d for d in deeds if any(c.isalpha() for c in d)], [w for w in words if w]
    return [], [text] if text else []


_MARKUP = re.compile(
    r"\{\{[^}]*\}\}|<(?:START|USER|BOT|CHAR|CHR)>|\*[^*\s][^*]*\*|\[[^\]]*(?:=|\")[^\]]*\]"
    r"|\bcharacter\(\"",
    re.IGNORECASE,
)


def has_markup(text: str) -> str | None:
    """The first piece of card markup in ``text`` (a macro, a ``<START>`` or ``<USER>``
    tag, an ``*action*``, a W++ or bracketed list), or None."""
    m = _MARKUP.search(text)
    return m.group(0) if m else None


# --- a greeting as the story tells it ------------------------------------------------

_TO_HAVE = {"are": "is", "have": "has", "were": "was", "do": "does", "go": "goes"}
_UNCHANGED = frozenset(
    {"can", "could", "will", "would", "shall", "should", "may", "might", "must", "did"}
    | {"had", "was", "is", "has", "does"}
)
_CONTRACTED = {"'re": " is", "'ve": " has", "'ll": " will", "'d": " would"}
_SUBJECT_BEFORE = frozenset({"and", "as", "when", "while", "then", "that", "until", "but"})


def _third(verb: str) -> str:
    """A verb said of "you" said of someone by name: "wake" → "wakes", "are" → "is"."""
    low = verb.lower()
    if low in _TO_HAVE:
        return _TO_HAVE[low]
    if low in _UNCHANGED or low.endswith("ed") or not low.isalpha():
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _you_named(text: str, user: str) -> str:
    """Narration that speaks to the player in the second person, naming them instead:
    "You wake on a bed of moss" → "User wakes on a bed of moss", "beside you" → "beside
    User", "your shoulders" → "User's shoulders"."""
    words = re.split(r"(\s+)", text)
    out: list[str] = []
    i = 0
    prev = ""  # the last word, lowercased ("" at the start of a sentence)
    while i < len(words):
        w = words[i]
        core = w.strip('.,;:!?"“”()')
        low = core.lower().replace("’", "'")
        if low in ("you", "yourself") or low.startswith("you'"):
            subject = low.startswith("you'") or (
                low == "you" and (prev == "" or prev in _SUBJECT_BEFORE or prev.endswith(","))
            )
            said = user
            if low.startswith("you'"):
                said = user + _CONTRACTED.get(low[3:], "")
            out.append(w.replace(core, said))
            if subject and low == "you":  # its verb, past any adverb, agrees with the name
                j = i + 2
                while j < len(words) and words[j].lower().endswith("ly"):
                    j += 2
                if j < len(words):
                    verb = re.match(r"[A-Za-z]+", words[j])
                    if verb is not None:
                        words[j] = _third(verb.group(0)) + words[j][verb.end() :]
        elif low in ("your", "yours"):
            out.append(w.replace(core, f"{user}'s"))
        else:
            out.append(w)
        if w.strip():
            prev = "" if w.rstrip('"”)').endswith((".", "!", "?")) else low
        i += 1
    return "".join(out)


def narrated(text: str, me: str, user: str) -> str:
    """A greeting (a card's first message, macros resolved) as the story tells it, with no
    markup: each ``*action*`` is narration — the one it speaks to named rather than "you"
    ("*Ilsa drapes a blanket over your shoulders.*" → "Ilsa drapes a blanket over User's
    shoulders."), the character named where it opens with a bare verb ("*smiles softly*"
    → "Seraphina smiles softly.") — and the words outside the asterisks are speech, in
    quotation marks. A greeting with no asterisks is kept as written."""
    if "*" not in text:
        return text
    parts: list[str] = []
    for k, piece in enumerate(re.split(r"\*([^*]*)\*", text)):
        piece = " ".join(piece.split())
        if not piece:
            continue
        if k % 2:  # inside asterisks: what happens
            deed = _you_named(piece.strip(), user)
            first = deed.split(" ")[0]
            if first[:1].islower():
                deed = f"{me} {deed}"
            elif first in ("She", "He", "They"):
                deed = f"{me}{deed[len(first) :]}"
            deed = deed[:1].upper() + deed[1:]
            parts.append(deed if deed.endswith((".", "!", "?", "…")) else deed + ".")
        else:  # outside: what is said, quoted as written, or quoted now
            said = piece.replace("*", "").strip()
            if not said:
                continue
            quoted = said[:1] in '"“' and said[-1:] in '"”'
            parts.append(said if quoted else f'"{said}"')
    return " ".join(parts)
