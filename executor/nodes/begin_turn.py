"""begin_turn: a new user message resets the turn's part of the state; the session's part stays.

It also checks a knowledge base the run names before anything runs: a run with `context={"kb": "nope"}` ends at
once in an InputError that names it (and the home that was read), which every LangGraph client shows. The
default KB is not checked here: a run that uses no retrieval tool needs none (a lookup in a KB that is not there
ends the turn in that error anyway). A question holding control characters is refused the same way, as `executor
ask` refuses it: its lookups would each fail on them, and the turn said the knowledge base had nothing.
"""

from __future__ import annotations

from langgraph.runtime import Runtime as RunContext

from executor.core.validation import no_control_characters
from executor.nodes.common import last_question
from executor.nodes.state import TURN_RESET, Context, ExecutorState


def checked_context(catalog, context) -> Context:
    """A run's context (a Context, or the dict a client sent) checked: its fields and values (an InputError naming
    the field), and a knowledge base it names (an InputError naming the known ones). `langgraph dev` checks it with
    this before the run writes anything to its thread (executor/agent/studio.py)."""
    ctx = context if isinstance(context, Context) else Context.model_validate(context or {})
    if "kb" in ctx.model_fields_set:
        catalog.require(ctx.kb)
    return ctx


def make_begin_turn(catalog):
    """`catalog`: where the run's knowledge base must be."""

    def begin_turn(state: ExecutorState, runtime: RunContext[Context]) -> ExecutorState:
        checked_context(catalog, runtime.context)
        return {**TURN_RESET, "question": no_control_characters(last_question(state), "the question")}

    return begin_turn
