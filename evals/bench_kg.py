"""query_knowledge_graph over 10 knowledge bases: concurrent against one after another.

    python -m evals.bench_kg [--kbs 10] [--queries 20]

Builds N knowledge bases (copies of the bundled sample, each with its graph) in a
throw-away EXECUTOR_HOME, then runs the same queries with the KBs queried
concurrently and sequentially. Printed, never asserted.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from tqdm import tqdm

from agent.runtime import Runtime
from core.settings import SAMPLE_KB_PATH, Settings
from retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest

QUERIES = [
    "数据库连接池怎么配置", "ERR_TIMEOUT 是什么", "How do I roll back a Helm release?", "Redis eviction policy",
    "TLS certificate renewal", "日志分析步骤", "Grafana dashboards", "ComfyUI 依赖 Docker 吗",
    "API pagination cursor", "慢查询优化", "OOMKilled pods", "secrets rotation in Vault",
]


def main(kbs: int = typer.Option(10), queries: int = typer.Option(20)):
    console = Console()
    home = Path(tempfile.mkdtemp(prefix="bench-kg-"))
    rt = Runtime(Settings(home=home))
    names = [f"kb{i}" for i in range(kbs)]
    try:
        for name in tqdm(names, desc="building knowledge bases", leave=False):
            ingest(rt, SAMPLE_KB_PATH, name, progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        rt.kg.query(names, "warm up", "bench-warm")
        timings: dict[str, list[float]] = {"concurrent": [], "sequential": []}
        for i in tqdm(range(queries), desc="queries", leave=False):
            q = QUERIES[i % len(QUERIES)]
            for mode in timings:
                t = time.perf_counter()
                result = rt.kg.query(names, q, f"bench-{mode}-{i}", concurrent=mode == "concurrent")
                timings[mode].append((time.perf_counter() - t) * 1000)
                assert not result.errors, result.errors
    finally:
        rt.close(stop_graph_server=True)
    p = {m: (np.percentile(v, 50), np.percentile(v, 95)) for m, v in timings.items()}
    console.print(f"query_knowledge_graph over {kbs} knowledge bases, {queries} queries (ms, p50 / p95):")
    for mode, (p50, p95) in p.items():
        console.print(f"  {mode:<10} {p50:8.1f} / {p95:8.1f}")
    console.print(f"  concurrent is {p['sequential'][0] / p['concurrent'][0]:.2f}x faster at p50, "
                  f"{p['sequential'][1] / p['concurrent'][1]:.2f}x at p95")


if __name__ == "__main__":
    typer.run(main)
