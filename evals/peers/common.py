"""What the three agents share in the benchmark: the retriever tool, the rephrasing script, counting LLM calls."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel, Field

from evals.scenarios_model import Turn as ScenarioTurn

RETRIEVE = "search_knowledge_base"  # the peers' one tool, named as a user would name it


@dataclass
class Turn:
    """One question as an agent handled it, with what the benchmark measures."""

    question: str
    answer: str
    delivered: list[str]  # retrieved text that entered the conversation this turn, one entry per tool result
    retrieval_calls: int
    llm_inputs: list[str]  # each LLM call's input this turn, its messages joined (what it was sent)
    citations: list[str]  # doc keys the answer cites (all it was written from when it names none)
    limit: bool  # ended by a step, recursion or round limit
    ms: float
    calls: list[str] = field(default_factory=list)  # the tool calls the model made, "tool: query"
    extra: dict = field(default_factory=dict)  # what only one agent has (Executor: blocked calls, budget endings)


class _Query(BaseModel):
    query: str = Field(description="what to look up in the knowledge base")


class Retriever:
    """A KB's top k chunks for a query as raw text, from the same Milvus collection and the same hybrid search
    (dense + BM25) Executor's grader reads: no grades, no memory of earlier calls."""

    def __init__(self, vectors, embedder, kb: str, k: int):
        self.vectors, self.embedder, self.kb, self.k = vectors, embedder, kb, k

    def search(self, query: str) -> tuple[str, list[str]]:
        hits = self.vectors.search(self.kb, query, self.embedder.embed_query(query), self.embedder, self.k)
        text = "\n\n".join(f"[{h.doc_key}] {h.title}\n{h.text}" for h in hits) or "No documents found."
        return text, list(dict.fromkeys(h.doc_key for h in hits))

    def tool(self) -> StructuredTool:
        # content_and_artifact: the LLM reads the text, the benchmark reads the doc keys off the message
        return StructuredTool.from_function(
            func=self.search,
            name=RETRIEVE,
            args_schema=_Query,
            response_format="content_and_artifact",
            description="Search the team knowledge base; returns the most similar passages with their document keys.",
        )


def peer_query(call) -> str:
    """What a scenario's proposed call asks, as a query for an agent whose only tool is a retriever."""
    args = call.args
    if call.tool == "navigate_graph":  # a graph walk from an entity (to a target): search for their names
        return " ".join(str(args[k]) for k in ("entity", "target") if args.get(k))
    return str(args.get("query") or "")


def rephrasing_batches(turn: ScenarioTurn, tool: str | None = None) -> list[list[dict]]:
    """The scenario's proposals for one turn, message by message, as calls of `tool` (the same queries in the
    same order and batches for every agent); `tool=None` keeps Executor's own tools and arguments."""
    if tool is None:
        return [[c.model_dump() for c in batch] for batch in turn.proposals]
    return [[{"tool": tool, "args": {"query": peer_query(c)}} for c in batch] for batch in turn.proposals]


class LLMCalls(BaseCallbackHandler):
    """Records every chat-model call's input (attached to every model an agent runs)."""

    def __init__(self):
        self.inputs: list[str] = []

    def on_chat_model_start(self, serialized, messages: list[list[BaseMessage]], **kwargs) -> None:
        self.inputs.append("\n".join(str(m.content) for m in messages[0]))

    def since(self, start: int) -> list[str]:
        return self.inputs[start:]


def with_counter(model, counter: LLMCalls):
    """The same model reporting to `counter` (a copy: the caller's model is shared between agents)."""
    return model.model_copy(update={"callbacks": [counter]})


def tool_results(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def retrieval_results(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """The retriever's results (its doc keys ride along as the artifact; a stopped call's message has none)."""
    return [m for m in tool_results(messages) if m.name == RETRIEVE and m.artifact is not None]


def artifact_docs(messages: Sequence[BaseMessage]) -> list[str]:
    """Doc keys the retriever's results among `messages` carried, each once, in order."""
    return list(dict.fromkeys(k for m in retrieval_results(messages) for k in m.artifact))


def thread_config(agent: str, scenario_id: str, recursion_limit: int) -> dict:
    """A session of its own for one agent and scenario, with the agent's step limit."""
    return {
        "configurable": {"thread_id": f"peers-{agent}-{scenario_id}-{uuid.uuid4().hex[:6]}"},
        "recursion_limit": recursion_limit,
    }


@dataclass
class Ran:
    """A peer's turn as it ran: the thread's state after it, the retriever's results it added, whether the
    recursion limit stopped it, its wall time and its LLM calls' inputs."""

    state: dict
    results: list[ToolMessage]
    recursion: bool
    ms: float
    llm_inputs: list[str]
    calls: list[str]


def invoke_turn(app, config: dict, inputs: dict, counter: LLMCalls, on_recursion=None) -> Ran:
    """One turn of a peer's graph on its thread; `on_recursion(app, config)` tidies a turn the limit stopped."""
    before = len(app.get_state(config).values.get("messages", []))
    calls, started = len(counter.inputs), time.perf_counter()
    try:
        app.invoke(inputs, config)
        recursion = False
    except GraphRecursionError:
        recursion = True
        if on_recursion:
            on_recursion(app, config)
    ms = round((time.perf_counter() - started) * 1000, 1)
    state = app.get_state(config).values
    new = state["messages"][before:]
    made = [f"{c['name']}: {c['args'].get('query', '')}" for m in new if isinstance(m, AIMessage) for c in m.tool_calls]
    return Ran(state, retrieval_results(new), recursion, ms, counter.since(calls), made)
