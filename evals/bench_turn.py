"""One agent turn, warm, in one process: p50/p95 and where the time goes per node, beside a baseline.

    python -m evals.bench_turn [--turns 60] [--baseline-ref REF | --no-baseline] [--json FILE]

Ingests the bundled sample into a throw-away EXECUTOR_HOME, then runs N turns
through the executor graph with the offline planner (no LLM), each in a fresh
session (a checkpointer and thread of its own), so every lookup searches and
grades. Questions cycle through the sample KB's labelled queries (zh + en,
some with nothing in the KB). A node's time is the time from the previous
node's update to its own (its work plus LangGraph's step overhead); turns are
timed whole. The baseline is the same benchmark run on another commit's code
(default: main before issue 17's per-turn work; `evals/baseline.py`), one
after the other on the same machine. Printed, never asserted.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import typer
import yaml
from rich.console import Console
from rich.table import Table

from evals.baseline import BEFORE_ISSUE_17, REPO, run_on

LABELS = REPO / "evals" / "labels" / "sample.yaml"
WARM_UP = 5
NODES = ("begin_turn", "executor", "guard", "call_tools", "graph_expand", "answer")
RENAMED = {"lookup": "call_tools"}  # the baseline's name of the node (this file also runs on that code)


def questions() -> list[str]:
    return [item["query"] for item in yaml.safe_load(LABELS.read_text(encoding="utf-8"))]


def _pcts(samples: list[float]) -> tuple[float, float]:
    return (float(np.percentile(samples, 50)), float(np.percentile(samples, 95))) if samples else (0.0, 0.0)


def _timed_turn(app, question: str, context) -> tuple[float, dict[str, float]]:
    from langchain_core.messages import HumanMessage

    config = {"configurable": {"thread_id": f"bench-{uuid.uuid4().hex[:12]}"}, "recursion_limit": 50}
    per_node: dict[str, float] = {}
    started = last = time.perf_counter()
    for update in app.stream({"messages": [HumanMessage(question)]}, config, context=context, stream_mode="updates"):
        now = time.perf_counter()
        for node in update:
            node = RENAMED.get(str(node), str(node))
            per_node[node] = per_node.get(node, 0.0) + (now - last) * 1000
        last = now
    return (time.perf_counter() - started) * 1000, per_node


def measure(home: Path, turns: int) -> dict:
    """Ingest the sample into `home` and time `turns` turns there; the figures as a dict."""
    from langgraph.checkpoint.memory import InMemorySaver

    from executor.agent.planner import OfflinePlanner
    from executor.agent.runtime import Runtime
    from executor.core.settings import SAMPLE_KB_PATH, Settings
    from executor.nodes.state import Context
    from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest

    rt = Runtime(Settings(home=home), source="eval")
    try:
        ingest(rt, SAMPLE_KB_PATH, "sample", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        if hasattr(rt, "app"):
            app = rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver())
        else:  # the baseline's code: the graph was built from the runtime itself
            from executor.agent.graph import build_graph

            # the baseline's own build_graph(services, model, mode), not this tree's
            app = build_graph(rt, OfflinePlanner(), "offline", checkpointer=InMemorySaver())  # pyright: ignore[reportCallIssue]
        context = Context(kb="sample", lookup_budget=rt.settings.lookup_budget)
        asked = questions()
        for i in range(WARM_UP):
            _timed_turn(app, asked[-1 - i], context)
        totals, nodes = [], {n: [] for n in NODES}
        for i in range(turns):
            total, per_node = _timed_turn(app, asked[i % len(asked)], context)
            totals.append(total)
            for n in NODES:
                if n in per_node:
                    nodes[n].append(per_node[n])
    finally:
        rt.close(stop_graph_server=True)
    return {
        "turns": turns,
        "turn": _pcts(totals),
        "nodes": {n: {"runs": len(v), "p50_p95": _pcts(v)} for n, v in nodes.items()},
    }


def main(
    turns: int = typer.Option(60, help="turns timed (after a few warm-up turns)"),
    baseline_ref: str = typer.Option(BEFORE_ISSUE_17, help="git ref whose code is the baseline"),
    no_baseline: bool = typer.Option(False, "--no-baseline", help="time this code only"),
    json_out: Path = typer.Option(None, "--json", help="also write the numbers here"),
    home: Path = typer.Option(None, help="EXECUTOR_HOME to ingest into (default: a temporary folder)"),
):
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
        now = measure(home or Path(tmp) / "home", turns)
    base = None if no_baseline else run_on(baseline_ref, __file__, ["--turns", str(turns)])
    if json_out:
        json_out.write_text(
            json.dumps({"current": now, "baseline": base, "baseline_ref": baseline_ref}, indent=2), encoding="utf-8"
        )
    if no_baseline and json_out:
        return  # the baseline's own run: its figures go to the JSON only
    fmt = lambda p: f"{p[0]:.1f} / {p[1]:.1f}"  # noqa: E731
    table = Table(
        title=f"one turn, offline planner, sample KB, fresh sessions, {turns} turns: ms p50 / p95"
        + ("" if base is None else f"; ratio = baseline ({baseline_ref}) p95 / this p95")
    )
    for col in ("", "runs", "this code", *(() if base is None else ("baseline", "ratio p95"))):
        table.add_column(col, justify="right")
    rows = [("turn", now["turns"], now["turn"], base and base["turn"])]
    rows += [
        (n, now["nodes"][n]["runs"], now["nodes"][n]["p50_p95"], base and base["nodes"][n]["p50_p95"]) for n in NODES
    ]
    for name, runs, mine, theirs in rows:
        cells = [name, str(runs), fmt(mine)]
        if base is not None and theirs is not None:
            cells += [fmt(theirs), f"{theirs[1] / mine[1]:.2f}x" if mine[1] else "-"]
        table.add_row(*cells)
    Console(width=140).print(table)


if __name__ == "__main__":
    typer.run(main)
