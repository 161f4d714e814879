"""The first lookup a host makes on a freshly started `executor mcp --http`, against the same on a baseline's code.

    python -m evals.bench_mcp_first [--starts 10] [--baseline-ref main]

Ingests the bundled sample into a throw-away EXECUTOR_HOME, then starts the HTTP server `--starts` times; each
time, once it listens (it reports ready), the SDK's client connects and makes one lookup (a query of its own,
none asked twice), timed from the call to its result. The server warms its lookup path before it listens
(`ExecutorMCP.warm_up`), so the first lookup should cost what the later ones do: each start makes nine more,
and both are printed. Beside the
figures, the same run on the baseline's code. Printed, never asserted.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from pathlib import Path

import anyio
import numpy as np
import typer

from evals.baseline import run_on
from evals.bench_mcp import QUERIES, _cli, error_text, served

LATER = 9  # lookups after the first on each start: what "as fast as its tenth" compares with


async def _lookups(url: str, queries: list[str]) -> list[float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    timings = []
    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as client:
        await client.initialize()
        # as hosts do on connecting; the SDK's client would otherwise list them inside the first call (to check
        # results against their output schemas), a round trip that is the client's, not the lookup's
        await client.list_tools()
        for query in queries:
            started = time.perf_counter()
            # a session of its own per lookup: none is cut short as a repeat of the lookup before it
            result = await client.call_tool(
                "lookup_knowledge", {"query": query, "session": f"bench-{uuid.uuid4().hex}"}
            )
            timings.append((time.perf_counter() - started) * 1000)
            if result.isError:
                raise RuntimeError(error_text(result))
    return timings


def _one_start(home: Path, queries: list[str]) -> tuple[float, list[float]]:
    """(seconds until the server listened, ms of each of its lookups, the first one first)."""
    with served(home) as (url, ready):
        return ready, anyio.run(_lookups, url, queries)


def measure(starts: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix="bench-mcp-first-"))
    try:
        _cli(home, "ingest", "--json")
        # the same queries first and later: start i asks query i first, then the others (up to LATER of them), so
        # both figures are over one set of questions; none is asked twice in a process
        runs = [
            _one_start(home, [QUERIES[(i + k) % starts] for k in range(min(starts, LATER + 1))]) for i in range(starts)
        ]
    finally:
        _cli(home, "graph", "stop")
    first = [ms[0] for _, ms in runs]
    later = [t for _, ms in runs for t in ms[1:]]
    return {
        "starts": starts,
        "first_lookup_ms": first,
        "ready_s": [s for s, _ in runs],
        "p50": float(np.percentile(first, 50)),
        "p95": float(np.percentile(first, 95)),
        "later_p50": float(np.percentile(later, 50)),
        "later_p95": float(np.percentile(later, 95)),
    }


def main(
    starts: int = typer.Option(10, min=2, max=len(QUERIES)),
    baseline_ref: str = typer.Option("main", help="git ref whose code is the baseline"),
    no_baseline: bool = typer.Option(False, "--no-baseline", help="measure this code only"),
    json_out: Path = typer.Option(None, "--json", help="also write the numbers here"),
):
    now = measure(starts)
    base = None if no_baseline else run_on(baseline_ref, __file__, ["--starts", str(starts)])
    if json_out:
        json_out.write_text(json.dumps({"current": now, "baseline": base, "baseline_ref": baseline_ref}, indent=2))
        if no_baseline:
            return
    print(f"first lookup_knowledge after `executor mcp --http` reports ready, {starts} fresh starts (ms):")
    for name, r in (("this code", now), (baseline_ref, base)):
        if r is None:
            continue
        print(
            f"  {name:<12} first p50 {r['p50']:7.1f}  p95 {r['p95']:7.1f}   later calls p50 {r['later_p50']:6.1f}  "
            f"p95 {r['later_p95']:6.1f}   ready after {np.median(r['ready_s']):.1f} s"
        )
    if base is not None:
        print(f"  first lookup p95, {baseline_ref} / this code: {base['p95'] / now['p95']:.1f}x")


if __name__ == "__main__":
    typer.run(main)
