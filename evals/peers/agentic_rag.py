"""The agentic-RAG graph of LangGraph's tutorial, built from its public design with LangGraph's primitives.

The model either answers or calls the retriever; a grader decides whether what came back is relevant; if it
is, an answer is generated from it, if not the question is rewritten and the model goes again. Nothing bounds
the loop but LangGraph's recursion limit (the bench passes 3 x rounds + 1: a round is the model's call, the
retrieval and the rewrite). The retriever is the ReAct peer's: the same collection, top k chunks, raw text.
"""

from __future__ import annotations

import inspect
import re
import uuid
from typing import Any, Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, Field

from evals.peers.common import (
    RETRIEVE,
    LLMCalls,
    Retriever,
    Turn,
    artifact_docs,
    invoke_turn,
    rephrasing_batches,
    retrieval_results,
    thread_config,
    with_counter,
)
from evals.policy import ScriptedPolicy
from evals.runner import citation_groups
from evals.scenarios_model import Scenario
from executor.retrieval.extractive import cited

GRADE = (
    "Is the retrieved text below relevant to the question? Answer yes or no.\n\n"
    "Question: {question}\n\nRetrieved text:\n{context}"
)
REWRITE = (
    "A search of the knowledge base for this question found nothing relevant. Write the question again "
    "so that a search finds what it needs. Reply with the new question only.\n\nQuestion: {question}"
)
ANSWER = (
    "Answer the question from the retrieved text in at most three sentences, naming the document keys "
    "you used in brackets; say so if the text does not answer it.\n\nQuestion: {question}\n\n"
    "Retrieved text:\n{context}"
)
STOPPED = "(stopped: the recursion limit)"


class Grade(BaseModel):
    """Whether the retrieved text is relevant to the question."""

    binary_score: Literal["yes", "no"] = Field(description="yes if relevant, no if not")


class RAGState(MessagesState):
    question: str  # the question as it now reads: the user's, then each rewrite
    answered_from: list[str] | None  # doc keys generate_answer was given this turn (None: it did not run)


def last_retrieval(messages) -> list[ToolMessage]:
    """The tool results after the latest model call that asked for them."""
    start = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage) and m.tool_calls), default=-1)
    return retrieval_results(messages[start + 1 :])


def _context(messages) -> str:
    return "\n\n".join(str(m.content) for m in last_retrieval(messages))


def build(policy, grader, writer, retriever: Retriever, checkpointer):
    """`policy` calls the tool or answers, `grader` returns a `Grade`, `writer` rewrites and answers (one
    chat model for all three with a real LLM; scripted stand-ins with the scripted policy)."""
    tool = retriever.tool()
    grade_model = structured(grader, Grade)

    def generate_query_or_respond(state: RAGState):
        return {"messages": [policy.bind_tools([tool]).invoke(state["messages"])]}

    def grade_documents(state: RAGState) -> str:
        grade = grade_model.invoke(
            [HumanMessage(GRADE.format(question=state["question"], context=_context(state["messages"])))]
        )
        # a reply that is not a grade (a weak model's) counts as "not relevant", as a failed check would
        return "generate_answer" if grade is not None and grade.binary_score == "yes" else "rewrite_question"

    def rewrite_question(state: RAGState):
        reply = writer.invoke([HumanMessage(REWRITE.format(question=state["question"]))])
        question = str(reply.content).strip() or state["question"]
        return {"messages": [HumanMessage(question)], "question": question}

    def generate_answer(state: RAGState):
        reply = writer.invoke(
            [HumanMessage(ANSWER.format(question=state["question"], context=_context(state["messages"])))]
        )
        return {
            "messages": [AIMessage(str(reply.content))],
            "answered_from": artifact_docs(last_retrieval(state["messages"])),
        }

    graph = StateGraph(RAGState)
    graph.add_node(generate_query_or_respond)
    graph.add_node("retrieve", ToolNode([tool]))
    graph.add_node(rewrite_question)
    graph.add_node(generate_answer)
    graph.add_edge(START, "generate_query_or_respond")
    graph.add_conditional_edges("generate_query_or_respond", tools_condition, {"tools": "retrieve", END: END})
    graph.add_conditional_edges("retrieve", grade_documents, ["generate_answer", "rewrite_question"])
    graph.add_edge("generate_answer", END)
    graph.add_edge("rewrite_question", "generate_query_or_respond")
    return graph.compile(checkpointer=checkpointer)


def structured(model, schema):
    """`with_structured_output` by a tool call where the model has a choice (ChatOpenAI): what an
    OpenAI-compatible endpoint without JSON-schema response formats (the bundled one) still honours."""
    if "method" in inspect.signature(model.with_structured_output).parameters:
        return model.with_structured_output(schema, method="function_calling")
    return model.with_structured_output(schema)


def steps_for(rounds: int) -> int:
    return 3 * rounds + 1


class OracleGrader(BaseChatModel):
    """The scripted policy's grader: it says relevant exactly when the retrieved text holds a document the
    scenario expects to be cited (any document, when it expects none; never, on a question the knowledge base
    cannot answer): a perfect grader, the best case for this graph."""

    expected: list[str]
    no_answer: bool = False
    schema_name: str = "Grade"

    @property
    def _llm_type(self) -> str:
        return "peers-oracle-grader"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        prompt = str(messages[-1].content)
        retrieved = prompt.split("Retrieved text:\n", 1)[-1]
        docs = re.findall(r"^\[([^\]\n]+)\] ", retrieved, flags=re.M)
        relevant = not self.no_answer and (
            any(d.startswith(p) for d in docs for p in self.expected) if self.expected else bool(docs)
        )
        call = {
            "name": self.schema_name,
            "args": {"binary_score": "yes" if relevant else "no"},
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "tool_call",
        }
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])


class ScriptedWriter(BaseChatModel):
    """The scripted policy's writer: an empty rewrite (the question stays; the script chooses the next
    query anyway) and an empty answer, one call each, as the LLM's would be."""

    @property
    def _llm_type(self) -> str:
        return "peers-scripted-writer"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=""))])


def _roles(turn, policy: str, model, counter: LLMCalls):
    if policy == "scripted":
        groups = citation_groups(turn.expect)
        return (
            ScriptedPolicy(batches=rephrasing_batches(turn, RETRIEVE), callbacks=[counter]),
            OracleGrader(expected=[p for g in groups for p in g], no_answer=turn.expect.no_answer, callbacks=[counter]),
            ScriptedWriter(callbacks=[counter]),
        )
    counted = with_counter(model, counter)
    return counted, counted, counted


def run_session(retriever: Retriever, scenario: Scenario, policy: str, model, rounds: int) -> list[Turn]:
    saver, counter = InMemorySaver(), LLMCalls()
    config = thread_config("rag", scenario.id, steps_for(rounds))
    turns = []
    for turn in scenario.turns:
        app = build(*_roles(turn, policy, model, counter), retriever, saver)
        ran = invoke_turn(
            app,
            config,
            {"messages": [HumanMessage(turn.question)], "question": turn.question, "answered_from": None},
            counter,
            on_recursion=close,
        )
        messages = ran.state["messages"]
        answer = "" if ran.recursion else str(messages[-1].content)
        # generate_answer read the last retrieval; a direct reply (or a stopped turn) had the whole conversation
        used = ran.state.get("answered_from")
        evidence = [
            {"doc_key": k, "title": "", "domain": ""} for k in (used if used is not None else artifact_docs(messages))
        ]
        turns.append(
            Turn(
                question=turn.question,
                answer=answer,
                delivered=[str(m.content) for m in ran.results],
                retrieval_calls=len(ran.results),
                llm_inputs=ran.llm_inputs,
                calls=ran.calls,
                # a turn the recursion limit stopped gave the user no answer: it cites nothing
                citations=[] if ran.recursion else [d["doc_key"] for d in cited(answer, evidence)],
                limit=ran.recursion,
                ms=ran.ms,
            )
        )
    return turns


def close(app, config) -> None:
    """A turn the recursion limit stopped: answer the tool calls it left open and end it, so that the
    session's next question starts from a well-formed conversation."""
    messages = app.get_state(config).values.get("messages", [])
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    open_calls = [
        ToolMessage(STOPPED, tool_call_id=c["id"], name=c["name"])
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["id"] not in answered
    ]
    app.update_state(config, {"messages": [*open_calls, AIMessage(STOPPED)]}, as_node="generate_answer")
