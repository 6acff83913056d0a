"""A world's rules of knowledge: how characters come to know and believe things.

The rules are a world setting (:class:`WorldRules`, kept with the story, so every process
that extends it applies the same ones); the tracker (:mod:`fabula.memory.tracking`) applies
them to every action of a turn:

* Whoever is in a place witnesses what is done there while they are in it: entries, exits,
  placements and moves of objects, public claims, utterances.
* A bare statement (``The O is in the C.``) is made in the current scene: the place of the
  most recent entry.
* ``open_containers``: entering a place reveals where every object in it is (to the
  newcomer, and every one present sees that the newcomer has seen it). Closed containers
  (the default) reveal only what lies in the open; what is inside is learned by witnessing
  it being put there, or by being told.
* ``A saw that <clause>``: the clause is true in the world, and only the named see it.
* A private telling reaches only its listener; a public claim (or an utterance that is a
  clause) reaches everyone present. What a speaker says never changes the speaker's own
  belief.
* Whether a listener adopts what it is told is the ``trust`` policy: ``always``, ``never``,
  or ``fresher`` (the default): the listener adopts it when it has no belief of its own on
  that slot (knowing only where a thing is *not* counts as none, unless the claim is that
  very place), or when the speaker's information is fresher than its own. A belief's
  *freshness* is the moment its holder last had first-hand access to the slot: the event it
  was observed at, refreshed when the holder leaves the place where it could see the object
  (open containers only); a told belief inherits the speaker's freshness, which the telling
  event records in its ``causes``. Comparisons use the true moments (the exit order is
  known to all, as Hi-ToM states it).
* Nested beliefs: a chain ``(a, b, …)`` ("a thinks b thinks …") changes only through what
  its holders witnessed together or communicated. For an observation (an entry, a move, a
  bare statement, a sight) every chain over the witnesses adopts the fact. A communication
  is a relation between the speaker and each listener: when a listener adopts the claim
  (trust policy), every chain made of those two adopts it (the listener takes the claim as
  the speaker's belief, the speaker expects the uptake: the policy's inputs are public),
  except the speaker's own belief. Whether a listener believed what it heard cannot be
  witnessed, so a bystander's model of another listener does not change with a claim.
* ``belief_depth`` bounds the nesting: chains longer than it are not kept.

What a nested chain holds depends only on the set of its holders, so a fact that reaches a
group is kept once for the group, not once per chain over it (there are N·(N−1)^3 of those
for N witnesses at depth 4): every chain over the group is read from that one record, in its
first holder's own keyspace (:mod:`fabula.memory.tracking.nested`). A fact costs one record
per witness and one for the group, whatever the depth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fabula.memory.validate import MAX_CHAIN

TrustPolicy = Literal["fresher", "always", "never"]


class WorldRules(BaseModel):
    """A world's rules of knowledge (see the module docstring), stored with the story."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    open_containers: bool = False
    trust: TrustPolicy = "fresher"
    belief_depth: int = Field(default=4, ge=1, le=MAX_CHAIN)

    @classmethod
    def load(cls, stored: Mapping[str, object]) -> WorldRules:
        """The rules from a world pack's or a story's stored mapping (``{}``: the defaults).

        Raises pydantic's ``ValidationError`` for an unknown rule or a value out of range.
        """
        return cls.model_validate(dict(stored))
