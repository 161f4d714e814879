"""The executor graph, top to bottom.

    START → begin_turn → executor ─tool calls→ guard ─allowed→ call_tools ─REFERENCE / thin→ graph_expand
                            ↑          └─no tool calls→ answer → END          │           │
                            └────── (more to do, turn not over) ──────────────┴───────────┘
    PRECISE, a spent lookup budget, or too many rounds: → answer; no question (blank, or none): begin_turn → answer
    a round that does not advance the turn: executor → settle (its calls not run; the question looked up when
    nothing was) → call_tools → answer
    a store or the configuration failed: call_tools → fail (the run raises the error)
    (a run is checked before it starts (`CheckedGraph`): a refused run (an unknown KB, control characters) raises
    before it writes anything to its thread; begin_turn's edge checks the question again, for a run that reaches it
    without bringing one (a client's Command, a resume): refused, → take_back, which puts the turn back as
    begin_turn found it → refuse, which raises the error; `update_state` of the conversation at an interrupt before
    call_tools (Studio's edit of a tool call) is written before the guard, which checks the edited calls again)

The rules live in `executor/agent/routing.py` (where to go) and `executor/nodes/guard.py`
(what may run); `executor/nodes/call_tools.py` runs the approved calls through the tool
table, whose lookup applies the session's document and domain dedup.
The composition root builds it (`agent.runtime.Runtime.app`), handing each node
the collaborators it uses.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from typing import cast

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs

# internal: where LangGraph keeps a run's Runtime in its config, and reads it from to inject `runtime`
# (langgraph/_internal/_runnable.py); pinned by pyproject (langgraph <1.3), as begin_turn's CONFIG_KEY_READ
from langgraph._internal._constants import CONFIG_KEY_RUNTIME
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Send, StateSnapshot, StateUpdate

from executor.agent import routing
from executor.core.errors import InputError, printable
from executor.nodes.answer import fail, make_answer
from executor.nodes.begin_turn import (
    NO_RESUME,
    NO_TURN,
    NOTHING_TO_CONTINUE,
    REFUSE,
    TAKE_BACK,
    begin_turn,
    make_check_run,
    make_check_turn,
    refuse,
    take_back,
)
from executor.nodes.call_tools import make_call_tools
from executor.nodes.executor import make_executor
from executor.nodes.graph_expand import make_graph_expand
from executor.nodes.guard import make_guard
from executor.nodes.memory_branch import check_session_edit
from executor.nodes.settle import make_settle
from executor.nodes.state import Context, ExecutorInput, ExecutorOutput, ExecutorState
from executor.stores.catalog import Catalog
from executor.stores.memory import ActionMemory
from executor.tools.registry import ToolTable


def _context(config: RunnableConfig) -> Context:
    """The run's context, read from the config as LangGraph's own injection of `runtime` reads it. LangGraph's
    `update_state` evaluates the edges of the node it writes as (Studio's edit at an interrupt) with no runtime there,
    and a path taking `runtime` was refused "Missing required config key 'N/A' for 'after_guard'" (hostile22 finding
    3; its injection takes no default): the defaults then, as for a run that sends no context."""
    runtime = (config.get("configurable") or {}).get(CONFIG_KEY_RUNTIME)
    return (runtime.context if runtime is not None else None) or Context()


def _checked(check, rule):
    """begin_turn's path: the question's check first (a refusal is a Send to `take_back`), then the routing rule."""

    def path(state: ExecutorState, config: RunnableConfig) -> str | Send:
        return check(state, config) or rule(state, _context(config))

    path.__name__ = rule.__name__
    return path


def _route(rule):
    """A routing rule of (state, context) as a LangGraph path function."""

    def path(state: ExecutorState, config: RunnableConfig) -> str:
        return rule(state, _context(config))

    path.__name__ = rule.__name__
    return path


def _brought(run_input) -> list | None:
    """The messages a run's input, or its Command's update, sends (as sent); None for a run that sends none."""
    if isinstance(run_input, Command):
        # every shape of update, read as LangGraph writes it (langgraph/types.py)
        sent = [value for key, value in run_input._update_as_tuples() if key == "messages"]
        return [m for value in sent for m in (value if isinstance(value, list) else [value])] if sent else None
    if isinstance(run_input, Mapping):
        return run_input.get("messages") or []
    return None


def _goto(run_input) -> list[str]:
    """The nodes a client's Command starts the run at (a name, a Send, or a list of them; None for none, as
    langgraph-api builds a Command sent without one: that was refused as a run starting at 'None')."""
    goto = run_input.goto if isinstance(run_input, Command) and run_input.goto is not None else ()
    return [g.node if isinstance(g, Send) else str(g) for g in (goto if isinstance(goto, list | tuple) else [goto])]


class CheckedGraph(CompiledStateGraph):
    """The compiled graph, which refuses a run (`check_run`, executor/nodes/begin_turn.py) before the run writes
    anything to its thread. LangGraph writes a run's input, and under every durability mode the checkpoints of a run
    that fails, as the thread's newest checkpoint whatever checkpoint the run started from: refused inside the graph,
    a run from an earlier checkpoint made that checkpoint's conversation the thread's, and a run on a thread
    interrupted before begin_turn left `refuse` as its next task. Every way to run the graph (invoke, ainvoke,
    astream_events, langgraph-api's runs) goes through `stream` or `astream`, which read the checkpoint the run starts
    from once, for both checks: that it exists (`missing_checkpoint`) and what the run brings to it (`check_run`)."""

    def __init__(self, *, check_run: Callable, **kwargs):
        super().__init__(**kwargs)
        self.check_run = check_run  # an argument, so `copy` keeps it: langgraph-api copies the graph for each run

    def _on_thread(self, config: RunnableConfig | None) -> bool:
        configurable = merge_configs(self.config, config).get("configurable") or {}
        return (
            self._resolve_checkpointer(merge_configs(self.config, config)) is not None and "thread_id" in configurable
        )

    def _checked(self, input, config: RunnableConfig | None, state: StateSnapshot | None, context) -> None:
        """Raises the InputError the run is refused with; `state`: the checkpoint it starts from, None off a thread."""
        if isinstance(input, Command) and input.resume is not None:
            # no node of this graph asks anything (LangGraph's `interrupt()`): a value to resume with is read by
            # nobody, and a client sending one to continue a thread stopped at a breakpoint was told "a run cannot
            # start at 'None'" (hostile22 finding 12)
            raise InputError(NO_RESUME)
        if isinstance(input, Command):
            check_session_edit(dict(input._update_as_tuples()))  # a state edit, as `update_state`'s is checked
        brought = _brought(input)
        if (
            isinstance(input, Command)
            and brought
            and not _goto(input)
            and "begin_turn" not in (state.next if state else ())
        ):
            # messages a Command writes with no node to go to: no turn reads them (the thread is finished, or stopped
            # mid-turn), and the run returned the thread's last answer as if it answered them
            raise InputError(NO_TURN)
        if state is not None:
            missing_checkpoint(merge_configs(self.config, config), state)
            if input is None and state.values and not state.next:
                # a run with no input on a thread whose turn is over runs nothing: a question `update_state` appended
                # was never answered, and nothing said so (hostile24a finding 3)
                raise InputError(NOTHING_TO_CONTINUE)
            if brought is None and "begin_turn" in state.next:
                # a resume of a thread interrupted before begin_turn brings the question the thread holds (one that
                # `update_state` may have put there): checked now, as a run's own question is, not on begin_turn's
                # edge once the run has written its checkpoint
                brought = []
        before = state.values if state is not None and brought is not None else {}
        self.check_run(before.get("messages") or [], brought, context, _goto(input))

    def stream(self, input, config=None, **kwargs):  # pyright: ignore[reportIncompatibleMethodOverride]
        state = self.get_state(config or {}) if self._on_thread(config) else None
        self._checked(input, config, state, kwargs.get("context"))
        yield from super().stream(input, config, **kwargs)

    async def astream(self, input, config=None, **kwargs):  # pyright: ignore[reportIncompatibleMethodOverride]
        state = await self.aget_state(config or {}) if self._on_thread(config) else None
        # in a thread: the catalog is read from disk, and langgraph-api refuses blocking calls on its event loop
        await asyncio.to_thread(self._checked, input, config, state, kwargs.get("context"))
        # closed with this generator (a cancelled run), so LangGraph's loop ends now, not when it is collected
        async with aclosing(cast(AsyncGenerator, super().astream(input, config, **kwargs))) as parts:
            async for part in parts:
                yield part

    def bulk_update_state(self, config, supersteps):  # pyright: ignore[reportIncompatibleMethodOverride]
        """`update_state` (Studio's state editor): an edit is checked before it is written (`check_session_edit`),
        and an edit of the conversation at an interrupt before `call_tools` is written before the guard
        (`_edit_target`)."""
        _check_edits(supersteps)
        head = self.get_state(config) if _one_message_edit(supersteps) else None
        parent = _before_approval(head)
        before = self.get_state(parent) if parent is not None else None
        return super().bulk_update_state(*_edit_target(config, supersteps, head, before))

    async def abulk_update_state(self, config, supersteps):  # pyright: ignore[reportIncompatibleMethodOverride]
        _check_edits(supersteps)
        head = await self.aget_state(config) if _one_message_edit(supersteps) else None
        parent = _before_approval(head)
        before = await self.aget_state(parent) if parent is not None else None
        return await super().abulk_update_state(*_edit_target(config, supersteps, head, before))


def _updates(supersteps) -> list[StateUpdate]:
    return [StateUpdate(*update) for step in supersteps for update in step]


def _check_edits(supersteps) -> None:
    for update in _updates(supersteps):
        check_session_edit(update.values)


def _one_message_edit(supersteps) -> bool:
    """One edit of the conversation, as a node that comes before `call_tools` (or as the last node that wrote)."""
    updates = _updates(supersteps)
    return (
        len(supersteps) == 1
        and len(updates) == 1
        and isinstance(updates[0].values, Mapping)
        and "messages" in updates[0].values
        and updates[0].as_node in (None, "executor", "guard")
    )


def _before_approval(head: StateSnapshot | None) -> RunnableConfig | None:
    """When the thread stopped before `call_tools`, its calls approved by the guard (Studio's interrupt before
    tools), the checkpoint before that one; else None."""
    return head.parent_config if head is not None and head.next == ("call_tools",) else None


def _edit_target(config, supersteps, head: StateSnapshot | None, before: StateSnapshot | None):
    """(config, supersteps) the edit is written with. At an interrupt before `call_tools` the guard has approved the
    calls (`pending`), and `call_tools` runs those: a tool call's query edited there was not the one looked up
    (hostile22 finding 3). So such an edit of the conversation is written to the checkpoint before the guard, as
    `executor`'s: the resumed run has the guard check the edited calls (its rules are never skipped), then runs
    them. The thread's head becomes that edit, as a fork's does."""
    if head is None or before is None or before.next != ("guard",):
        return config, supersteps
    update = _updates(supersteps)[0]
    return before.config, [[StateUpdate(update.values, "executor", update.task_id)]]


def missing_checkpoint(config: RunnableConfig, state: StateSnapshot) -> None:
    """A run from a checkpoint (`checkpoint_id`) the thread does not hold is refused, before it writes anything.
    LangGraph starts such a run from an empty thread: a mistyped or stale id (or one of another thread) was answered
    as a first question, and the thread's head became that one-question conversation, its earlier turns gone from
    it. `state`: what the checkpointer read for `config` (a checkpoint it does not hold reads as no checkpoint at
    all: no creation time)."""
    configurable = config.get("configurable") or {}
    checkpoint_id = configurable.get("checkpoint_id")
    if checkpoint_id and state.created_at is None:
        raise InputError(
            f"thread {printable(str(configurable.get('thread_id')))[:80]} has no checkpoint "
            f"{printable(str(checkpoint_id))[:80]!r}: a run from a checkpoint names one of the thread's own (its "
            "history lists them)"
        )


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
    # a question refused on begin_turn's edge: the turn put back (executor/nodes/begin_turn.py); their input is
    # what the Send carries, not the state
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

    graph.add_edge(START, "begin_turn")
    # checked again: a client's Command, or a resume, can reach begin_turn without bringing the question
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
    compiled = graph.compile(checkpointer=checkpointer, name="executor")
    # as `Pregel.copy` makes one (`__orig_class__` is the generic alias's, set on the instance)
    attrs = {k: v for k, v in vars(compiled).items() if k != "__orig_class__"}
    return CheckedGraph(check_run=make_check_run(catalog, max_query_chars), **attrs)
