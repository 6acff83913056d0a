"""The turn graph for LangGraph's Agent Server: ``langgraph.json`` at the repository root
points ``langgraph dev`` (or a deployment) at :data:`graph`.

The server keeps its own threads and checkpoints; Fabula's memory stays in Redis. The
settings come from the environment as for the command line (``FABULA_REDIS_URL``,
``FABULA_MODEL``, ``FABULA_CONSOLIDATE``, ...), read once, when the graph first runs, and
one :class:`~fabula.graph.service.Fabula` then serves every run of the process.

A run's input names the story, and optionally the branch and a direction for the planner:
``{"story": "tale"}``. The turn written is the branch's next. Without ``{"auto": true}``
in the run's context, the run stops at the approval interrupt, whose value is an
:class:`~fabula.graph.state.ApprovalRequest` (the draft, the critic's findings, the preview
and the delta approving it commits); resume it with
``Command(resume={"action": "approve"})`` (or ``edit`` with ``text``, or ``reject`` with
``note``). The commit is idempotent, so a resumed run that is retried commits once.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any, TypedDict

from langgraph.runtime import Runtime

from fabula.graph.build import build_turn_graph
from fabula.graph.service import Fabula
from fabula.settings import Settings


class ServerContext(TypedDict, total=False):
    """What a run may pass as its context: ``auto`` approves every turn by itself."""

    auto: bool


_lock = threading.Lock()
_apps: dict[int, Fabula] = {}  # by event loop: Redis connections belong to the loop using them


def _open() -> Fabula:
    return Fabula.from_settings(Settings.from_env())


async def _fabula() -> Fabula:
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


async def _located(state: dict[str, Any]) -> dict[str, Any]:
    """The input with its branch and turn filled in (the branch's next turn)."""
    branch = state.get("branch") or "main"
    reader = (await _fabula()).read(state["story"], branch)
    await reader.require()
    return {**state, "branch": branch, "turn": await reader.head() + 1}


def _with_fabula(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run with Fabula's run-time context in place of the server's."""

    async def async_node(state: Any, runtime: Runtime[Any]) -> Any:
        app = await _fabula()
        context = runtime.override(context=app.context(auto=_auto(runtime)))
        if "turn" in state and "branch" in state:
            return await fn(state, context)
        # the run's input (the first node's state) names only the story: locate it, and
        # keep where it was located in the state for the nodes after
        located = await _located(dict(state))
        update: dict[str, Any] = await fn(located, context)
        return {**update, "branch": located["branch"], "turn": located["turn"]}

    def sync_node(state: Any, runtime: Runtime[Any]) -> Any:
        context = _any_fabula().context(auto=_auto(runtime))
        return fn(state, runtime.override(context=context))

    node = async_node if inspect.iscoroutinefunction(fn) else sync_node
    node.__name__ = fn.__name__
    node.__doc__ = fn.__doc__
    return node


graph = build_turn_graph(None, wrap=_with_fabula, context_schema=ServerContext)
