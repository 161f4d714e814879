"""The graph LangGraph Studio loads through langgraph.json.

It is compiled without a checkpointer: `langgraph dev` refuses one and brings
its own. Thread ids become session ids. The settings come from the
environment of the `langgraph dev` process (EXECUTOR_HOME, OPENAI_BASE_URL, ...).

langgraph.json names a factory, not the graph: the server drops a run-context field the context schema does not
name before the graph sees it (langgraph_api/stream.py, `_filter_context_by_schema`), and it writes a run's input
to the thread before the first node can refuse the run. The factory is handed the context as the client sent it
(`ServerRuntime.execution_runtime.context`) before either, so an unknown field or knowledge base is refused there,
as `app.invoke(..., context=...)` refuses it, and the refused question never reaches the thread. The factory does
not see the run's input: a question refused for itself (control characters), or a run from a checkpoint the thread
does not hold, is refused by the graph before the run writes anything to its thread (`CheckedGraph`,
executor/agent/graph.py).
"""

import asyncio

from langgraph_sdk.runtime import ServerRuntime

from executor.agent import studio_http
from executor.agent.runtime import Runtime
from executor.nodes.begin_turn import checked_context

_runtime = Runtime(source="studio")
_graph = _runtime.app()
studio_http.check_runs_with(_graph.check_run)  # the server's request checks refuse what the graph would


async def graph(runtime: ServerRuntime):
    """The executor graph, for every access (runs, state reads, schemas); a run's context is checked first (in a
    thread: the catalog is read from disk, and the server refuses blocking calls on its event loop)."""
    run = runtime.execution_runtime
    if run is not None:
        await asyncio.to_thread(checked_context, _runtime.catalog, run.context)
    return _graph
