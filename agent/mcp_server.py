"""The executor's tools as an MCP server (official `mcp` SDK): stdio, or streamable HTTP as a resident process.

Tools come from the registry (`tools/registry.py`) with their schemas, and run
through `tools.registry.invoke` like the graph's: the same argument checks, the
same grading, action memory and `tool_invocation` rows; a store failure
behind a retrieval tool is a tool error saying the knowledge base is
unavailable. What the server cannot do is the graph's per-turn rules (lookup
budget, PRECISE stop): it does not see a host's turns. The session rules (a
document is never sent twice, a lookup that repeats an earlier one in
meaning is DEDUPED) hold per MCP session: the transport's session id over
HTTP, one session per connection over stdio, or the `session` argument when
a host wants several connections to share one.
The four retrieval rules reach the host's LLM as the server's instructions,
a prompt and a resource.
"""

from __future__ import annotations

import json
import threading
import uuid
import weakref

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server

import agent.feedback  # noqa: F401 - registers the host's `feedback` tool
from tools.call import ToolCall
from tools.registry import all_tools, invoke, tool_named
from prompts.executor import RULES
from prompts.results import expansion_text
from retrieval.knowledge_bases import knowledge_bases
from core.validation import SESSION_ID, check_session_id
from stores.catalog import version

SESSION_ARG = {
    "type": "string",
    "pattern": SESSION_ID.pattern,
    "description": "share action memory with other connections under this session id (default: this MCP session)",
}
RULES_URI = "executor://retrieval-rules"
KBS_URI = "executor://knowledge-bases"


class ToolFailed(Exception):
    """A tool call the host gets back as an error result (one line); the server goes on."""


def has_own_session(name: str) -> bool:
    """A tool whose `session` argument is its own (feedback: the session whose answer is rated), not the
    action-memory session every other tool may be given."""
    return "session" in tool_named(name).args.model_fields


def input_schema(name: str) -> dict:
    schema = tool_named(name).args.model_json_schema()
    if not has_own_session(name):
        schema.setdefault("properties", {})["session"] = SESSION_ARG
    schema.pop("title", None)
    return schema


class ExecutorMCP:
    def __init__(self, rt, kb: str = "sample"):
        self.rt, self.kb = rt, kb
        # the stores and the embedder are shared by every session; one call at a time uses them
        self._lock = threading.Lock()
        self._connections: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.server = Server("executor", instructions=RULES["en"])
        self._register()

    # -- sessions -------------------------------------------------------------
    def session_id(self, explicit: str | None) -> str:
        if explicit is not None:
            try:
                return check_session_id(explicit)
            except Exception as exc:
                raise ToolFailed(f"session: {exc}") from None
        ctx = self.server.request_context
        request = ctx.request
        transport_id = request.headers.get("mcp-session-id") if request is not None else None
        if transport_id:
            return f"mcp-{transport_id}"[:128]
        # stdio and in-memory connections have no transport id: one session per connection
        if ctx.session not in self._connections:
            self._connections[ctx.session] = f"mcp-{uuid.uuid4().hex}"
        return self._connections[ctx.session]

    # -- tools --------------------------------------------------------------
    def call(self, name: str, session: str, args: dict) -> str:
        """Run one tool as the graph does; a lookup the graph would widen is widened here, in the same answer."""
        with self._lock:
            try:
                out = invoke(name, ToolCall(self.rt, session, self.kb), args)
            except ValueError as exc:  # arguments the schema allows but the tool does not (blank query, ...)
                raise ToolFailed(f"invalid arguments: {exc}") from None
            if out.failure is not None:  # a store failed: "unavailable", never read as "nothing found"
                raise ToolFailed(out.text)
            if out.error is not None:
                raise ToolFailed(out.error)
            text = out.text
            if out.expandable is not None:  # a REFERENCE or thin lookup in a KB with a graph
                text += "\n\n" + expansion_text(self.rt.expander.expand(out.expandable))
            return text

    def warm_up(self) -> None:
        """Load the embedder, open the vector store and build the KB's keyword index and vocabulary before the first call."""
        with self._lock:
            self.rt.embedder.embed_query("warm up")
            row = self.rt.catalog.get(self.kb)
            if row is not None:
                self.rt.vectors.check_embedder(self.kb, self.rt.embedder)
                self.rt.grader.keyword_index(self.kb, version(row))
                self.rt.grader.vocabulary(self.kb, version(row))
                self.rt.grader.profile(self.kb, version(row))

    def _register(self) -> None:
        server = self.server

        @server.list_tools()
        async def list_tools() -> list[types.Tool]:
            return [types.Tool(name=name, description=t.description, inputSchema=input_schema(name))
                    for name, t in all_tools().items()]

        @server.call_tool()
        async def call_tool(name: str, arguments: dict | None):
            if tool_named(name) is None:
                raise ToolFailed(f"there is no tool named {name!r}")
            args = dict(arguments or {})
            session = self.session_id(None if has_own_session(name) else args.pop("session", None))
            text = await anyio.to_thread.run_sync(self.call, name, session, args)
            return [types.TextContent(type="text", text=text)]

        @server.list_prompts()
        async def list_prompts() -> list[types.Prompt]:
            return [types.Prompt(
                name="retrieval_rules", description="The four rules for calling lookup_knowledge without repeating yourself",
                arguments=[types.PromptArgument(name="lang", description="en or zh", required=False)],
            )]

        @server.get_prompt()
        async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
            if name != "retrieval_rules":
                raise ValueError(f"there is no prompt named {name!r}")
            lang = "zh" if (arguments or {}).get("lang") == "zh" else "en"
            return types.GetPromptResult(
                description="retrieval rules",
                messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=RULES[lang]))],
            )

        @server.list_resources()
        async def list_resources() -> list[types.Resource]:
            return [
                types.Resource(uri=RULES_URI, name="retrieval rules", mimeType="text/plain",
                               description="the four retrieval rules, in English and Chinese"),
                types.Resource(uri=KBS_URI, name="knowledge bases", mimeType="application/json",
                               description="the knowledge bases: name, description, documents, graph or not"),
            ]

        @server.read_resource()
        async def read_resource(uri) -> str:
            if str(uri) == RULES_URI:
                return f"{RULES['en']}\n\n{RULES['zh']}"
            if str(uri) == KBS_URI:
                kbs = await anyio.to_thread.run_sync(lambda: knowledge_bases(self.rt.catalog))
                return json.dumps([k.model_dump() for k in kbs], ensure_ascii=False)
            raise ValueError(f"there is no resource {uri}")

    # -- transports ---------------------------------------------------------
    async def run_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, host: str = "127.0.0.1", port: int = 8765, token: str | None = None):
        """A Starlette app serving streamable HTTP at /mcp, with one action-memory session per MCP session, behind
        `core.local_http.LocalGuard`: the Host (this server's names, with its port, compared whole) and Origin are
        checked on every bind, a bearer `token` is required when one is given, bodies are bounded before they
        are read."""
        from mcp.server.fastmcp.server import StreamableHTTPASGIApp
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings
        from starlette.applications import Starlette
        from starlette.routing import Route

        from core.local_http import LocalGuard, own_hosts

        hosts = own_hosts(host, port)
        security = TransportSecuritySettings(  # the library's own check too, on the same exact names
            enable_dns_rebinding_protection=True, allowed_hosts=sorted(hosts),
            allowed_origins=sorted(f"http://{h}" for h in hosts) + sorted(f"https://{h}" for h in hosts))
        manager = StreamableHTTPSessionManager(app=self.server, security_settings=security)
        app = Starlette(routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))],
                        lifespan=lambda app: manager.run())
        return LocalGuard(app, hosts, token=token)
