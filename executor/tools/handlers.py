"""The handlers behind the tool table (`executor/tools/registry.py`): validated arguments in, a `ToolOutput` out.

Each is made from the services it declares (`make_lookup(catalog, lookup_service, min_results)`, ...); the
costly ones are providers, called on a call's first use, so a call that needs no graph starts no graph server.
They run the same services the CLI runs; the LangGraph lookup node, the MCP server and the CLI all call them
through the tool table. A handler with a `render` in its table entry leaves the text to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from executor.core.errors import BackendError, ConfigError, InputError
from executor.core.relevance import Level
from executor.core.results import LookupResult
from executor.prompts.framing import quoted
from executor.retrieval.expansion import should_expand
from executor.retrieval.extraction import entity_named
from executor.retrieval.graph_build import has_graph, require_graph
from executor.retrieval.knowledge_bases import knowledge_bases
from executor.retrieval.traversal_cache import new_tally
from executor.tools.call import ToolCall, ToolOutput

if TYPE_CHECKING:
    from executor.retrieval.kg_query import KnowledgeGraphQuery
    from executor.retrieval.lookup import LookupService
    from executor.retrieval.traversal_cache import TraversalCache
    from executor.stores.catalog import Catalog
    from executor.stores.graph_store import GraphStore

Handler = Callable[[ToolCall, object], ToolOutput]


def evidence_of(result: LookupResult, source: str = "lookup") -> list[dict]:
    return [
        {"doc_key": d.doc_key, "title": d.title, "domain": d.domain, "kb": d.kb, "content": d.content, "source": source}
        for d in result.documents
        if not d.already_returned and d.content
    ]


def require_run_kb(catalog: Catalog, call: ToolCall):
    """The run's knowledge base row. Gone: not the caller's to fix, so a configuration error, not an InputError."""
    row = catalog.get(call.kb)
    if row is None:
        try:
            return catalog.require(call.kb)  # raises, unless it was created meanwhile
        except InputError as exc:
            raise ConfigError(str(exc)) from None
    return row


def make_lookup(catalog: Catalog, lookup_service: Callable[[], LookupService], min_results: int) -> Handler:
    """`min_results`: a lookup that finds fewer documents is widened by graph expansion (the KB has a graph)."""

    def lookup(call: ToolCall, args) -> ToolOutput:
        row = require_run_kb(catalog, call)
        result = lookup_service().lookup(
            args.query, call.session, call.kb, args.missing_dimension, rules=call.rules, batch=call.batch
        )
        level = result.relevance_level
        deduped = level == Level.DEDUPED
        sent = evidence_of(result)
        widen = not deduped and has_graph(row.extract_config) and should_expand(result, min_results)
        return ToolOutput(
            trace={
                "relevance_level": level or "NONE",
                "dedup_reason": result.dedup_reason,
                "blocked": deduped,
                "domain": result.details.get("landing_domain"),
                "sent": [e["doc_key"] for e in sent],
                "repeat_of": result.details.get("repeat_of"),
                "withheld": (result.details.get("weaker_than_held") or []) if deduped else [],
                # False: blocked from the queries alone, before the knowledge base was searched (a repeated miss)
                "searched": result.details.get("searched", True),
            },
            evidence=sent,
            # the documents it found that the session already had, or those of the lookup it repeats
            pointed_back=[d.doc_key for d in result.documents if d.already_returned],
            attempted=True,
            executed=not deduped,
            deduped=deduped,
            level=None if deduped else (level or "NONE"),
            precise=level == Level.PRECISE,
            expandable=result if widen else None,
            details=result.details,
            # the trace's rule: a DEDUPED lookup is blocked, whichever the reason (doc_retrieved included)
            row={
                "query": result.query,
                "relevance_level": level,
                "dedup_reason": result.dedup_reason,
                "blocked": deduped,
            },
            result=result,
        )

    return lookup


def make_kg_query(kg: Callable[[], KnowledgeGraphQuery]) -> Handler:
    def kg_query(call: ToolCall, args) -> ToolOutput:
        result = kg().query(args.knowledge_base_ids, args.query, call.session, rules=call.rules, batch=call.batch)
        failed = result.backend_failure()
        if failed:  # no knowledge base answered and a store failed: not "nothing found"
            raise BackendError(failed)
        errors = "; ".join(f"{e['knowledge_base_id']}: {e['error']}" for e in result.errors) or None
        if (
            errors and not result.kb_counts and not result.dedup_reason
        ):  # every id asked for was refused: an error, not an empty result
            raise InputError(errors)
        row = {"query": result.query, "kb": ",".join(result.knowledge_base_ids)[:64], "error": errors}
        if result.dedup_reason:  # answered from the session, as a repeated lookup is: nothing sent, the budget kept
            return ToolOutput(
                attempted=True,
                executed=False,
                deduped=True,
                details=result.details,
                result=result,
                pointed_back=[h.doc_key for h in result.results],
                trace={
                    "relevance_level": Level.DEDUPED.value,
                    "dedup_reason": result.dedup_reason,
                    "blocked": True,
                    "sent": [],
                    "repeat_of": result.details.get("repeat_of"),
                    "withheld": result.details.get("weaker_than_held") or [],
                },
                row=row
                | {"relevance_level": Level.DEDUPED.value, "dedup_reason": result.dedup_reason, "blocked": True},
            )
        levels = [h.relevance_level for h in result.results]
        found, seen = [], set()
        for h in result.results:
            if h.content and not h.already_returned and h.doc_key not in seen:
                seen.add(h.doc_key)
                found.append(
                    {
                        "doc_key": h.doc_key,
                        "title": h.title,
                        "domain": h.domain,
                        "kb": h.knowledge_bases[0],
                        "content": h.content,
                        "source": "query_knowledge_graph",
                    }
                )
        level = (
            Level.HIGHLY_RELEVANT.value
            if Level.HIGHLY_RELEVANT in levels
            else Level.REFERENCE.value
            if levels
            else "NONE"
        )
        # the knowledge bases that failed while others answered: in the row, not a failed call
        return ToolOutput(
            evidence=found,
            attempted=True,
            executed=True,
            trace={"relevance_level": level, "sent": [e["doc_key"] for e in found]},
            details=result.details,
            row=row,
            result=result,
        )

    return kg_query


def make_navigate(
    catalog: Catalog,
    graph: Callable[[], GraphStore],
    traversals: Callable[[], TraversalCache],
    default_hops: int,
    max_nodes_per_hop: int,
) -> Handler:
    """Paths from an entity (or between two) in the run's knowledge base; relations and hops as the CLI checks them,
    and a KB without a graph (or with nothing ingested yet) refused as `executor graph` refuses it."""

    def navigate(call: ToolCall, args) -> ToolOutput:
        kb = call.kb
        require_graph(catalog, kb, require_run_kb(catalog, call), "navigate_graph needs")
        entity = entity_named(graph(), kb, args.entity)  # by an alias or in full width too, as `graph neighbors`
        if args.target:  # unreachable within the bound: the summary names the nearest pair the two sides reach
            hops = args.hops or max(3, default_hops)
            target = entity_named(graph(), kb, args.target)
            between = graph().navigate_between(kb, entity, target, hops, args.relations, 5)
            return ToolOutput(text=_graph_text(between.summary(hops)))
        hops, tally = args.hops or default_hops, new_tally()
        paths = traversals().navigate(kb, entity, hops, args.relations, 15, max_nodes_per_hop, tally)
        paths = [p for p in paths if p.forward] if args.outgoing else paths  # "what X depends on", not what on X
        related = f"{', '.join(args.relations)} relations" if args.relations else "related entities"
        text = "\n".join(p.summary() for p in paths)
        if not text:
            return ToolOutput(text=f"{args.entity} has no {related} in the graph.", details={"traversal_cache": tally})
        return ToolOutput(text=_graph_text(text), details={"traversal_cache": tally})

    return navigate


def _graph_text(text: str) -> str:
    """Paths for the LLM: entity names come from documents (front matter anyone writes), so they are quoted."""
    return "paths:\n" + quoted(text)


def make_list_kbs(catalog: Catalog) -> Handler:
    def list_kbs(call: ToolCall, args) -> ToolOutput:
        kbs = knowledge_bases(catalog)
        if not kbs:
            return ToolOutput(text="There are no knowledge bases yet.")
        return ToolOutput(text="\n".join(f"- {k.line()}" for k in kbs))

    return list_kbs
