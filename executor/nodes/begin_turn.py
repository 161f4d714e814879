"""check_run and begin_turn: a run's input is checked before the run writes anything; a new user message resets
the turn's part of the state, the session's part stays.

`check_run` refuses a run whose context names a knowledge base that is not there (an InputError that names it
and the home that was read, which every LangGraph client shows), or that brings a question holding control
characters or longer than the query limit (`max_query_chars`), as `executor ask` refuses it (its lookups would each
fail on them, and the turn said the knowledge base had nothing). The default KB is not checked here: a run that
uses no retrieval tool needs none (a lookup in a KB that is not there ends the turn in that error anyway).

A refused run leaves its thread exactly as it was: its head (the newest checkpoint), that checkpoint's values and
its next task. LangGraph writes a run's input to the thread before any node runs, and keeps the checkpoints of a run
that fails under every durability mode, as the thread's newest whatever checkpoint the run started from (a fork, or
a thread interrupted before `begin_turn`). So the graph calls `check_run` before the run starts
(executor/agent/graph.py, `CheckedGraph`), with the messages of the checkpoint the run starts from.

A run can reach `begin_turn` without bringing a question through its input: a client's Command (`goto:
"begin_turn"`) or a resume after `update_state`. begin_turn's edge checks the question again (`make_check_turn`): a
refused one goes to `take_back`, which puts the conversation back as begin_turn found it, then to `refuse`, which
raises the error.
"""

from __future__ import annotations

from typing import cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

# internal: the read a task's own conditional edges use (langgraph/pregel/_read.py); `fresh=False` gives the
# channels as the step started, without this task's writes. Pinned by pyproject (langgraph <1.3) and exercised by
# tests/integration/test_hostile18.py (a question sent as a Command).
from langgraph._internal._constants import CONFIG_KEY_READ
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.types import Command, Send
from typing_extensions import TypedDict

from executor.core.errors import InputError
from executor.core.validation import no_control_characters, within_limit
from executor.nodes.common import last_question, text_of
from executor.nodes.state import TURN_RESET, Context, ExecutorState

TAKE_BACK = "take_back"
REFUSE = "refuse"


class Refusal(TypedDict):
    """What a refused run's `take_back` is sent: the error, the conversation as begin_turn found it less the questions
    that fail, and the turn's fields as they were."""

    error: str
    messages: list[AnyMessage]
    turn: dict


def checked_context(catalog, context) -> Context:
    """A run's context (a Context, or the dict a client sent) checked: its fields and values (an InputError naming
    the field), and a knowledge base it names (an InputError naming the known ones). `langgraph dev` checks it with
    this before the run writes anything to its thread (executor/agent/studio.py)."""
    ctx = context if isinstance(context, Context) else Context.model_validate(context or {})
    if "kb" in ctx.model_fields_set:
        catalog.require(ctx.kb)
    return ctx


def question_check(max_query_chars: int):
    """The check a question passes before a turn answers it (`max_query_chars`: the longest a lookup takes)."""

    def check_question(text: str) -> None:
        no_control_characters(text, "the question")
        within_limit(text, max_query_chars, "the query")  # in the words `executor ask` refuses it with

    return check_question


def make_check_run(catalog, max_query_chars: int):
    """`catalog`: where the run's knowledge base must be; `max_query_chars`: the longest question a lookup takes."""
    check_question = question_check(max_query_chars)

    def check_run(before: list[AnyMessage], brought, context, goto: list[str]) -> None:
        """Raises the InputError a run is refused with. `before`: the messages of the checkpoint the run starts from;
        `brought`: the messages its input (or its Command's update) sends, as sent, or None for a run that sends
        none (a resume, a Command's goto), whose question begin_turn's edge checks; `goto`: the nodes a client's
        Command starts the run at. The messages the run brings are those not in the thread before it, or there with
        other content (the same `id`)."""
        checked_context(catalog, context)
        was = {m.id: m for m in before}
        # the thread's reducer: the conversation the turn would read
        merged = cast("list[AnyMessage]", add_messages([*before], brought or []))
        new = [m for m in merged if was.get(m.id) != m]
        # a Command may start a turn only where a run does, with its question: started elsewhere, or with none, the
        # turn answered the thread's last question "nothing found" (hostile19b findings 4 and 5: `goto` executor,
        # answer; `fail` blamed a backend)
        for node in goto:
            if node != "begin_turn" or not any(isinstance(m, HumanMessage) for m in new):
                raise InputError(NOT_A_START.format(node=node))
        if brought is None:
            return
        for message in new:
            if isinstance(message, HumanMessage):
                check_question(text_of(message))
        if new and merged[-1] in new and isinstance(merged[-1], AIMessage | ToolMessage):
            # the turn found no question after the client's own answer, call or result and answered "nothing on
            # this question", looking nothing up (hostile19b finding 7, hostile22 finding 1: a chat client replaying
            # a history, a few-shot prefix). A chat model would continue the assistant's message; this agent
            # answers the user's question, which must come last
            raise InputError(ENDS_IN_AN_ANSWER)
        # the question the turn would answer, though an earlier run (or `update_state`) put it there
        check_question(last_question({"messages": merged}))

    return check_run


def make_check_turn(max_query_chars: int):
    """begin_turn's edge, before the turn's own routing: the question checked again, for a run that reaches
    begin_turn without bringing it (`check_run` checked what a run brings before it started): a client's
    `Command(goto="begin_turn")`, or a resume, after `update_state` put the question there; the turn answered a
    question holding control characters ("nothing on this question"). Refused, it goes to `take_back` with the
    conversation as the step found it less the questions that fail, and the turn's fields as begin_turn found them.
    Returns None for a question that passes."""
    check_question = question_check(max_query_chars)

    def failing(message: AnyMessage) -> bool:
        try:
            check_question(text_of(message))
        except InputError:
            return True
        return False

    def check_turn(state: ExecutorState, config: RunnableConfig) -> Send | None:
        try:
            check_question(state.get("question") or "")
        except InputError as exc:
            unmerged = (config.get("configurable") or {})[CONFIG_KEY_READ]
            kept = [m for m in unmerged("messages", False) or [] if not (isinstance(m, HumanMessage) and failing(m))]
            turn = {k: v for k in ("question", *TURN_RESET) if (v := unmerged(k, False)) is not None}
            return Send(TAKE_BACK, Refusal(error=str(exc), messages=kept, turn=turn))
        return None

    return check_turn


NOT_A_START = "a run cannot start at {node!r}: send the question as the run's input"
NO_TURN = (
    "a Command's update with no goto starts no turn: send the question as the run's input (or the Command with "
    "goto 'begin_turn')"
)
# a run with no input on a thread whose turn is over (said by the graph, and by `langgraph dev` before the run)
NO_STOPPED_RUN = (
    "has no stopped run to continue (its last turn is over; a question written into it by a state edit is not asked)"
)
NOTHING_TO_CONTINUE = f"the thread {NO_STOPPED_RUN}: send the question as the run's input"
NO_RESUME = (
    "this graph asks nothing to resume with (a Command's resume): to continue a stopped run, run its thread with no "
    "input; to ask, send the question as the run's input"
)
ENDS_IN_AN_ANSWER = (
    "the run's input ends in an assistant message, a tool call or a tool's result: send the question as its last "
    "message (the agent answers it and makes its own lookups)"
)


def take_back(refusal: Refusal) -> Command:
    """The conversation and the turn's fields as begin_turn found them, then `refuse` with the error (a Send: the
    error is no part of the state). Reached any other way (a client's `Command(goto="take_back")`, which hands it
    the thread's state) it refuses the run in one line."""
    if set(refusal) != set(Refusal.__annotations__):
        raise InputError(NOT_A_START.format(node=TAKE_BACK))
    restored = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *refusal["messages"]]
    update = {**refusal["turn"], "messages": restored}
    return Command(update=update, goto=Send(REFUSE, refusal["error"]))


def refuse(error: str) -> None:
    """The refused run ends in its InputError (`take_back` has put the turn back as begin_turn found it). Reached any
    other way (`Command(goto="refuse")` or a resume, which hand it the thread's state) it says so, never the state."""
    raise InputError(error if isinstance(error, str) else NOT_A_START.format(node=REFUSE))


def begin_turn(state: ExecutorState) -> ExecutorState:
    return {**TURN_RESET, "question": last_question(state)}
