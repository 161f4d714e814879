"""begin_turn: a new user message resets the turn's part of the state; the session's part stays.

It also checks the run's knowledge base before anything runs: a run with `context={"kb": "nope"}` ends at once
in an InputError that names it (and the home that was read), which every LangGraph client shows.
"""

from __future__ import annotations

from langgraph.runtime import Runtime as RunContext

from nodes.common import last_question
from nodes.state import TURN_RESET, Context, ExecutorState


def make_begin_turn(catalog):
    """`catalog`: where the run's knowledge base must be."""

    def begin_turn(state: ExecutorState, runtime: RunContext[Context]) -> ExecutorState:
        ctx = runtime.context or Context()
        catalog.require(ctx.kb)
        return {**TURN_RESET, "question": last_question(state)}

    return begin_turn
