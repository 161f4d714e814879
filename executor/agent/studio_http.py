"""What `langgraph dev` mounts in front of its API (langgraph.json's `http.app`): no routes, only the checks every
local server of ours makes (`core.local_http.LocalGuard`). The LangGraph API answers any Origin with
`Access-Control-Allow-Origin: *` and checks no Host, so without this any web page the user opens could start runs
of the executor graph on their knowledge bases and read the answers and the threads (a cross-site fetch, or DNS
rebinding). The Host must be this server's own name with its port, the Origin absent, its own, or LangGraph
Studio's, which is a page on smith.langchain.com talking to the local server."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware

from executor.core.local_http import LocalGuard, own_hosts

STUDIO_ORIGINS = ("https://smith.langchain.com", "https://eu.smith.langchain.com")


def in_process(scope) -> bool:
    """A request the server makes to itself, in process: langgraph-api's own MCP endpoint (`/mcp`), A2A and webhooks
    call the API through `langgraph_sdk.get_client(url=None)`, an httpx ASGI transport mounted at `/noauth` whose
    requests name the server `http://api` (no port). No request read from a socket has either: uvicorn gives the
    address it listens on, with its port, and no root path. Refused here for its Host, every `tools/list` of
    `/mcp` was a 500."""
    server = scope.get("server") or (None, 0)
    return scope.get("root_path") == "/noauth" and server[1] is None


class StudioGuard:
    """LocalGuard for the address each request came in on: `langgraph dev --host/--port` are not ours to read, the
    ASGI scope's `server` is that address."""

    def __init__(self, app):
        self.app = app
        self._guards: dict[tuple[str, int], LocalGuard] = {}

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or in_process(scope):
            return await self.app(scope, receive, send)
        host, port = scope.get("server") or ("127.0.0.1", 0)
        guard = self._guards.get((host, port))
        if guard is None:
            guard = self._guards[(host, port)] = LocalGuard(self.app, own_hosts(host, port), origins=STUDIO_ORIGINS)
        return await guard(scope, receive, send)


app = Starlette(middleware=[Middleware(StudioGuard)])
