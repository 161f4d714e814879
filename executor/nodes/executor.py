"""executor: the LLM (or the offline planner) decides to call tools or to answer."""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.messages import SystemMessage
from langgraph.runtime import Runtime as RunContext

from executor.nodes.common import invoke_llm, lang_of, paired_tool_calls
from executor.nodes.state import Context, ExecutorState
from executor.prompts.executor import system_prompt
from executor.retrieval.knowledge_bases import knowledge_bases
from executor.tools.registry import Tool


def make_executor(model, catalog, tools: Mapping[str, Tool]):
    """`catalog`: where the knowledge bases the system prompt names are listed; `tools`: the tools the model is
    offered (bound, and listed in the prompt)."""

    bound = model.bind_tools([t.args for t in tools.values()])

    def executor(state: ExecutorState, runtime: RunContext[Context]) -> ExecutorState:
        lang, ctx = lang_of(state), runtime.context or Context()
        prompt = system_prompt(
            lang,
            [t.prompt["zh" if lang == "zh" else "en"] for t in tools.values()],
            [k.line() for k in knowledge_bases(catalog)],
            ctx.kb,
        )
        reply = invoke_llm(bound, [SystemMessage(prompt), *paired_tool_calls(state.get("messages", []))])
        return {"messages": [reply], "rounds": state.get("rounds", 0) + 1}

    return executor
