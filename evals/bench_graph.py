"""Graph benchmark: bulk load rate, and navigate latency through the traversal cache, FalkorDB (native client and
neo4j driver) and SQL, beside the same benchmark on a baseline commit's code.

    python -m evals.bench_graph [--nodes 10000] [--edges 100000] [--queries 100] [--no-bolt] [--no-sql]
                                [--no-neo4j] [--baseline-ref REF | --no-baseline] [--json FILE]

A random graph (uniform endpoints, six relation types, weights 0.1-1) is
loaded into a throw-away FalkorDB started from the wheel, with its Bolt port
open. The load goes through `CypherGraphStore.replace_kb` (UNWIND batches) and is set
against a naive one-MERGE-per-edge load of a slice of the same edges. Then
1-, 2- and 3-hop `navigate` calls from random start nodes run through the
traversal cache (`executor/retrieval/traversal_cache.py`, over a real catalog: what graph
expansion, query_knowledge_graph and navigate_graph call; it reads the KB's graph
into memory on its first call, timed apart) and through both drivers' Cypher,
beside two references on the same starts: the plain uncapped variable-length
match (`MATCH p=(s)-[*1..h]-(m)`, best `max_paths` paths by score: what the caps
save) and the same capped traversal as a breadth-first search in a few lines of
Python over an adjacency list (the floor: no query engine, no round trip). The
same graph goes into the SQL backend (`EXECUTOR_GRAPH_BACKEND=sql`) on a
throw-away SQLite file and, when a server answers, a throw-away Postgres schema,
which run the same calls plus 3-hop `navigate_between` between random pairs. With
NEO4J_URI set (services/neo4j/start.sh starts a Neo4j 5.26), the same graph is
loaded into that Neo4j under a KB name of its own (dropped afterwards) and runs
the same calls. The baseline is this benchmark run on another commit's code (`evals/baseline.py`,
FalkorDB only). Printed side by side as ratios, never asserted.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from evals.baseline import run_on
from executor.stores.database import Database
from executor.stores.falkordb_server import FalkorDBServer
from executor.stores.knowledge_graph import DEFAULT_WEIGHT, RELATION_TYPES, GraphData, relation_pattern
from executor.stores.knowledge_graph_cypher import CypherGraphStore
from executor.stores.knowledge_graph_drivers import FALKORDB, FalkorDriver, Neo4jDriver

# a name of its own per run: the Neo4j at NEO4J_URI may hold a team's KBs
KB = f"bench_{random.randrange(16**8):08x}"
# main before navigate was served from memory (issue 17); older commits' traversal cache took other arguments
BEFORE_THIS_WORK = "872b078"
NAIVE_SLICE = 2000
POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def random_graph(nodes: int, edges: int, seed: int = 11) -> GraphData:
    rng = np.random.default_rng(seed)
    data = GraphData()
    names = [f"entity-{i}" for i in range(nodes)]
    for n in names:
        data.add_entity(n, "Concept")
    src, dst = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    weights = rng.uniform(0.1, 1.0, edges).round(3)
    data.relations = [
        {
            "type": RELATION_TYPES[i % len(RELATION_TYPES)],
            "s": names[a],
            "t": names[b],
            "weight": float(w),
            "sources": [],
        }
        for i, (a, b, w) in enumerate(zip(src, dst, weights))
    ]
    return data


def adjacency(data: GraphData) -> dict[str, list[tuple[str, float]]]:
    """Both directions of every relation, as navigate walks them."""
    adj: dict[str, list[tuple[str, float]]] = {k: [] for k in data.entities}
    for r in data.relations:
        w = DEFAULT_WEIGHT if r["weight"] is None else r["weight"]
        adj[r["s"]].append((r["t"], w))
        adj[r["t"]].append((r["s"], w))
    return adj


def memory_bfs(adj: dict, start: str, hops: int, max_paths: int, fan: int) -> list[tuple[float, list[str]]]:
    """navigate's semantics in plain Python: per hop the best path to each new node, the `fan` best kept."""
    frontier, seen, found = [(1.0, [start])], {start}, []
    for _ in range(hops):
        best: dict[str, tuple[float, list[str]]] = {}
        for score, path in frontier:
            for m, w in adj[path[-1]]:
                if m not in seen and (m not in best or score * w > best[m][0]):
                    best[m] = (score * w, path)
        frontier = [(sc, p + [m]) for m, (sc, p) in sorted(best.items(), key=lambda kv: -kv[1][0])[:fan]]
        seen.update(p[-1] for _, p in frontier)
        found += frontier
    return sorted(found, key=lambda x: (-x[0], len(x[1])))[:max_paths]


def plain_match(store: CypherGraphStore, start: str, hops: int, max_paths: int) -> int:
    """The uncapped variable-length match: every path up to `hops` is scored, the best `max_paths` returned."""
    rows = store.driver.run(
        f"MATCH p = (s:Entity {{kb: $kb, key: $key}})-[:{relation_pattern(None)}*1..{int(hops)}]-(m:Entity) "
        f"WITH p, reduce(x = 1.0, r IN relationships(p) | x * coalesce(r.weight, {DEFAULT_WEIGHT})) AS score "
        "ORDER BY score DESC LIMIT $max_paths RETURN [n IN nodes(p) | n.name] AS names, score",
        {"kb": KB, "key": start, "max_paths": max_paths},
    )
    return len(rows)


def _pcts(samples_ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples_ms, 50)), float(np.percentile(samples_ms, 95))


def _free_port() -> int:
    import socket

    for port in random.sample(range(20000, 32000), 50):  # FalkorDB opened no Bolt port above 32767 here
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port")


def naive_load_rate(store: CypherGraphStore, data: GraphData) -> float:
    """Edges per second when each edge is its own MATCH ... MERGE round trip."""
    rels = data.relations[:NAIVE_SLICE]
    started = time.perf_counter()
    for r in tqdm(rels, desc="naive per-edge load", unit="edge", leave=False):
        store.driver.run(
            f"MATCH (a:Entity {{kb: 'naive', key: $s}}) MATCH (b:Entity {{kb: 'naive', key: $t}}) "
            f"MERGE (a)-[x:{r['type']}]->(b) SET x.weight = $w",
            {"s": r["s"], "t": r["t"], "w": r["weight"]},
            write=True,
        )
    return len(rels) / (time.perf_counter() - started)


class _PostgresSchema:
    """A schema of its own on the machine's Postgres, dropped afterwards; None where no server answers."""

    def __init__(self):
        from sqlalchemy import create_engine, text

        self.name = f"bench_graph_{random.randrange(16**8):08x}"
        self.text = text
        try:
            self.admin = create_engine(POSTGRES, connect_args={"connect_timeout": 3})
            with self.admin.begin() as c:
                c.execute(text(f"CREATE SCHEMA {self.name}"))
            self.url = f"{POSTGRES}?options=-csearch_path%3D{self.name}"
        except Exception as exc:  # no server here
            self.url, self.reason = None, exc.__class__.__name__

    def drop(self) -> None:
        if self.url:
            with self.admin.begin() as c:
                c.execute(self.text(f"DROP SCHEMA {self.name} CASCADE"))
            self.admin.dispose()


def _timed_load(store, data: GraphData, label: str) -> float:
    with tqdm(total=len(data.relations), desc=f"{label} load", unit="edge", leave=False) as bar:
        started = time.perf_counter()
        store.replace_kb(KB, data, progress=bar.update)
        return time.perf_counter() - started


def _latency(store, label: str, calls: list, run) -> dict:
    samples, paths = [], 0
    for args in tqdm(calls, desc=label, leave=False):
        t = time.perf_counter()
        paths += run(store, args)
        samples.append((time.perf_counter() - t) * 1000)
    p50, p95 = _pcts(samples)
    return {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "mean_paths": round(paths / len(calls), 1)}


def _traversal_cache(native: CypherGraphStore, folder: Path):
    """The product's path (graph expansion, query_knowledge_graph, navigate_graph): the traversal cache over a
    real catalog, which serves navigate from its in-memory snapshot of the KB's graph where the code has one."""
    from executor.retrieval.traversal_cache import TraversalCache
    from executor.stores.catalog import Catalog

    catalog = Catalog(Database(f"sqlite:///{folder / 'catalog.db'}"))
    catalog.create(KB)
    return TraversalCache(catalog, lambda: native)


def _neo4j_store(console: Console) -> CypherGraphStore | None:
    """The Neo4j at NEO4J_URI (with NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE), or None, saying so, without one."""
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        console.print(
            "[bold]no Neo4j[/]: NEO4J_URI is not set (services/neo4j/start.sh starts one and prints it), "
            "so Neo4j is left out of this run"
        )
        return None
    return CypherGraphStore(
        Neo4jDriver(
            uri,
            os.environ.get("NEO4J_USER", "neo4j"),
            os.environ.get("NEO4J_PASSWORD"),
            os.environ.get("NEO4J_DATABASE"),
            timeout_s=120,
        )
    )


def measure(
    nodes: int,
    edges: int,
    queries: int,
    max_paths: int,
    max_nodes_per_hop: int,
    bolt_driver: bool,
    sql: bool,
    console: Console,
    neo4j: bool = False,
) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bench-graph-"))
    server = FalkorDBServer(folder, bolt_port=_free_port() if bolt_driver else None, bolt_on_all_interfaces=True)
    server.ensure_running()
    # the Bolt port serves the graph named "falkordb" only
    native = CypherGraphStore(FalkorDriver("falkordb", socket_path=str(server.socket_path), timeout_s=60))
    results: dict = {
        "nodes": nodes,
        "edges": edges,
        "queries": queries,
        "max_paths": max_paths,
        "max_nodes_per_hop": max_nodes_per_hop,
        "load": {},
        "navigate": [],
        "between": {},
    }
    stores: dict = {"native": native}
    postgres = None
    try:
        data = random_graph(nodes, edges)
        load_s = _timed_load(native, data, "FalkorDB UNWIND")
        results["load_seconds"] = round(load_s, 2)
        results["load_edges_per_s"] = round(edges / load_s)
        naive = GraphData(entities=data.entities)
        native.replace_kb("naive", naive)
        results["naive_edges_per_s"] = round(naive_load_rate(native, data))
        native.drop_kb("naive")

        if bolt_driver:
            stores["bolt"] = CypherGraphStore(
                Neo4jDriver(
                    f"bolt://127.0.0.1:{server.bolt_port}",
                    "falkordb",
                    "",
                    None,
                    timeout_s=30,
                    plain_bolt=True,
                    dialect=FALKORDB,
                )
            )
        if sql:
            from executor.stores.knowledge_graph_sql import SqlGraphStore

            stores["sqlite"] = SqlGraphStore(Database(f"sqlite:///{folder / 'graph.db'}"))
            postgres = _PostgresSchema()
            if postgres.url:
                stores["postgres"] = SqlGraphStore(Database(postgres.url))
            else:
                console.print(f"[dim]no Postgres at {POSTGRES} ({postgres.reason}): SQL on SQLite only[/]")
        if neo4j and (store := _neo4j_store(console)) is not None:
            stores["neo4j"] = store
        for label in ("sqlite", "postgres", "neo4j"):
            if label in stores:
                seconds = _timed_load(stores[label], data, label)
                results["load"][label] = {"seconds": round(seconds, 2), "edges_per_s": round(edges / seconds)}

        rng = random.Random(5)
        sample = rng.sample(range(nodes), queries + 1)
        starts = [f"entity-{i}" for i in sample[1:]]
        cache = _traversal_cache(native, folder)
        # the first traversal of a KB revision reads its graph into memory (where the code does): timed apart
        t = time.perf_counter()
        cache.navigate(KB, f"entity-{sample[0]}", 1, None, max_paths, max_nodes_per_hop)
        results["cache_first_call_s"] = round(time.perf_counter() - t, 3)
        adj = adjacency(data)
        for hops in (1, 2, 3):
            row: dict = {"hops": hops}
            for label, store in stores.items():
                row[label] = _latency(
                    store,
                    f"{label} {hops}-hop",
                    starts,
                    lambda st, name, hops=hops: len(st.navigate(KB, name, hops, None, max_paths, max_nodes_per_hop)),
                )
            # distinct starts: every call misses the result cache and traverses
            row["cache"] = _latency(
                cache,
                f"traversal cache {hops}-hop",
                starts,
                lambda c, name, hops=hops: len(c.navigate(KB, name, hops, None, max_paths, max_nodes_per_hop)),
            )
            row["plain"] = _latency(
                native, f"plain *1..{hops}", starts, lambda st, name, hops=hops: plain_match(st, name, hops, max_paths)
            )
            row["memory"] = _latency(
                adj,
                f"memory BFS {hops}-hop",
                starts,
                lambda a, name, hops=hops: len(memory_bfs(a, name, hops, max_paths, max_nodes_per_hop)),
            )
            results["navigate"].append(row)
        pairs = [(f"entity-{a}", f"entity-{b}") for a, b in (rng.sample(range(nodes), 2) for _ in range(queries))]
        for label, store in stores.items():
            if label != "bolt":
                results["between"][label] = _latency(
                    store,
                    f"{label} path",
                    pairs,
                    lambda st, ab: len(st.navigate_between(KB, ab[0], ab[1], 3, None, 5).paths),
                )
    finally:
        for label, store in stores.items():
            if label == "neo4j":
                store.drop_kb(KB)  # a shared server: leave nothing behind
            store.close()
        server.stop()
        if postgres is not None:
            postgres.drop()
    return results


def main(
    nodes: int = typer.Option(10_000),
    edges: int = typer.Option(100_000),
    queries: int = typer.Option(100),
    max_paths: int = typer.Option(50),
    max_nodes_per_hop: int = typer.Option(25),
    bolt_driver: bool = typer.Option(
        True, "--bolt/--no-bolt", help="also run the neo4j driver over FalkorDB's Bolt port"
    ),
    sql: bool = typer.Option(True, "--sql/--no-sql", help="also run the SQL backend on SQLite and Postgres"),
    neo4j: bool = typer.Option(True, "--neo4j/--no-neo4j", help="also run the Neo4j at NEO4J_URI, when it is set"),
    baseline_ref: str = typer.Option(BEFORE_THIS_WORK, help="git ref whose code is the baseline"),
    no_baseline: bool = typer.Option(False, "--no-baseline", help="time this code only"),
    json_out: Path = typer.Option(None, "--json"),
):
    console = Console(width=160)
    results = measure(nodes, edges, queries, max_paths, max_nodes_per_hop, bolt_driver, sql, console, neo4j)
    args = [
        "--nodes",
        str(nodes),
        "--edges",
        str(edges),
        "--queries",
        str(queries),
        "--max-paths",
        str(max_paths),
        "--max-nodes-per-hop",
        str(max_nodes_per_hop),
        "--no-bolt",
        "--no-sql",
        "--no-neo4j",
    ]  # the baseline: FalkorDB only
    base = None if no_baseline else run_on(baseline_ref, __file__, args)
    if json_out:
        json_out.write_text(json.dumps({"current": results, "baseline": base, "baseline_ref": baseline_ref}, indent=2))
    if no_baseline and json_out:
        return  # the baseline's own run: its figures go to the JSON only

    console.print(
        f"[bold]load[/] {edges:,} edges + {nodes:,} nodes into FalkorDB in {results['load_seconds']} s = "
        f"{results['load_edges_per_s']:,} edges/s (UNWIND batches); naive per-edge MERGE "
        f"{results['naive_edges_per_s']:,} edges/s; "
        f"ratio {results['load_edges_per_s'] / results['naive_edges_per_s']:.0f}x"
    )
    titles = {
        "bolt": "neo4j driver over Bolt",
        "sqlite": "SQL on SQLite",
        "postgres": "SQL on Postgres",
        "neo4j": "Neo4j",
    }
    for label, load in results["load"].items():
        console.print(
            f"[bold]load[/] the same into {titles[label]} in {load['seconds']} s = {load['edges_per_s']:,} "
            f"edges/s ({load['edges_per_s'] / results['load_edges_per_s']:.2f}x FalkorDB; UNWIND batches)"
        )
    console.print(
        f"[bold]traversal cache[/], first call of the KB revision (reads the graph into memory): "
        f"{results['cache_first_call_s'] * 1000:.0f} ms"
        + ("" if base is None else f"; before ({baseline_ref}): {base['cache_first_call_s'] * 1000:.0f} ms")
    )
    cell = lambda c: "-" if c is None else f"{c['p50_ms']:.2f} / {c['p95_ms']:.2f}"  # noqa: E731
    ratio = lambda a, b: "-" if a is None or b is None else f"{a['p95_ms'] / b['p95_ms']:.1f}x"  # noqa: E731
    table = Table(
        title=f"navigate, {queries} random starts, max_paths {max_paths}, max_nodes_per_hop {max_nodes_per_hop} "
        "(ms, p50 / p95). traversal cache = what graph expansion, query_knowledge_graph and navigate_graph "
        "call; FalkorDB Cypher = CypherGraphStore.navigate; plain = the uncapped variable-length MATCH; BFS floor "
        "= the capped traversal in a few lines of Python; ratio = FalkorDB Cypher p95 / that p95"
    )
    for col in (
        "hops",
        "traversal cache",
        "ratio",
        "FalkorDB Cypher",
        "plain *1..h",
        "ratio",
        "BFS floor",
        "ratio",
        "paths",
    ):
        table.add_column(col, justify="right")
    for r in results["navigate"]:
        table.add_row(
            str(r["hops"]),
            cell(r["cache"]),
            ratio(r["native"], r["cache"]),
            cell(r["native"]),
            cell(r["plain"]),
            ratio(r["native"], r["plain"]),
            cell(r["memory"]),
            ratio(r["native"], r["memory"]),
            f"{r['native']['mean_paths']:.0f}",
        )
    console.print(table)
    stores = [label for label in ("bolt", "neo4j", "sqlite", "postgres") if label in results["navigate"][0]]
    if stores:
        table = Table(
            title="the same calls on the other drivers and backends (ms, p50 / p95; ratio = FalkorDB Cypher "
            "p95 / that p95); path, 3 = navigate_between over 3 hops"
        )
        table.add_column("hops", justify="right")
        for label in ["native", *stores]:
            table.add_column("FalkorDB Cypher" if label == "native" else titles[label], justify="right")
            if label != "native":
                table.add_column("ratio", justify="right")
        rows = [(str(r["hops"]), r) for r in results["navigate"]]
        if results["between"]:
            rows.append(("path, 3", results["between"]))
        for title, r in rows:
            cells = [title, cell(r["native"])]
            for label in stores:
                cells += [cell(r.get(label)), ratio(r["native"], r.get(label))]
            table.add_row(*cells)
        console.print(table)
    if base is not None:
        table = Table(title=f"before = the same benchmark on {baseline_ref}'s code (ms, p50 / p95)")
        for col in ("hops", "traversal cache", "before", "before / now, p95", "FalkorDB Cypher", "before"):
            table.add_column(col, justify="right")
        for r, b in zip(results["navigate"], base["navigate"]):
            table.add_row(
                str(r["hops"]),
                cell(r["cache"]),
                cell(b["cache"]),
                ratio(b["cache"], r["cache"]),
                cell(r["native"]),
                cell(b["native"]),
            )
        console.print(table)


if __name__ == "__main__":
    typer.run(main)
