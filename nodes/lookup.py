"""lookup: runs the tool calls the guard let through, against the real stores.

A lookup that graph expansion should widen keeps its tool message back for
`graph_expand`, which sends the lookup text and the expansion together.
Calls proposed together in one message were planned before any result came
back (sub-questions), so a PRECISE result does not block its siblings, and
they are never repeats of each other (the lookup gets the message as its
`batch`); documents one of them sent are still not sent again by another.
"""

from __future__ import annotations

import time

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime as RunContext

from agent.errors import ExecutorError, InputError
from agent.state import Context, ExecutorState
from agent.tools import KG_QUERY, LOOKUP, parse_arguments
from nodes.common import lang_of, session_of
from prompts.executor import unavailable_message
from retrieval.expansion import should_expand
from retrieval.graph_build import has_graph
from retrieval.lookup import LookupResult
from retrieval.relevance import Level
from retrieval.traversal_cache import new_tally
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
    """What a deduplicated lookup pointed at (the documents it found, or those of the lookup it repeats),
    from the session's earlier evidence (not sent to the LLM again)."""
    keys = [d.doc_key for d in result.documents if d.already_returned]
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
                  outgoing: bool = False, cache: dict | None = None) -> str:
    settings = rt.settings
    if target:
        hops = max(3, settings.graph_hops)
        return rt.graph.navigate_between(kb, entity, target, hops, relations, 5).summary(hops)
    paths = rt.traversals.navigate(kb, entity, settings.graph_hops, relations, 15, settings.graph_max_nodes_per_hop,
                                   cache)
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
        messages, expansions, failure = [], [], None
        kb_row = rt.catalog.get(ctx.kb)
        graph_ok = ctx.graph_expansion and kb_row is not None and has_graph(kb_row.extract_config)

        for call in state.get("pending", []):
            entry = trace[call["trace_index"]]
            args = parse_arguments(call["name"], call["args"])
            if call["name"] == KG_QUERY:
                counts["attempted_lookups"] += 1
                text, found, kg_failure = _kg_query(rt, session, args, entry, lang_of(state))
                failure = failure or kg_failure
                counts["executed_lookups"] += entry["error"] is None
                session_evidence.update({e["doc_key"]: e for e in found})
                evidence = add_evidence(evidence, found)
                messages.append(ToolMessage(text, tool_call_id=call["id"], name=KG_QUERY))
                continue
            if call["name"] != LOOKUP:
                messages.append(ToolMessage(_navigate(rt, ctx.kb, session, args, entry), tool_call_id=call["id"], name=call["name"]))
                continue
            try:
                if kb_row is None:
                    rt.catalog.require(ctx.kb)  # the run's knowledge base is gone: not the LLM's to fix
                result = rt.lookup.lookup(args.query, session, ctx.kb, args.missing_dimension, rules=ctx.guards,
                                          batch=call.get("batch"))
            except ExecutorError as exc:
                entry["error"] = str(exc)
                if isinstance(exc, InputError) and kb_row is not None:  # the LLM's arguments: it can fix them
                    messages.append(ToolMessage(f"error: {exc}", tool_call_id=call["id"], name=LOOKUP))
                    continue
                # a store or the configuration failed: the turn ends in this error, it did not find "nothing"
                failure = failure or str(exc)
                messages.append(ToolMessage(unavailable_message(lang_of(state), str(exc)), tool_call_id=call["id"], name=LOOKUP))
                continue
            counts["attempted_lookups"] += 1
            level = result.relevance_level
            sent = evidence_of(result)
            sent_keys = [e["doc_key"] for e in sent]
            session_evidence.update({e["doc_key"]: e for e in sent})
            remembered = [e for e in recalled(result, session_evidence) if e["doc_key"] not in sent_keys]
            entry.update(relevance_level=level or "NONE", dedup_reason=result.dedup_reason, blocked=level == Level.DEDUPED,
                         domain=result.details.get("landing_domain"), sent=sent_keys,
                         recalled=[e["doc_key"] for e in remembered], repeat_of=result.details.get("repeat_of"))
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
            "failure": failure,
            "session_memory": rt.memory.by_domain(session),
            "domain_levels": rt.memory.domain_levels(session),
        }

    return lookup


def _kg_query(rt, session: str, args, entry: dict, lang: str) -> tuple[str, list[dict], str | None]:
    """query_knowledge_graph for the executor: its text, the documents it sent as evidence, and the
    failure that ends the turn (no knowledge base answered, and a store failed) or None."""
    try:
        result = rt.kg.query(args.knowledge_base_ids, args.query, session)
    except InputError as exc:
        entry["error"] = str(exc)
        return f"error: {exc}", [], None
    except ExecutorError as exc:
        entry["error"] = str(exc)
        return unavailable_message(lang, str(exc)), [], str(exc)
    failed = result.backend_failure()
    if failed:
        entry["error"] = failed
        return unavailable_message(lang, failed), [], failed
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
    return result.to_llm_text(), found, None


def _navigate(rt, kb: str, session: str, args, entry: dict) -> str:
    started = time.perf_counter()
    error, cache = None, new_tally()
    try:
        text = navigate_text(rt, kb, args.entity, args.target, args.relations, args.outgoing, cache)
    except ExecutorError as exc:
        error = str(exc)
        text = f"error: {exc}"
        entry["error"] = error
    rt.log.write(
        Invocation(
            session_id=session, tool_name="navigate_graph", query=args.entity, kb=kb,
            arguments=args.model_dump(), error=error, latency_ms=round((time.perf_counter() - started) * 1000, 2),
            retrieval_details={"traversal_cache": cache},
        )
    )
    return text
