"""lookup: runs the tool calls the guard let through, against the real stores.

A lookup that graph expansion should widen keeps its tool message back for
`graph_expand`, which sends the lookup text and the expansion together.
Calls proposed together in one message were planned before any result came
back (sub-questions), so a PRECISE result does not block its siblings; it
blocks what the LLM asks for after seeing it (the guard), and the domain
rule still blocks a sibling that lands in an answered domain.
"""

from __future__ import annotations

import time

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime as RunContext

from agent.errors import ExecutorError
from agent.state import Context, ExecutorState
from agent.tools import KG_QUERY, LOOKUP, parse_arguments
from nodes.common import session_of
from retrieval.expansion import should_expand
from retrieval.graph_build import has_graph
from retrieval.lookup import LookupResult
from retrieval.relevance import Level
from stores.invocation_log import Invocation

# what graph_expand needs of a lookup besides what the LLM saw
EXPANSION_DETAILS = ("l1_top_similarity", "relevant_docs")


def evidence_of(result: LookupResult, source: str = "lookup") -> list[dict]:
    return [
        {"doc_key": d.doc_key, "title": d.title, "domain": d.domain, "kb": d.kb, "content": d.content, "source": source}
        for d in result.documents
        if not d.already_returned and d.content
    ]


def recalled(result: LookupResult, session_evidence: dict[str, dict]) -> list[dict]:
    """What a deduplicated lookup pointed at, from the session's earlier evidence (not sent to the LLM again)."""
    keys = [d.doc_key for d in result.documents if d.already_returned]
    landing = result.details.get("landing_domain")
    keys += [k for k, e in session_evidence.items() if landing and e["domain"] == landing]
    return [{**session_evidence[k], "source": "memory"} for k in dict.fromkeys(keys) if k in session_evidence]


def add_evidence(evidence: list[dict], new: list[dict]) -> list[dict]:
    """`evidence` plus the documents of `new` it does not hold yet, each once."""
    out, have = list(evidence), {e["doc_key"] for e in evidence}
    for e in new:
        if e["doc_key"] not in have:
            have.add(e["doc_key"])
            out.append(e)
    return out


def navigate_text(rt, kb: str, entity: str, target: str | None, relations: list[str] | None = None,
                  outgoing: bool = False) -> str:
    settings = rt.settings
    if target:
        hops = max(3, settings.graph_hops)
        found = rt.graph.navigate_between(kb, entity, target, hops, relations, 5)
        if not found.reachable:
            return f"{found.source} and {found.target} are not connected within {hops} hops."
        return "\n".join(p.summary() for p in found.paths)
    paths = rt.graph.navigate(kb, entity, settings.graph_hops, relations, 15, settings.graph_max_nodes_per_hop)
    paths = [p for p in paths if p.forward] if outgoing else paths
    if not paths:
        related = f"{', '.join(relations)} relations" if relations else "related entities"
        return f"{entity} has no {related} in the graph."
    return "\n".join(p.summary() for p in paths)


def make_lookup(rt):
    def lookup(state: ExecutorState, runtime: RunContext[Context], config: RunnableConfig) -> ExecutorState:
        ctx, session = runtime.context, session_of(config)
        trace = [dict(t) for t in state.get("trace", [])]
        evidence = list(state.get("evidence", []))
        session_evidence = dict(state.get("session_evidence") or {})
        counts = {k: state.get(k, 0) for k in ("attempted_lookups", "executed_lookups", "blocked_lookups")}
        precise, last_level = bool(state.get("precise")), state.get("last_level")
        messages, expansions = [], []
        kb_row = rt.catalog.get(ctx.kb)
        graph_ok = ctx.graph_expansion and kb_row is not None and has_graph(kb_row.extract_config)

        for call in state.get("pending", []):
            entry = trace[call["trace_index"]]
            args = parse_arguments(call["name"], call["args"])
            if call["name"] == KG_QUERY:
                counts["attempted_lookups"] += 1
                text, found = _kg_query(rt, session, args, entry)
                counts["executed_lookups"] += entry["error"] is None
                session_evidence.update({e["doc_key"]: e for e in found})
                evidence = add_evidence(evidence, found)
                messages.append(ToolMessage(text, tool_call_id=call["id"], name=KG_QUERY))
                continue
            if call["name"] != LOOKUP:
                messages.append(ToolMessage(_navigate(rt, ctx.kb, session, args, entry), tool_call_id=call["id"], name=call["name"]))
                continue
            try:
                result = rt.lookup.lookup(args.query, session, ctx.kb, args.missing_dimension, rules=ctx.guards)
            except ExecutorError as exc:
                entry["error"] = str(exc)
                messages.append(ToolMessage(f"error: {exc}", tool_call_id=call["id"], name=LOOKUP))
                continue
            counts["attempted_lookups"] += 1
            level = result.relevance_level
            sent = evidence_of(result)
            sent_keys = [e["doc_key"] for e in sent]
            session_evidence.update({e["doc_key"]: e for e in sent})
            remembered = [e for e in recalled(result, session_evidence) if e["doc_key"] not in sent_keys]
            entry.update(relevance_level=level or "NONE", dedup_reason=result.dedup_reason, blocked=level == Level.DEDUPED,
                         domain=result.details.get("landing_domain"), sent=sent_keys,
                         recalled=[e["doc_key"] for e in remembered])
            evidence = add_evidence(evidence, sent + remembered)
            if level == Level.DEDUPED:
                counts["blocked_lookups"] += 1
            else:
                counts["executed_lookups"] += 1
                last_level = level or "NONE"
                precise = precise or level == Level.PRECISE
            if graph_ok and level != Level.DEDUPED and should_expand(result, rt.settings.graph_min_results):
                expansions.append({
                    "id": call["id"], "trace_index": call["trace_index"], "text": result.to_llm_text(),
                    "result": result.model_dump(mode="json"),
                    "details": {k: result.details.get(k) for k in EXPANSION_DETAILS},
                })
            else:
                messages.append(ToolMessage(result.to_llm_text(), tool_call_id=call["id"], name=LOOKUP))

        return {
            **counts,
            "messages": messages,
            "pending": [],
            "pending_expansions": expansions,
            "trace": trace,
            "evidence": evidence,
            "session_evidence": session_evidence,
            "precise": precise,
            "last_level": last_level,
            "session_memory": rt.memory.by_domain(session),
            "domain_levels": rt.memory.domain_levels(session),
        }

    return lookup


def _kg_query(rt, session: str, args, entry: dict) -> tuple[str, list[dict]]:
    """query_knowledge_graph for the executor: its text, and the documents it sent as evidence."""
    try:
        result = rt.kg.query(args.knowledge_base_ids, args.query, session)
    except ExecutorError as exc:
        entry["error"] = str(exc)
        return f"error: {exc}", []
    levels = [h.relevance_level for h in result.results]
    entry.update(relevance_level=(Level.HIGHLY_RELEVANT.value if Level.HIGHLY_RELEVANT in levels else
                                  Level.REFERENCE.value if levels else "NONE"))
    found, seen = [], set()
    for h in result.results:
        if h.content and not h.already_returned and h.doc_key not in seen:
            seen.add(h.doc_key)
            found.append({"doc_key": h.doc_key, "title": h.title, "domain": h.domain, "kb": h.knowledge_bases[0],
                          "content": h.content, "source": KG_QUERY})
    entry["sent"] = [e["doc_key"] for e in found]
    return result.to_llm_text(), found


def _navigate(rt, kb: str, session: str, args, entry: dict) -> str:
    started = time.perf_counter()
    error = None
    try:
        text = navigate_text(rt, kb, args.entity, args.target, args.relations, args.outgoing)
    except ExecutorError as exc:
        error = str(exc)
        text = f"error: {exc}"
        entry["error"] = error
    rt.log.write(
        Invocation(
            session_id=session, tool_name="navigate_graph", query=args.entity, kb=kb,
            arguments=args.model_dump(), error=error, latency_ms=round((time.perf_counter() - started) * 1000, 2),
        )
    )
    return text
