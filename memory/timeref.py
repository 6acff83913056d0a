"""Story time as people write it: dates on a story's clock, and references to time in a request.

Two things are read here, both with plain rules of English, nothing learned:

- :func:`parse_clock` reads a date a story gives ("1:56 pm on 8 May, 2023", "May 8, 2023",
  "2023-05-08", "the morning of 3 June 1850") into a :class:`Clock` with a day number
  (days since 1 January of year 1), so episodes can be put on a time line.
- :func:`time_reference` reads what a request says about *when* ("at the beginning",
  "recently", "last spring", "in May 2023", "in 2022", "when did ...") into a
  :class:`TimeRef`: a range of days, a preference for the earliest or latest, or a wish
  for the date itself (a "when" question wants the dated episode, not a range).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Literal

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY_FIRST = re.compile(
    r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(?P<year>\d{4})\b", re.I
)
_MONTH_FIRST = re.compile(
    r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b", re.I
)
_ISO = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
_MONTH_YEAR = re.compile(r"\b" + _MONTH + r",?\s+(?P<year>\d{4})\b", re.I)
_YEAR = re.compile(r"\b(?:in|during|of|since)\s+(?P<year>1[5-9]\d\d|20\d\d)\b", re.I)
# a month with no year after it, read against the story's present: "in June" (not "may")
_FULL_MONTHS = "|".join(n for n in _MONTHS if len(n) > 3 or n == "may")
_MONTH_ALONE = re.compile(
    r"\b(?P<which>in|during|since|last|this|early|late|mid|end of|beginning of)\s+"
    r"(?P<month>" + _FULL_MONTHS + r")\b(?!,?\s+\d)",
    re.I,
)
_RELATIVE = re.compile(
    r"\b(?P<what>yesterday|today|tonight|this morning|last night"
    r"|(?P<which>last|this|past) (?P<unit>week|weekend|month|year))\b",
    re.I,
)


@dataclass(frozen=True)
class Clock:
    """A date of the story's clock: ``text`` as written, ``day`` its day number."""

    text: str
    day: int

    @property
    def date(self) -> dt.date:
        return dt.date.fromordinal(self.day)


def _ordinal(year: int, month: int, day: int) -> int | None:
    try:
        return dt.date(year, month, day).toordinal()
    except ValueError:
        return None


def _month_number(raw: str) -> int:
    return int(raw) if raw.isdigit() else _MONTHS[raw.lower().rstrip(".")]


def parse_clock(text: str) -> Clock | None:
    """The first full date written in ``text`` (day, month and year), or None."""
    for pattern in (_DAY_FIRST, _MONTH_FIRST, _ISO):
        match = pattern.search(text)
        if match is None:
            continue
        day = _ordinal(int(match["year"]), _month_number(match["month"]), int(match["day"]))
        if day is not None:
            return Clock(text.strip(), day)
    return None


Order = Literal["earliest", "latest"]


@dataclass(frozen=True)
class TimeRef:
    """What a request says about when.

    ``first_day``/``last_day`` bound the days it is about (inclusive, None: open);
    ``order`` prefers the earliest or latest episodes ("at the beginning", "recently");
    ``asks_when`` is set by a question about a date ("when", "what year", "how long ago"),
    which wants the episode that happened, rendered with its date.
    """

    first_day: int | None = None
    last_day: int | None = None
    order: Order | None = None
    asks_when: bool = False

    @property
    def empty(self) -> bool:
        return (
            self.first_day is None
            and self.last_day is None
            and self.order is None
            and not self.asks_when
        )


_EARLIEST = re.compile(
    r"\b(at|in|from) the (very )?(beginning|start|outset)\b|\bfirst\b|\boriginally\b"
    r"|\bearliest\b|\bin the first\b",
    re.I,
)
_LATEST = re.compile(
    r"\b(recently|lately|latest|last time|most recent|at the end|by now|these days|nowadays)\b",
    re.I,
)
_WHEN = re.compile(
    r"^\s*when\b|\bwhat (year|month|day|date|time)\b|\bhow long (ago|since|before|after)\b"
    r"|\bwhich (year|month|day)\b|\bsince when\b",
    re.I,
)
_SEASONS = {
    "spring": (3, 5),
    "summer": (6, 8),
    "autumn": (9, 11),
    "fall": (9, 11),
    "winter": (12, 2),
}
_SEASON = re.compile(
    r"\b(?P<which>last|this|next)?\s*(?P<season>spring|summer|autumn|fall|winter)"
    r"(?:\s+(?:of\s+)?(?P<year>\d{4}))?\b",
    re.I,
)


def _month_range(year: int, month: int) -> tuple[int, int]:
    first = dt.date(year, month, 1)
    nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
    return first.toordinal(), nxt.toordinal() - 1


def _latest_month(now: int, month: int) -> tuple[int, int]:
    """The days of the last ``month`` that began on or before day ``now``."""
    today = dt.date.fromordinal(now)
    year = today.year if month <= today.month else today.year - 1
    return _month_range(year, month)


def _relative_range(now: int, what: str, which: str | None, unit: str | None) -> tuple[int, int]:
    """The days "yesterday", "last week", "this month"... mean, said on day ``now``: a
    calendar week (Monday to Sunday), month or year; "this" one runs up to ``now``."""
    if what in ("today", "tonight", "this morning"):
        return now, now
    if what in ("yesterday", "last night"):
        return now - 1, now - 1
    today = dt.date.fromordinal(now)
    recent = (which or "").lower() in ("last", "past")
    if unit in ("week", "weekend"):
        monday = now - today.weekday() - (7 if recent else 0)
        if unit == "weekend":
            return monday + 5, monday + 6
        return monday, min(monday + 6, now)
    if unit == "month":
        year, month = today.year, today.month
        if recent:
            year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        first, last = _month_range(year, month)
        return first, min(last, now)
    year = today.year - 1 if recent else today.year
    return dt.date(year, 1, 1).toordinal(), min(dt.date(year, 12, 31).toordinal(), now)


def time_reference(request: str, now: int | None = None) -> TimeRef:
    """What ``request`` says about time; ``now`` is the story's current day, if it has one.

    Relative references ("last spring", "in June", "yesterday", "last week", "this
    month") need ``now``; without it they are left out.
    """
    asks_when = bool(_WHEN.search(request))
    order: Order | None = None
    if _EARLIEST.search(request):
        order = "earliest"
    elif _LATEST.search(request):
        order = "latest"
    exact = parse_clock(request)
    if exact is not None:
        return TimeRef(exact.day, exact.day, order, asks_when)
    month = _MONTH_YEAR.search(request)
    if month is not None:
        first, last = _month_range(int(month["year"]), _month_number(month["month"]))
        return TimeRef(first, last, order, asks_when)
    season = _SEASON.search(request)
    if season is not None:
        start, end = _SEASONS[season["season"].lower()]
        year = int(season["year"]) if season["year"] else None
        if year is None and now is not None and season["which"]:
            today = dt.date.fromordinal(now)
            shift = {"last": -1, "this": 0, "next": 1}[season["which"].lower()]
            year = today.year + shift
        if year is not None:
            first = dt.date(year, start, 1).toordinal()
            end_year = year + 1 if end < start else year
            last = _month_range(end_year, end)[1]
            return TimeRef(first, last, order, asks_when)
    if now is not None:
        alone = _MONTH_ALONE.search(request)
        if alone is not None:
            first, last = _latest_month(now, _month_number(alone["month"]))
            return TimeRef(first, last, order, asks_when)
        relative = _RELATIVE.search(request)
        if relative is not None:
            first, last = _relative_range(
                now, relative["what"].lower(), relative["which"], relative["unit"]
            )
            return TimeRef(first, last, order, asks_when)
    year_match = _YEAR.search(request)
    if year_match is not None:
        year = int(year_match["year"])
        return TimeRef(
            dt.date(year, 1, 1).toordinal(), dt.date(year, 12, 31).toordinal(), order, asks_when
        )
    return TimeRef(None, None, order, asks_when)
