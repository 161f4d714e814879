"""What turns a knowledge base's stored graph into the one its documents now give: rows to add, change, remove.

Incremental ingest writes only this difference, so a re-ingest after one page
changed touches that page's mentions, the relations it sourced, and entities
no document mentions any more; every other row stays as it was (a relation
keeps its `created_at`). Both sides are whole `GraphData`s, so the result is
the graph a full rebuild would load, whatever the stored graph held (a write
that died half-way is repaired by the next ingest).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol


class GraphData(Protocol):
    """What a diff reads of `stores.knowledge_graph.GraphData` (a protocol: that module imports this one)."""

    entities: dict[str, dict]
    documents: list[dict]
    mentions: list[dict]
    relations: list[dict]


@dataclass
class Changes:
    new: list[dict] = field(default_factory=list)
    changed: list[dict] = field(default_factory=list)
    gone: list[dict] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.new) + len(self.changed) + len(self.gone)


def _changes(
    stored: list[dict], wanted: list[dict], key: Callable[[dict], Hashable], fields: tuple[str, ...]
) -> Changes:
    before = {key(r): r for r in stored}
    after = {key(r): r for r in wanted}
    out = Changes()
    for k, row in after.items():
        old = before.get(k)
        if old is None:
            out.new.append(row)
        elif any(old.get(f) != row.get(f) for f in fields):
            out.changed.append(row)
    out.gone = [row for k, row in before.items() if k not in after]
    return out


def entity_row_key(r: dict) -> str:
    return r["key"]


def document_row_key(r: dict) -> str:
    return r["doc_key"]


def mention_row_key(r: dict) -> tuple[str, str]:
    return r["doc"], r["key"]


def relation_row_key(r: dict) -> tuple[str, str, str]:
    return r["type"].upper(), r["s"], r["t"]


@dataclass
class GraphDiff:
    entities: Changes
    documents: Changes
    mentions: Changes
    relations: Changes

    @classmethod
    def between(cls, stored: GraphData, wanted: GraphData) -> GraphDiff:
        return cls(
            entities=_changes(
                list(stored.entities.values()),
                list(wanted.entities.values()),
                entity_row_key,
                ("name", "type", "aliases"),
            ),
            documents=_changes(stored.documents, wanted.documents, document_row_key, ("title", "domain")),
            mentions=_changes(stored.mentions, wanted.mentions, mention_row_key, ("count",)),
            relations=_changes(stored.relations, wanted.relations, relation_row_key, ("weight", "sources")),
        )

    def counts(self) -> dict[str, int]:
        """Rows written per kind (added + changed + removed): what an ingest actually touched."""
        return {
            "entities": len(self.entities),
            "documents": len(self.documents),
            "mentions": len(self.mentions),
            "relations": len(self.relations),
        }


def totals(data: GraphData) -> dict[str, int]:
    return {
        "entities": len(data.entities),
        "documents": len(data.documents),
        "mentions": len(data.mentions),
        "relations": len(data.relations),
    }
