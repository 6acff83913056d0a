"""Text is read as it is stored: NFKC, without the format characters that show nothing.

Issue 45: a bidirectional or zero-width character after a full stop kept two sentences as
one, and the reader invented an object from the fragment. On hollow_book after its
opening (Leo in the hallway, Mara in the study, the brass key in the hollow book).
"""

from __future__ import annotations

import pytest

from fabula.agents.memory_builder.offline import OfflineMemoryBuilder
from fabula.graph.service import Fabula
from fabula.memory.delta import TurnDelta
from fabula.memory.text import normalised
from fabula.testing.model import STORY

CLEAN = "Leo went to the study. Mara took the brass key."
HIDDEN = ["\u200b", "\u200e", "\u202e", "\u2066", "\ufeff", "\u00ad"]


def gist(delta: TurnDelta) -> object:
    return (
        delta.text,
        [(e.kind, e.span.quote if e.span else None) for e in delta.events],
        sorted((s.subject, s.attribute, s.value) for s in delta.states),
        [e.id for e in delta.entities],
    )


class TestNormalised:
    def test_format_characters_go_and_compatibility_forms_fold(self) -> None:
        assert normalised("Leo.\u200b Mara\u202e took \ufb01ve \uff2b\uff45\uff59s.") == (
            "Leo. Mara took five Keys."
        )
        assert normalised("line one\nline two") == "line one\nline two"

    @pytest.mark.parametrize("hidden", HIDDEN, ids=[f"U+{ord(h):04X}" for h in HIDDEN])
    async def test_a_hidden_character_after_a_full_stop_reads_as_the_clean_text(
        self, fab: Fabula, hidden: str
    ) -> None:
        store = fab.store(STORY)
        builder = OfflineMemoryBuilder()
        clean = await builder.build(store, 4, CLEAN)
        dirty = CLEAN.replace(". ", "." + hidden + " ").replace("brass", "br" + hidden + "ass")
        assert gist(await builder.build(store, 4, dirty)) == gist(clean)
