"""The first lookup a host makes on a freshly started `executor mcp --http`, against the same on a baseline's code.

    python -m evals.bench_mcp_first [--starts 10] [--baseline-ref main]

Ingests the bundled sample into a throw-away EXECUTOR_HOME, then starts the HTTP server `--starts` times; each
time, once it listens (it reports ready), the SDK's client connects and makes one lookup (a query of its own,
none asked twice), timed from the call to its result. The server warms its lookup path before it listens
(`ExecutorMCP.warm_up`), so the first lookup should cost what a warm one does (`evals.bench_mcp`). Beside the
figures, the same run on the baseline's code. Printed, never asserted.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np
import typer

from evals.baseline import REPO, code_env, run_on
from evals.bench_mcp import QUERIES, _cli, _free_port


async def _first_lookup(url: str, query: str) -> float:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as client:
        await client.initialize()
        started = time.perf_counter()
        result = await client.call_tool("lookup_knowledge", {"query": query})
        elapsed = (time.perf_counter() - started) * 1000
        if result.isError:
            raise RuntimeError(result.content[0].text)
        return elapsed


def _one_start(home: Path, query: str) -> tuple[float, float]:
    """(seconds until the server listened, ms of its first lookup)."""
    port = _free_port()
    log = home / "mcp-server.log"
    started = time.perf_counter()
    with open(log, "a") as err:
        proc = subprocess.Popen([sys.executable, "-m", "agent.cli", "mcp", "--http", "--port", str(port)],
                                env={**code_env(REPO), "EXECUTOR_HOME": str(home)}, cwd=home,
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"executor mcp --http exited with {proc.returncode}: {log.read_text()[-300:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        ready = time.perf_counter() - started
        return ready, anyio.run(_first_lookup, f"http://127.0.0.1:{port}/mcp", query)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def measure(starts: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix="bench-mcp-first-"))
    try:
        _cli(home, "ingest", "--json")
        runs = [_one_start(home, QUERIES[i]) for i in range(starts)]
    finally:
        _cli(home, "graph", "stop")
    first = [ms for _, ms in runs]
    return {"starts": starts, "first_lookup_ms": first, "ready_s": [s for s, _ in runs],
            "p50": float(np.percentile(first, 50)), "p95": float(np.percentile(first, 95))}


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
    print(f"  this code      p50 {now['p50']:8.1f}   p95 {now['p95']:8.1f}   ready after {np.median(now['ready_s']):.1f} s")
    if base is not None:
        print(f"  {baseline_ref:<14} p50 {base['p50']:8.1f}   p95 {base['p95']:8.1f}   ready after "
              f"{np.median(base['ready_s']):.1f} s   ratio (before / this) p95 {base['p95'] / now['p95']:.1f}x")


if __name__ == "__main__":
    typer.run(main)
