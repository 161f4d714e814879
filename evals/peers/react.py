"""The prebuilt ReAct agent with one retriever tool: what most users build first.

`langgraph.prebuilt.create_react_agent` (LangGraph's prebuilt; its successor `langchain.agents.create_agent`
lives in the `langchain` package, which this project does not install) over the same Milvus collection, the
retriever returning the top k chunks as raw text: no grades, no memory, the step limit LangGraph gives every
graph (`recursion_limit`, 25 by default: the bench passes 2 x rounds + 1, which is 25 for 12 rounds).
"""

from __future__ import annotations

import warnings

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent

from evals.peers.common import (
    RETRIEVE,
    LLMCalls,
    Retriever,
    Turn,
    artifact_docs,
    invoke_turn,
    rephrasing_batches,
    thread_config,
    with_counter,
)
from evals.policy import ScriptedPolicy
from evals.scenarios_model import Scenario
from executor.retrieval.extractive import cited

SYSTEM = (
    "You answer questions about the team's systems from its knowledge base. Search it with the tool, "
    "then answer from what it returned and name the document keys you used in brackets."
)
# what create_react_agent answers when its remaining steps run out while the model still calls tools
OUT_OF_STEPS = "Sorry, need more steps to process this request."


def build(model, retriever: Retriever, checkpointer):
    with warnings.catch_warnings():  # LangGraph 1.x points to langchain.agents.create_agent, not installed here
        warnings.simplefilter("ignore")
        return create_react_agent(model, [retriever.tool()], prompt=SYSTEM, checkpointer=checkpointer)


def steps_for(rounds: int) -> int:
    """The recursion limit that lets the agent call tools `rounds` times (a model step and a tool step each)
    and answer."""
    return 2 * rounds + 1


def run_session(retriever: Retriever, scenario: Scenario, policy: str, model, rounds: int) -> list[Turn]:
    saver, counter = InMemorySaver(), LLMCalls()
    config = thread_config("react", scenario.id, steps_for(rounds))
    turns = []
    for turn in scenario.turns:
        chat = (
            ScriptedPolicy(batches=rephrasing_batches(turn, RETRIEVE), callbacks=[counter])
            if policy == "scripted"
            else with_counter(model, counter)
        )
        app = build(chat, retriever, saver)
        ran = invoke_turn(app, config, {"messages": [HumanMessage(turn.question)]}, counter)
        messages = ran.state["messages"]
        last = messages[-1] if messages else None
        answer = str(last.content) if isinstance(last, AIMessage) and not last.tool_calls else ""
        # it answers with everything the conversation holds: every result of the session is in its context
        evidence = [{"doc_key": k, "title": "", "domain": ""} for k in artifact_docs(messages)]
        stopped = ran.recursion or answer == OUT_OF_STEPS
        turns.append(
            Turn(
                question=turn.question,
                answer=answer,
                delivered=[str(m.content) for m in ran.results],
                retrieval_calls=len(ran.results),
                llm_inputs=ran.llm_inputs,
                calls=ran.calls,
                # a turn the step limit ended gave the user no answer ("need more steps"): it cites nothing
                citations=[] if stopped else [d["doc_key"] for d in cited(answer, evidence)],
                limit=stopped,
                ms=ran.ms,
            )
        )
    return turns
