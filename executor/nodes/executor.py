"""executor: the LLM (or the offline planner) decides to call tools or to answer."""

from __future__ import annotations

from langchain_core.messages import SystemMessage
from langgraph.runtime import Runtime as RunContext

from executor.nodes.common import invoke_llm, lang_of
from executor.nodes.state import Context, ExecutorState
from executor.prompts.executor import system_prompt
from executor.retrieval.knowledge_bases import knowledge_bases
from executor.tools.registry import TOOLS


def make_executor(model, catalog):
    """`catalog`: where the knowledge bases the system prompt names are listed."""

    bound = model.bind_tools([t.args for t in TOOLS.values()])

    def executor(state: ExecutorState, runtime: RunContext[Context]) -> ExecutorState:
        lang, ctx = lang_of(state), runtime.context or Context()
        prompt = system_prompt(
            lang,
            [t.prompt["zh" if lang == "zh" else "en"] for t in TOOLS.values()],
            [k.line() for k in knowledge_bases(catalog)],
            ctx.kb,
        )
        reply = invoke_llm(bound, [SystemMessage(prompt), *state["messages"]])
        return {"messages": [reply], "rounds": state.get("rounds", 0) + 1}

    return executor
