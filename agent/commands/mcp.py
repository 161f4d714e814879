"""`executor mcp`: the guarded tools as an MCP server, over stdio or streamable HTTP."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from agent.commands.common import JsonOpt, KbOpt, runtime


def mcp(
    http: Annotated[bool, typer.Option("--http", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")] = False,
    host: Annotated[str, typer.Option(help="address to listen on with --http")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on with --http", min=1, max=65535)] = 8765,
    kb: KbOpt = "sample",
    as_json: JsonOpt = False,
):
    """Serve lookup_knowledge, query_knowledge_graph, navigate_graph and list_knowledge_bases to an MCP host."""
    import anyio

    from agent.mcp_server import ExecutorMCP

    with runtime("mcp") as rt:
        server = ExecutorMCP(rt, kb=kb)
        if not http:
            anyio.run(server.run_stdio)
            return
        import uvicorn

        server.warm_up()  # resident: the first call pays no start-up
        url = f"http://{host}:{port}/mcp"
        message = {"url": url, "kb": kb, "transport": "streamable-http"}
        # stdout stays clean for scripts that read the JSON line; the person's line goes to stderr
        if as_json:
            typer.echo(json.dumps(message))
        else:
            print(f"executor MCP server on {url} (knowledge base {kb}); Ctrl-C stops it", file=sys.stderr)
        uvicorn.run(server.http_app(host), host=host, port=port, log_level="warning")
