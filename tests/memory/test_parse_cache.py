"""The projections' cache of parsed records: bounded, and never losing what it returns."""

from __future__ import annotations

from fabula.memory.projections import _ParseCache
from fabula.memory.records import State


def _state(k: int) -> str:
    return (
        f'{{"id":"s{k}.0","subject":"thing{k}","attribute":"location","value":"box",'
        f'"event":"e{k}.0","valid_from":{k}}}'
    )


def test_a_full_cache_starts_again_keeping_what_the_call_reads() -> None:
    """Reproduction (the 1,000-character town bench): a read of records partly cached,
    whose new ones overflow the bound, cleared the cache and then failed to look up the
    ones it had found there (a KeyError). It now keeps them, and stays within bound."""
    cache = _ParseCache(State, limit=4)
    first = [_state(k) for k in range(3)]
    assert [s.subject for s in cache.parse(first)] == ["thing0", "thing1", "thing2"]
    mixed = [first[0], _state(7), _state(8)]  # one hit, two new: 3 + 2 > 4
    assert [s.subject for s in cache.parse(mixed)] == ["thing0", "thing7", "thing8"]
    assert len(cache._cache) <= 4
