"""The executor graph, top to bottom.

    START → begin_turn → executor ─tool calls→ guard ─allowed→ call_tools ─REFERENCE / thin→ graph_expand
                            ↑          └─no tool calls→ answer → END          │           │
                            └────── (more to do, turn not over) ──────────────┴───────────┘
    PRECISE, a spent lookup budget, or too many rounds: → answer; no question (blank, or none): begin_turn → answer
    a round that does not advance the turn: executor → settle (its calls not run; the question looked up when
    nothing was) → call_tools → answer
    a store or the configuration failed: call_tools → fail (the run raises the error)
    (START's edge is check_input: a refused run (an unknown KB, control characters) → take_back, which puts the
    thread back as it was before the run → refuse, which raises the error; begin_turn's edge checks the question
    again, for a client's Command that starts the run at begin_turn, past START)

The rules live in `executor/agent/routing.py` (where to go) and `executor/nodes/guard.py`
(what may run); `executor/nodes/call_tools.py` runs the approved calls through the tool
table, whose lookup applies the session's document and domain dedup.
The composition root builds it (`agent.runtime.Runtime.app`), handing each node
the collaborators it uses.
"""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime as RunContext
from langgraph.types import Send

from executor.agent import routing
from executor.nodes.answer import fail, make_answer
from executor.nodes.begin_turn import (
    REFUSE,
    TAKE_BACK,
    begin_turn,
    make_check_input,
    make_check_turn,
    refuse,
    take_back,
)
from executor.nodes.call_tools import make_call_tools
from executor.nodes.executor import make_executor
from executor.nodes.graph_expand import make_graph_expand
from executor.nodes.guard import make_guard
from executor.nodes.settle import make_settle
from executor.nodes.state import Context, ExecutorInput, ExecutorOutput, ExecutorState
from executor.stores.catalog import Catalog
from executor.stores.memory import ActionMemory
from executor.tools.registry import ToolTable


def _checked(check, rule):
    """begin_turn's path: the question's check first (a refusal is a Send to `take_back`), then the routing rule."""

    def path(state: ExecutorState, runtime: RunContext[Context], config: RunnableConfig) -> str | Send:
        return check(state, config) or rule(state, runtime.context or Context())

    path.__name__ = rule.__name__
    return path


def _route(rule):
    """A routing rule of (state, context) as a LangGraph path function."""

    def path(state: ExecutorState, runtime: RunContext[Context]) -> str:
        return rule(state, runtime.context or Context())

    path.__name__ = rule.__name__
    return path


def build_graph(
    tools: ToolTable,
    catalog: Catalog,
    memory: ActionMemory,
    read_document: Callable[[str, str], str],
    model: BaseChatModel,
    mode: str,
    checkpointer=None,
    *,
    max_query_chars: int,
):
    """`tools`: the LLM's tools (`tools.agent`) and the log of their calls; `catalog`: the knowledge bases;
    `memory`: the action memory (`tools.expand` widens a lookup through the graph); `read_document(kb, doc_key)`: a
    document's text, for the offline answer; `mode`: "llm" or "offline"; `max_query_chars`: the longest question a run
    may bring (a longer one is refused, as `executor ask` refuses it)."""
    graph = StateGraph(ExecutorState, context_schema=Context, input_schema=ExecutorInput, output_schema=ExecutorOutput)
    # a refused run's input is taken back out of the thread (executor/nodes/begin_turn.py); their input is what
    # the Send carries, not the state
    graph.add_node(TAKE_BACK, take_back, destinations=(REFUSE,))  # pyright: ignore[reportArgumentType]
    graph.add_node(REFUSE, refuse)  # pyright: ignore[reportArgumentType]
    graph.add_node("begin_turn", begin_turn)
    graph.add_node("executor", make_executor(model, catalog, tools.agent))
    # these three take (state, runtime, config): LangGraph passes both, its StateNode types have no such signature
    graph.add_node("settle", make_settle(tools))  # pyright: ignore[reportArgumentType]
    graph.add_node("guard", make_guard(tools))  # pyright: ignore[reportArgumentType]
    graph.add_node("call_tools", make_call_tools(tools, memory))  # pyright: ignore[reportArgumentType]
    graph.add_node("graph_expand", make_graph_expand(tools.expand, memory))
    graph.add_node("answer", make_answer(model, mode, read_document=read_document))
    graph.add_node("fail", fail)

    # an edge, not a node: only START's own step sees the thread both with the run's input and without it
    graph.add_conditional_edges(START, make_check_input(catalog, max_query_chars), ["begin_turn", TAKE_BACK])
    # checked again: a client's Command can start a run at begin_turn, past START
    graph.add_conditional_edges(
        "begin_turn",
        _checked(make_check_turn(max_query_chars), routing.after_begin_turn),
        ["executor", "answer", TAKE_BACK],
    )
    graph.add_conditional_edges("executor", _route(routing.after_executor), ["guard", "settle", "answer"])
    graph.add_conditional_edges("settle", _route(routing.after_settle), ["call_tools", "answer"])
    graph.add_conditional_edges("guard", _route(routing.after_guard), ["call_tools", "executor", "answer"])
    graph.add_conditional_edges(
        "call_tools", _route(routing.after_call_tools), ["graph_expand", "executor", "answer", "fail"]
    )
    graph.add_conditional_edges("graph_expand", _route(routing.after_graph_expand), ["executor", "answer"])
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=checkpointer, name="executor")
