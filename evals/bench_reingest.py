"""Incremental ingest: full ingest, no-op re-ingest and one-page re-ingest of a synthetic KB; ingest throughput on
the Helm docs.

    python -m evals.bench_reingest [--pages 1000 --pages 10000] [--helm/--no-helm] [--baseline-ref REF | --no-baseline]

Each size runs in a child process of its own (so its peak RSS is its own) on a
throw-away EXECUTOR_HOME: synthetic pages (front matter naming two services and
one relation between them, a paragraph that mentions them), ingested with the
graph config of the sample KB. Then the same folder again (nothing changed),
then again after one page changed (its text and its relation). Each ingest's
time is split by phase: reading the folder, embedding, the vector store, building
the graph (extraction over all pages), writing the graph, the catalog. The Helm
docs (`shared/corpora/helm/docs`, when present) get a full ingest with the same
split, in chunks/s. Printed, never asserted. Peak RSS is this process's (the
Milvus Lite and FalkorDB servers are processes of their own). "files read" counts
the files an ingest opened.

The baseline column is the same benchmark run on another commit's code (default:
main before unchanged files were skipped and the embedder sped up; `evals/baseline.py`),
one after the other on the same machine, so the ratios hold whatever else runs.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from evals import HELM

HELM_DOCS = HELM / "docs"
# main before this work: every file read on every ingest, USE on the package's tokenizer
BEFORE_INCREMENTAL_READ = "872b078"
PHASES = ("read", "embed", "vectors", "graph build", "graph write", "catalog", "other")


class PhaseClock:
    """Seconds per phase, by wrapping the calls ingest makes (instance attributes shadow the methods)."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)

    def wrap(self, owner, name: str, phase: str) -> None:
        inner = getattr(owner, name, None)
        if inner is None:  # a baseline's code without this call
            return

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - started

        setattr(owner, name, timed)

    def count(self, owner, name: str, what: str) -> None:
        inner = getattr(owner, name)

        def counted(*args, **kwargs):
            self.seconds[what] += 1
            return inner(*args, **kwargs)

        setattr(owner, name, counted)

    def split(self, total: float) -> dict[str, float]:
        out = {p: round(self.seconds.get(p, 0.0), 2) for p in PHASES if p != "other"}
        out["other"] = round(max(0.0, total - sum(out.values())), 2)
        out["files read"] = int(self.seconds.get("files read", 0))
        self.seconds.clear()
        return out


def instrumented(rt) -> PhaseClock:
    import executor.retrieval.ingest as ingest_module
    import executor.retrieval.sources as sources_module

    clock = PhaseClock()
    clock.count(sources_module, "read_regular_file", "files read")
    clock.wrap(ingest_module, "load_documents", "read")
    clock.wrap(ingest_module, "build_graph_data", "graph build")
    clock.wrap(rt.embedder, "embed_documents", "embed")
    for name in ("recorded_embedder", "count", "create", "drop", "delete_docs", "upsert", "flush_and_load", "has"):
        clock.wrap(rt.vectors, name, "vectors")
    for name in ("counts", "replace_kb", "update_kb"):
        clock.wrap(rt.graph, name, "graph write")
    for name in ("documents", "get", "create", "apply_ingest", "file_records", "stored_bodies"):
        clock.wrap(rt.catalog, name, "catalog")
    return clock


def write_page(root: Path, i: int, services: int, version: int = 0) -> None:
    rng = random.Random(i * 7919 + version)
    a, b = rng.sample(range(services), 2)
    text = (
        f"---\ntitle: Runbook {i}\nentities: [{{name: Svc{a}, type: Software}}, {{name: Svc{b}, type: Software}}]\n"
        f"relations: [{{source: Svc{a}, type: DEPENDS_ON, target: Svc{b}, weight: 0.{rng.randint(1, 9)}}}]\n---\n"
        f"# Runbook {i}\n\nSvc{a} calls Svc{b} on port {8000 + a % 1000}. When the alarm fires, check the "
        f"dashboard of Svc{a} first, then the logs of Svc{b}; revision {version}. Operators record every "
        "change in the runbook so that the next shift can follow it.\n"
    )
    path = root / f"ops/page{i:05d}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def run_size(pages: int) -> dict:
    from executor.agent.runtime import Runtime
    from executor.core.settings import Settings
    from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest

    work = Path(tempfile.mkdtemp(prefix=f"bench-reingest-{pages}-"))
    folder = work / "kb"
    services = max(10, pages // 4)
    for i in range(pages):
        write_page(folder, i, services)
    rt = Runtime(Settings(home=work / "home"))
    clock = instrumented(rt)
    out: dict = {"pages": pages}
    try:
        for label, prepare in (
            ("full", None),
            ("no-op", None),
            ("one page", lambda: write_page(folder, 0, services, 1)),
        ):
            if prepare:
                prepare()
            started = time.perf_counter()
            report = ingest(
                rt, folder, "bench", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG if label == "full" else None
            )
            total = time.perf_counter() - started
            out[label] = {
                "seconds": round(total, 2),
                "phases": clock.split(total),
                "chunks": report.chunks,
                "changed": report.added + report.changed,
                "graph": report.graph,
                "graph_written": report.graph_written,
            }
    finally:
        rt.close(stop_graph_server=True)
        shutil.rmtree(work, ignore_errors=True)  # 10,000 pages and their stores: ~0.5 GB
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def run_helm(docs: Path = HELM_DOCS) -> dict:
    from executor.agent.runtime import Runtime
    from executor.core.settings import Settings
    from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest

    work = Path(tempfile.mkdtemp(prefix="bench-reingest-helm-"))
    rt = Runtime(Settings(home=work / "home"))
    clock = instrumented(rt)
    try:
        started = time.perf_counter()
        report = ingest(rt, docs, "helm", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        total = time.perf_counter() - started
    finally:
        rt.close(stop_graph_server=True)
        shutil.rmtree(work, ignore_errors=True)
    return {
        "pages": report.documents,
        "chunks": report.chunks,
        "seconds": round(total, 2),
        "phases": clock.split(total),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _child(args: list[str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as fh:
        subprocess.run([sys.executable, "-m", "evals.bench_reingest", *args, "--json", fh.name], check=True)
        return json.loads(Path(fh.name).read_text())


def measure(pages: list[int], helm: Path | None) -> dict:
    return {
        "sizes": [_child(["--one", str(n)]) for n in pages],
        "helm": _child(["--helm-only", "--helm-docs", str(helm)]) if helm and helm.is_dir() else None,
    }


def fastest(runs: list[dict]) -> dict:
    """Per measure, the run with the shortest time: what the code costs when the machine let it run."""
    best = runs[0]
    for run in runs[1:]:
        for i, size in enumerate(run["sizes"]):
            for label in ("full", "no-op", "one page"):
                if size[label]["seconds"] < best["sizes"][i][label]["seconds"]:
                    best["sizes"][i][label] = size[label]
            best["sizes"][i]["peak_rss_mb"] = max(best["sizes"][i]["peak_rss_mb"], size["peak_rss_mb"])
        if run["helm"] is not None and run["helm"]["seconds"] < best["helm"]["seconds"]:
            best["helm"] = run["helm"]
    return best


def _ratio(before: float | None, now: float) -> str:
    return "" if before is None or now <= 0 else f"{before / now:.1f}x"


def _split(phases: dict) -> str:
    return " / ".join(f"{phases[p]:.2f}" for p in PHASES)


def main(
    pages: list[int] = typer.Option([1000, 10000], help="synthetic KB sizes, each in a process of its own"),
    helm: bool = typer.Option(True, "--helm/--no-helm", help="also a full ingest of the Helm docs"),
    helm_docs: Path = typer.Option(HELM_DOCS, help="where the Helm docs are (a baseline runs from a copy elsewhere)"),
    baseline_ref: str = typer.Option(BEFORE_INCREMENTAL_READ, help="git ref whose code is the baseline"),
    no_baseline: bool = typer.Option(False, "--no-baseline", help="measure this code only"),
    rounds: int = typer.Option(
        1,
        min=1,
        help="this code and the baseline in turn, this many times; the fastest "
        "run of each measure is kept (the machine's load moves in minutes)",
    ),
    one: int = typer.Option(None, hidden=True),
    helm_only: bool = typer.Option(False, hidden=True),
    json_out: Path = typer.Option(None, "--json"),
):
    if one is not None or helm_only:  # a child: one measurement, written as JSON
        result = run_helm(helm_docs) if helm_only else run_size(one)
        if json_out:
            json_out.write_text(json.dumps(result))
        return
    from evals.baseline import run_on

    args = [a for n in pages for a in ("--pages", str(n))] + (
        ["--helm-docs", str(helm_docs.resolve())] if helm else ["--no-helm"]
    )
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(measure(pages, helm_docs if helm else None))
        if not no_baseline:
            theirs.append(run_on(baseline_ref, __file__, args))
    now = fastest(ours)
    base = None if no_baseline or None in theirs else fastest(theirs)
    if json_out:
        json_out.write_text(json.dumps({"current": now, "baseline": base, "baseline_ref": baseline_ref}, indent=2))
    if no_baseline and json_out:
        return  # the baseline's own run: its figures go to the JSON only
    console = Console(width=200)
    before_sizes = {r["pages"]: r for r in (base or {}).get("sizes", [])}
    table = Table(
        title="ingest of a synthetic KB, seconds"
        + ("" if base is None else f"; baseline = {baseline_ref}, ratio = baseline / this")
        + ("" if rounds == 1 else f"; fastest of {rounds} rounds taken in turn")
    )
    for col in (
        "pages",
        "ingest",
        *(() if base is None else ("baseline",)),
        "this code",
        *(() if base is None else ("ratio",)),
        "files read",
        "split: read / embed / vectors / graph build / graph write / catalog / other",
    ):
        table.add_column(col, justify="right")
    for r in now["sizes"]:
        b = before_sizes.get(r["pages"])
        for label in ("full", "no-op", "one page"):
            before = b[label]["seconds"] if b else None
            files = str(r[label]["phases"]["files read"]) + (f" (was {b[label]['phases']['files read']})" if b else "")
            table.add_row(
                f"{r['pages']:,}",
                label,
                *(() if base is None else (f"{before:.2f}" if b else "-",)),
                f"{r[label]['seconds']:.2f}",
                *(() if base is None else (_ratio(before, r[label]["seconds"]),)),
                files,
                _split(r[label]["phases"]),
            )
        table.add_row(
            f"{r['pages']:,}",
            "peak RSS, MB",
            *(() if base is None else (str(b["peak_rss_mb"]) if b else "-",)),
            str(r["peak_rss_mb"]),
            *(() if base is None else ("",)),
            "",
            "",
        )
    console.print(table)
    for r in now["sizes"]:
        console.print(
            f"{r['pages']:,} pages: graph {r['full']['graph']}; one-page re-ingest wrote "
            f"{r['one page']['graph_written']}"
        )
    h = now["helm"]
    if h is not None:
        hb = (base or {}).get("helm")
        line = (
            f"Helm docs: {h['pages']} pages, {h['chunks']:,} chunks in {h['seconds']:.1f} s = "
            f"{h['chunks'] / h['seconds']:.1f} chunks/s"
        )
        if hb:
            line += (
                f" (baseline {hb['seconds']:.1f} s = {hb['chunks'] / hb['seconds']:.1f} chunks/s; "
                f"{_ratio(hb['seconds'], h['seconds'])})"
            )
        console.print(
            line
            + "; where the time goes: "
            + ", ".join(f"{p} {h['phases'][p]:.1f} s ({100 * h['phases'][p] / h['seconds']:.0f}%)" for p in PHASES)
            + (
                f" [baseline: embed {hb['phases']['embed']:.1f} s, vectors {hb['phases']['vectors']:.1f} s]"
                if hb
                else ""
            )
            + f"; peak RSS {h['peak_rss_mb']} MB"
        )
    elif helm:
        console.print(f"[dim]no Helm docs at {helm_docs}: skipped[/]")


if __name__ == "__main__":
    typer.run(main)
