"""`executor mcp`: the guarded tools as an MCP server, over stdio or streamable HTTP."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import Annotated

import typer

from executor.cli.commands.common import JsonOpt

DEFAULT_HOME = "~/.executor"  # a host starts the server in a folder of its choosing: never the home's default


def mcp_settings():
    """The settings, with a home that does not depend on the working directory the host started us in: the one
    EXECUTOR_HOME (or config.yaml) names, else ~/.executor; absolute, since it is printed and named in errors."""
    from pathlib import Path

    from executor.core.settings import get_settings

    settings = get_settings()
    home = settings.home if "home" in settings.model_fields_set else Path(DEFAULT_HOME).expanduser()
    return settings.model_copy(update={"home": home.expanduser().resolve()})


def mcp(
    http: Annotated[
        bool, typer.Option("--http", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    ] = False,
    host: Annotated[str, typer.Option(help="address to listen on with --http")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on with --http", min=1, max=65535)] = 8765,
    # the whole home is served on purpose: query_knowledge_graph reads several KBs in one call and
    # list_knowledge_bases names them; --kb only picks the one lookup_knowledge and navigate_graph read
    kb: Annotated[
        str | None,
        typer.Option(
            "--kb",
            help="the knowledge base lookup_knowledge and navigate_graph read (query_knowledge_graph and "
            "list_knowledge_bases see every KB of the home: serve a home holding only what the host may read) "
            "[default: sample]",
            show_default=False,
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="EXECUTOR_MCP_TOKEN",
            show_envvar=False,
            help="with --http: require `Authorization: Bearer TOKEN` (needed to listen beyond 127.0.0.1; also "
            "EXECUTOR_MCP_TOKEN)",
        ),
    ] = None,
    as_json: JsonOpt = False,
):
    """Serve lookup_knowledge, query_knowledge_graph, navigate_graph and list_knowledge_bases to an MCP host."""
    import anyio

    from executor.agent.mcp_server import ExecutorMCP, server_version
    from executor.agent.runtime import Runtime
    from executor.core import fs
    from executor.core.errors import ExecutorError, InputError, OutputError, register_secret
    from executor.core.fs import private_file
    from executor.core.local_http import is_loopback, own_names, server_config
    from executor.core.validation import validate_kb_name

    if not http and 0 in fs.closed_at_start:  # the host's requests come on stdin: there would be none to answer
        raise ExecutorError("stdin is closed: the stdio MCP server reads the host's requests there (or use --http)")
    if not http:
        # the transport options mean nothing on stdio: a token given there would protect nothing, silently
        given = [name for name, value in (("--host", host != "127.0.0.1"), ("--port", port != 8765)) if value]
        if token is not None and "EXECUTOR_MCP_TOKEN" not in os.environ:
            given.append("--token")
        if given:
            verb = "apply" if len(given) > 1 else "applies"
            raise InputError(f"{', '.join(given)} only {verb} with --http (the stdio server has no address or token)")
    if http and not is_loopback(host) and not token:
        # beyond loopback anyone on the network can call the tools: not without a token
        raise InputError(
            f"--host {host} is reachable beyond this machine: give a token with --token or "
            "EXECUTOR_MCP_TOKEN (clients send `Authorization: Bearer TOKEN`), or listen on 127.0.0.1"
        )
    if token is not None and len(token) < 16:
        # named as the user set it: the variable can sit in a profile, far from the command line
        name = "EXECUTOR_MCP_TOKEN" if os.environ.get("EXECUTOR_MCP_TOKEN") == token else "--token"
        raise InputError(f"{name} must have at least 16 characters")
    register_secret(token)
    if kb is not None:
        validate_kb_name(kb)  # a name no KB can have: refused before anything starts, as `executor lookup` refuses it
    with Runtime(mcp_settings(), source="mcp") as rt:
        if kb is not None:
            # named on purpose, so a host's every lookup would fail on it ("unknown knowledge base"): refused now.
            # The default may be missing: a home served for query_knowledge_graph alone need not hold `sample`
            rt.catalog.require(kb)
        kb = kb or "sample"
        server = ExecutorMCP(rt, kb=kb)
        where = f"home {rt.settings.home}, knowledge base {kb}, version {server_version()}"
        if not http:  # stdout is the protocol's: the start-up line goes to stderr, which hosts log
            server.open_stores()  # a held or broken store: one line and exit 1 now, as --http, not failing calls
            print(f"executor MCP server on stdio ({where})", file=sys.stderr, flush=True)
            try:
                anyio.run(server.run_stdio)
            except Exception as exc:
                # what escapes the stdio server is its transport's (a tool's failure is the host's answer): an
                # OSError there is stdout failing (`>/dev/full`), said as every command says it
                lost = _transport_failure(exc)
                if lost is None:
                    raise
                raise OutputError(f"cannot write to stdout: {lost.strerror or lost}") from None
            return
        import uvicorn

        sock = _listen(host, port)  # a port in use is one line here, not uvicorn's log and exit
        server.warm_up()  # resident: real lookups before it listens, so the first call pays no start-up
        # an IPv6 address is bracketed in a URL (RFC 3986): "http://::1:8765/mcp" is no URL a client can open
        url = f"http://[{host.strip('[]')}]:{port}/mcp" if ":" in host else f"http://{host}:{port}/mcp"
        log = private_file(rt.settings.ensure_home() / "mcp-http.log")
        names = own_names(host)
        message = {
            "url": url,
            "kb": kb,
            "transport": "streamable-http",
            "home": str(rt.settings.home),
            "log": str(log),
            "hosts": [f"{name}:{port}" for name in names],
        }
        # stdout stays clean for scripts that read the JSON line; the person's line goes to stderr
        if as_json:
            typer.echo(json.dumps(message))
        else:
            answers = _answers_to(host, port, names)
            print(f"executor MCP server on {url} ({where}; its log: {log}){answers}; Ctrl-C stops it", file=sys.stderr)
        # what uvicorn and the MCP library log (a malformed request, a stream cut by Ctrl-C) goes to a file:
        # a person's terminal gets one line per problem of theirs, not the server's tracebacks
        config = server_config(
            server.http_app(host, port, token), log_config=_log_config(log), access_log=False, log_level="warning"
        )
        with _root_log_to(log):
            uvicorn.Server(config).run(sockets=[sock])


def _answers_to(host: str, port: int, names: list[str]) -> str:
    """For a server other machines can reach, the URLs it answers at: it refuses (421) any other Host, so a client
    given `http://0.0.0.0:PORT/mcp`, or an address the machine does not have, is refused, and a user deciding which
    URL to give the other machines has no way to know them (hostile22 finding 8's leftover). Empty on loopback,
    where the URL said is the one."""
    from executor.core.local_http import is_loopback

    if is_loopback(host):
        return ""
    return f"; it answers at http://NAME:{port}/mcp for NAME in {', '.join(names)} (with the token)"


def _transport_failure(exc: BaseException) -> OSError | None:
    """The OSError (a reader gone aside) in what the stdio server raised, alone or in anyio's exception group."""
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _transport_failure(inner)
        if found is not None:
            return found
    return None


def _listen(host: str, port: int):
    import errno
    import socket

    from executor.core.errors import ExecutorError, InputError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        # a host that is no address (256.1.1.1, a name that does not resolve) or not one of this machine's is the
        # user's input to fix; a port in use or refused is the machine's state
        if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
            raise InputError(f"--host {host}: not an address of this machine ({exc.strerror or exc})") from None
        raise ExecutorError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _log_config(path) -> dict:
    handler = {"class": "logging.FileHandler", "filename": str(path), "formatter": "plain"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"}},
        "handlers": {"file": handler},
        "loggers": {
            name: {"handlers": ["file"], "level": "WARNING", "propagate": False}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
        },
    }


@contextmanager
def _root_log_to(path):
    """Log records of every library (the MCP SDK's among them) to `path` while the server runs."""
    import logging

    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()
