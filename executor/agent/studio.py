"""The graph LangGraph Studio loads through langgraph.json.

It is compiled without a checkpointer: `langgraph dev` refuses one and brings
its own. Thread ids become session ids. The settings come from the
environment of the `langgraph dev` process (EXECUTOR_HOME, OPENAI_BASE_URL, ...).

langgraph.json names a factory, not the graph: the server drops a run-context field the context schema does not
name before the graph sees it (langgraph_api/stream.py, `_filter_context_by_schema`), and it writes a run's input
to the thread before the first node can refuse the run. The factory is handed the context as the client sent it
(`ServerRuntime.execution_runtime.context`) before either, so an unknown field or knowledge base is refused there,
as `app.invoke(..., context=...)` refuses it, and the refused question never reaches the thread. The factory does
not see the run's input: a question refused for itself (control characters) is refused by the graph before the run
writes anything to its thread (`CheckedGraph`, executor/agent/graph.py).
"""

import asyncio

from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import CONFIG_KEY_CHECKPOINTER
from langgraph_sdk.runtime import ServerRuntime

from executor.agent.runtime import Runtime
from executor.core.errors import InputError, printable
from executor.nodes.begin_turn import checked_context

_runtime = Runtime(source="studio")
_graph = _runtime.app()


async def graph(runtime: ServerRuntime, config: RunnableConfig):
    """The executor graph, for every access (runs, state reads, schemas); a run's context is checked first (in a
    thread: the catalog is read from disk, and the server refuses blocking calls on its event loop)."""
    run = runtime.execution_runtime
    if run is not None:
        await asyncio.to_thread(checked_context, _runtime.catalog, run.context)
        await checked_checkpoint(config)
    return _graph


async def checked_checkpoint(config: RunnableConfig) -> None:
    """A run from a checkpoint (`checkpoint_id`) the thread does not hold is refused, before it writes anything.
    LangGraph starts such a run from an empty thread: a mistyped or stale id (or one of another thread) was answered
    as a first question, and the thread's head became that one-question conversation, its earlier turns gone from
    it. The server hands the factory the run's config, with the thread's checkpointer."""
    configurable = config.get("configurable") or {}
    checkpoint_id, saver = configurable.get("checkpoint_id"), configurable.get(CONFIG_KEY_CHECKPOINTER)
    if not checkpoint_id or saver is None:
        return
    thread_id = configurable.get("thread_id")
    at = {
        "thread_id": thread_id,
        "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        "checkpoint_id": checkpoint_id,
    }
    if await saver.aget_tuple({"configurable": at}) is None:
        raise InputError(
            f"thread {printable(str(thread_id))[:80]} has no checkpoint {printable(str(checkpoint_id))[:80]!r}: "
            "a run from a checkpoint names one of the thread's own (its history lists them)"
        )
