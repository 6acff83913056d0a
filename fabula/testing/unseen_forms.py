"""Ways English says that someone did not see a deed, as templates for tests (issue 45).

Each :class:`UnseenForm` writes a deed — ``doer`` puts ``thing`` in ``box`` — told with a
cue that ``other`` (or, for ``nobody`` forms, everyone but the doer) did not see it. The
first nine are the attacker's (each gave the unseeing character the new place); the rest
are more in the same spirit. ``tests/agents/test_prose_unseen.py`` commits each through the
real store, and the leak property (``tests/system/test_prose_leak_property.py``) draws them
among its deeds.
"""

from __future__ import annotations

from dataclasses import dataclass

_POSSESSIVE = {"he": "his", "she": "her", "they": "their"}


@dataclass(frozen=True)
class UnseenForm:
    """A deed told with a cue of not seeing; ``nobody``: no one but the doer saw it."""

    name: str
    template: str
    nobody: bool = False

    def write(self, doer: str, other: str, thing: str, box: str, *, pronoun: str = "he") -> str:
        """The deed's text (one or two sentences); ``pronoun`` is ``other``'s ("closed
        his eyes") or, in two-sentence forms, the doer's ("Then she slipped …")."""
        return self.template.format(
            doer=doer,
            other=other,
            thing=thing,
            box=box,
            pronoun=pronoun,
            their=_POSSESSIVE.get(pronoun, "their"),
        )


FORMS: tuple[UnseenForm, ...] = (
    # the attacker's
    UnseenForm("unseen by", "Unseen by {other}, {doer} slipped the {thing} into the {box}."),
    UnseenForm(
        "who was asleep",
        "{other}, who was asleep, lay by the stove while {doer} slipped the {thing} into the "
        "{box}.",
    ),
    UnseenForm("while slept", "{doer} slipped the {thing} into the {box} while {other} slept."),
    UnseenForm("nobody saw", "Nobody saw {doer} slip the {thing} into the {box}.", nobody=True),
    UnseenForm(
        "no one was watching",
        "No one was watching when {doer} slipped the {thing} into the {box}.",
        nobody=True,
    ),
    UnseenForm(
        "back turned",
        "{other} had {their} back turned when {doer} slipped the {thing} into the {box}.",
    ),
    UnseenForm(
        "turned away", "{other} turned away, and {doer} slipped the {thing} into the {box}."
    ),
    UnseenForm("secretly", "{doer} secretly slipped the {thing} into the {box}.", nobody=True),
    UnseenForm(
        "closed eyes", "{other} closed {their} eyes, and {doer} slipped the {thing} into the {box}."
    ),
    # more of the same
    UnseenForm(
        "on the phone",
        "{other} was on the phone in the other room when {doer} slipped the {thing} into the "
        "{box}.",
    ),
    UnseenForm(
        "wasn't looking", "When {other} wasn't looking, {doer} slipped the {thing} into the {box}."
    ),
    UnseenForm(
        "distracted", "{other} was distracted, and {doer} slipped the {thing} into the {box}."
    ),
    UnseenForm(
        "the other way",
        "{other} was looking the other way when {doer} slipped the {thing} into the {box}.",
    ),
    UnseenForm("dozed off", "{other} dozed off. {doer} slipped the {thing} into the {box}."),
    UnseenForm(
        "without anyone",
        "Without anyone noticing, {doer} slipped the {thing} into the {box}.",
        nobody=True,
    ),
    UnseenForm(
        "fast asleep",
        "{other} was fast asleep when {doer} slipped the {thing} into the {box}.",
    ),
    UnseenForm(
        "out of sight", "{doer} slipped the {thing} into the {box}, out of {other}'s sight."
    ),
    UnseenForm(
        "gone unnoticed",
        "{doer} slipped the {thing} into the {box}. It went unnoticed by {other}.",
    ),
)
