"""`executor mcp`: the guarded tools as an MCP server, over stdio or streamable HTTP."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from agent.commands.common import JsonOpt, KbOpt

DEFAULT_HOME = "~/.executor"  # a host starts the server in a folder of its choosing: never the home's default


def mcp_settings():
    """The settings, with a home that does not depend on the working directory the host started us in: the one
    EXECUTOR_HOME (or config.yaml) names, else ~/.executor; absolute, since it is printed and named in errors."""
    from pathlib import Path

    from core.settings import get_settings

    settings = get_settings()
    home = settings.home if "home" in settings.model_fields_set else Path(DEFAULT_HOME).expanduser()
    return settings.model_copy(update={"home": home.expanduser().resolve()})


def mcp(
    http: Annotated[bool, typer.Option("--http", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")] = False,
    host: Annotated[str, typer.Option(help="address to listen on with --http")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on with --http", min=1, max=65535)] = 8765,
    kb: KbOpt = "sample",
    as_json: JsonOpt = False,
):
    """Serve lookup_knowledge, query_knowledge_graph, navigate_graph and list_knowledge_bases to an MCP host."""
    import anyio

    from agent.mcp_server import ExecutorMCP, server_version
    from agent.runtime import Runtime

    with Runtime(mcp_settings(), source="mcp") as rt:
        server = ExecutorMCP(rt, kb=kb)
        where = f"home {rt.settings.home}, knowledge base {kb}, version {server_version()}"
        if not http:  # stdout is the protocol's: the start-up line goes to stderr, which hosts log
            print(f"executor MCP server on stdio ({where})", file=sys.stderr, flush=True)
            anyio.run(server.run_stdio)
            return
        import uvicorn

        server.warm_up()  # resident: a real lookup before it listens, so the first call pays no start-up
        url = f"http://{host}:{port}/mcp"
        message = {"url": url, "kb": kb, "transport": "streamable-http", "home": str(rt.settings.home)}
        # stdout stays clean for scripts that read the JSON line; the person's line goes to stderr
        if as_json:
            typer.echo(json.dumps(message))
        else:
            print(f"executor MCP server on {url} ({where}); Ctrl-C stops it", file=sys.stderr)
        uvicorn.run(server.http_app(host), host=host, port=port, log_level="warning")
