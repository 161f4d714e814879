"""The knowledge graph in the application database: four tables and traversals in SQL (SQLite, Postgres).

Selected by `EXECUTOR_GRAPH_BACKEND=sql`: no graph server at all, the graph
lives beside the catalog and the action memory (Alembic revision 0005).

  graph_entity   (id, kb, key, name, type, aliases)       key = the case-folded name
  graph_document (kb, doc_key, title, domain)
  graph_mention  (kb, doc_key, entity_id, count)
  graph_relation (id, kb, type, source_id, target_id, weight, sources, created_at)

Each traversal is one statement. `navigate_between` is a recursive CTE: a
walk from the source that carries its path (`,3,17,42,`) so no node repeats,
multiplies the weights, and only steps onto nodes from which the target is
still within the hops left (a second recursive CTE, a breadth-first search
from the target, says how far each node is). `navigate` keeps the Cypher
store's semantics (best path to each node at its nearest hop, the
`max_nodes_per_hop` best new nodes per hop), which a recursive term cannot
express: SQLite allows no window function or aggregate there, Postgres no
aggregate. So its statement has one CTE per hop, chained: the hop bound is a
checked integer, everything else (kb, names, relation types, caps) is a bound
parameter.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    Index,
    Integer,
    String,
    Text,
    bindparam,
    delete,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Mapped, mapped_column

from executor.core.errors import BackendError, first_line
from executor.stores.database import Base, Database
from executor.stores.graph_diff import GraphDiff, totals
from executor.stores.knowledge_graph import (
    DEFAULT_WEIGHT,
    GraphData,
    GraphEdge,
    GraphNode,
    GraphPath,
    PathsBetween,
    check_entity_name,
    entity_key,
    navigation,
    navigation_between,
    paths_between,
    relation_types,
    unknown_entity,
)

BATCH = 2000


class GraphEntity(Base):
    __tablename__ = "graph_entity"
    __table_args__ = (Index("ix_graph_entity_kb_key", "kb", "key", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kb: Mapped[str] = mapped_column(String(64))
    key: Mapped[str] = mapped_column(String(512))
    name: Mapped[str] = mapped_column(Text)
    type: Mapped[str | None] = mapped_column(String(64), nullable=True)
    aliases: Mapped[list] = mapped_column(JSON, default=list)


class GraphDocumentRow(Base):
    __tablename__ = "graph_document"

    kb: Mapped[str] = mapped_column(String(64), primary_key=True)
    doc_key: Mapped[str] = mapped_column(String(512), primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    domain: Mapped[str] = mapped_column(String(64))


class GraphMention(Base):
    __tablename__ = "graph_mention"
    __table_args__ = (Index("ix_graph_mention_entity", "entity_id"),)

    kb: Mapped[str] = mapped_column(String(64), primary_key=True)
    doc_key: Mapped[str] = mapped_column(String(512), primary_key=True)
    entity_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=1)


class GraphRelation(Base):
    __tablename__ = "graph_relation"
    __table_args__ = (
        Index("ix_graph_relation_source", "source_id", "type"),
        Index("ix_graph_relation_target", "target_id", "type"),
        Index("ix_graph_relation_kb", "kb"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kb: Mapped[str] = mapped_column(String(64))
    type: Mapped[str] = mapped_column(String(32))
    source_id: Mapped[int] = mapped_column(Integer)
    target_id: Mapped[int] = mapped_column(Integer)
    weight: Mapped[float] = mapped_column(Float)
    sources: Mapped[list] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime)


# Every relation is walked both ways, as the Cypher store's undirected pattern does: one join on
# "either end is here", the other end being the neighbour (an OR join the planners serve from the two
# end indexes; a CTE of all edges in both directions would be materialised whole on every call).
# Entity ids are unique across knowledge bases, so a walk that starts in one KB stays in it.
def _step(frm: str) -> str:
    return f"JOIN graph_relation r ON (r.source_id = {frm}.node OR r.target_id = {frm}.node) AND r.type IN :types"


_OTHER_END = "CASE WHEN r.source_id = {frm}.node THEN r.target_id ELSE r.source_id END"
_WEIGHT = f"COALESCE(r.weight, {DEFAULT_WEIGHT})"


def _navigate_sql(hops: int) -> str:
    """One CTE per hop: each keeps the best path to every node not reached before, then the `:fan` best."""
    stages = [
        "hop0 AS (SELECT CAST(:start AS INTEGER) AS node, CAST(:start_path AS TEXT) AS path, "
        "CAST(',' AS TEXT) AS rels, CAST(1.0 AS FLOAT) AS score)"
    ]
    for k in range(1, hops + 1):
        seen = " UNION ALL ".join(f"SELECT node FROM hop{i}" for i in range(k))
        other = _OTHER_END.format(frm="f")
        stages.append(
            f"""step{k} AS (
  SELECT {other} AS node, f.path, f.rels, f.score * {_WEIGHT} AS score, r.id AS rid
    FROM hop{k - 1} f {_step("f")}
),
cand{k} AS (
  SELECT node, path || CAST(node AS TEXT) || ',' AS path, rels || CAST(rid AS TEXT) || ',' AS rels, score,
         ROW_NUMBER() OVER (PARTITION BY node ORDER BY score DESC, path, rid) AS rn
    FROM step{k} WHERE node NOT IN ({seen})
),
hop{k} AS (
  SELECT node, path, rels, score FROM cand{k} WHERE rn = 1 ORDER BY score DESC, node LIMIT :fan
)"""
        )
    found = " UNION ALL ".join(f"SELECT path, rels, score, {k} AS hops FROM hop{k}" for k in range(1, hops + 1))
    return (
        f"WITH {', '.join(stages)}\nSELECT path, rels, score, hops FROM ({found}) AS found "
        "ORDER BY score DESC, hops ASC, path LIMIT :max_paths"
    )


_BETWEEN_SQL = f"""WITH RECURSIVE
near(node, d) AS (
  SELECT CAST(:target AS INTEGER), 0
  UNION
  SELECT {_OTHER_END.format(frm="n")}, n.d + 1 FROM near n {_step("n")} WHERE n.d < :hops - 1
),
dist AS (SELECT node, MIN(d) AS d FROM near GROUP BY node),
walk(node, path, rels, score, hops) AS (
  SELECT CAST(:source AS INTEGER), CAST(:start_path AS TEXT), CAST(',' AS TEXT), CAST(1.0 AS FLOAT), 0
  UNION ALL
  SELECT t.node, w.path || CAST(t.node AS TEXT) || ',', w.rels || CAST(r.id AS TEXT) || ',', w.score * {_WEIGHT},
         w.hops + 1
    FROM walk w {_step("w")} JOIN dist t ON t.node = {_OTHER_END.format(frm="w")}
   WHERE w.node <> :target AND t.d <= :hops - w.hops - 1
     AND w.path NOT LIKE '%,' || CAST(t.node AS TEXT) || ',%'
)
SELECT path, rels, score, hops FROM walk WHERE node = :target
ORDER BY score DESC, hops ASC, path LIMIT :max_paths"""


def _ids(csv: str) -> list[int]:
    return [int(x) for x in csv.strip(",").split(",") if x]


class SqlGraphStore:
    """`stores.graph_store.GraphStore` in SQL, on the application database."""

    def __init__(self, db: Database):
        self.db = db
        self.dialect = db.engine.dialect.name
        if self.dialect not in ("sqlite", "postgresql"):
            raise BackendError(f"the SQL graph backend runs on SQLite and Postgres, not {self.dialect}")
        self.description = f"SQL graph in {db.engine.url.render_as_string(hide_password=True)}"

    # -- plumbing -------------------------------------------------------------
    def _rows(self, statement, params: dict | None = None) -> list:
        try:
            with self.db.engine.connect() as conn:
                return list(conn.execute(statement, params or {}).mappings())
        except DBAPIError as exc:
            raise BackendError(f"graph query failed: {first_line(exc.orig)}") from exc

    def _entity_id(self, kb: str, name: str) -> int | None:
        rows = self._rows(select(GraphEntity.id).where(GraphEntity.kb == kb, GraphEntity.key == entity_key(name)))
        return rows[0]["id"] if rows else None

    def _require_id(self, kb: str, name: str) -> int:
        entity_id = self._entity_id(kb, name)
        if entity_id is None:
            raise unknown_entity(kb, name)
        return entity_id

    def _paths(self, rows: list) -> list[GraphPath]:
        """Path rows (node ids and relation ids as comma lists) -> GraphPaths, names looked up in two queries."""
        node_ids = {i for r in rows for i in _ids(r["path"])}
        rel_ids = {i for r in rows for i in _ids(r["rels"])}
        nodes = (
            {
                r["id"]: r
                for r in self._rows(
                    select(GraphEntity.id, GraphEntity.name, GraphEntity.type).where(GraphEntity.id.in_(node_ids))
                )
            }
            if node_ids
            else {}
        )
        rels = (
            {
                r["id"]: r
                for r in self._rows(
                    select(
                        GraphRelation.id,
                        GraphRelation.type,
                        GraphRelation.source_id,
                        GraphRelation.target_id,
                        GraphRelation.weight,
                    ).where(GraphRelation.id.in_(rel_ids))
                )
            }
            if rel_ids
            else {}
        )
        out = []
        for r in rows:
            out.append(
                GraphPath(
                    nodes=[GraphNode(name=nodes[i]["name"], type=nodes[i]["type"]) for i in _ids(r["path"])],
                    edges=[
                        GraphEdge(
                            type=rels[i]["type"],
                            source=nodes[rels[i]["source_id"]]["name"],
                            target=nodes[rels[i]["target_id"]]["name"],
                            weight=DEFAULT_WEIGHT if rels[i]["weight"] is None else rels[i]["weight"],
                        )
                        for i in _ids(r["rels"])
                    ],
                    score=round(float(r["score"]), 6),
                )
            )
        return out

    # -- reads ----------------------------------------------------------------
    def entity(self, kb: str, name: str) -> GraphNode | None:
        rows = self._rows(
            select(GraphEntity.name, GraphEntity.type).where(
                GraphEntity.kb == kb, GraphEntity.key == entity_key(check_entity_name(name))
            )
        )
        return GraphNode(**rows[0]) if rows else None

    def navigate(
        self,
        kb: str,
        entity: str,
        max_hops: int = 2,
        relation_filter: Iterable[str] | None = None,
        max_paths: int = 20,
        max_nodes_per_hop: int = 25,
    ) -> list[GraphPath]:
        """Paths from `entity` to the nodes around it, best score first (score = product of weights)."""
        name, hops, types, fan, limit = navigation(entity, max_hops, relation_filter, max_paths, max_nodes_per_hop)
        start = self._require_id(kb, name)
        statement = text(_navigate_sql(hops)).bindparams(bindparam("types", expanding=True))
        rows = self._rows(
            statement, {"start": start, "start_path": f",{start},", "types": types, "fan": fan, "max_paths": limit}
        )
        return self._paths(rows)

    def navigate_between(
        self,
        kb: str,
        source: str,
        target: str,
        max_hops: int = 3,
        relation_filter: Iterable[str] | None = None,
        max_paths: int = 5,
    ) -> PathsBetween:
        """Up to `max_paths` cycle-free paths between two entities; if none, `reachable: false` and the nearest pair."""
        a, b, hops, types, limit = navigation_between(source, target, max_hops, relation_filter, max_paths)
        source_id, target_id = self._require_id(kb, a), self._require_id(kb, b)
        statement = text(_BETWEEN_SQL).bindparams(bindparam("types", expanding=True))
        rows = self._rows(
            statement,
            {
                "source": source_id,
                "target": target_id,
                "start_path": f",{source_id},",
                "types": types,
                "hops": hops,
                "max_paths": limit,
            },
        )
        return paths_between(self, kb, a, b, self._paths(rows), hops, types)

    def neighbours(
        self, kb: str, keys: list[str], relation_filter: Iterable[str] | None = None
    ) -> list[tuple[str, str, str, str]]:
        """(key, neighbour key, neighbour name, relation type) for every relation touching `keys`, both ways."""
        if not keys:
            return []
        types = relation_types(relation_filter)
        # from the named entities outwards (their kb+key index, then each end's relation index)
        statement = text(
            "SELECT s.key AS a, t.key AS b, t.name AS name, r.type AS type FROM graph_entity s "
            "JOIN graph_relation r ON r.source_id = s.id JOIN graph_entity t ON t.id = r.target_id "
            "WHERE s.kb = :kb AND s.key IN :keys AND r.type IN :types "
            "UNION ALL "
            "SELECT t.key, s.key, s.name, r.type FROM graph_entity t "
            "JOIN graph_relation r ON r.target_id = t.id JOIN graph_entity s ON s.id = r.source_id "
            "WHERE t.kb = :kb AND t.key IN :keys AND r.type IN :types"
        ).bindparams(bindparam("types", expanding=True), bindparam("keys", expanding=True))
        return [
            (r["a"], r["b"], r["name"], r["type"])
            for r in self._rows(statement, {"kb": kb, "types": types, "keys": list(keys)})
        ]

    def traversal_rows(self, kb: str, limit: int) -> tuple[list[tuple], list[tuple]]:
        """Every entity of `kb` as (key, name, type) and up to `limit` + 1 of its relations as (type, source key,
        target key, weight), for `stores.knowledge_graph_memory.GraphSnapshot`."""
        entities = self._rows(
            select(GraphEntity.id, GraphEntity.key, GraphEntity.name, GraphEntity.type)
            .where(GraphEntity.kb == kb)
            .order_by(GraphEntity.id)
        )
        keys = {r["id"]: r["key"] for r in entities}
        relations = self._rows(
            select(GraphRelation.type, GraphRelation.source_id, GraphRelation.target_id, GraphRelation.weight)
            .where(GraphRelation.kb == kb)
            .order_by(GraphRelation.id)
            .limit(int(limit) + 1)
        )
        return (
            [(r["key"], r["name"], r["type"]) for r in entities],
            [(r["type"], keys.get(r["source_id"]), keys.get(r["target_id"]), r["weight"]) for r in relations],
        )

    def entity_names(self, kb: str) -> dict[str, tuple[str, str | None]]:
        rows = self._rows(
            select(GraphEntity.key, GraphEntity.name, GraphEntity.type, GraphEntity.aliases).where(GraphEntity.kb == kb)
        )
        names: dict[str, tuple[str, str | None]] = {}
        for r in rows:
            names[r["key"]] = (r["name"], r["type"])
        for r in rows:
            for alias in r["aliases"] or []:
                names.setdefault(entity_key(alias), (r["name"], r["type"]))
        return names

    def entities_of_documents(self, kb: str, doc_keys: list[str], limit: int = 10) -> list[GraphNode]:
        """The entities these documents mention most, most-mentioned first."""
        if not doc_keys:
            return []
        m, e = GraphMention, GraphEntity
        docs, mentions = func.count(m.doc_key).label("docs"), func.sum(m.count).label("mentions")
        rows = self._rows(
            select(e.name, e.type, docs, mentions)
            .join(m, m.entity_id == e.id)
            .where(m.kb == kb, m.doc_key.in_(list(doc_keys)))
            .group_by(e.id, e.name, e.type)
            .order_by(docs.desc(), mentions.desc(), e.name)
            .limit(limit)
        )
        return [GraphNode(name=r["name"], type=r["type"]) for r in rows]

    def documents_mentioning(self, kb: str, names: list[str]) -> dict[str, dict]:
        """doc_key -> {title, domain, entities: [names]} for documents that mention any of `names`."""
        keys = [entity_key(n) for n in names]
        if not keys:
            return {}
        d, m, e = GraphDocumentRow, GraphMention, GraphEntity
        rows = self._rows(
            select(d.doc_key, d.title, d.domain, e.name)
            .join(m, (m.kb == d.kb) & (m.doc_key == d.doc_key))
            .join(e, e.id == m.entity_id)
            .where(d.kb == kb, e.key.in_(keys))
            .order_by(d.doc_key, e.name)
        )
        out: dict[str, dict] = {}
        for r in rows:
            doc = out.setdefault(
                r["doc_key"], {"doc_key": r["doc_key"], "title": r["title"], "domain": r["domain"], "entities": []}
            )
            doc["entities"].append(r["name"])
        return out

    def stats(self, kb: str) -> dict[str, int]:
        def count(table) -> int:
            return self._rows(select(func.count().label("n")).select_from(table).where(table.kb == kb))[0]["n"]

        return {"entities": count(GraphEntity), "documents": count(GraphDocumentRow), "relations": count(GraphRelation)}

    def counts(self, kb: str) -> dict[str, int]:
        """The graph's totals, as `replace_kb` and `update_kb` report them (stats plus mentions)."""
        mentions = self._rows(select(func.count().label("n")).select_from(GraphMention).where(GraphMention.kb == kb))
        stats = self.stats(kb)
        return {
            "entities": stats["entities"],
            "documents": stats["documents"],
            "mentions": mentions[0]["n"],
            "relations": stats["relations"],
        }

    # -- writes ---------------------------------------------------------------
    @staticmethod
    def _delete_kb(conn, kb: str) -> None:
        for table in (GraphRelation, GraphMention, GraphDocumentRow, GraphEntity):
            conn.execute(delete(table).where(table.kb == kb))

    def discard_unfinished(self, kb: str) -> None:
        """Nothing: a load is one transaction here, so a killed one leaves nothing."""

    def drop_kb(self, kb: str) -> None:
        try:
            with self.db.engine.begin() as conn:
                self._delete_kb(conn, kb)
        except DBAPIError as exc:
            raise BackendError(f"graph write failed: {first_line(exc.orig)}") from exc

    def replace_kb(self, kb: str, data: GraphData, progress=None) -> dict[str, int]:
        """Load `data` as the whole graph of `kb`, in one transaction: readers see the old graph or the new one."""
        for rel in data.relations:
            relation_types([rel["type"]])  # the whitelist, before anything is written
        try:
            with self.db.engine.begin() as conn:
                self._delete_kb(conn, kb)
                self._insert(conn, kb, data, progress)
        except DBAPIError as exc:
            raise BackendError(f"graph write failed: {first_line(exc.orig)}") from exc
        return totals(data)

    @staticmethod
    def _read(conn, kb: str) -> tuple[GraphData, dict[str, int]]:
        """The stored graph of `kb` and its entity ids by key."""
        data, ids = GraphData(), {}
        for r in conn.execute(
            select(GraphEntity.id, GraphEntity.key, GraphEntity.name, GraphEntity.type, GraphEntity.aliases).where(
                GraphEntity.kb == kb
            )
        ).mappings():
            ids[r["key"]] = r["id"]
            data.entities[r["key"]] = {
                "key": r["key"],
                "name": r["name"],
                "type": r["type"],
                "aliases": list(r["aliases"] or []),
            }
        keys = {i: k for k, i in ids.items()}
        data.documents = [
            dict(r)
            for r in conn.execute(
                select(GraphDocumentRow.doc_key, GraphDocumentRow.title, GraphDocumentRow.domain).where(
                    GraphDocumentRow.kb == kb
                )
            ).mappings()
        ]
        data.mentions = [
            {"doc": r["doc_key"], "key": keys[r["entity_id"]], "count": r["count"]}
            for r in conn.execute(
                select(GraphMention.doc_key, GraphMention.entity_id, GraphMention.count).where(GraphMention.kb == kb)
            ).mappings()
        ]
        data.relations = [
            {
                "type": r["type"],
                "s": keys[r["source_id"]],
                "t": keys[r["target_id"]],
                "weight": r["weight"],
                "sources": list(r["sources"] or []),
            }
            for r in conn.execute(
                select(
                    GraphRelation.type,
                    GraphRelation.source_id,
                    GraphRelation.target_id,
                    GraphRelation.weight,
                    GraphRelation.sources,
                ).where(GraphRelation.kb == kb)
            ).mappings()
        ]
        return data, ids

    def read_kb(self, kb: str) -> GraphData:
        with self.db.engine.connect() as conn:
            return self._read(conn, kb)[0]

    def update_kb(self, kb: str, data: GraphData, progress=None) -> tuple[dict[str, int], dict[str, int]]:
        """Make the stored graph of `kb` equal to `data` by writing only the difference (incremental ingest),
        in one transaction. Returns the graph's totals and the rows written per kind."""
        for rel in data.relations:
            relation_types([rel["type"]])
        e, d, m, r = GraphEntity, GraphDocumentRow, GraphMention, GraphRelation
        try:
            with self.db.engine.begin() as conn:
                stored, ids = self._read(conn, kb)
                diff = GraphDiff.between(stored, data)

                def each(statement, rows: list[dict]) -> None:
                    for batch in _batches(rows):
                        conn.execute(statement, batch)

                rel_match = (
                    (r.kb == kb)
                    & (r.type == bindparam("p_type"))
                    & (r.source_id == bindparam("p_s"))
                    & (r.target_id == bindparam("p_t"))
                )

                def ends(x: dict) -> dict:  # p_ names only: in an UPDATE a parameter named like a column becomes a SET
                    return {"p_type": x["type"].upper(), "p_s": ids[x["s"]], "p_t": ids[x["t"]]}

                each(delete(r).where(rel_match), [ends(x) for x in diff.relations.gone])
                mention_match = (m.kb == kb) & (m.doc_key == bindparam("p_doc")) & (m.entity_id == bindparam("p_e"))
                each(
                    delete(m).where(mention_match),
                    [{"p_doc": x["doc"], "p_e": ids[x["key"]]} for x in diff.mentions.gone],
                )
                gone_docs = [x["doc_key"] for x in diff.documents.gone]
                for batch in _chunks(gone_docs):
                    conn.execute(delete(m).where(m.kb == kb, m.doc_key.in_(batch)))
                    conn.execute(delete(d).where(d.kb == kb, d.doc_key.in_(batch)))
                gone_ids = [ids[x["key"]] for x in diff.entities.gone]
                for batch in _chunks(gone_ids):
                    conn.execute(delete(r).where(r.source_id.in_(batch) | r.target_id.in_(batch)))
                    conn.execute(delete(m).where(m.entity_id.in_(batch)))
                    conn.execute(delete(e).where(e.id.in_(batch)))
                each(
                    update(e)
                    .where(e.id == bindparam("p_id"))
                    .values(name=bindparam("p_name"), type=bindparam("p_etype"), aliases=bindparam("p_aliases")),
                    [
                        {"p_id": ids[x["key"]], "p_name": x["name"], "p_etype": x["type"], "p_aliases": x["aliases"]}
                        for x in diff.entities.changed
                    ],
                )
                each(
                    update(d)
                    .where(d.kb == kb, d.doc_key == bindparam("p_doc"))
                    .values(title=bindparam("p_title"), domain=bindparam("p_domain")),
                    [
                        {"p_doc": x["doc_key"], "p_title": x["title"], "p_domain": x["domain"]}
                        for x in diff.documents.changed
                    ],
                )
                each(
                    update(m).where(mention_match).values(count=bindparam("p_count")),
                    [{"p_doc": x["doc"], "p_e": ids[x["key"]], "p_count": x["count"]} for x in diff.mentions.changed],
                )
                each(
                    update(r).where(rel_match).values(weight=bindparam("p_weight"), sources=bindparam("p_sources")),
                    [{**ends(x), "p_weight": x["weight"], "p_sources": x["sources"]} for x in diff.relations.changed],
                )
                self._insert(
                    conn,
                    kb,
                    GraphData(
                        entities={x["key"]: x for x in diff.entities.new},
                        documents=diff.documents.new,
                        mentions=diff.mentions.new,
                        relations=diff.relations.new,
                    ),
                    progress,
                )
        except DBAPIError as exc:
            raise BackendError(f"graph write failed: {first_line(exc.orig)}") from exc
        return totals(data), diff.counts()

    @staticmethod
    def _insert(conn, kb: str, data: GraphData, progress=None) -> None:
        """Insert the rows of `data` (entities first: the others refer to them by id)."""
        now = datetime.now(UTC).replace(tzinfo=None)
        for rows in _batches(list(data.entities.values())):
            conn.execute(
                insert(GraphEntity),
                [
                    {"kb": kb, "key": r["key"], "name": r["name"], "type": r["type"], "aliases": r["aliases"]}
                    for r in rows
                ],
            )
        ids = dict(conn.execute(select(GraphEntity.key, GraphEntity.id).where(GraphEntity.kb == kb)).all())
        for rows in _batches(data.documents):
            conn.execute(
                insert(GraphDocumentRow),
                [{"kb": kb, "doc_key": r["doc_key"], "title": r["title"], "domain": r["domain"]} for r in rows],
            )
        mentions = [
            {"kb": kb, "doc_key": r["doc"], "entity_id": ids[r["key"]], "count": r["count"]}
            for r in data.mentions
            if r["key"] in ids
        ]
        for rows in _batches(mentions):
            conn.execute(insert(GraphMention), rows)
        for rows in _batches(data.relations):
            conn.execute(
                insert(GraphRelation),
                [
                    {
                        "kb": kb,
                        "type": r["type"].upper(),
                        "source_id": ids[r["s"]],
                        "target_id": ids[r["t"]],
                        "weight": r["weight"],
                        "sources": r["sources"],
                        "created_at": now,
                    }
                    for r in rows
                ],
            )
            if progress:
                progress(len(rows))

    def close(self) -> None:
        """The database belongs to the runtime; nothing of its own to release."""


def _chunks(values: list, size: int = 500):
    """IN-lists short enough for any database's parameter limit."""
    for i in range(0, len(values), size):
        yield values[i : i + size]


def _batches(rows: list[dict], size: int = BATCH):
    for i in range(0, len(rows), size):
        yield rows[i : i + size]
