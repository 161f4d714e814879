"""The graph LangGraph Studio loads through langgraph.json.

It is compiled without a checkpointer: `langgraph dev` refuses one and brings
its own. Thread ids become session ids. The settings come from the
environment of the `langgraph dev` process (EXECUTOR_HOME, OPENAI_BASE_URL, ...).
"""

from executor.agent.runtime import Runtime

graph = Runtime(source="studio").app()
