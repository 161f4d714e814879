"""How a retrieval result reads to the LLM: levels, hints and quoted documents, never a score."""

from __future__ import annotations

from executor.core.errors import terminal_safe
from executor.core.relevance import language_of
from executor.core.results import GraphExpansion, KGResult, LookupResult
from executor.prompts.framing import quoted, quoted_document
from executor.prompts.hints import ALREADY_RETURNED


def lookup_text(result: LookupResult) -> str:
    lines = [
        f"relevance_level: {result.relevance_level or 'NONE'}",
        f"completeness_hint: {result.completeness_hint}",
    ]
    if result.dedup_reason:
        lines.append(f"dedup_reason: {result.dedup_reason}")
    lines.append(f"retrieved_domains_this_session: {', '.join(result.retrieved_domains_this_session) or '-'}")
    lang = language_of(result.query)
    for role, docs in (("primary", result.primary), ("supplement", result.supplement)):
        for d in docs:
            lines.append(f"\n[{role}]")
            lines.append(
                quoted_document(
                    d.title, d.doc_key, d.domain, ALREADY_RETURNED[lang] if d.already_returned else d.content
                )
            )
    return "\n".join(lines)


KG_EDGES_SHOWN = 20  # edges of a query_knowledge_graph result the text lists


def kg_text(result: KGResult) -> str:
    zh = language_of(result.query) == "zh"
    # per KB, what this text sends (`kb_counts` is what each KB found, before the session's rules held some back):
    # "1 from sample (1), team (1)" was said with the team's page alone shown (hostile23 finding 8)
    counts = (
        ", ".join(f"{kb} ({sum(kb in h.knowledge_bases for h in result.results)})" for kb in result.kb_counts)
        or "no knowledge base"
    )
    lines = [f"results: {result.count} from {counts}"]
    if result.dedup_reason:
        lines += [f"dedup_reason: {result.dedup_reason}", f"completeness_hint: {result.completeness_hint}"]
    # an id is the caller's text, as given (a name that is no KB's among them): escaped as its message shows it, so a
    # host printing results to a terminal obeys no escape sequence in it
    lines += [f"warning: {terminal_safe(w['knowledge_base_id'])}: {w['message']}" for w in result.warnings]
    lines += [f"error: {terminal_safe(e['knowledge_base_id'])}: {e['error']}" for e in result.errors]
    edges = result.graph_data["edges"]
    if edges:  # entity names come from documents: quoted; the cut is said (a host reads every edge in graph_data)
        lines.append(
            "graph:"
            if len(edges) <= KG_EDGES_SHOWN
            else f"graph ({KG_EDGES_SHOWN} of {len(edges)} edges shown; all are in graph_data):"
        )
        lines.append(quoted("\n".join(f"{e['source']} -{e['type']}-> {e['target']}" for e in edges[:KG_EDGES_SHOWN])))
    for hit in result.results:
        lines.append(f"\n[{hit.relevance_level}] ({', '.join(hit.knowledge_bases)})")
        lines.append(
            quoted_document(
                hit.title,
                hit.doc_key,
                hit.domain,
                ALREADY_RETURNED["zh" if zh else "en"] if hit.already_returned else hit.content,
            )
        )
    return "\n".join(lines)


def expansion_text(expansion: GraphExpansion) -> str:
    lines = [f"graph_expansion: {expansion.status} — {expansion.message}"]
    if expansion.paths:  # entity names come from documents: quoted
        lines.append("paths:")
        lines.append(quoted("\n".join(expansion.paths)))
    for d in expansion.documents:
        lines.append("\n[graph]")
        lines.append(quoted_document(d.title, d.doc_key, d.domain, d.content))
    return "\n".join(lines)
