"""graph_expand: widens thin or REFERENCE lookups through the knowledge graph, then sends their tool messages."""

from __future__ import annotations

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig

from executor.core.results import LookupResult, LookupScores
from executor.nodes.call_tools import add_evidence
from executor.nodes.common import session_of
from executor.nodes.memory_branch import branch_of
from executor.nodes.state import ExecutorState
from executor.tools.call import with_expansion
from executor.tools.registry import LOOKUP


def make_graph_expand(expand, memory):
    """`expand(result)`: graph expansion of a lookup result (`retrieval.expansion.GraphExpander.expand`), which
    records the documents it sends in `memory` (the action memory) under the result's session."""

    def graph_expand(state: ExecutorState, config: RunnableConfig) -> ExecutorState:
        # a run may start here (a fork between call_tools and graph_expand): the branch's memory, as in call_tools
        session, session_evidence = branch_of(state, session_of(config), memory)
        trace = [dict(t) for t in state.get("trace", [])]
        evidence, paths, messages = list(state.get("evidence", [])), list(state.get("graph_paths", [])), []
        for pending in state.get("pending_expansions", []):
            result = LookupResult.model_validate(pending["result"])
            result.scores, result.session = LookupScores.model_validate(pending["scores"]), session
            expansion = expand(result)  # never raises for a graph that is down
            entry = trace[pending["trace_index"]]
            entry["graph"] = expansion.status
            if expansion.damaged:  # the answer goes on without the graph; `ask` and `chat` say it needs mending
                entry["graph_damaged"] = expansion.damaged
            entry["sent"] = entry.get("sent", []) + [d.doc_key for d in expansion.documents]
            found = [{**d.model_dump(exclude={"already_returned"}), "source": "graph"} for d in expansion.documents]
            evidence = add_evidence(evidence, found)
            session_evidence.update({e["doc_key"]: e for e in found})
            paths += [p for p in expansion.paths if p not in paths]
            text = with_expansion(pending["text"], expansion)
            messages.append(ToolMessage(text, tool_call_id=pending["id"], name=LOOKUP))
        return {
            "messages": messages,
            "pending_expansions": [],
            "trace": trace,
            "evidence": evidence,
            "session_evidence": session_evidence,
            "graph_paths": paths,
            "memory": memory.mark(session),
        }

    return graph_expand
