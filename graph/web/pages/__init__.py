"""The studio's pages (server-rendered with Jinja2; htmx and a small script enhance them).

Every form works without JavaScript: it posts, and the answer redirects (303) to the page
that shows the result, with a short notice; a form refused is sent back to its page with
one line saying why (:func:`~.forms.page` shows it). With JavaScript, htmx swaps fragments
in place (the story's text, the minds at another turn, a run's progress, a chat's next
exchange) and the story page listens to the branch's event stream. Every piece of story
text is escaped by the templates.

The pages live by what they act on, as the API's routes (:mod:`fabula.graph.web.api`) and
the service's parts do: :mod:`.stories` (the list, a story, creating and deleting one),
:mod:`.characters` (a card, its picture, playing it), :mod:`.turns` (running, the played
parts, deciding a pending turn, alternatives), :mod:`.branches` (fork, rewind, retcon),
:mod:`.reads` (minds, plot, recall, evidence, usage), :mod:`.lore` (the lore and its World
Info settings), :mod:`.chat`, :mod:`.town` (a story run in ticks: the Town and the Spread)
and :mod:`.access` (login, the API's documentation); :mod:`.forms` is what every page
does with a request.
"""

from __future__ import annotations

from fastapi import APIRouter

from fabula.graph.web.pages import (
    access,
    branches,
    characters,
    chat,
    lore,
    reads,
    stories,
    town,
    turns,
)

router = APIRouter(include_in_schema=False)
for _part in (stories, characters, turns, reads, lore, chat, branches, town, access):
    router.include_router(_part.router)
