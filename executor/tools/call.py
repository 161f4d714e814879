"""What a tool's handler gets (where the call runs) and gives back (the text the LLM sees, and what the graph needs),
and the one writer of `tool_invocation` rows (`log_call`), which `ToolTable.run` and the guard use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from executor.prompts.results import expansion_text
from executor.stores.invocation_log import Invocation, InvocationLog


@dataclass
class ToolCall:
    """Where a call runs: the session whose memory it uses, the run's knowledge base, rules on or off. The services
    a tool runs on are its handler's own (bound when the tool table is built: `executor/tools/registry.py`)."""

    session: str
    kb: str = "sample"
    rules: bool = True
    batch: str | None = None  # the LLM message that proposed the call: its sibling lookups are never repeats
    lang: str = "en"  # the language of the conversation, for the messages the tool writes itself


@dataclass
class ToolOutput:
    """A tool's result: the text the LLM sees, plus what the graph's state and the trace need of it."""

    text: str = ""  # a tool with a `render` (executor/tools/registry.py) gets it from `result`
    trace: dict = field(default_factory=dict)  # fields of the call's trace entry
    evidence: list[dict] = field(default_factory=list)  # documents whose content was sent
    pointed_back: list[str] = field(default_factory=list)  # doc keys the session already had, named again
    attempted: bool = False  # a search ran (counts against the lookup budget)
    executed: bool = False  # it sent documents
    deduped: bool = False  # it ran and was blocked by the session rules
    level: str | None = None  # the level the turn goes on from (lookup_knowledge)
    precise: bool = False
    expandable: Any = None  # a LookupResult graph expansion should widen (the KB has a graph)
    error: str | None = None
    # a store or the configuration failed (not the caller's arguments): the turn ends in this error
    failure: str | None = None
    # the call's tool_invocation row: raw scores and what explains the result (never sent to the LLM) ...
    details: dict = field(default_factory=dict)
    # ... and the row's other fields the handler knows (the cleaned query, level, dedup reason, blocked, partial errors)
    row: dict = field(default_factory=dict)
    result: Any = None  # the service's own result (LookupResult, KGResult), for a caller that prints it whole
    # the ExecutorError the call ended in (its text is `error`): a caller that ends in an exit code raises it again
    raised: Exception | None = None


@dataclass
class Answer:
    """A tool's output and, for a lookup the graph widens, its graph expansion: what `ToolTable.answer` gives the
    command line and an MCP host in one piece (the graph sends the two as one tool message too, from two nodes)."""

    out: ToolOutput
    expansion: Any = None  # a GraphExpansion

    @property
    def text(self) -> str:
        return with_expansion(self.out.text, self.expansion)


def with_expansion(text: str, expansion) -> str:
    """A lookup's text followed by what graph expansion added to it: the one shape every surface shows."""
    return text if expansion is None else f"{text}\n\n{expansion_text(expansion)}"


def log_call(
    log: InvocationLog, session: str, name: str, kb: str | None, args, query_field: str | None = None, **fields
) -> None:
    """Write one `tool_invocation` row: every tool call, run or blocked, goes through here."""
    query = fields.pop("query", None)
    if query is None and isinstance(args, dict):
        query = args.get(query_field) if query_field else args.get("query")
    log.write(
        Invocation(
            session_id=session,
            tool_name=str(name)[:64],
            query=str(query or "")[:2000],
            kb=kb,
            arguments=args if isinstance(args, dict) else {"raw": str(args)[:500]},
            **fields,
        )
    )
