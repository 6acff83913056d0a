"""Where a thing is: the one resolver from an entity to the place it is in.

An object is in a container, a container on a character or in a place, a character in a
place; following the ``location`` links upward reaches the place. Every view (the tracker's
W, the author's W, a character's beliefs, a world pack being loaded) answers "where is this
thing" with :func:`place_of` over its own links, so all of them follow one policy.
"""

from __future__ import annotations

from collections.abc import Callable


def place_of(
    entity: str, where: Callable[[str], str | None], is_place: Callable[[str], bool]
) -> str | None:
    """The place ``entity`` is in, following ``where`` (its location, or None) through
    containers and holders until ``is_place``; ``entity`` itself if it is a place.

    None when the links end before a place (nothing known of where a container is) and
    when they loop (a cycle locates nothing).
    """
    seen: set[str] = set()
    current = entity
    while not is_place(current):
        if current in seen:
            return None
        seen.add(current)
        above = where(current)
        if above is None:
            return None
        current = above
    return current
