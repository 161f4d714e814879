"""check_input and begin_turn: a run's input is checked before the turn starts; a new user message resets the
turn's part of the state, the session's part stays.

`check_input` refuses a run whose context names a knowledge base that is not there (an InputError that names it
and the home that was read, which every LangGraph client shows), or whose question holds control characters, as
`executor ask` refuses it (its lookups would each fail on them, and the turn said the knowledge base had nothing).
The default KB is not checked here: a run that uses no retrieval tool needs none (a lookup in a KB that is not
there ends the turn in that error anyway).

A refused run leaves its thread as it was. LangGraph writes a run's input to the thread before the first node
runs, so a node that raised left the refused question in the checkpoint, and the next turn read a question nobody
answered. `check_input` removes the question instead and sends the error to `refuse`, which raises it: the run
ends in the error, and the thread's values are those from before the run (the error travels in the `Send`, which
is no part of the state).
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage, RemoveMessage
from langgraph.runtime import Runtime as RunContext
from langgraph.types import Command, Send

from executor.core.errors import InputError
from executor.core.validation import no_control_characters
from executor.nodes.common import last_question
from executor.nodes.state import TURN_RESET, Context, ExecutorState

REFUSE = "refuse"


def checked_context(catalog, context) -> Context:
    """A run's context (a Context, or the dict a client sent) checked: its fields and values (an InputError naming
    the field), and a knowledge base it names (an InputError naming the known ones). `langgraph dev` checks it with
    this before the run writes anything to its thread (executor/agent/studio.py)."""
    ctx = context if isinstance(context, Context) else Context.model_validate(context or {})
    if "kb" in ctx.model_fields_set:
        catalog.require(ctx.kb)
    return ctx


def make_check_input(catalog):
    """`catalog`: where the run's knowledge base must be."""

    def check_input(state: ExecutorState, runtime: RunContext[Context]) -> Command:
        try:
            checked_context(catalog, runtime.context)
            no_control_characters(last_question(state), "the question")
        except InputError as exc:
            messages = state.get("messages") or []
            # the run's input is the user's message at the end; a run that brought none (an empty input) removes
            # nothing, and an earlier turn's question stays
            last = messages[-1] if messages else None
            removed = [RemoveMessage(id=last.id)] if isinstance(last, HumanMessage) and last.id else []
            return Command(update={"messages": removed}, goto=Send(REFUSE, str(exc)))
        return Command(goto="begin_turn")

    return check_input


def refuse(error: str) -> None:
    """The refused run ends in its InputError (check_input has taken its question back out of the thread)."""
    raise InputError(error)


def begin_turn(state: ExecutorState) -> ExecutorState:
    return {**TURN_RESET, "question": last_question(state)}
