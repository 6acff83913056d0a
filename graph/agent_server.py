"""The turn graph for LangGraph's Agent Server: ``langgraph.json`` at the repository root
points ``langgraph dev`` (or a deployment) at :data:`graph`.

The server keeps its own threads and checkpoints; Fabula's memory stays in Redis. The
settings come from the environment as for the command line (``FABULA_REDIS_URL``,
``FABULA_MODEL``, ``FABULA_CONSOLIDATE``, ...), read once, when the graph first runs, and
one :class:`~fabula.graph.service.Fabula` then serves every run of the process.

A thread is a session on a branch: a run's input names the story, and optionally the
branch and a direction for the planner (``{"story": "tale", "branch": "main"}``), and
each run on the thread writes that branch's next turn (the branch stays the thread's until
a run names another). Without ``{"auto": true}`` in the run's context, the run stops at the
approval interrupt, whose value is an :class:`~fabula.graph.state.ApprovalRequest` (the
draft, the critic's findings, the preview and the delta approving it commits) carrying
LangChain's ``HITLRequest`` (:mod:`fabula.graph.hitl`); resume it with a ``HITLResponse``
(``Command(resume={"decisions": [{"type": "approve"}]})``) or Fabula's own decision. A
malformed resume fails alone and the turn keeps waiting. The commit is idempotent, so a
resumed run that is retried commits once.

Fabula's errors reach the server's clients with their class and one-line message
(:func:`visible`): ``NotFound: story 'nope' does not exist (story=nope)``, not the
"An internal error occurred" the server shows for exceptions it does not trust.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Callable
from typing import Any

from langgraph.errors import GraphInterrupt
from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from typing_extensions import TypedDict

from fabula.agents.contracts import Decision
from fabula.errors import FabulaError
from fabula.graph.build import build_turn_graph
from fabula.graph.nodes import approval, drafting
from fabula.graph.service import Fabula
from fabula.settings import Settings


class ServerContext(TypedDict, total=False):
    """What a run may pass as its context: ``auto`` approves every turn by itself."""

    auto: bool


_lock = threading.Lock()
_apps: dict[int, Fabula] = {}  # by event loop: Redis connections belong to the loop using them


def _open() -> Fabula:
    """The application, with what the CLI makes when first used made now: the token
    counter (it reads and decodes a file) and the turn graph. On the server's event loop
    that reading would block, and langgraph-api's guard fails the run (``BlockingError``)."""
    app = Fabula.from_settings(Settings.from_env())
    app.counter.count("")
    _ = app.graph
    return app


async def application() -> Fabula:
    """This event loop's application, opened from the environment on first use (in a worker
    thread: opening reads files, which must not block the server's loop)."""
    key = id(asyncio.get_running_loop())
    if key not in _apps:
        app = await asyncio.to_thread(_open)
        with _lock:
            _apps.setdefault(key, app)
    return _apps[key]


def _any_fabula() -> Fabula:
    """An application for a synchronous node (they read settings and roles, not Redis)."""
    with _lock:
        if not _apps:
            _apps[0] = _open()
        return next(iter(_apps.values()))


def _auto(runtime: Runtime[Any]) -> bool:
    given = runtime.context
    return bool(given.get("auto", False)) if isinstance(given, dict) else False


_NEW_TURN: dict[str, Any] = {
    "attempt": -1,
    "notes": [],
    "draft": None,
    "findings": [],
    "draft_findings": [],
    "preview": None,
    "delta": None,
    "edit": None,
    "edit_error": None,
    "edit_refused": None,
    "revisions": 0,
    "revision_kept": False,
    "outcome": None,
    "unsynced": None,
}
"""What a thread's previous turn leaves that the next must not see (the state it starts from)."""

_TURN_DONE: dict[str, Any] = {"direction": None, "parts": Overwrite({})}
"""What a turn that ended forgets: the direction and the parts were given for it alone."""


async def _located(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The state a run's first node (the planner) plans from, and the update that keeps it.

    A thread is a session on a branch: each run writes the branch's next turn, so the turn
    is located again from the story (its head + 1) at every plan. Where the thread's last
    turn ended (or the story moved on, or the run names another branch), what that turn
    left is cleared first; a re-plan after a rejection keeps its notes."""
    branch = state.get("branch") or "main"
    reader = (await application()).read(state["story"], branch)
    await reader.require()
    turn = await reader.head() + 1
    where = {"branch": branch, "turn": turn}
    same = state.get("turn") == turn and state.get("branch") == branch
    if same and not state.get("outcome"):
        return {**state, **where}, where
    update = {**_NEW_TURN, **where, "usage": Overwrite({}), "proposals": Overwrite([])}
    return {**state, **_NEW_TURN, **where, "usage": {}, "proposals": []}, update


class _Visible:
    """Marks a Fabula error whose words the Agent Server passes to its clients."""


_visible_classes: dict[type[FabulaError], type[FabulaError]] = {}


def visible(error: FabulaError) -> FabulaError:
    """``error`` as the Agent Server shows it to a client: the same class name, one-line
    message and context, still an instance of its Fabula class, and also a ``ValueError``
    (the server passes the message of built-in errors it trusts, and replaces any other's
    with "An internal error occurred"). The HTTP status is the class's ``http_status``."""
    cls = type(error)
    if issubclass(cls, _Visible):
        return error
    shown = _visible_classes.get(cls)
    if shown is None:
        body = {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
        shown = type(cls.__name__, (cls, _Visible, ValueError), body)
        _visible_classes[cls] = shown
    copy = shown.__new__(shown)
    copy.__dict__.update(error.__dict__)
    copy.args = error.args
    return copy


_SHARED = (
    "story",
    "branch",
    "turn",
    "direction",
    "attempt",
    "played",
    "plan",
    "draft",
    "findings",
    "preview",
    "delta",
    "build_ms",
    "edit_error",
    "edit_refused",
    "notes",
    "usage",
)
"""What the approval and the commit of a turn read: the state a shared pending turn holds."""


async def share_pending(app: Fabula, state: dict[str, Any]) -> None:
    """Put the turn this server waits on where every other interface looks for pending
    turns: Fabula's own checkpoint of it (thread ``story/branch/turn``, in Redis), waiting
    on the same approval with the same draft and delta. So ``fabula pending`` lists it and
    ``fabula approve`` (or the studio) decides it; whichever side decides first commits,
    and the other's approval of the same delta then finds it committed (``duplicate``).

    Run in a context of its own: inside this node's, LangGraph would take Fabula's graph
    for a subgraph of the server's run."""
    values: dict[str, Any] = {k: state[k] for k in _SHARED if k in state}
    if "usage" in values:  # summed by its reducer: shared again, it is replaced, not added
        values["usage"] = Overwrite(values["usage"])
    # as if an edit had just been read and not committed: the graph routes to approval
    values["decision"] = Decision(action="edit")

    adopted = app.adopt_pending(state["story"], state["branch"], state["turn"], values)
    await asyncio.create_task(adopted, context=contextvars.Context())


def _with_fabula(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run with Fabula's run-time context in place of the server's, its Fabula
    errors shown to the client (:func:`visible`)."""

    async def async_node(state: Any, runtime: Runtime[Any]) -> Any:
        app = await application()
        context = runtime.override(context=app.context(auto=_auto(runtime)))
        try:
            if fn is approval.approve:
                try:
                    return await fn(state, context)
                except GraphInterrupt:
                    await share_pending(app, dict(state))
                    raise
            if fn is not drafting.plan:
                update = await fn(state, context)
                return {**update, **_TURN_DONE} if fn is approval.commit else update
            located, kept = await _located(dict(state))
            return {**kept, **(await fn(located, context))}
        except FabulaError as error:
            raise visible(error) from error

    def sync_node(state: Any, runtime: Runtime[Any]) -> Any:
        context = _any_fabula().context(auto=_auto(runtime))
        try:
            return fn(state, runtime.override(context=context))
        except FabulaError as error:
            raise visible(error) from error

    node = async_node if inspect.iscoroutinefunction(fn) else sync_node
    node.__name__ = fn.__name__
    node.__doc__ = fn.__doc__
    return node


graph = build_turn_graph(None, wrap=_with_fabula, context_schema=ServerContext)
