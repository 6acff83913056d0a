"""The store's usage view: the model usage that made a branch — each turn's (written with
the turn by the commit, :mod:`fabula.memory.store.commits`) and the work outside its turns
(the summaries step). :class:`UsageReads` reads both (``fabula usage``, the studio);
:class:`UsageWrites` adds the work outside the turns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from fabula.memory import keys
from fabula.memory.store.handle import StoreHandle


class UsageReads(StoreHandle):
    """The model usage of this branch: by turn, and outside its turns."""

    async def turn_usage(self) -> dict[int, dict[str, dict[str, object]]]:
        """The model usage of every turn of this branch that has one, by turn (written with
        the turn, by :meth:`commit`)."""
        raw = await self.client.hgetall(keys.usage(self.story, self.branch))
        return {int(turn): json.loads(raw[turn]) for turn in sorted(raw, key=int)}

    async def background_usage(self) -> dict[str, dict[str, int | str]]:
        """The model usage of this branch's work outside its turns, by role (see
        :meth:`add_background_usage`)."""
        raw = await self.client.hgetall(keys.background_usage(self.story, self.branch))
        out: dict[str, dict[str, int | str]] = {}
        for field, value in sorted(raw.items()):
            role, _, name = field.partition("|")
            out.setdefault(role, {})[name] = value if name == "model" else int(value)
        return out


class UsageWrites(StoreHandle):
    """Counting the model usage of this branch's work outside its turns."""

    async def add_background_usage(self, by_role: Mapping[str, Mapping[str, int | str]]) -> None:
        """Count model usage made for this branch outside its turns (the summaries step,
        which runs after consolidation): each count is added with HINCRBY, so runs in any
        number of processes add up; a role's model is the last one named."""
        key = keys.background_usage(self.story, self.branch)
        async with self.client.pipeline(transaction=False) as pipe:
            for role, usage in by_role.items():
                for name, value in usage.items():
                    if isinstance(value, int) and value:
                        pipe.hincrby(key, f"{role}|{name}", value)
                    elif isinstance(value, str) and value:
                        pipe.hset(key, f"{role}|{name}", value)
            await pipe.execute()
