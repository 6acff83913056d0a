"""Timed effects — ``sticky``, ``cooldown``, ``delay`` — as SillyTavern's
``WorldInfoTimedEffects`` keeps them (``public/scripts/world-info.js`` at release 1.12.6,
386-690), computed from the activations of the turns before instead of stored.

SillyTavern keeps them in the chat's metadata, counted in messages: an entry activated when
the chat has ``n`` messages is sticky until it has ``n + sticky`` (and cools down until
``n + cooldown``, 504-511, 601-613, 629-634); a sticky one that ends starts its cooldown
then (415-431); an entry with ``delay`` is not activated while the chat has fewer than
``delay`` messages (563-575); an effect set at a length the chat has not passed is dropped
(525-529), unless it is a cooldown started by a sticky that ended.

Fabula counts a story's turns as SillyTavern counts messages: the scan of turn ``t`` sees
the chat of turns ``1..t``. The state at turn ``t`` is replayed from what each earlier turn
activated (:func:`replay`), and :func:`chat_activations` computes those activations one
turn after the other, each with the state before it — so a rewind or a fork, which gives
the story other turns, gives other effects by construction: nothing is stored to undo.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from fabula.worlds.activation import Activation, Chat, Timed, timing
from fabula.worlds.lore import LoreEntry


@dataclass
class _Effect:
    start: int
    end: int
    protected: bool = False


def replay(
    entries: Sequence[LoreEntry], history: Sequence[Collection[int]], now: int | None = None
) -> Timed:
    """The timed effects at the scan of a chat of ``now`` messages (turns; by default one
    more than ``history``), given ``history[k]``: the indices of the entries activated by
    the scan of the chat of ``k + 1`` messages. SillyTavern's ``checkTimedEffects`` at every
    scan (559-562) and ``setTimedEffects`` after it (629-634), replayed."""
    now = len(history) + 1 if now is None else now
    times = [timing(e) for e in entries]
    sticky: dict[int, _Effect] = {}
    cooldown: dict[int, _Effect] = {}
    state = Timed()
    for length in range(1, now + 1):
        state = _check(times, sticky, cooldown, length)
        if length == now or length > len(history):
            break
        for i in history[length - 1]:  # setTimedEffectOfType: only where none is set, 606-613
            s, c, _ = times[i]
            if s and i not in sticky:
                sticky[i] = _Effect(length, length + s)
            if c and i not in cooldown:
                cooldown[i] = _Effect(length, length + c)
    return state


def _check(
    times: list[tuple[int, int, int]],
    sticky: dict[int, _Effect],
    cooldown: dict[int, _Effect],
    length: int,
) -> Timed:
    """``checkTimedEffects`` (559-562) at a chat of ``length`` messages: sticky first, whose
    end starts a protected cooldown (415-431), then cooldown, then delay."""
    stuck: set[int] = set()
    cooling: set[int] = set()
    for i, effect in list(sticky.items()):
        # the chat has not passed its start (525-529), or the entry has no sticky (540-545)
        if (length <= effect.start and not effect.protected) or not times[i][0]:
            del sticky[i]
        elif length >= effect.end:  # 547-553: ended, its cooldown starts now
            del sticky[i]
            if times[i][1]:
                cooldown[i] = _Effect(length, length + times[i][1], protected=True)
                cooling.add(i)
        else:
            stuck.add(i)
    for i, effect in list(cooldown.items()):
        if (
            (length <= effect.start and not effect.protected)
            or not times[i][1]
            or length >= effect.end
        ):
            del cooldown[i]
        else:
            cooling.add(i)
    delayed = {i for i, (_, _, d) in enumerate(times) if d and length < d}  # 567-575
    return Timed(frozenset(stuck), frozenset(cooling), frozenset(delayed))


def has_timed(entries: Sequence[LoreEntry]) -> bool:
    """Whether any of ``entries`` has a timed effect."""
    return any(any(timing(e)) for e in entries)


Scan = Callable[[Chat, Timed], Activation]
"""One activation of a chat under timed effects (the books, settings and budget bound)."""

_DONE: OrderedDict[tuple[str, str], frozenset[int]] = OrderedDict()
_DONE_KEPT = 4096


def chat_activations(
    scan: Scan,
    entries: Sequence[LoreEntry],
    turns: Sequence[str],
    chat: Callable[[Sequence[str]], Chat],
    *,
    key: str = "",
) -> Activation:
    """What the scan of the last of ``turns`` activates (the chat of all of them), with the
    timed effects its earlier turns leave: each earlier turn's scan (``chat`` of the turns
    up to it) computed in order, with the effects before it. What each turn activated is
    remembered by ``key`` (the books: their pack's digest) and the digest of the turns up
    to it, so a story pays for each turn once, and another story line (a rewind, a fork)
    reuses only the turns it shares."""
    if not turns:
        return scan(chat(()), replay(entries, [], 1))
    history: list[frozenset[int]] = []
    digest = hashlib.sha256(key.encode()).hexdigest()
    for k, text in enumerate(turns[:-1]):
        digest = hashlib.sha256(f"{digest}\x00{text}".encode()).hexdigest()
        memo = (key, digest)
        done = _DONE.get(memo)
        if done is None:
            found = scan(chat(turns[: k + 1]), replay(entries, history))
            done = frozenset(a.index for a in found.admitted)
            _DONE[memo] = done
            while len(_DONE) > _DONE_KEPT:
                _DONE.popitem(last=False)
        history.append(done)
    return scan(chat(turns), replay(entries, history))
