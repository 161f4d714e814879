"""graph_expand: widens thin or REFERENCE lookups through the knowledge graph, then sends their tool messages."""

from __future__ import annotations

from langchain_core.messages import ToolMessage

from core.results import LookupResult
from nodes.call_tools import add_evidence
from nodes.state import ExecutorState
from prompts.results import expansion_text
from tools.registry import LOOKUP


def make_graph_expand(expand):
    """`expand(result)`: graph expansion of a lookup result (`retrieval.expansion.GraphExpander.expand`)."""

    def graph_expand(state: ExecutorState) -> ExecutorState:
        trace = [dict(t) for t in state.get("trace", [])]
        evidence, paths, messages = list(state.get("evidence", [])), list(state.get("graph_paths", [])), []
        session_evidence = dict(state.get("session_evidence") or {})
        for pending in state.get("pending_expansions", []):
            result = LookupResult.model_validate(pending["result"])
            result.details = dict(pending["details"])
            expansion = expand(result)  # never raises for a graph that is down
            entry = trace[pending["trace_index"]]
            entry["graph"] = expansion.status
            entry["sent"] = entry.get("sent", []) + [d.doc_key for d in expansion.documents]
            found = [{**d.model_dump(exclude={"already_returned"}), "source": "graph"} for d in expansion.documents]
            evidence = add_evidence(evidence, found)
            session_evidence.update({e["doc_key"]: e for e in found})
            paths += [p for p in expansion.paths if p not in paths]
            text = f"{pending['text']}\n\n{expansion_text(expansion)}"
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
