"""The store's lineage view: :class:`LineageReads`, which branch holds a turn as this
branch sees it.

A branch is a copy-on-write fork of its parent at a turn (:mod:`fabula.memory.lineage`):
its turns up to the fork are read from the parent (and so on up to main). Every read of
turns or events, and the commit path, ask :meth:`LineageReads.branch_for` where a turn
lives; :meth:`LineageReads.ancestry` reads the chain once per store and keeps it (a
branch's parentage never changes).
"""

from __future__ import annotations

from fabula.errors import NotFound
from fabula.memory import keys
from fabula.memory.lineage import MAIN, Ancestor, Branch, branch_for
from fabula.memory.store.handle import StoreHandle


class LineageReads(StoreHandle):
    """This branch's ancestors, where a turn lives, and the story's branches."""

    async def ancestry(self) -> list[Ancestor]:
        """This branch's ancestors, nearest first (cached: a branch's parentage never changes).

        Raises :class:`NotFound` if the branch (or one on its way to main) does not exist.
        """
        if self._ancestry is None:
            chain: list[Ancestor] = []
            branch = self.branch
            through: int | None = None
            while branch != MAIN:
                raw = await self.client.hget(keys.branches(self.story), branch)
                if raw is None:
                    raise NotFound(
                        f"story {self.story!r} has no branch {branch!r}",
                        story=self.story,
                        branch=branch,
                    )
                info = Branch.from_stored(branch, raw)
                parent, fork_turn = info.parent or MAIN, info.fork_turn or 0
                # a grandparent is read only up to the earliest fork on the way to it
                through = fork_turn if through is None else min(through, fork_turn)
                chain.append(Ancestor(parent, through))
                branch = parent
            self._ancestry = chain
        return self._ancestry

    async def branch_for(self, turn: int) -> str:
        """The branch that holds ``turn`` as this branch sees it (see :func:`branch_for`)."""
        return branch_for(self.branch, await self.ancestry(), turn)

    async def branches(self) -> dict[str, Branch]:
        """Every branch of the story by name, main first, with its parent and fork turn."""
        raw = await self.client.hgetall(keys.branches(self.story))
        out = {MAIN: Branch(MAIN)}
        out.update({name: Branch.from_stored(name, v) for name, v in sorted(raw.items())})
        return out
