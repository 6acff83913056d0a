"""The error tree: drawn in :mod:`fabula.errors`'s docstring, held by its classes.

The command line and the web read an error's exit status and HTTP status from its class,
so the drawing is the contract: a class moved in the tree, or a status changed on a class
but not in the drawing (or the other way round), fails here.
"""

from __future__ import annotations

import re

import pytest

from fabula import errors

ROW = re.compile(r"^    (?P<tree>[│ ├└─]*)(?P<name>[A-Z]\w+)\s+(?P<exit>\d+)\s+(?P<http>\d{3})\s")


def drawn() -> list[tuple[str, int, int, int]]:
    """(class, depth, exit status, HTTP status) for each row of the docstring's tree."""
    rows = []
    for line in (errors.__doc__ or "").splitlines():
        m = ROW.match(line)
        if m is not None:
            depth = len(m["tree"]) // 4
            rows.append((m["name"], depth, int(m["exit"]), int(m["http"])))
    return rows


def test_the_drawing_is_the_hierarchy() -> None:
    """Every error class in ``__all__`` is drawn once, under its own base class, with the
    exit and HTTP statuses the class says (a remedy is not an error: not drawn)."""
    rows = drawn()
    classes = [n for n in errors.__all__ if n not in ("Remedy", "RemedyAction")]
    assert sorted(name for name, *_ in rows) == sorted(classes)
    parents: list[str] = []
    for name, depth, exit_code, http_status in rows:
        parents[depth:] = [name]
        cls = getattr(errors, name)
        if depth:
            assert cls.__bases__[0] is getattr(errors, parents[depth - 1]), name
        else:
            assert cls is errors.FabulaError
        assert (cls.exit_code, cls.http_status) == (exit_code, http_status), name


@pytest.mark.parametrize(
    "cls", [errors.ModelOutputError, errors.ModelTruncated, errors.ModelRefused]
)
def test_a_models_bad_output_is_not_bad_input(cls: type[errors.FabulaError]) -> None:
    """What a model got wrong is the model's failure: a 502, never the user's 422."""
    assert not issubclass(cls, errors.InvalidInput)
    assert issubclass(cls, errors.ModelError) and cls.http_status == 502


def test_a_conflict_is_not_bad_input() -> None:
    """A turn re-sent changed is a conflict with the story's state (409), not a 422 that a
    handler would have had to test for first."""
    assert not issubclass(errors.TurnConflict, errors.InvalidInput)
    assert errors.TurnConflict("x").http_status == 409
