"""Turn a knowledge base's documents into its graph: entities, mentions, typed relations.

Sources, in order of trust: the front matter's `entities` and `relations`
(written by people), an LLM's extraction when one is configured, names found
by the rule-based extractor, and co-occurrence (two entities mentioned by the
same documents).
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations
from typing import TYPE_CHECKING

from executor.core.errors import BackendError, DamagedError, EmptyGraphError, InputError
from executor.retrieval.documents import Document
from executor.retrieval.extraction import EntityExtractor, absent_graph, built_entities, common_word
from executor.stores.knowledge_graph import DEFAULT_WEIGHT, RELATION_TYPES, GraphData, entity_key

if TYPE_CHECKING:
    from executor.retrieval.llm_extraction import Extraction
    from executor.stores.catalog import Catalog

# Co-occurrence is weaker evidence than a relation someone wrote down.
CO_OCCURS_SCALE = 0.5
MAX_ENTITIES_PER_DOC_FOR_CO_OCCURS = 12


def has_graph(extract_config: dict | None) -> bool:
    config = extract_config or {}
    return bool(config.get("entity_types") or config.get("relation_types"))


def require_graph(catalog: Catalog, kb: str, row, needing: str) -> None:
    """The KB (its catalog `row`) has a graph to walk: InputError saying what needs one (`needing`: "the graph
    commands need") when it was created without entity types, then when no ingest has filled it. Asked of the graph
    store instead, a KB without one was "no entity 'X' in the graph" (hostile21 finding 5)."""
    if not has_graph(row.extract_config):
        raise InputError(
            f"KB {kb!r} has no graph; {needing} a KB created with --entities (`executor kb list` says which have one)"
        )
    catalog.require_ingested(kb)  # (after: a KB that will never have a graph is told so first)


def graph_failure(exc: BackendError, catalog: Catalog, kb: str) -> BackendError:
    """An empty graph whose KB's documents name entities was built and then lost (its files removed or emptied):
    damage, said so, where "empty, never built" would read as a KB not ingested yet."""
    if not isinstance(exc, EmptyGraphError):
        return exc
    named = sum(len(d.entities or []) for d in catalog.documents(kb).values())
    built = built_entities(catalog.get(kb))
    if named:
        said = f"its documents name {named} entities"
    elif built:  # entities found by the rule-based extractor alone: only the ingest's record knows they were there
        said = f"it held {built} entities when it was built"
    else:
        return exc
    return DamagedError(
        f"the graph of knowledge base {kb!r} is damaged: {said}, the graph at {exc.where} holds none (its files "
        f"were removed or emptied); run `executor ingest --rebuild`",
        exc.where,
    )


def graph_absent(graph, catalog: Catalog, kb: str) -> str | None:
    """The graph backend holds nothing of a KB whose last ingest built entities (`absent_graph`), else None: asked
    when an entity is not found, so "no entity X" is never said of a graph that is not there."""
    built = built_entities(catalog.get(kb))
    return absent_graph(kb, built) if built and not graph.stats(kb).get("entities") else None


def graph_shortfall(stats: dict[str, int], catalog: Catalog, kb: str) -> str | None:
    """What a graph lacks of what the last ingest built (a graph partly lost: an older copy of its files put back,
    nodes deleted by hand): a damage to say, where its smaller counts would read as a healthy graph."""
    row = catalog.get(kb)
    built = (row.graph_counts if row is not None else None) or {}
    if built_entities(row) and not stats.get("entities"):
        return absent_graph(kb, built_entities(row))  # none of it: another backend, not a part lost
    short = [
        f"{stats.get(k, 0)} of the {int(built[k])} {k}"
        for k in ("entities", "relations")
        if stats.get(k, 0) < int(built.get(k) or 0)
    ]
    if not short:
        return None
    return (
        f"the graph of knowledge base {kb!r} is damaged: it holds {' and '.join(short)} its last ingest built "
        f"(part of it was lost); run `executor ingest --rebuild`"
    )


def build_graph_data(
    docs: list[Document], extract_config: dict, llm: dict[str, Extraction] | None = None
) -> tuple[GraphData, list[str]]:
    """The graph of `docs`, plus warnings (e.g. a relation type the config does not allow).

    Extraction runs twice: the first pass collects the names the patterns find,
    the second matches every name known to the KB in every document, so a name
    found by pattern in one document is also found where no pattern would see it.
    The result depends only on the documents (and the cached LLM extractions
    of them, `llm`: doc_key -> Extraction), which keeps ingest idempotent.
    """
    llm = llm or {}
    entity_types = list(extract_config.get("entity_types") or [])
    relation_types = [r for r in (extract_config.get("relation_types") or RELATION_TYPES) if r in RELATION_TYPES]
    warnings: list[str] = []
    data = GraphData()

    dictionary: dict[str, tuple[str, str | None]] = {}
    for doc in docs:
        for ent in llm[doc.doc_key].entities if doc.doc_key in llm else []:
            dictionary.setdefault(entity_key(ent.name), (ent.name, ent.type))
        for ent in doc.entities:
            name = str(ent.get("name") or "").strip()
            if name:
                dictionary[entity_key(name)] = (name, ent.get("type"))
                for alias in ent.get("aliases") or []:
                    dictionary[entity_key(str(alias))] = (name, ent.get("type"))
                for word in [name, *(str(a) for a in ent.get("aliases") or [])]:
                    if common_word(entity_key(word)):
                        warnings.append(
                            f"{doc.doc_key}: {word!r} (entity {name!r}) is a common word: it is not looked for in "
                            "texts and questions"
                        )
    first_pass = EntityExtractor(dictionary, entity_types)
    for doc in docs:
        for mention in first_pass.extract(f"{doc.title}\n{doc.body}"):
            dictionary.setdefault(entity_key(mention.name), (mention.name, mention.type))
    extractor = EntityExtractor(dictionary, entity_types)

    doc_entities: dict[str, Counter[str]] = {}
    for doc in docs:
        data.documents.append({"doc_key": doc.doc_key, "title": doc.title, "domain": doc.domain})
        counts: Counter[str] = Counter()
        for ent in doc.entities:
            name = str(ent.get("name") or "").strip()
            if name:
                key = data.add_entity(name, ent.get("type"))
                for alias in ent.get("aliases") or []:
                    data.add_entity(name, ent.get("type"), alias=str(alias))
                counts[key] += 1
        for mention in extractor.extract(f"{doc.title}\n{doc.body}"):
            counts[data.add_entity(mention.name, mention.type)] += mention.count
        for ent in llm[doc.doc_key].entities if doc.doc_key in llm else []:
            key = data.add_entity(ent.name, ent.type)
            counts[key] = max(counts[key], 1)
        doc_entities[doc.doc_key] = counts
        data.mentions += [{"doc": doc.doc_key, "key": k, "count": n} for k, n in counts.items()]

    relations: dict[tuple[str, str, str], dict] = {}

    def relate(rel_type: str, source: str, target: str, weight: float, doc_key: str) -> None:
        if rel_type == "CO_OCCURS":  # symmetric: one edge per pair
            source, target = sorted((source, target))
        key = (rel_type, source, target)
        row = relations.setdefault(key, {"type": rel_type, "s": source, "t": target, "weight": weight, "sources": []})
        row["weight"] = max(row["weight"], weight)
        if doc_key not in row["sources"]:
            row["sources"].append(doc_key)

    for doc in docs:
        stated = list(doc.relations)
        if doc.doc_key in llm:
            stated += [r.model_dump() for r in llm[doc.doc_key].relations]
        for rel in stated:
            rel_type = str(rel.get("type") or "").strip().upper()
            source, target = str(rel.get("source") or "").strip(), str(rel.get("target") or "").strip()
            if not (source and target and rel_type):
                warnings.append(f"{doc.doc_key}: a relation needs source, type and target")
                continue
            if rel_type not in relation_types:
                warnings.append(f"{doc.doc_key}: relation type {rel_type!r} is not in this knowledge base's config")
                continue
            try:
                weight = min(1.0, max(0.0, float(rel.get("weight", DEFAULT_WEIGHT))))
            except (TypeError, ValueError):
                weight = DEFAULT_WEIGHT
            s, t = data.add_entity(source), data.add_entity(target)
            if s == t:  # a relation of an entity to itself says nothing a traversal could follow
                warnings.append(f"{doc.doc_key}: a {rel_type} relation from {source!r} to itself is left out")
            else:
                relate(rel_type, s, t, weight, doc.doc_key)
                for k in (s, t):  # a document that states a relation mentions both ends
                    if k not in doc_entities[doc.doc_key]:
                        doc_entities[doc.doc_key][k] = 1
                        data.mentions.append({"doc": doc.doc_key, "key": k, "count": 1})

    if "CO_OCCURS" in relation_types:
        mentioned_by: Counter[str] = Counter()
        together: Counter[tuple[str, str]] = Counter()
        sources: dict[tuple[str, str], list[str]] = {}
        for doc_key, counts in doc_entities.items():
            top = sorted(k for k, _ in counts.most_common(MAX_ENTITIES_PER_DOC_FOR_CO_OCCURS))
            mentioned_by.update(top)
            for pair in combinations(top, 2):
                together[pair] += 1
                sources.setdefault(pair, []).append(doc_key)
        for (a, b), n in together.items():
            weight = round(CO_OCCURS_SCALE * n / math.sqrt(mentioned_by[a] * mentioned_by[b]), 4)
            for doc_key in sources[(a, b)]:
                relate("CO_OCCURS", a, b, weight, doc_key)

    data.relations = list(relations.values())
    return data, warnings
