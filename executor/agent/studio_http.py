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


class StudioGuard:
    """LocalGuard for the address each request came in on: `langgraph dev --host/--port` are not ours to read, the
    ASGI scope's `server` is that address."""

    def __init__(self, app):
        self.app = app
        self._guards: dict[tuple[str, int], LocalGuard] = {}

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        host, port = scope.get("server") or ("127.0.0.1", 0)
        guard = self._guards.get((host, port))
        if guard is None:
            guard = self._guards[(host, port)] = LocalGuard(self.app, own_hosts(host, port), origins=STUDIO_ORIGINS)
        return await guard(scope, receive, send)


app = Starlette(middleware=[Middleware(StudioGuard)])
