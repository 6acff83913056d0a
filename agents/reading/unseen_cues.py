"""The words that say someone did not perceive what happened (issue 45): data, no logic.

Each cue is a phrase of lower-case words as the reader's tokens spell them ("wasn't" is
one word), ``*`` standing for any one word ("closed * eyes": his, her, their); a verb's
past and present forms are both written ("closed", "closes": stories are told in either). The logic
that finds them and says whom they are about is :mod:`.unseen`. Three tables, by who does
not perceive:

- :data:`STATES`: a state of the character named before the cue ("Bob was asleep", "Bob
  closed his eyes", "Bob had his back turned"). It holds for the acts of its sentence,
  whichever clause tells them ("Ann took it while Bob slept"), and for the acts told after
  it, until the character acts again or a cue of :data:`ENDS` ends it ("Bob woke up").
- :data:`FROM`: the act is kept from the character named right after the cue ("unseen by
  Bob", "out of sight of Bob").
- :data:`NOBODY`: nobody saw the act ("Nobody saw", "secretly"); of these, the manner
  adverbs (:data:`MANNER`) describe the verb next to them, so "Bob secretly watched" is
  Bob's watching, not Ann's act, and is not read as one.
"""

from __future__ import annotations

STATES: tuple[str, ...] = (
    # asleep, or not conscious
    "asleep",
    "sleeping",
    "slept",
    "sleeps",
    "dozed",
    "dozing",
    "napping",
    "napped",
    "snoozing",
    "snored",
    "snoring",
    "naps",
    "dozes",
    "snores",
    "nodded off",
    "nods off",
    "drifted off",
    "drifts off",
    "unconscious",
    "passed out",
    "passes out",
    "blindfolded",
    # eyes shut or elsewhere
    "closed * eyes",
    "closes * eyes",
    "shut * eyes",
    "shuts * eyes",
    "eyes closed",
    "eyes shut",
    "back turned",
    "turned * back",
    "turns * back",
    "turned away",
    "turns away",
    "turning away",
    "looked away",
    "looks away",
    "looking away",
    "glanced away",
    "glances away",
    "the other way",
    "facing away",
    "faced away",
    "faces away",
    # attention elsewhere
    "wasn't looking",
    "was not looking",
    "weren't looking",
    "were not looking",
    "isn't looking",
    "is not looking",
    "aren't looking",
    "are not looking",
    "wasn't watching",
    "was not watching",
    "isn't watching",
    "is not watching",
    "not paying attention",
    "on the phone",
    "in the other room",
    "in another room",
    "distracted",
    "preoccupied",
    "engrossed",
    "absorbed in",
    "daydreaming",
    "lost in thought",
)

ENDS: tuple[str, ...] = (
    "woke",
    "awoke",
    "wakes",
    "awake",
    "opened * eyes",
    "opens * eyes",
    "turned back",
    "turns back",
    "turned around",
    "turns around",
    "looked back",
    "looks back",
    "looked up",
    "looks up",
)

FROM: tuple[str, ...] = (
    "unseen by",
    "unobserved by",
    "unnoticed by",
    "hidden from",
    "out of sight of",
    "out of * sight",
)

NOBODY: tuple[str, ...] = (
    "nobody",
    "no one",
    "no-one",
    "none of them",
    "without anyone",
    "without anybody",
    "unseen",
    "unobserved",
    "unnoticed",
    "in secret",
)
"""Cues that nobody perceived: the sentence's act is unseen by everyone but its doer.
``nobody`` and ``no one`` count only before a word of perception (:data:`PERCEIVING`):
"Nobody saw", "no one was watching", not "nobody else would want it"."""

MANNER: tuple[str, ...] = ("secretly", "covertly", "surreptitiously")
"""Manner adverbs that say the act was not seen. "Stealthily", "furtively" and
"discreetly" say how it was done, not that nobody saw it: in OpenToM a watcher sees an
act done "stealthily" ("he stealthily moved the underpants …, and Finnegan … watched")."""

NEGATIONS: frozenset[str] = frozenset(
    {"not", "never", "hadn't", "hasn't", "wasn't", "weren't", "didn't", "isn't", "hardly"}
)
"""A cue of :data:`FROM` or :data:`NOBODY` after one of these, a few words before it, is
its opposite ("had not gone unnoticed by Amir": Amir noticed)."""

PERCEIVING: frozenset[str] = frozenset(
    {"saw", "see", "seen", "noticed", "notice", "noticing", "watched", "watching", "watch"}
    | {"looking", "looked", "observed", "observing", "witnessed", "spotted", "there"}
    | {"around", "present", "paying", "heard", "knew", "aware"}
)
"""The words within a few of "nobody" that make it about perceiving."""
