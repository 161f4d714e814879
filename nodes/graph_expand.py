"""graph_expand: widens thin or REFERENCE lookups through the knowledge graph, then sends their tool messages."""

from __future__ import annotations

from langchain_core.messages import ToolMessage

from nodes.state import ExecutorState
from tools.registry import LOOKUP
from nodes.lookup import add_evidence
from retrieval.lookup import LookupResult


def make_graph_expand(rt):
    def graph_expand(state: ExecutorState) -> ExecutorState:
        trace = [dict(t) for t in state.get("trace", [])]
        evidence, paths, messages = list(state.get("evidence", [])), list(state.get("graph_paths", [])), []
        session_evidence = dict(state.get("session_evidence") or {})
        for pending in state.get("pending_expansions", []):
            result = LookupResult.model_validate(pending["result"])
            result.details = dict(pending["details"])
            expansion = rt.expander.expand(result)  # never raises for a graph that is down
            entry = trace[pending["trace_index"]]
            entry["graph"] = expansion.status
            entry["sent"] = entry.get("sent", []) + [d.doc_key for d in expansion.documents]
            found = [{**d.model_dump(exclude={"already_returned"}), "source": "graph"} for d in expansion.documents]
            evidence = add_evidence(evidence, found)
            session_evidence.update({e["doc_key"]: e for e in found})
            paths += [p for p in expansion.paths if p not in paths]
            text = f"{pending['text']}\n\n{expansion.to_llm_text()}"
            messages.append(ToolMessage(text, tool_call_id=pending["id"], name=LOOKUP))
        return {
            "messages": messages,
            "pending_expansions": [],
            "trace": trace,
            "evidence": evidence,
            "session_evidence": session_evidence,
            "graph_paths": paths,
        }

    return graph_expand
