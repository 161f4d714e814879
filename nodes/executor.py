"""executor: the LLM (or the offline planner) decides to call tools or to answer."""

from __future__ import annotations

from langchain_core.messages import SystemMessage

from agent.state import ExecutorState
from agent.tools import TOOLS
from nodes.common import invoke_llm, lang_of
from prompts.executor import SYSTEM


def make_executor(model):
    bound = model.bind_tools(list(TOOLS.values()))

    def executor(state: ExecutorState) -> ExecutorState:
        reply = invoke_llm(bound, [SystemMessage(SYSTEM[lang_of(state)]), *state["messages"]])
        return {"messages": [reply], "rounds": state.get("rounds", 0) + 1}

    return executor
