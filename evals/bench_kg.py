"""query_knowledge_graph over 10 knowledge bases: concurrent against one after another, where the time goes,
and the same benchmark on a baseline commit's code.

    python -m evals.bench_kg [--kbs 10] [--queries 24] [--baseline-ref REF | --no-baseline] [--json FILE]

Builds N knowledge bases (copies of the bundled sample, each with its graph) in a
throw-away EXECUTOR_HOME, then runs the same queries with the KBs queried
concurrently (one thread per KB, as the tool does) and sequentially (one
worker), the two modes back to back for every query (alternating which goes
first) so that both see the same machine.

The breakdown says why the ratio is what it is. Each KB's worker reports its
wall and CPU time (`KGResult.details["kb_timings"]`); a worker's CPU time is
Python holding the GIL (pymilvus parsing hits, grading, entity alignment,
SQLAlchemy), which threads cannot overlap, while its waits (Milvus Lite and
FalkorDB answering, in their own processes) can. So the lowest
concurrent / sequential ratio threads can reach is (the KBs' CPU + the
query's own work outside the workers) / the sequential wall. `--phases` also
times the calls each KB makes (wall and CPU, summed per query), in a separate
sequential pass. Printed, never asserted.
"""

from __future__ import annotations

import functools
import json
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from evals.baseline import run_on
from executor.agent.runtime import Runtime
from executor.core.settings import SAMPLE_KB_PATH, Settings
from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest

QUERIES = [
    "数据库连接池怎么配置",
    "ERR_TIMEOUT 是什么",
    "How do I roll back a Helm release?",
    "Redis eviction policy",
    "TLS certificate renewal",
    "日志分析步骤",
    "Grafana dashboards",
    "ComfyUI 依赖 Docker 吗",
    "API pagination cursor",
    "慢查询优化",
    "OOMKilled pods",
    "secrets rotation in Vault",
]
MODES = ("concurrent", "sequential")
# main before this benchmark's breakdown and the traversal cache's in-memory graph (issue 17)
BEFORE_THIS_WORK = "872b078"


class Phases:
    """Wall and CPU time of named calls, summed over the threads that make them (on when `active`)."""

    def __init__(self):
        self.active = False
        self.totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        self._lock = threading.Lock()

    def wrap(self, owner, attr: str, label: str) -> None:
        if owner is None or not hasattr(owner, attr):
            return  # a baseline whose code has no such call
        call = getattr(owner, attr)

        @functools.wraps(call)
        def timed(*args, **kwargs):
            if not self.active:
                return call(*args, **kwargs)
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return call(*args, **kwargs)
            finally:
                with self._lock:
                    t = self.totals[label]
                    t[0] += time.perf_counter() - wall
                    t[1] += time.thread_time() - cpu
                    t[2] += 1

        setattr(owner, attr, timed)


def _instrument(rt: Runtime, phases: Phases) -> None:
    kg = rt.kg
    phases.wrap(rt.vectors, "dense_search", "Milvus dense search")
    phases.wrap(rt.vectors, "lexical_search", "Milvus lexical search")
    phases.wrap(rt.vectors, "get_chunks", "Milvus get chunks")
    phases.wrap(kg.grader, "grade", "grading (includes the Milvus calls)")
    phases.wrap(rt.catalog, "get", "catalog reads")
    phases.wrap(kg.known_entities, "seeds", "traversal seeds (entity alignment + a graph query)")
    phases.wrap(rt.graph, "entities_of_documents", "graph: entities of the documents")
    phases.wrap(kg.traversals, "navigate", "graph traversals")
    phases.wrap(kg, "_merge", "merging (main thread)")


def _pcts(samples: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 95))


def measure(kbs: int, queries: int, phases_on: bool) -> dict:
    home = Path(tempfile.mkdtemp(prefix="bench-kg-"))
    rt = Runtime(Settings(home=home))
    names = [f"kb{i}" for i in range(kbs)]
    phases = Phases()
    walls: dict[str, list[float]] = {m: [] for m in MODES}
    kb_wall: dict[str, list[float]] = {m: [] for m in MODES}
    kb_cpu: dict[str, list[float]] = {m: [] for m in MODES}
    try:
        for name in tqdm(names, desc="building knowledge bases", leave=False):
            ingest(rt, SAMPLE_KB_PATH, name, progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        rt.kg.query(names, "warm up", "bench-warm")
        for i in tqdm(range(queries), desc="queries", leave=False):
            q = QUERIES[i % len(QUERIES)]
            for mode in MODES if i % 2 == 0 else MODES[::-1]:
                t = time.perf_counter()
                result = rt.kg.query(names, q, f"bench-{mode}-{i}", concurrent=mode == "concurrent")
                walls[mode].append((time.perf_counter() - t) * 1000)
                assert not result.errors, result.errors
                timings = getattr(result, "details", {}).get("kb_timings")
                if timings:
                    kb_wall[mode].append(sum(t["ms"] for t in timings.values()))
                    kb_cpu[mode].append(sum(t["cpu_ms"] for t in timings.values()))
        if phases_on:  # a pass of its own: the wrappers' cost stays out of the figures above
            _instrument(rt, phases)
            phases.active = True
            for i in tqdm(range(queries), desc="phases", leave=False):
                rt.kg.query(names, QUERIES[i % len(QUERIES)], f"bench-phases-{i}", concurrent=False)
            phases.active = False
    finally:
        rt.close(stop_graph_server=True)
    out = {"kbs": kbs, "queries": queries, "modes": {}}
    for mode in MODES:
        out["modes"][mode] = {
            "p50_p95": _pcts(walls[mode]),
            "mean": float(np.mean(walls[mode])),
            "kb_wall_mean": float(np.mean(kb_wall[mode])) if kb_wall[mode] else None,
            "kb_cpu_mean": float(np.mean(kb_cpu[mode])) if kb_cpu[mode] else None,
        }
    out["phases"] = {
        label: {"wall_ms": w / queries * 1000, "cpu_ms": c / queries * 1000, "calls": n / queries}
        for label, (w, c, n) in sorted(phases.totals.items(), key=lambda kv: -kv[1][0])
    }
    return out


def main(
    kbs: int = typer.Option(10),
    queries: int = typer.Option(24),
    phases: bool = typer.Option(
        True, "--phases/--no-phases", help="time the calls each KB makes (a separate sequential pass)"
    ),
    baseline_ref: str = typer.Option(BEFORE_THIS_WORK, help="git ref whose code is the baseline"),
    no_baseline: bool = typer.Option(False, "--no-baseline", help="time this code only"),
    json_out: Path = typer.Option(None, "--json"),
):
    now = measure(kbs, queries, phases)
    base = (
        None
        if no_baseline
        else run_on(baseline_ref, __file__, ["--kbs", str(kbs), "--queries", str(queries), "--no-phases"])
    )
    if json_out:
        json_out.write_text(json.dumps({"current": now, "baseline": base, "baseline_ref": baseline_ref}, indent=2))
    if no_baseline and json_out:
        return  # the baseline's own run: its figures go to the JSON only
    console = Console(width=150)
    table = Table(
        title=f"query_knowledge_graph over {kbs} knowledge bases, {queries} queries (ms, p50 / p95)"
        + ("" if base is None else f"; before = the same benchmark on {baseline_ref}'s code")
    )
    for col in ("", "this code", *(() if base is None else ("before",))):
        table.add_column(col, justify="right")
    runs = [now] + ([base] if base else [])
    fmt = lambda p: f"{p[0]:.1f} / {p[1]:.1f}"  # noqa: E731
    for mode in MODES:
        table.add_row(mode, *[fmt(r["modes"][mode]["p50_p95"]) for r in runs])
    for i, label in enumerate(("p50", "p95")):
        table.add_row(
            f"concurrent / sequential, {label}",
            *[f"{r['modes']['concurrent']['p50_p95'][i] / r['modes']['sequential']['p50_p95'][i]:.2f}" for r in runs],
        )
    console.print(table)

    seq = now["modes"]["sequential"]
    if seq["kb_cpu_mean"] is not None:
        outside = seq["mean"] - seq["kb_wall_mean"]
        floor = (seq["kb_cpu_mean"] + outside) / seq["mean"]
        console.print(
            f"sequential, mean per query: {seq['mean']:.1f} ms = the {kbs} KBs' workers {seq['kb_wall_mean']:.1f} ms "
            f"(of which CPU, holding the GIL: {seq['kb_cpu_mean']:.1f} ms; waiting for Milvus/FalkorDB/SQLite: "
            f"{seq['kb_wall_mean'] - seq['kb_cpu_mean']:.1f} ms) + the query's own work {outside:.1f} ms. "
            f"Threads overlap only the waits: the lowest concurrent / sequential ratio they can reach is "
            f"({seq['kb_cpu_mean']:.1f} + {outside:.1f}) / {seq['mean']:.1f} = [bold]{floor:.2f}[/] "
            f"(measured: {now['modes']['concurrent']['mean'] / seq['mean']:.2f} on the means)."
        )
    if now["phases"]:
        phases_table = Table(
            title="where a sequential query's time goes, per query (summed over the KBs; "
            "nested: grading includes the Milvus calls)"
        )
        for col in ("call", "calls", "wall ms", "CPU ms"):
            phases_table.add_column(col, justify="right")
        for label, p in now["phases"].items():
            phases_table.add_row(label, f"{p['calls']:.1f}", f"{p['wall_ms']:.1f}", f"{p['cpu_ms']:.1f}")
        console.print(phases_table)


if __name__ == "__main__":
    typer.run(main)
