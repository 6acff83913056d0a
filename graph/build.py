"""The turn graph, wired with LangGraph.

::

    plan ──► character × N (Send) ──► write ──► critique ──┐
      ▲                                  ▲                 │ errors: revise (bounded)
      │                                  └─────────────────┘
      │                                                    │ pass
      └── reject (bounded) ◄── approve (interrupt) ◄───────┘
                                 │     ▲   │ edit
                                 │     └── reread (read the edit; shown again)
                                 │ approve │ edit --now
                                 ▼         ▼
                                 commit ──► END   (the delta the approver saw, verbatim)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from fabula.graph.nodes import approval, drafting, review
from fabula.graph.runtime import TurnContext
from fabula.graph.state import CharacterTask, TurnState
from fabula.graph.threads import story_threads as story_threads
from fabula.graph.threads import thread_id as thread_id

# Given a node (or a routing function) taking ``(state, runtime)``, one that does the same
# with another run-time context (the Agent Server entry builds Fabula's context this way).
NodeWrapper = Callable[[Callable[..., Any]], Callable[..., Any]]


def build_turn_graph(
    checkpointer: BaseCheckpointSaver[int] | None = None,
    *,
    wrap: NodeWrapper | None = None,
    context_schema: type[Any] = TurnContext,
) -> CompiledStateGraph[TurnState, TurnContext, TurnState, TurnState]:
    """Compile the turn graph with ``checkpointer`` (required for human approval).

    ``wrap``, when given, is applied to every node and routing function that reads the
    run-time context, and ``context_schema`` is the context the graph is invoked with.
    """
    w: NodeWrapper = wrap if wrap is not None else (lambda fn: fn)

    g: StateGraph[TurnState, TurnContext, TurnState, TurnState] = StateGraph(
        TurnState, context_schema=context_schema
    )
    g.add_node("plan", w(drafting.plan))
    g.add_node("character", w(drafting.character), input_schema=CharacterTask)
    g.add_node("write", w(drafting.write))
    g.add_node("critique", w(review.critique))
    g.add_node("approve", w(approval.approve))
    g.add_node("reread", w(review.reread))
    g.add_node("commit", w(approval.commit))
    g.add_node("abandon", approval.abandon)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", drafting.fan_out, ["character"])
    g.add_edge("character", "write")
    g.add_conditional_edges("write", drafting.route_after_write, ["critique", "approve"])
    g.add_conditional_edges("critique", w(review.route_after_critique), ["write", "approve"])
    g.add_conditional_edges(
        "approve", w(approval.route_after_approve), ["commit", "reread", "plan", "abandon"]
    )
    g.add_conditional_edges("reread", review.route_after_reread, ["commit", "approve"])
    g.add_edge("commit", END)
    g.add_edge("abandon", END)
    return g.compile(checkpointer=checkpointer)
