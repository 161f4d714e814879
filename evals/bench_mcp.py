"""lookup_knowledge through the resident MCP server (streamable HTTP) against the same call in process, and a CLI call.

    python -m evals.bench_mcp [--calls 60] [--cli-calls 3]

Ingests the bundled sample into a throw-away EXECUTOR_HOME, then times the
same lookups three ways, one after another (a Milvus Lite file is open in one
process at a time): in process (`ExecutorMCP.call`, the server's own code
path, embedder and stores warm), through `executor mcp --http` with the SDK's
client (warm: the server loaded everything before its first call), and as a
fresh `executor lookup` process (start-up included). Every lookup uses a
session of its own and a query of its own (the sample KB's labelled queries,
none asked twice), so each one searches and grades: none is cut short as a
repeat or served from the embedder's cache. Beside the figures, the same run
on the code before issue 17 (`evals/baseline.py`). Printed, never asserted.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import anyio
import numpy as np
import typer
from mcp.types import CallToolResult, TextContent
from rich.console import Console
from tqdm import tqdm

from evals.baseline import BEFORE_ISSUE_17, REPO, code_env, run_on
from evals.bench_turn import questions
from executor.agent.mcp_server import ExecutorMCP
from executor.agent.runtime import Runtime
from executor.core.settings import Settings

WARM_UP = 5
QUERIES = questions()  # warm-up calls take the last ones, measured calls the first ones: never the same query


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def error_text(result: CallToolResult) -> str:
    """What a tool call that failed says (its content is text)."""
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


def _in_process(home: Path, calls: int) -> list[float]:
    rt = Runtime(Settings(home=home))
    try:
        server = ExecutorMCP(rt)
        server.warm_up()
        for i in range(WARM_UP):
            server.call("lookup_knowledge", f"bench-warm-{i}", {"query": QUERIES[-1 - i]})
        timings = []
        for i in tqdm(range(calls), desc="in process", leave=False):
            t = time.perf_counter()
            server.call("lookup_knowledge", f"bench-inproc-{i}", {"query": QUERIES[i % len(QUERIES)]})
            timings.append((time.perf_counter() - t) * 1000)
        return timings
    finally:
        rt.close()


async def _through_mcp(url: str, calls: int) -> list[float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    timings = []
    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as client:
        await client.initialize()
        for i in range(WARM_UP):
            await client.call_tool("lookup_knowledge", {"query": QUERIES[-1 - i], "session": f"bench-mwarm-{i}"})
        for i in tqdm(range(calls), desc="through MCP", leave=False):
            t = time.perf_counter()
            result = await client.call_tool(
                "lookup_knowledge", {"query": QUERIES[i % len(QUERIES)], "session": f"bench-mcp-{i}"}
            )
            timings.append((time.perf_counter() - t) * 1000)
            if result.isError:
                raise RuntimeError(error_text(result))
    return timings


@contextmanager
def served(home: Path):
    """`executor mcp --http` on this checkout's code, whatever is installed: (its URL, seconds until it listened,
    embedder and stores loaded); stopped on leaving the block."""
    port = _free_port()
    env = {**code_env(REPO), "EXECUTOR_HOME": str(home)}
    started = time.perf_counter()
    log = home / "mcp-server.log"
    with open(log, "a") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "executor.cli.main", "mcp", "--http", "--port", str(port)],
            env=env,
            cwd=home,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"executor mcp --http exited with {proc.returncode}: {log.read_text().strip()[-300:]}"
                )
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _mcp_server(home: Path, calls: int) -> tuple[list[float], float]:
    """Timings through the HTTP server, and its start-up time until it listens."""
    with served(home) as (url, startup):
        return anyio.run(_through_mcp, url, calls), startup


def _cli(home: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "executor.cli.main", *args],
        env={**code_env(REPO), "EXECUTOR_HOME": str(home)},
        cwd=home,
        check=True,
        capture_output=True,
    )


def _cli_calls(home: Path, calls: int) -> list[float]:
    timings = []
    for i in tqdm(range(calls), desc="CLI", leave=False):
        t = time.perf_counter()
        _cli(home, "lookup", QUERIES[i % len(QUERIES)], "--session", f"bench-cli-{i}", "--json")
        timings.append((time.perf_counter() - t) * 1000)
    return timings


def measure(calls: int, cli_calls: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    try:
        # a Milvus Lite file serves one process until that process exits: this process opens it last
        _cli(home, "ingest", "--json")
        mcp, startup = _mcp_server(home, calls)
        cli = _cli_calls(home, cli_calls)
        inproc = _in_process(home, calls)
    finally:
        _cli(home, "graph", "stop")
    pcts = {
        name: (float(np.percentile(v, 50)), float(np.percentile(v, 95)))
        for name, v in (("in process", inproc), ("through MCP (HTTP)", mcp), ("CLI call", cli))
    }
    return {"calls": calls, "cli_calls": cli_calls, "p50_p95": pcts, "startup_s": startup}


def main(
    calls: int = typer.Option(60, min=10, max=len(QUERIES) - WARM_UP),
    cli_calls: int = typer.Option(3, min=1),
    baseline_ref: str = typer.Option(BEFORE_ISSUE_17, help="git ref whose code is the baseline"),
    no_baseline: bool = typer.Option(False, "--no-baseline", help="measure this code only"),
    json_out: Path = typer.Option(None, "--json", help="also write the numbers here"),
):
    now = measure(calls, cli_calls)
    base = (
        None if no_baseline else run_on(baseline_ref, __file__, ["--calls", str(calls), "--cli-calls", str(cli_calls)])
    )
    if json_out:
        json_out.write_text(
            json.dumps({"current": now, "baseline": base, "baseline_ref": baseline_ref}, indent=2), encoding="utf-8"
        )
        if no_baseline:
            return  # the baseline's own run: its figures go to the JSON only
    console = Console()
    console.print(
        f"lookup_knowledge on the sample KB, {calls} warm calls, {cli_calls} CLI calls (ms, p50 / p95)"
        + ("" if base is None else f"; before = {baseline_ref}, ratio = before p95 / this p95")
        + ":"
    )
    for name, (p50, p95) in now["p50_p95"].items():
        line = f"  {name:<20} {p50:8.1f} / {p95:8.1f}"
        if base is not None:
            b50, b95 = base["p50_p95"][name]
            line += f"   before {b50:8.1f} / {b95:8.1f}   {b95 / p95:5.2f}x"
        console.print(line)
    p = now["p50_p95"]
    inproc, served, cold = p["in process"], p["through MCP (HTTP)"], p["CLI call"]
    console.print(
        f"  MCP / in process: {served[0] / inproc[0]:.2f}x at p50, {served[1] / inproc[1]:.2f}x at p95; "
        f"a CLI call is {cold[0] / served[0]:.0f}x the MCP call at p50"
    )
    console.print(
        f"  the HTTP server listened {now['startup_s']:.1f} s after it was started (embedder and stores loaded)"
        + ("" if base is None else f"; before: {base['startup_s']:.1f} s")
    )


if __name__ == "__main__":
    typer.run(main)
