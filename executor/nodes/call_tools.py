"""call_tools: runs the tool calls the guard let through, against the real stores.

Every call runs through the tool table (`tools.registry.ToolTable.invoke`), as MCP's do.
A lookup that graph expansion should widen keeps its tool message back for
`graph_expand`, which sends the lookup text and the expansion together (the
tool sets `expandable` only when the run's knowledge base has a graph).
Calls proposed together in one message were planned before any result came
back (sub-questions), so a PRECISE result does not block its siblings, and
they are never repeats of each other (the lookup gets the message as its
`batch`); documents one of them sent are still not sent again by another.
A store or configuration failure sets `failure`: the turn ends in that error.
The tools use the action memory of the run's branch (`executor/nodes/memory_branch.py`), and the node leaves the
memory's new mark in the state.
"""

from __future__ import annotations

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime as RunContext

from executor.nodes.common import lang_of, session_of
from executor.nodes.memory_branch import branch_of
from executor.nodes.state import Context, ExecutorState, PendingExpansion
from executor.stores.memory import ActionMemory
from executor.tools.call import ToolCall
from executor.tools.registry import ToolTable


def recalled(pointed_back: list[str], session_evidence: dict[str, dict]) -> list[dict]:
    """What a deduplicated lookup pointed at (the documents it found, or those of the lookup it repeats),
    from the session's earlier evidence (not sent to the LLM again)."""
    return [{**session_evidence[k], "source": "memory"} for k in dict.fromkeys(pointed_back) if k in session_evidence]


def add_evidence(evidence: list[dict], new: list[dict]) -> list[dict]:
    """`evidence` plus the documents of `new` it does not hold yet, each once."""
    out, have = list(evidence), {e["doc_key"] for e in evidence}
    for e in new:
        if e["doc_key"] not in have:
            have.add(e["doc_key"])
            out.append(e)
    return out


def make_call_tools(tools: ToolTable, memory: ActionMemory):
    """`tools`: the table the guard approved the calls from; `memory`: the action memory whose branch mark the
    node keeps."""

    def call_tools(state: ExecutorState, runtime: RunContext[Context], config: RunnableConfig) -> ExecutorState:
        ctx, lang = runtime.context, lang_of(state)
        # the memory this checkpoint saw (a fork gets a copy of it): executor/nodes/memory_branch.py
        session, session_evidence = branch_of(state, session_of(config), memory)
        trace = [dict(t) for t in state.get("trace", [])]
        evidence = list(state.get("evidence", []))
        counts = {k: state.get(k, 0) for k in ("attempted_lookups", "executed_lookups", "blocked_lookups")}
        precise, last_level = bool(state.get("precise")), state.get("last_level")
        messages, failure = [], None
        expansions: list[PendingExpansion] = []

        for call in state.get("pending", []):
            entry = trace[call["trace_index"]]
            where = ToolCall(session, ctx.kb, rules=ctx.guards, batch=call.get("batch"), lang=lang)
            out = tools.invoke(call["name"], where, call["args"])
            entry.update(out.trace)
            failure = failure or out.failure
            counts["attempted_lookups"] += out.attempted
            counts["executed_lookups"] += out.executed
            counts["blocked_lookups"] += out.deduped
            sent_keys = [e["doc_key"] for e in out.evidence]
            session_evidence.update({e["doc_key"]: e for e in out.evidence})
            remembered = [e for e in recalled(out.pointed_back, session_evidence) if e["doc_key"] not in sent_keys]
            entry["recalled"] = [e["doc_key"] for e in remembered]
            evidence = add_evidence(evidence, out.evidence + remembered)
            if out.level is not None:
                last_level = out.level
            precise = precise or out.precise
            if ctx.graph_expansion and out.expandable is not None:
                result = out.expandable
                expansions.append(
                    PendingExpansion(
                        id=call["id"],
                        trace_index=call["trace_index"],
                        text=out.text,
                        result=result.model_dump(mode="json"),
                        scores=result.scores.model_dump(),
                    )
                )
            else:
                messages.append(ToolMessage(out.text, tool_call_id=call["id"], name=call["name"]))

        return {
            "attempted_lookups": counts["attempted_lookups"],
            "executed_lookups": counts["executed_lookups"],
            "blocked_lookups": counts["blocked_lookups"],
            "messages": messages,
            "pending": [],
            "pending_expansions": expansions,
            "trace": trace,
            "evidence": evidence,
            "session_evidence": session_evidence,
            "precise": precise,
            "last_level": last_level,
            "failure": failure,
            "memory": memory.mark(session),
        }

    return call_tools
