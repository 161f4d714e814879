"""The executor graph's state and its per-run context.

State is checkpointed per thread (thread id = session id) and has three parts:
what a run takes (`ExecutorInput`, the user's message), the session
(`SessionState`: survives turns) and the turn (`TurnState`: reset by
`begin_turn` when a new user message arrives). A run returns `ExecutorOutput`
(the full state stays readable through the thread). What the session already
retrieved (documents, domains, levels, earlier lookups) is not state: the
rules read it from the action memory (SQL), which MCP calls share; the state
holds a mark of it (`memory`), so a run from an earlier checkpoint sees the
memory of that checkpoint (executor/nodes/memory_branch.py). Context
holds the per-run knobs Studio shows as a form.
"""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

# typing.TypedDict on Python < 3.12 gives LangGraph's schema endpoints (and so Studio's form) nothing to read
from typing_extensions import TypedDict

from executor.core.errors import InputError, validation_line
from executor.core.validation import validate_kb_name


class ExecutorInput(TypedDict):
    """What a run takes: the user's message (Studio's input form)."""

    messages: Annotated[list[AnyMessage], add_messages]


class ExecutorOutput(TypedDict, total=False):
    """What a run returns: the conversation, the answer, the documents it cites, and one trace entry per proposed
    tool call. It is also what LangGraph's `values` stream sends: a chat UI (the Agent Chat UI reads
    `values.messages`) would drop the conversation while a run streams without `messages` here."""

    messages: Annotated[list[AnyMessage], add_messages]
    answer: str
    citations: list[dict]
    trace: list[dict]


class SessionState(TypedDict, total=False):
    """What survives turns: the conversation, and the evidence of documents already sent."""

    messages: Annotated[list[AnyMessage], add_messages]
    # doc_key -> the evidence a document gave when it was sent: what a later turn answers from
    # when its lookups point at documents the session already has (they are not sent again)
    session_evidence: dict[str, dict]
    # what the action memory held at this checkpoint (session, lookup ids, sent documents): a run resumed from
    # here uses exactly that memory (executor/nodes/memory_branch.py)
    memory: dict


class PendingExpansion(TypedDict):
    """A lookup `call_tools` ran whose result graph expansion widens (`graph_expand`) before its tool message goes
    out; JSON values only, since the state is checkpointed between the two nodes (a fork can start there)."""

    id: str  # the tool call's id: the tool message answers it
    trace_index: int  # its entry in `trace`
    text: str  # the lookup's own text, which the expansion's follows
    result: dict  # the LookupResult, dumped
    scores: dict  # its LookupScores (left out of the result's dump), which expansion reads


class TurnState(TypedDict, total=False):
    """One turn's counters, evidence and answer; `begin_turn` resets them (TURN_RESET)."""

    question: str
    rounds: int  # executor (LLM) calls
    attempted_lookups: int  # lookups that ran a search, whether they sent anything or were deduplicated
    executed_lookups: int  # lookups that sent documents
    blocked_lookups: int
    last_level: str | None
    precise: bool
    evidence: list[dict]  # documents this turn answers from: doc_key, title, domain, kb, content, source
    trace: list[dict]  # one entry per proposed tool call
    graph_paths: list[str]
    pending: list[dict]  # tool calls the guard let through
    pending_expansions: list[PendingExpansion]  # lookups waiting for graph_expand
    answer: str
    citations: list[dict]
    # a store or the configuration failed this turn: the turn ends in this error, never in "nothing found"
    failure: str | None
    # a round did not advance the turn and the graph took over (executor/nodes/settle.py): the turn answers next
    settled: bool


class ExecutorState(SessionState, TurnState, total=False):
    """The graph's whole state: the session part and the turn part."""


TURN_RESET: TurnState = {
    "rounds": 0,
    "attempted_lookups": 0,
    "executed_lookups": 0,
    "blocked_lookups": 0,
    "last_level": None,
    "precise": False,
    "evidence": [],
    "trace": [],
    "graph_paths": [],
    "pending": [],
    "pending_expansions": [],
    "answer": "",
    "citations": [],
    "failure": None,
    "settled": False,
}


def _settings():
    from executor.core.settings import get_settings

    return get_settings()


class Context(BaseModel):
    """Per-run knobs (Studio shows them as a form, from these descriptions). A run's `context` is checked here:
    a wrong field or value is an InputError naming the field (one line, which every LangGraph client shows),
    never a TypeError from inside the graph."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kb: str = Field(
        default="sample",
        description="the knowledge base lookup_knowledge and navigate_graph search (`executor kb list`)",
    )
    lookup_budget: int = Field(
        default_factory=lambda: _settings().lookup_budget,
        ge=1,
        le=50,
        description="lookups a turn may run before it must answer (default: the setting EXECUTOR_LOOKUP_BUDGET)",
    )
    guards: bool = Field(
        default=True,
        description="the retrieval rules in code (PRECISE stop, lookup budget, repeat "
        "blocking); false runs the eval's baseline",
    )
    graph_expansion: bool = Field(
        default=True, description="widen a REFERENCE or thin lookup through the knowledge graph"
    )
    # a safety bound on LLM calls per turn; with guards on the turn ends long before it
    max_rounds: int = Field(default=25, ge=1, le=200, description="a safety bound on LLM calls per turn")

    @field_validator("kb")
    @classmethod
    def _kb_name(cls, value: str) -> str:
        try:
            return validate_kb_name(value)
        except InputError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="wrap")
    @classmethod
    def _one_line(cls, values, handler):
        try:
            return handler(values)
        except ValidationError as exc:  # raised as our error: LangGraph's server shows its message and kind
            raise InputError(
                f"invalid run context: {validation_line(exc, 'context').replace('Value error, ', '')}"
            ) from None
