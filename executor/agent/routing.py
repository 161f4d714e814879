"""Where the executor graph goes next: small pure functions of the state and the run's context.

These are the retrieval rules in code. With guards on, a PRECISE result or a
spent lookup budget ends the turn in `answer`, whatever the LLM wants next.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage

from executor.nodes.settle import found_nothing_new, stall_reason
from executor.nodes.state import Context, ExecutorState

# With the rules on, rounds that run no lookup (graph navigation, blocked or malformed calls) are
# bounded too: the budget's rounds plus a few.
EXTRA_ROUNDS = 3


def turn_is_over(state: ExecutorState, ctx: Context) -> bool:
    """The turn must end now: a PRECISE result, the lookup budget spent, a round that did not advance the turn
    (settle took over, or its lookups found only pages the turn already had), or too many LLM rounds."""
    rounds = state.get("rounds", 0)
    if rounds >= ctx.max_rounds:
        return True
    if not ctx.guards:
        return False
    return (
        bool(state.get("precise"))
        or bool(state.get("settled"))
        or found_nothing_new(state)
        or state.get("attempted_lookups", 0) >= ctx.lookup_budget
        or rounds >= ctx.lookup_budget + EXTRA_ROUNDS
    )


def after_begin_turn(state: ExecutorState, ctx: Context) -> str:
    """A run without a question (no messages, a blank one, an image only) searches nothing: straight to the answer."""
    return "executor" if state.get("question") else "answer"


def wants_tools(state: ExecutorState) -> bool:
    messages = state.get("messages")
    last = messages[-1] if messages else None
    return isinstance(last, AIMessage) and bool(last.tool_calls or last.invalid_tool_calls)


def after_executor(state: ExecutorState, ctx: Context) -> str:
    """A round that does not advance the turn (nothing but repeats, or still no knowledge read) is settled by the
    graph instead of run (executor/nodes/settle.py)."""
    if not wants_tools(state):
        return "answer"
    return "settle" if ctx.guards and stall_reason(state) else "guard"


def after_settle(state: ExecutorState, ctx: Context) -> str:
    """The lookup of the question settle proposed runs; a turn that has read knowledge answers."""
    return "call_tools" if state.get("pending") else "answer"


def after_guard(state: ExecutorState, ctx: Context) -> str:
    if state.get("pending"):
        return "call_tools"
    return "answer" if turn_is_over(state, ctx) else "executor"


def after_call_tools(state: ExecutorState, ctx: Context) -> str:
    if state.get("failure"):
        return "fail"
    if state.get("pending_expansions"):
        return "graph_expand"
    return "answer" if turn_is_over(state, ctx) else "executor"


def after_graph_expand(state: ExecutorState, ctx: Context) -> str:
    return "answer" if turn_is_over(state, ctx) else "executor"


def recursion_limit(ctx: Context) -> int:
    """Enough supersteps for `max_rounds` full rounds (executor, guard, call_tools, graph_expand) plus the ends,
    so that the rounds bound, not LangGraph's recursion error, is what stops a model that never stops."""
    return 4 * ctx.max_rounds + 6
