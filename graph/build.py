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

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from fabula.graph import nodes
from fabula.graph.runtime import TurnContext
from fabula.graph.state import CharacterTask, TurnState

__all__ = ["build_turn_graph", "thread_id"]


def thread_id(story: str, branch: str, turn: int) -> str:
    """The checkpoint thread of one turn of one branch."""
    return f"{story}/{branch}/{turn}"


def build_turn_graph(
    checkpointer: BaseCheckpointSaver[int] | None = None,
) -> CompiledStateGraph[TurnState, TurnContext, TurnState, TurnState]:
    """Compile the turn graph with ``checkpointer`` (required for human approval)."""
    g: StateGraph[TurnState, TurnContext, TurnState, TurnState] = StateGraph(
        TurnState, context_schema=TurnContext
    )
    g.add_node("plan", nodes.plan)
    g.add_node("character", nodes.character, input_schema=CharacterTask)  # type: ignore[call-overload]
    g.add_node("write", nodes.write)
    g.add_node("critique", nodes.critique)
    g.add_node("approve", nodes.approve)
    g.add_node("reread", nodes.reread)
    g.add_node("commit", nodes.commit)
    g.add_node("abandon", nodes.abandon)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", nodes.fan_out, ["character"])
    g.add_edge("character", "write")
    g.add_edge("write", "critique")
    g.add_conditional_edges("critique", nodes.route_after_critique, ["write", "approve"])
    g.add_conditional_edges(
        "approve", nodes.route_after_approve, ["commit", "reread", "plan", "abandon"]
    )
    g.add_conditional_edges("reread", nodes.route_after_reread, ["commit", "approve"])
    g.add_edge("commit", END)
    g.add_edge("abandon", END)
    return g.compile(checkpointer=checkpointer)
