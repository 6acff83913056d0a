"""The checkpointer's keys (the graph owns them; memory's keys are ``memory/keys.py``).

Every key of a thread carries the hash tag ``{thread}``; the layout is drawn in
:mod:`fabula.graph.checkpoint`.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

THREADS = "fab:ckpt:threads"  # every thread id (outside every thread's slot)


def _part(value: str) -> str:
    return quote(value, safe="")


def run_key(run_id: str) -> str:
    """The set of threads written by run ``run_id``."""
    return f"fab:ckpt:run:{_part(run_id)}"


@dataclass(frozen=True)
class ThreadKeys:
    """The keys of one thread; all share the hash tag ``{thread}``."""

    thread_id: str

    @property
    def prefix(self) -> str:
        return f"fab:ckpt:{{{_part(self.thread_id)}}}"

    @property
    def version(self) -> str:
        """The version of the layout the thread's checkpoints are stored in (a string)."""
        return f"{self.prefix}:version"

    @property
    def namespaces(self) -> str:
        return f"{self.prefix}:namespaces"

    def index(self, ns: str) -> str:
        return f"{self.prefix}:index:{_part(ns)}"

    def checkpoint(self, ns: str, checkpoint_id: str) -> str:
        return f"{self.prefix}:checkpoint:{_part(ns)}:{_part(checkpoint_id)}"

    def writes(self, ns: str, checkpoint_id: str) -> str:
        return f"{self.prefix}:writes:{_part(ns)}:{_part(checkpoint_id)}"
