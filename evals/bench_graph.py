"""Graph benchmark: bulk load rate, and navigate latency over the native FalkorDB client and the neo4j driver.

    python -m evals.bench_graph [--nodes 10000] [--edges 100000] [--queries 100] [--json FILE]

A random graph (uniform endpoints, six relation types, weights 0.1-1) is
loaded into a throw-away FalkorDB started from the wheel, with its Bolt port
open. The load goes through `GraphStore.replace_kb` (UNWIND batches) and is set
against a naive one-MERGE-per-edge load of a slice of the same edges. Then
1-, 2- and 3-hop `navigate` calls from random start nodes run through both
drivers. Printed, never asserted.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from stores.graph import RELATION_TYPES, GraphData, GraphStore
from stores.graph_drivers import FALKORDB, FalkorDriver, Neo4jDriver
from stores.graph_server import FalkorDBServer

KB = "bench"
NAIVE_SLICE = 2000


def random_graph(nodes: int, edges: int, seed: int = 11) -> GraphData:
    rng = np.random.default_rng(seed)
    data = GraphData()
    names = [f"entity-{i}" for i in range(nodes)]
    for n in names:
        data.add_entity(n, "Concept")
    src, dst = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    weights = rng.uniform(0.1, 1.0, edges).round(3)
    data.relations = [
        {"type": RELATION_TYPES[i % len(RELATION_TYPES)], "s": names[a], "t": names[b], "weight": float(w), "sources": []}
        for i, (a, b, w) in enumerate(zip(src, dst, weights))
    ]
    return data


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


def naive_load_rate(store: GraphStore, data: GraphData) -> float:
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


def main(
    nodes: int = typer.Option(10_000),
    edges: int = typer.Option(100_000),
    queries: int = typer.Option(100),
    max_paths: int = typer.Option(50),
    max_nodes_per_hop: int = typer.Option(25),
    json_out: Path = typer.Option(None, "--json"),
):
    console = Console()
    folder = Path(tempfile.mkdtemp(prefix="bench-graph-"))
    server = FalkorDBServer(folder, bolt_port=_free_port(), bolt_on_all_interfaces=True)  # a throw-away server
    server.ensure_running()
    # the Bolt port serves the graph named "falkordb" only
    native = GraphStore(FalkorDriver("falkordb", socket_path=str(server.socket_path), timeout_s=60))
    results: dict = {"nodes": nodes, "edges": edges, "queries": queries}
    try:
        data = random_graph(nodes, edges)
        with tqdm(total=len(data.relations), desc="UNWIND load", unit="edge", leave=False) as bar:
            started = time.perf_counter()
            native.replace_kb(KB, data, progress=bar.update)
            load_s = time.perf_counter() - started
        results["load_seconds"] = round(load_s, 2)
        results["load_edges_per_s"] = round(edges / load_s)
        naive = GraphData(entities=data.entities)
        native.replace_kb("naive", naive)
        results["naive_edges_per_s"] = round(naive_load_rate(native, data))
        native.drop_kb("naive")

        bolt = GraphStore(Neo4jDriver(f"bolt://127.0.0.1:{server.bolt_port}", "falkordb", "", None,
                                      timeout_s=30, plain_bolt=True, dialect=FALKORDB))
        starts = [f"entity-{i}" for i in random.Random(5).sample(range(nodes), queries)]
        rows = []
        for hops in (1, 2, 3):
            row = {"hops": hops}
            for label, store in (("native", native), ("bolt", bolt)):
                samples, paths = [], 0
                for name in tqdm(starts, desc=f"{label} {hops}-hop", leave=False):
                    t = time.perf_counter()
                    paths += len(store.navigate(KB, name, hops, None, max_paths, max_nodes_per_hop))
                    samples.append((time.perf_counter() - t) * 1000)
                row[f"{label}_p50_ms"], row[f"{label}_p95_ms"] = (round(v, 2) for v in _pcts(samples))
                row[f"{label}_mean_paths"] = round(paths / len(starts), 1)
            rows.append(row)
        bolt.close()
        results["navigate"] = rows
    finally:
        native.close()
        server.stop()

    console.print(
        f"[bold]load[/] {edges:,} edges + {nodes:,} nodes in {results['load_seconds']} s = "
        f"{results['load_edges_per_s']:,} edges/s (UNWIND batches); naive per-edge MERGE "
        f"{results['naive_edges_per_s']:,} edges/s; ratio {results['load_edges_per_s'] / results['naive_edges_per_s']:.0f}x"
    )
    table = Table(title=f"navigate, {queries} random starts, max_paths {max_paths}, max_nodes_per_hop {max_nodes_per_hop}")
    for col in ("hops", "native p50 ms", "native p95 ms", "neo4j/Bolt p50 ms", "neo4j/Bolt p95 ms", "Bolt/native p95", "paths"):
        table.add_column(col, justify="right")
    for r in results["navigate"]:
        table.add_row(
            str(r["hops"]), f"{r['native_p50_ms']:.2f}", f"{r['native_p95_ms']:.2f}", f"{r['bolt_p50_ms']:.2f}",
            f"{r['bolt_p95_ms']:.2f}", f"{r['bolt_p95_ms'] / r['native_p95_ms']:.1f}x", f"{r['native_mean_paths']:.0f}",
        )
    console.print(table)
    if json_out:
        json_out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    typer.run(main)
