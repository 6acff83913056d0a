"""What a witness remembers of an event (memory/recollection.py), on hand-built turns.

The property test (tests/test_leak_property.py) checks the same rule over generated stories
through the real graph; these pin down cases it found.
"""

from __future__ import annotations

from fabula.memory.delta import DeltaBuilder
from fabula.memory.records import Fact

TEXT = (
    "Ada privately told Ben that the spare key is in the cupboard, and Ben took the spare "
    "key, and Cora privately told Ada that the logbook is in the cupboard."
)


def lighthouse_turn(*, tell_read: bool) -> DeltaBuilder:
    b = DeltaBuilder(1, TEXT)
    for name in ("Ada", "Ben", "Cora"):
        b.entity("character", name)
    b.entity("place", "lamp room")
    for name in ("spare key", "logbook", "cupboard"):
        b.entity("object", name)
    whole = b.span(0, len(TEXT))  # the model spanned every action over the sentence
    if tell_read:
        b.event("tell", whole, actor="ada", participants=("ada", "ben"), private_to=("ben",),
                content=Fact(subject="spare_key", attribute="location", value="cupboard"),
                witnesses=("ada", "ben"))  # fmt: skip
    b.event("take", whole, actor="ben", participants=("ben", "spare_key"), place="lamp_room",
            content=Fact(subject="spare_key", attribute="location", value="ben"),
            witnesses=("ben", "cora"))  # fmt: skip
    b.event("tell", whole, actor="cora", participants=("cora", "ada"), private_to=("ada",),
            content=Fact(subject="logbook", attribute="location", value="cupboard"),
            witnesses=("cora", "ada"))  # fmt: skip
    return b


class TestMissedDeeds:
    def test_a_missed_deed_naming_what_other_deeds_name_is_not_quoted(self) -> None:
        """The model left Ada's private word to Ben out. Its clause names only what the
        deeds read there name (Ada, Ben, the spare key, the cupboard), so it once passed
        for the taking's text and Cora, who saw the taking and told Ada about the logbook,
        remembered Ada's secret. Each clause now needs an action of its own."""
        delta = lighthouse_turn(tell_read=False).build()
        take = next(e for e in delta.events if e.kind == "take")
        for witness in take.witnesses:
            memory = delta.own_recollections.get(take.id, {}).get(
                witness, delta.recollections.get(take.id, "")
            )
            assert "Ada privately told Ben" not in memory, (witness, memory)

    def test_every_clause_read_leaves_no_sentence_to_a_partial_witness(self) -> None:
        """With every deed read, the sentence still mixes what Cora did not witness (Ada's
        word to Ben): her memory of the taking is its clause, or the taking told plainly."""
        delta = lighthouse_turn(tell_read=True).build()
        take = next(e for e in delta.events if e.kind == "take")
        cora = delta.own_recollections.get(take.id, {}).get("cora") or delta.recollections[take.id]
        assert "told" not in cora and "spare key" in cora, cora
