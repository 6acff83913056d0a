"""How the prose reader's cost grows with one long sentence (issue 45, item 2).

Not a test: a measurement to run by hand. For each shape and size it makes one sentence
with no full stop, reads it with the prose reader on the hollow_book story, then builds the
turn's delta from it, and prints the seconds each took, the actions read and the delta's
size (JSON bytes; ``refused`` where the delta passed the commit limit). Usage::

    FABULA_HOME=/tmp/x python tools/reader_scale.py [--words N] [plain:4 ... shape:58]

``--words N`` reads N words and marks of a sentence (default: the setting's default), so
that the reading of a whole long sentence can be timed.

``plain:KB``: "Leo was busy and he was away " repeated (each absence looked up the
nearest character by rescanning the sentence, each pronoun by rescanning its mentions:
cubic); ``shape:KB``: "Leo saw Mara take the brass key from the desk drawer, " repeated
(the attacker's shape, with this story's names).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from fabula.agents.memory_builder.offline import OfflineMemoryBuilder
from fabula.agents.reading.prose import read_prose
from fabula.errors import LimitExceeded
from fabula.graph.service import Fabula
from fabula.limits import DEFAULT_SENTENCE_WORDS, Limits
from fabula.memory.server import EmbeddedRedis
from fabula.settings import Settings

PLAIN = "Leo was busy and he was away "
SHAPE = "Leo saw Mara take the brass key from the desk drawer, "
DEFAULT = ("plain:4", "plain:16", "plain:32", "plain:64", "shape:58")


def sentence(spec: str) -> str:
    """One sentence of ``spec`` (``plain:KB`` or ``shape:KB``), with no full stop."""
    kind, size = spec.split(":")
    unit = PLAIN if kind == "plain" else SHAPE
    return (unit * (int(size) * 1024 // len(unit) + 1))[: int(size) * 1024]


async def main(specs: list[str], words: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="reader-scale-", dir="/tmp"))
    server = EmbeddedRedis(folder / "redis")
    server.ensure_started()
    try:
        async with Fabula(server.url, Settings(home=folder)) as app:
            await app.create_story("hollow_book", "scale")
            store = app.store("scale")
            # the delta measured, not refused
            store.limits = Limits(delta_bytes=1 << 40, sentence_words=words)
            entities = await store.entities()
            turn = await store.head() + 1
            for spec in specs:
                text = sentence(spec)
                t0 = time.perf_counter()
                actions = read_prose(text, entities, store.limits)
                read_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                try:
                    delta = await OfflineMemoryBuilder().build(store, turn, text)
                    size = f"{len(delta.model_dump_json()):,}"
                except LimitExceeded:
                    size = "refused"
                build_s = time.perf_counter() - t0
                unread = sum(1 for a in actions if a.kind == "narration")
                print(
                    f"{spec:>9}  text {len(text.encode()):>7,} B  read {read_s:7.2f} s  "
                    f"actions {len(actions):>5} ({unread} narration)  "
                    f"build {build_s:7.2f} s  delta {size} B",
                    flush=True,
                )
    finally:
        server.stop()


if __name__ == "__main__":
    args = sys.argv[1:]
    words = DEFAULT_SENTENCE_WORDS
    if args[:1] == ["--words"]:
        words, args = int(args[1]), args[2:]
    asyncio.run(main(args or list(DEFAULT), words))
