"""The graph LangGraph Studio loads through langgraph.json.

It is compiled without a checkpointer: `langgraph dev` refuses one and brings
its own. Thread ids become session ids. The settings come from the
environment of the `langgraph dev` process (EXECUTOR_HOME, OPENAI_BASE_URL, ...).
"""

from agent.graph import build_graph
from agent.llm import make_chat_model
from agent.runtime import Runtime

_runtime = Runtime(source="studio")
_model, _mode = make_chat_model(_runtime.settings)
graph = build_graph(_runtime, _model, _mode)
