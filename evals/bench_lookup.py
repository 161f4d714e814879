"""Lookup latency against numpy brute force, side by side, and ingest throughput.

    python -m evals.bench_lookup [--sizes 1000,10000,100000] [--queries 100] [--json FILE]

Synthetic chunks (unit vectors clustered by topic, plus filler text for BM25)
are loaded into a throw-away Milvus Lite file; the same matrix is searched
with numpy, which also gives the exact top k for Milvus's recall@k.
Printed, never asserted: timing belongs to benchmarks, not tests.
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

from executor.stores.embedders import unit_rows
from executor.stores.vectors import MilvusVectorStore

WORDS = (
    "连接池 超时 缓存 部署 回滚 告警 日志 指标 证书 权限 限流 分页 数据库 容器 集群 镜像 "
    "pool timeout cache deploy rollback alert log metric certificate role limit page database container cluster"
).split()


class SyntheticEmbedder:
    """Stands in for a model when only the vector store is measured; vectors come from the caller."""

    name = "synthetic"
    has_lexical_weights = False

    def __init__(self, dim: int):
        self.dim = dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError("the benchmark passes its own vectors")

    def embed_query(self, text: str) -> np.ndarray:
        raise NotImplementedError("the benchmark passes its own vectors")

    def lexical_weights(self, texts: list[str]) -> list[dict[int, float]]:
        raise NotImplementedError("no lexical weights: the store computes BM25 from the text")


def _pcts(samples_ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples_ms, 50)), float(np.percentile(samples_ms, 95))


def _timed(fn, n: int) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out


def _clustered(rng, n, dim, topics=256, spread=0.6):
    """Real embeddings cluster by topic; uniform random vectors in 512-d are an unrealistic worst case for ANN."""
    centres = rng.standard_normal((topics, dim))
    return unit_rows(centres[rng.integers(0, topics, n)] + spread * rng.standard_normal((n, dim)))


def bench_size(store: MilvusVectorStore, size: int, n_queries: int, embedder, top_k: int = 10) -> dict:
    dim = embedder.dim  # synthetic vectors share the real model's width, so its query embedding can be timed too
    rng = np.random.default_rng(size)
    pyrand = random.Random(size)
    fake = SyntheticEmbedder(dim)
    kb = f"bench_{size}"
    store.drop(kb)
    store.create(kb, fake)
    matrix = _clustered(rng, size, dim)
    started = time.perf_counter()
    batch = 2000
    for i in tqdm(range(0, size, batch), desc=f"loading {size:,} chunks", unit="batch", leave=False):
        rows = [
            {
                "chunk_id": f"d{j}#0",
                "doc_key": f"d{j}",
                "chunk_index": 0,
                "domain": f"dom{j % 6}",
                "title": f"doc {j}",
                "text": " ".join(pyrand.choices(WORDS, k=30)),
            }
            for j in range(i, min(i + batch, size))
        ]
        store.upsert(kb, rows, fake, matrix[i : i + batch])
    store.flush_and_load(kb)
    load_s = time.perf_counter() - started

    # a query sits near some document, as a real question sits near its answer
    queries = unit_rows(matrix[rng.integers(0, size, n_queries)] + 0.05 * rng.standard_normal((n_queries, dim)))
    texts = [" ".join(pyrand.choices(WORDS, k=4)) for _ in range(n_queries)]
    store.dense_search(kb, queries[0], top_k)  # warm-up
    dense = _timed(lambda i: store.dense_search(kb, queries[i], top_k), n_queries)
    hybrid = _timed(lambda i: store.search(kb, texts[i], queries[i], fake, top_k), n_queries)

    def brute(i):
        d = 2.0 - 2.0 * (matrix @ queries[i])
        top = np.argpartition(d, top_k)[:top_k]
        return top[np.argsort(d[top])]

    numpy_ms = _timed(brute, n_queries)
    # recall@k of Milvus against the exact answer
    agree = np.mean(
        [
            len({h.doc_key for h in store.dense_search(kb, queries[i], top_k)} & {f"d{j}" for j in brute(i)}) / top_k
            for i in range(n_queries)
        ]
    )
    result = {
        "chunks": size,
        "load_s": round(load_s, 2),
        "rows_per_s": round(size / load_s),
        "dense": _pcts(dense),
        "hybrid": _pcts(hybrid),
        "numpy": _pcts(numpy_ms),
        "recall_at_k": float(agree),
    }
    with_embed = _timed(lambda i: store.search(kb, texts[i], embedder.embed_query(texts[i]), fake, top_k), n_queries)
    result["hybrid_with_embedding"] = _pcts(with_embed)
    store.drop(kb)
    return result


def bench_ingest(home: Path) -> dict:
    from executor.agent.runtime import Runtime
    from executor.core.settings import SAMPLE_KB_PATH, Settings
    from executor.retrieval.ingest import ingest

    rt = Runtime(Settings(home=home))
    _ = rt.embedder  # model load is not ingest work
    try:
        report = ingest(rt, SAMPLE_KB_PATH, "sample", progress=False)
    finally:
        rt.close()
    return {
        "documents": report.documents,
        "chunks": report.chunks,
        "seconds": report.seconds,
        "docs_per_s": round(report.documents / report.seconds, 1),
    }


def main(
    sizes: str = typer.Option("1000,10000,100000", help="comma-separated chunk counts"),
    queries: int = typer.Option(100, help="queries per size"),
    json_out: Path = typer.Option(None, "--json", help="also write the numbers here"),
    index: str = typer.Option("AUTOINDEX", help="dense index type: AUTOINDEX, FLAT, IVF_FLAT"),
):
    from executor.stores.embedders import UseEmbedder

    embedder = UseEmbedder()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        ingest_stats = bench_ingest(Path(tmp) / "ingest-home")
        store = MilvusVectorStore(str(Path(tmp) / "bench.db"), dense_index=index)
        try:
            for size in [int(s) for s in sizes.split(",")]:
                results.append(bench_size(store, size, queries, embedder))
        finally:
            store.close()

    table = Table(
        title=f"lookup latency, ms (p50 / p95), dense index {index}; ratio = numpy p95 / Milvus p95 (>1: Milvus faster)"
    )
    for col in (
        "chunks",
        "Milvus dense",
        "Milvus hybrid",
        "numpy brute force",
        "ratio dense",
        "ratio hybrid",
        "hybrid + USE embed",
        "load rows/s",
        "recall@10",
    ):
        table.add_column(col, justify="right")
    for r in results:
        fmt = lambda p: f"{p[0]:.2f} / {p[1]:.2f}"  # noqa: E731
        table.add_row(
            f"{r['chunks']:,}",
            fmt(r["dense"]),
            fmt(r["hybrid"]),
            fmt(r["numpy"]),
            f"{r['numpy'][1] / r['dense'][1]:.2f}x",
            f"{r['numpy'][1] / r['hybrid'][1]:.2f}x",
            fmt(r["hybrid_with_embedding"]),
            f"{r['rows_per_s']:,}",
            f"{r['recall_at_k']:.1%}",
        )
    console = Console(width=160)
    console.print(table)
    console.print(
        f"ingest (sample KB, USE, real pipeline): {ingest_stats['documents']} documents, {ingest_stats['chunks']} "
        f"chunks in {ingest_stats['seconds']:.2f} s = {ingest_stats['docs_per_s']} documents/s"
    )
    if json_out:
        json_out.write_text(json.dumps({"sizes": results, "ingest": ingest_stats}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    typer.run(main)
