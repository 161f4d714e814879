"""The Cypher graph store: schema, bulk load and traversal in Cypher, on either driver (FalkorDB, Neo4j).

Schema (every node carries its knowledge base in `kb`):
  (:Entity {kb, key, name, type, aliases})      key = the case-folded name
  (:Document {kb, doc_key, title, domain})-[:MENTIONS {count}]->(:Entity)
  (:Entity)-[:DEPENDS_ON|REFERENCES|CO_OCCURS|CONFLICTS_WITH|DERIVED_FROM|RELATED_TO
             {weight, created_at, sources}]->(:Entity)

Relationship types and hop bounds cannot be Cypher parameters, so they are
checked against `RELATION_TYPES` and integer ranges before they are written
into a query; everything else (names, kb, limits) travels as a parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from pydantic import ValidationError

from executor.core.errors import BackendError, first_line
from executor.stores.graph_diff import GraphDiff, totals
from executor.stores.knowledge_graph import (
    DEFAULT_WEIGHT,
    GraphData,
    GraphNode,
    GraphPath,
    OldGraphLeft,
    PathsBetween,
    check_entity_name,
    entity_key,
    navigation,
    navigation_between,
    paths_between,
    relation_pattern,
    relation_types,
    require_entity,
)
from executor.stores.knowledge_graph_drivers import CypherDriver, Dialect, ensure_indexes

BATCH = 5000
STAGING_PREFIX = "~staging~"  # knowledge base names are [a-z][a-z0-9_]*: this prefix is never one
RETIRED_PREFIX = "~retired~"  # a replaced graph, between the swap and its batched drop


def _leftovers(kb: str) -> tuple[str, str]:
    """The names a rebuild of `kb` loads under and retires to, which a killed one leaves behind."""
    return STAGING_PREFIX + kb, RETIRED_PREFIX + kb


_PATH_PROJECTION = (
    "[n IN {nodes} | {{name: n.name, type: n.type}}] AS nodes, "
    "[r IN {rels} | {{type: type(r), source: startNode(r).name, target: endNode(r).name, "
    "weight: coalesce(r.weight, {default})}}] AS edges"
)


def _navigate_query(dialect: Dialect, hops: int, types: str) -> str:
    """Breadth-first, one level per stage, in one query.

    Each stage expands the previous frontier, keeps the best-scoring path to
    every new node (so paths are cycle-free and each node is reached once, at
    its nearest hop), and keeps only the `$fan` best new nodes: the work per
    stage is bounded by fan x degree however dense the graph is. The stage is
    a subquery so that its grouping key is the new node alone, not the lists
    carried alongside (grouping on those made a 3-hop call 6x slower). The
    candidates carry only (parent, relation, score); the path lists are built
    for the `$fan` winners alone (building them for every candidate, then
    reducing to the best, was most of a 3-hop call's time).
    """
    step = (
        f"{dialect.call('frontier, seen')}\n"
        "  UNWIND frontier AS f\n"
        "  WITH f, seen, f.n AS a\n"
        f"  MATCH (a)-[r:{types}]-(m:Entity)\n"
        "  WHERE NOT m IN seen\n"
        f"  WITH m, f, r, f.score * coalesce(r.weight, {DEFAULT_WEIGHT}) AS score\n"
        "  ORDER BY score DESC\n"
        "  WITH m, collect({f: f, r: r, score: score})[0] AS best\n"
        "  ORDER BY best.score DESC\n"
        "  LIMIT $fan\n"
        "  RETURN collect({n: m, ns: best.f.ns + [m], rs: best.f.rs + [best.r], score: best.score}) AS reached\n"
        "}\n"
        "WITH seen + [x IN reached | x.n] AS seen, found + reached AS found, reached AS frontier"
    )
    return "\n".join(
        [
            "MATCH (s:Entity {kb: $kb, key: $key})",
            "WITH [{n: s, ns: [s], rs: [], score: 1.0}] AS frontier, [s] AS seen, [] AS found",
            *([step] * hops),
            "UNWIND found AS p",
            "RETURN "
            + _PATH_PROJECTION.format(nodes="p.ns", rels="p.rs", default=DEFAULT_WEIGHT)
            + ", p.score AS score",
            "ORDER BY score DESC, size(p.rs) ASC",
            "LIMIT $max_paths",
        ]
    )


def _between_query(hops: int, types: str) -> str:
    return "\n".join(
        [
            "MATCH (a:Entity {kb: $kb, key: $source}), (b:Entity {kb: $kb, key: $target})",
            f"MATCH p = (a)-[:{types}*1..{hops}]-(b)",
            "WHERE all(n IN nodes(p) WHERE size([m IN nodes(p) WHERE m = n]) = 1)",
            f"WITH p, reduce(s = 1.0, r IN relationships(p) | s * coalesce(r.weight, {DEFAULT_WEIGHT})) AS score",
            "ORDER BY score DESC, length(p) ASC",
            "LIMIT $max_paths",
            "RETURN "
            + _PATH_PROJECTION.format(nodes="nodes(p)", rels="relationships(p)", default=DEFAULT_WEIGHT)
            + ", score",
        ]
    )


def _is_text(value, optional: bool = False) -> bool:
    return isinstance(value, str) or (optional and value is None)


class CypherGraphStore:
    """`stores.graph_store.GraphStore` in Cypher, on a FalkorDB or Neo4j driver."""

    def __init__(self, driver: CypherDriver, written: Callable[[], None] | None = None):
        """`written`: called after a KB's graph was written or dropped (the embedded FalkorDB compacts its files)."""
        self.driver = driver
        self._indexed = False
        self._written = written or (lambda: None)

    # -- reads: what another program wrote under the KB's name -------------------
    def _foreign(self, kb: str, what: str) -> BackendError:
        """A node of the KB's name that Executor did not write (its name a number, its aliases a string): another
        program writes to this graph. Said as the graph's failure, so a lookup answers without the graph and the
        graph commands say it in one line (it was a TypeError out of the lookup, a ValidationError out of
        `graph neighbors`: hostile24c finding 7)."""
        own = "NEO4J_DATABASE, or a Neo4j" if self.driver.dialect.name == "neo4j" else "EXECUTOR_GRAPH_NAME"
        return BackendError(
            f"graph unavailable: the {self.driver.description} holds nodes of knowledge base {kb!r} that Executor "
            f"did not write ({what}): another program writes to this graph; give Executor a graph of its own "
            f"({own}), then run `executor ingest --rebuild`"
        )

    def _shaped(self, kb: str, rows: list[dict], text: tuple[str, ...], optional: tuple[str, ...] = ()) -> list[dict]:
        """`rows` whose `text` fields are strings and whose `optional` ones are strings or null, as Executor writes
        them; otherwise `_foreign`."""
        for r in rows:
            for field in text + optional:
                if not _is_text(r.get(field), optional=field in optional):
                    raise self._foreign(kb, f"an entity or document whose {field} is {r.get(field)!r}")
        return rows

    def _paths(self, kb: str, rows: list[dict]) -> list[GraphPath]:
        try:
            return [GraphPath(nodes=r["nodes"], edges=r["edges"], score=round(float(r["score"]), 6)) for r in rows]
        except (ValidationError, TypeError, ValueError) as exc:
            raise self._foreign(kb, f"a path through it reads {first_line(exc, 120)}") from exc

    # -- reads ----------------------------------------------------------------
    def entity(self, kb: str, name: str) -> GraphNode | None:
        rows = self.driver.run(
            "MATCH (e:Entity {kb: $kb, key: $key}) RETURN e.name AS name, e.type AS type",
            {"kb": kb, "key": entity_key(check_entity_name(name))},
        )
        return GraphNode(**self._shaped(kb, rows, ("name",), ("type",))[0]) if rows else None

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
        query = _navigate_query(self.driver.dialect, hops, "|".join(types))  # relation_pattern: whitelisted names
        rows = self.driver.run(query, {"kb": kb, "key": entity_key(name), "fan": fan, "max_paths": limit})
        if not rows:
            require_entity(self, kb, name)  # no paths: an error if the entity itself is unknown
        return self._paths(kb, rows)

    def navigate_between(
        self,
        kb: str,
        source: str,
        target: str,
        max_hops: int = 3,
        relation_filter: Iterable[str] | None = None,
        max_paths: int = 5,
    ) -> PathsBetween:
        """Up to `max_paths` cycle-free paths between two entities; `reachable: false` and no paths if none."""
        a, b, hops, types, limit = navigation_between(source, target, max_hops, relation_filter, max_paths)
        query = _between_query(hops, "|".join(types))  # relation_pattern: whitelisted names
        rows = self.driver.run(query, {"kb": kb, "source": entity_key(a), "target": entity_key(b), "max_paths": limit})
        return paths_between(self, kb, a, b, self._paths(kb, rows), max_hops, relation_filter)

    def neighbours(
        self, kb: str, keys: list[str], relation_filter: Iterable[str] | None = None
    ) -> list[tuple[str, str, str, str]]:
        """(key, neighbour key, neighbour name, relation type) for every relation touching `keys`, both ways."""
        rows = self.driver.run(
            f"MATCH (a:Entity {{kb: $kb}})-[r:{relation_pattern(relation_filter)}]-(b:Entity) WHERE a.key IN $keys "
            "RETURN a.key AS a, b.key AS b, b.name AS name, type(r) AS type",
            {"kb": kb, "keys": list(keys)},
        )
        return [(r["a"], r["b"], r["name"], r["type"]) for r in self._shaped(kb, rows, ("a", "b", "name"))]

    def traversal_rows(self, kb: str, limit: int) -> tuple[list[tuple], list[tuple]]:
        """Every entity of `kb` as (key, name, type) and up to `limit` + 1 of its relations as (type, source key,
        target key, weight): what `stores.knowledge_graph_memory.GraphSnapshot` traverses in memory. The
        relations are matched as the traversal matches them (from an entity of the KB to any entity)."""
        run = self.driver.run_scalars  # bulk rows: FalkorDB's weights come back as text, hence float() below
        entities = run("MATCH (e:Entity {kb: $kb}) RETURN e.key, e.name, e.type", {"kb": kb})
        relations = run(
            f"MATCH (a:Entity {{kb: $kb}})-[r:{relation_pattern(None)}]->(b:Entity) "
            "RETURN type(r), a.key, b.key, r.weight LIMIT $limit",
            {"kb": kb, "limit": int(limit) + 1},
        )
        named = [dict(zip(("key", "name", "type"), r)) for r in entities]
        ends = [{"source": s, "target": t} for _, s, t, _ in relations]
        self._shaped(kb, named, ("key", "name"), ("type",))
        self._shaped(kb, ends, ("source", "target"))
        try:
            weights = [None if w is None else float(w) for *_, w in relations]
        except (TypeError, ValueError) as exc:
            raise self._foreign(kb, f"a relation whose weight reads {first_line(exc, 120)}") from exc
        return [tuple(r) for r in entities], [(y, s, t, w) for (y, s, t, _), w in zip(relations, weights)]

    def entity_names(self, kb: str) -> dict[str, tuple[str, str | None]]:
        rows = self.driver.run(
            "MATCH (e:Entity {kb: $kb}) RETURN e.key AS key, e.name AS name, e.type AS type, e.aliases AS aliases",
            {"kb": kb},
        )
        names: dict[str, tuple[str, str | None]] = {}
        for r in self._shaped(kb, rows, ("key", "name"), ("type",)):
            if not isinstance(r.get("aliases") or [], list) or not all(_is_text(a) for a in r.get("aliases") or []):
                raise self._foreign(kb, f"an entity whose aliases are {r.get('aliases')!r}")
            names[r["key"]] = (r["name"], r["type"])
            for alias in r.get("aliases") or []:
                names.setdefault(entity_key(alias), (r["name"], r["type"]))
        return names

    def entities_of_documents(self, kb: str, doc_keys: list[str], limit: int = 10) -> list[GraphNode]:
        """The entities these documents mention most, most-mentioned first."""
        rows = self.driver.run(
            "MATCH (d:Document {kb: $kb})-[m:MENTIONS]->(e:Entity) WHERE d.doc_key IN $docs "
            "WITH e, sum(m.count) AS mentions, count(d) AS docs "
            "RETURN e.name AS name, e.type AS type ORDER BY docs DESC, mentions DESC, name LIMIT $limit",
            {"kb": kb, "docs": list(doc_keys), "limit": limit},
        )
        return [GraphNode(**r) for r in self._shaped(kb, rows, ("name",), ("type",))]

    def documents_mentioning(self, kb: str, names: list[str]) -> dict[str, dict]:
        """doc_key -> {title, domain, entities: [names]} for documents that mention any of `names`."""
        rows = self.driver.run(
            "MATCH (d:Document {kb: $kb})-[:MENTIONS]->(e:Entity) WHERE e.key IN $keys "
            "RETURN d.doc_key AS doc_key, d.title AS title, d.domain AS domain, collect(e.name) AS entities",
            {"kb": kb, "keys": [entity_key(n) for n in names]},
        )
        for r in self._shaped(kb, rows, ("doc_key",), ("title", "domain")):
            if not all(_is_text(n) for n in r["entities"]):
                raise self._foreign(kb, f"an entity whose name is one of {r['entities']!r}")
        return {r["doc_key"]: r for r in rows}

    def stats(self, kb: str) -> dict[str, int]:
        entities = self.driver.run("MATCH (e:Entity {kb: $kb}) RETURN count(e) AS n", {"kb": kb})[0]["n"]
        documents = self.driver.run("MATCH (d:Document {kb: $kb}) RETURN count(d) AS n", {"kb": kb})[0]["n"]
        relations = self.driver.run(
            f"MATCH (a:Entity {{kb: $kb}})-[r:{relation_pattern(None)}]->(:Entity) RETURN count(r) AS n", {"kb": kb}
        )[0]["n"]
        return {"entities": entities, "documents": documents, "relations": relations}

    def counts(self, kb: str) -> dict[str, int]:
        """The graph's totals, as `replace_kb` and `update_kb` report them (stats plus mentions)."""
        self._ensure_indexes()  # FalkorDB refuses any query on a graph never written to; this creates it
        mentions = self.driver.run(
            "MATCH (:Document {kb: $kb})-[m:MENTIONS]->(:Entity) RETURN count(m) AS n", {"kb": kb}
        )[0]["n"]
        stats = self.stats(kb)
        return {
            "entities": stats["entities"],
            "documents": stats["documents"],
            "mentions": mentions,
            "relations": stats["relations"],
        }

    # -- writes ---------------------------------------------------------------
    def _ensure_indexes(self) -> None:
        if not self._indexed:
            ensure_indexes(self.driver)
            self._indexed = True

    def drop_kb(self, kb: str) -> None:
        """Remove a knowledge base's graph, and what a load or swap killed half-way left of it: a staging or retired
        copy of a whole graph, which stayed in the server for good after `kb drop` (hostile24b finding 5)."""
        for name in (kb, *_leftovers(kb)):
            self._drop(name)
        self._written()

    def discard_unfinished(self, kb: str) -> None:
        """A copy a rebuild killed half-way left goes with the next ingest of any kind, one that changes nothing
        included: it stayed in the server until the next rebuild (hostile24b finding 5)."""
        for leftover in _leftovers(kb):
            self._drop(leftover)
        self._written()

    def _drop(self, kb: str) -> None:
        """Remove the nodes under the name `kb` with their edges, in batches so that no transaction holds a large
        graph's deletions (Neo4j caps a transaction's memory: 100,000 edges went over 256 MiB as one). Every edge of
        a KB leaves one of its nodes (MENTIONS from a Document, relations from an Entity)."""
        for step in (
            "MATCH (:{label} {{kb: $kb}})-[r]->() WITH r LIMIT $batch DELETE r RETURN count(*) AS n",
            "MATCH (n:{label} {{kb: $kb}}) WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS n",
        ):
            for label in ("Document", "Entity"):
                while True:
                    rows = self.driver.run(step.format(label=label), {"kb": kb, "batch": BATCH}, write=True)
                    if not rows or rows[0]["n"] == 0:
                        break

    def replace_kb(self, kb: str, data: GraphData, progress=None) -> dict[str, int]:
        """Load `data` as the whole graph of `kb`, atomically: it is built under a staging name that no
        knowledge base can have, then swapped in by one query. A load that fails half-way leaves the old
        graph as it was (and removes the half-built one)."""
        self._ensure_indexes()
        staging, retired = STAGING_PREFIX + kb, RETIRED_PREFIX + kb
        self.discard_unfinished(kb)  # what a load, or a drop after a swap, killed half-way left behind
        try:
            counts = self._load(staging, data, progress)
        except BaseException:
            try:
                self._drop(staging)
            except Exception:  # noqa: BLE001 - the load's error is the one to report; the next load cleans up
                pass
            raise
        self._swap(staging, retired, kb)
        try:
            self._drop(retired)
        except BackendError as exc:
            raise OldGraphLeft(counts, exc) from exc
        finally:
            self._written()
        return counts

    def _swap(self, staging: str, retired: str, kb: str) -> None:
        """One query, so one transaction (Neo4j) or one atomic write (FalkorDB): readers see the old graph
        or the new one, never neither. The old graph is renamed, not deleted, here: the query then changes one
        property per node, however many edges the graph has (`_drop` deletes it afterwards, in batches)."""
        steps = []
        for label in ("Document", "Entity"):
            steps.append(f"OPTIONAL MATCH (old:{label} {{kb: $kb}}) SET old.kb = $retired WITH count(*) AS _")
        for label in ("Document", "Entity"):
            steps.append(f"OPTIONAL MATCH (new:{label} {{kb: $staging}}) SET new.kb = $kb WITH count(*) AS _")
        self.driver.run(
            "\n".join(steps) + "\nRETURN 1 AS done", {"kb": kb, "staging": staging, "retired": retired}, write=True
        )

    def read_kb(self, kb: str) -> GraphData:
        """The stored graph of `kb`, as the rows `update_kb` compares with."""
        run = self.driver.run
        data = GraphData()
        for r in run(
            "MATCH (e:Entity {kb: $kb}) RETURN e.key AS key, e.name AS name, e.type AS type, e.aliases AS aliases",
            {"kb": kb},
        ):
            data.entities[r["key"]] = {**r, "aliases": list(r["aliases"] or [])}
        data.documents = run(
            "MATCH (d:Document {kb: $kb}) RETURN d.doc_key AS doc_key, d.title AS title, d.domain AS domain", {"kb": kb}
        )
        data.mentions = run(
            "MATCH (d:Document {kb: $kb})-[m:MENTIONS]->(e:Entity) "
            "RETURN d.doc_key AS doc, e.key AS key, m.count AS count",
            {"kb": kb},
        )
        data.relations = [
            {**r, "sources": list(r["sources"] or [])}
            for r in run(
                f"MATCH (a:Entity {{kb: $kb}})-[x:{relation_pattern(None)}]->(b:Entity) "
                "RETURN type(x) AS type, a.key AS s, b.key AS t, x.weight AS weight, x.sources AS sources",
                {"kb": kb},
            )
        ]
        return data

    def update_kb(self, kb: str, data: GraphData, progress=None) -> tuple[dict[str, int], dict[str, int]]:
        """Make the stored graph of `kb` equal to `data` by writing only the difference (incremental ingest).
        Returns the graph's totals and the rows written per kind. Not one transaction: a write that dies
        half-way leaves a graph that the next ingest's difference repairs."""
        for rel in data.relations:
            relation_types([rel["type"]])  # the whitelist, before anything is written
        self._ensure_indexes()
        diff = GraphDiff.between(self.read_kb(kb), data)
        run = self.driver.run
        params = {"kb": kb}
        for rel_type, rows in _by_type(diff.relations.gone):
            for batch in _batches(rows):
                run(
                    f"UNWIND $rows AS r MATCH (:Entity {{kb: $kb, key: r.s}})-[x:{rel_type}]->"
                    "(:Entity {kb: $kb, key: r.t}) DELETE x",
                    {**params, "rows": batch},
                    write=True,
                )
        for batch in _batches(diff.mentions.gone):
            run(
                "UNWIND $rows AS r MATCH (:Document {kb: $kb, doc_key: r.doc})-[m:MENTIONS]->"
                "(:Entity {kb: $kb, key: r.key}) DELETE m",
                {**params, "rows": batch},
                write=True,
            )
        for label, field_, gone in (
            ("Document", "doc_key", diff.documents.gone),
            ("Entity", "key", diff.entities.gone),
        ):
            for batch in _batches(gone):
                run(
                    f"UNWIND $rows AS r MATCH (n:{label} {{kb: $kb, {field_}: r.{field_}}}) DETACH DELETE n",
                    {**params, "rows": batch},
                    write=True,
                )
        for batch in _batches(diff.entities.changed):
            run(
                "UNWIND $rows AS r MATCH (e:Entity {kb: $kb, key: r.key}) SET e.name = r.name, e.type = r.type, "
                "e.aliases = r.aliases",
                {**params, "rows": batch},
                write=True,
            )
        for batch in _batches(diff.documents.changed):
            run(
                "UNWIND $rows AS r MATCH (d:Document {kb: $kb, doc_key: r.doc_key}) SET d.title = r.title, "
                "d.domain = r.domain",
                {**params, "rows": batch},
                write=True,
            )
        for batch in _batches(diff.mentions.changed):
            run(
                "UNWIND $rows AS r MATCH (:Document {kb: $kb, doc_key: r.doc})-[m:MENTIONS]->"
                "(:Entity {kb: $kb, key: r.key}) SET m.count = r.count",
                {**params, "rows": batch},
                write=True,
            )
        for rel_type, rows in _by_type(diff.relations.changed):
            for batch in _batches(rows):
                run(
                    f"UNWIND $rows AS r MATCH (:Entity {{kb: $kb, key: r.s}})-[x:{rel_type}]->"
                    "(:Entity {kb: $kb, key: r.t}) SET x.weight = r.weight, x.sources = r.sources",
                    {**params, "rows": batch},
                    write=True,
                )
        self._load(
            kb,
            GraphData(
                entities={r["key"]: r for r in diff.entities.new},
                documents=diff.documents.new,
                mentions=diff.mentions.new,
                relations=diff.relations.new,
            ),
            progress,
        )
        self._written()
        return totals(data), diff.counts()

    def _load(self, kb: str, data: GraphData, progress=None) -> dict[str, int]:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        run = self.driver.run
        for rows in _batches(list(data.entities.values())):
            run(
                "UNWIND $rows AS r "
                "CREATE (:Entity {kb: $kb, key: r.key, name: r.name, type: r.type, aliases: r.aliases})",
                {"kb": kb, "rows": rows},
                write=True,
            )
        for rows in _batches(data.documents):
            run(
                "UNWIND $rows AS r CREATE (:Document {kb: $kb, doc_key: r.doc_key, title: r.title, domain: r.domain})",
                {"kb": kb, "rows": rows},
                write=True,
            )
        for rows in _batches(data.mentions):
            run(
                "UNWIND $rows AS r MATCH (d:Document {kb: $kb, doc_key: r.doc}) MATCH (e:Entity {kb: $kb, key: r.key}) "
                "CREATE (d)-[:MENTIONS {count: r.count}]->(e)",
                {"kb": kb, "rows": rows},
                write=True,
            )
        for rel_type, rels in _by_type(data.relations):
            for rows in _batches(rels):
                run(
                    f"UNWIND $rows AS r MATCH (a:Entity {{kb: $kb, key: r.s}}) MATCH (b:Entity {{kb: $kb, key: r.t}}) "
                    f"CREATE (a)-[:{rel_type} {{weight: r.weight, sources: r.sources, created_at: $now}}]->(b)",
                    {"kb": kb, "rows": rows, "now": now},
                    write=True,
                )
                if progress:
                    progress(len(rows))
        return totals(data)

    def close(self) -> None:
        self.driver.close()


def _by_type(relations: list[dict]) -> list[tuple[str, list[dict]]]:
    """Relations grouped by their type, each type checked against the whitelist (it is written into the query)."""
    by_type: dict[str, list[dict]] = {}
    for rel in relations:
        by_type.setdefault(relation_pattern([rel["type"]]), []).append(rel)
    return list(by_type.items())


def _batches(rows: list[dict], size: int = BATCH):
    for i in range(0, len(rows), size):
        yield rows[i : i + size]
