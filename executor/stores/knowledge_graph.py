"""The knowledge graph's vocabulary, shared by every graph store (Cypher, SQL, the in-memory snapshot).

Entities are keyed by their case-folded name, within one knowledge base; relation types come from a
whitelist (`RELATION_TYPES`); a traversal's arguments are checked here, the same way and in the same order
for every backend, so that a bad argument gives every backend the same error. `GraphStore` (the protocol the
callers use) is in `executor/stores/graph_store.py`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from executor.core.errors import BackendError, InputError, printable
from executor.stores.knowledge_graph_nearest import NearestPair, Neighbours, nearest_pair

RELATION_TYPES = ("DEPENDS_ON", "REFERENCES", "CO_OCCURS", "CONFLICTS_WITH", "DERIVED_FROM", "RELATED_TO")
MAX_HOPS = 4
MAX_PATHS = 200
MAX_NODES_PER_HOP = 500
MAX_ENTITY_CHARS = 200
DEFAULT_WEIGHT = 0.5


def entity_key(name: str) -> str:
    # composed (NFC) before folding: a page written on macOS spells "Café" with a combining accent (NFD), which
    # made a second entity beside the other pages' "Café", splitting the graph between two names that look alike
    return unicodedata.normalize("NFC", " ".join(str(name).split())).casefold()


def check_entity_name(name: str) -> str:
    name = " ".join(str(name or "").split())
    if not name:
        raise InputError("the entity name is empty")
    if len(name) > MAX_ENTITY_CHARS:
        raise InputError(f"the entity name is {len(name)} characters long; the limit is {MAX_ENTITY_CHARS}")
    return name


def relation_types(relation_filter: Iterable[str] | None) -> list[str]:
    """The relation types a filter names, from the whitelist only (all of them for no filter)."""
    if relation_filter is None:
        return list(RELATION_TYPES)
    given = [str(r).strip() for r in relation_filter if str(r).strip()]
    if not given:
        return list(RELATION_TYPES)
    unknown = [r for r in given if r.upper() not in RELATION_TYPES]
    if unknown:  # as typed: upper-cased, it read as if the user had written it so
        shown = printable(unknown[0])[:60]
        raise InputError(f"unknown relation type '{shown}' (known: {', '.join(RELATION_TYPES)})")
    return list(dict.fromkeys(r.upper() for r in given))


def relation_pattern(relation_filter: Iterable[str] | None) -> str:
    """`A|B|C` for a relationship pattern, from the whitelist only."""
    return "|".join(relation_types(relation_filter))


def bounded(value, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"{name} must be a whole number from {low} to {high}")
    return value


def navigation(entity: str, max_hops, relation_filter, max_paths, max_nodes_per_hop):
    """The arguments of a `navigate`, checked as every store checks them, in the same order (the first bad one
    is the error): (entity name, hops, relation types, nodes per hop, paths)."""
    return (
        check_entity_name(entity),
        bounded(max_hops, "hops", 1, MAX_HOPS),
        relation_types(relation_filter),
        bounded(max_nodes_per_hop, "max_nodes_per_hop", 1, MAX_NODES_PER_HOP),
        bounded(max_paths, "max_paths", 1, MAX_PATHS),
    )


def navigation_between(source: str, target: str, max_hops, relation_filter, max_paths):
    """The arguments of a `navigate_between`, checked as every store checks them, in the same order:
    (source name, target name, hops, relation types, paths)."""
    a, b = check_entity_name(source), check_entity_name(target)
    if entity_key(a) == entity_key(b):
        raise InputError("source and target are the same entity")
    return (
        a,
        b,
        bounded(max_hops, "hops", 1, MAX_HOPS),
        relation_types(relation_filter),
        bounded(max_paths, "max_paths", 1, MAX_PATHS),
    )


class GraphNode(BaseModel):
    # frozen: a cached traversal's paths, and the in-memory graph's nodes and edges, are shared by every caller
    model_config = ConfigDict(frozen=True)

    name: str
    type: str | None = None


class GraphEdge(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: str
    source: str
    target: str
    weight: float


class GraphPath(BaseModel):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    score: float

    @property
    def hops(self) -> int:
        return len(self.edges)

    @property
    def forward(self) -> bool:
        """Every edge points away from the start (A -DEPENDS_ON-> B -DEPENDS_ON-> C: what A depends on)."""
        return all(e.source == n.name for n, e in zip(self.nodes, self.edges))

    def summary(self) -> str:
        """'ComfyUI -DEPENDS_ON-> Docker <-RELATED_TO- Kubernetes', arrows as the edges point."""
        parts = [self.nodes[0].name]
        for node, edge in zip(self.nodes[1:], self.edges):
            forward = edge.source == parts[-1]
            parts.append(f"-{edge.type}->" if forward else f"<-{edge.type}-")
            parts.append(node.name)
        return " ".join(parts)


class PathsBetween(BaseModel):
    source: str
    target: str
    reachable: bool
    paths: list[GraphPath]
    # when unreachable: the closest nodes the two sides reach within the hop bound (None: they never come close)
    nearest: NearestPair | None = None

    def summary(self, hops: int) -> str:
        """The paths one per line, or why there are none (and how close the two sides come)."""
        if self.reachable:
            return "\n".join(p.summary() for p in self.paths)
        line = f"{self.source} and {self.target} are not connected within {hops} hops."
        return f"{line} {self.nearest.summary(self.source, self.target)}" if self.nearest else line


class EntityLookup(Protocol):
    def entity(self, kb: str, name: str) -> GraphNode | None: ...


class PathEnds(EntityLookup, Neighbours, Protocol):
    """What `paths_between` reads of a store: the two ends, and the neighbours for the nearest pair."""


class OldGraphLeft(BackendError):
    """A rebuild's new graph is in place (swapped in), but removing the old one failed: the server went away in
    between. Not "graph not built", which it said (hostile24b finding 6); the next ingest removes the old copy."""

    def __init__(self, counts: dict[str, int], cause: BaseException):
        super().__init__(
            f"the new graph is in place, but its old copy was not removed ({cause}); the next ingest removes it"
        )
        self.counts = counts


def unknown_entity(kb: str, name: str) -> InputError:
    """The one error for an entity a knowledge base's graph does not hold, whichever backend looked."""
    return InputError(f"no entity {check_entity_name(name)!r} in the graph of knowledge base {kb!r}")


def require_entity(store: EntityLookup, kb: str, name: str) -> GraphNode:
    """The entity named `name` in the graph of `kb`, or the error saying there is none."""
    node = store.entity(kb, name)
    if node is None:
        raise unknown_entity(kb, name)
    return node


def paths_between(
    store: PathEnds,
    kb: str,
    source: str,
    target: str,
    paths: list[GraphPath],
    max_hops: int,
    relation_filter: Iterable[str] | None,
) -> PathsBetween:
    """What every backend's navigate_between returns: the paths, or unreachable with the nearest pair."""
    if paths:
        return PathsBetween(source=source, target=target, reachable=True, paths=paths)
    source, target = require_entity(store, kb, source).name, require_entity(store, kb, target).name
    names = {entity_key(source): source, entity_key(target): target}
    nearest = nearest_pair(store, kb, entity_key(source), entity_key(target), max_hops, relation_filter, names)
    return PathsBetween(source=source, target=target, reachable=False, paths=[], nearest=nearest)


@dataclass
class GraphData:
    """One knowledge base's graph, ready to load."""

    entities: dict[str, dict] = field(default_factory=dict)  # key -> {key, name, type, aliases}
    documents: list[dict] = field(default_factory=list)  # {doc_key, title, domain}
    mentions: list[dict] = field(default_factory=list)  # {doc, key, count}
    relations: list[dict] = field(default_factory=list)  # {type, s, t, weight, sources}

    def add_entity(self, name: str, type_: str | None = None, alias: str | None = None) -> str:
        # cut to what a query may name (check_entity_name): a longer name (front matter allows 300 characters, a
        # URL found in the text any length) was stored, then refused by every command that asked for it
        name = " ".join(name.split())[:MAX_ENTITY_CHARS]
        key = entity_key(name)
        row = self.entities.setdefault(key, {"key": key, "name": name, "type": type_, "aliases": []})
        if row["type"] is None and type_:
            row["type"] = type_
        if alias and alias != row["name"] and alias not in row["aliases"]:
            row["aliases"].append(alias)
        return key
