"""`executor mcp`: the guarded tools as an MCP server, over stdio or streamable HTTP."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from agent.commands.common import JsonOpt, KbOpt, runtime


def mcp(
    http: Annotated[bool, typer.Option("--http", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")] = False,
    host: Annotated[str, typer.Option(help="address to listen on with --http")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on with --http", min=1, max=65535)] = 8765,
    kb: KbOpt = "sample",
    token: Annotated[Optional[str], typer.Option(
        envvar="EXECUTOR_MCP_TOKEN", show_envvar=False,
        help="with --http: require `Authorization: Bearer TOKEN` (needed to listen beyond 127.0.0.1; also "
             "EXECUTOR_MCP_TOKEN)")] = None,
    as_json: JsonOpt = False,
):
    """Serve lookup_knowledge, query_knowledge_graph, navigate_graph and list_knowledge_bases to an MCP host."""
    import anyio

    from agent.mcp_server import ExecutorMCP
    from core.errors import InputError, register_secret
    from core.local_http import is_loopback

    if http and not is_loopback(host) and not token:
        # beyond loopback anyone on the network can call the tools: not without a token
        raise InputError(f"--host {host} is reachable beyond this machine: give a token with --token or "
                         "EXECUTOR_MCP_TOKEN (clients send `Authorization: Bearer TOKEN`), or listen on 127.0.0.1")
    if token is not None and len(token) < 16:
        raise InputError("--token must have at least 16 characters")
    register_secret(token)
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
        uvicorn.run(server.http_app(host, port, token), host=host, port=port, log_level="warning")
