"""The executor's tools as an MCP server (official `mcp` SDK): stdio, or streamable HTTP as a resident process.

Tools come from the runtime's tool table (`executor/tools/registry.py`) with their schemas, and run
through `ToolTable.invoke` like the graph's: the same argument checks, the
same grading, action memory and `tool_invocation` rows; a store failure
behind a retrieval tool is a tool error saying the knowledge base is
unavailable. What the server cannot do is the graph's per-turn rules (lookup
budget, PRECISE stop): it does not see a host's turns. The session rules (a
document is never sent twice, a lookup that repeats an earlier one in
meaning is DEDUPED) hold per MCP session: the transport's session id over
HTTP, one session per connection over stdio, or the `session` argument when
a host wants several connections to share one. A call the host cancels runs
on (it cannot be stopped) but what it recorded in that memory is forgotten:
the host never reads its answer, so its documents count as never sent.
The four retrieval rules reach the host's LLM as the server's instructions,
a prompt and a resource.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from io import TextIOWrapper
from typing import TypeGuard, get_args

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.shared.exceptions import McpError
from mcp.shared.message import SessionMessage
from pydantic import AnyUrl, ValidationError

from executor.core.errors import ExecutorError, printable
from executor.core.local_http import MAX_BODY_BYTES, NOT_JSON, json_leaves, posted_json, replaying, send_json
from executor.core.validation import SESSION_ID, check_session_id
from executor.prompts.executor import RULES
from executor.prompts.results import expansion_text
from executor.retrieval.knowledge_bases import knowledge_bases
from executor.stores.memory import Snapshot
from executor.tools.call import ToolCall
from executor.tools.registry import LOOKUP, Tool, ToolTable

LOG = logging.getLogger(__name__)

SESSION_ARG = {
    "type": "string",
    "pattern": SESSION_ID.pattern,
    "description": "share action memory with other connections under this session id (default: this MCP session)",
}
RULES_URI = "executor://retrieval-rules"
KBS_URI = "executor://knowledge-bases"
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for an unknown resource URI


def server_version() -> str:
    """Our version for `serverInfo` (the SDK would send its own)."""
    try:
        return package_version("executor")
    except PackageNotFoundError:
        return "0+unknown"


class ToolFailed(Exception):
    """A tool call the host gets back as an error result (one line); the server goes on."""


def has_own_session(tool: Tool) -> bool:
    """A tool whose `session` argument is its own (feedback: the session whose answer is rated), not the
    action-memory session every other tool may be given."""
    return "session" in tool.args.model_fields


def host_schema(schema: dict) -> dict:
    """A tool's JSON schema as hosts fill it: an optional argument is published with its own type, not as pydantic's
    `anyOf [T, null]` (Inspector 0.15's CLI sends a value of an `anyOf` as a string, and hosts' forms show no
    field for it). Leaving an optional argument out is how a host says "none"; null is still accepted."""
    for prop in schema.get("properties", {}).values():
        options = prop.get("anyOf")
        kept = [o for o in options or [] if o.get("type") != "null"]
        if options and len(kept) == 1 and len(kept) < len(options):
            del prop["anyOf"]
            prop.update({k: v for k, v in kept[0].items() if k not in prop})
            if prop.get("default", 0) is None:
                del prop["default"]
    schema.pop("title", None)
    return schema


def input_schema(tool: Tool) -> dict:
    schema = tool.args.model_json_schema()
    if not has_own_session(tool):
        schema.setdefault("properties", {})["session"] = SESSION_ARG
    return host_schema(schema)


def output_schema(tool: Tool) -> dict | None:
    """The schema of a tool's structured content (query_knowledge_graph: results and graph_data), or None."""
    model = tool.output
    return model.model_json_schema(mode="serialization") if model is not None else None


class ExecutorMCP:
    def __init__(self, rt, kb: str = "sample", tools: ToolTable | None = None):
        """`tools`: the table served (default: the runtime's, the executor's tools and the host's own)."""
        self.rt, self.kb = rt, kb
        self.table = tools or rt.tools
        # the stores and the embedder are shared by every session; one call at a time uses them
        self._lock = threading.Lock()
        self._connections: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._tools: list[types.Tool] | None = None
        self.server = _Server("executor", version=server_version(), instructions=RULES["en"])
        self._register()

    # -- sessions -------------------------------------------------------------
    def session_id(self, explicit: str | None) -> str:
        if explicit is not None:
            if not isinstance(explicit, str):  # what a regex says of an int is Python's, not the host's
                raise ToolFailed("session: must be a string")
            try:
                return check_session_id(explicit)
            except Exception as exc:
                raise ToolFailed(f"session: {exc}") from None
        ctx = self.server.request_context
        headers = getattr(ctx.request, "headers", None)  # an HTTP request's; stdio and in-memory have none
        transport_id = headers.get("mcp-session-id") if headers is not None else None
        if transport_id:
            return f"mcp-{transport_id}"[:128]
        # stdio and in-memory connections have no transport id: one session per connection
        if ctx.session not in self._connections:
            self._connections[ctx.session] = f"mcp-{uuid.uuid4().hex}"
        return self._connections[ctx.session]

    # -- tools --------------------------------------------------------------
    def call(
        self, name: str, session: str, args: dict, request: tuple[Cancels, types.RequestId] | None = None
    ) -> tuple[str, dict | None]:
        """Run one tool as the graph does; a lookup the graph would widen is widened here, in the same answer.
        Returns the text and, for a tool with an output model, its structured content. `request`: the host's
        request and its connection's cancels: a call the host cancelled forgets what it recorded in the session's
        memory (`Cancels`)."""
        with self._lock:
            before = self._snapshot(session) if request is not None else None
            try:
                answer = self.table.answer(name, ToolCall(session, self.kb), args)
            except ValueError as exc:  # arguments the schema allows but the tool does not (blank query, ...)
                raise ToolFailed(f"invalid arguments: {exc}") from None
            finally:
                if request is not None and before is not None:
                    self._finished(before, *request)
            out = answer.out
            if out.failure is not None:  # a store failed: "unavailable", never read as "nothing found"
                raise ToolFailed(out.text)
            if out.error is not None:
                raise ToolFailed(out.error)
            structured = out.result.model_dump(mode="json") if self.table.all[name].output is not None else None
            return answer.text, structured

    def _snapshot(self, session: str) -> Snapshot | None:
        try:
            return self.rt.memory.snapshot(session)
        except ExecutorError:  # the database failed: the tool call says so, as it would without this
            return None

    def _finished(self, before: Snapshot, cancels: Cancels, request_id: types.RequestId) -> None:
        """A call's end, under the lock: it forgets what it recorded if the host cancelled it already; if not, what
        forgets it is kept for a cancel that comes later (its own records only, whatever was recorded since)."""
        after = self._snapshot(before.session)
        if after is None or after == before:  # nothing recorded: nothing to forget
            return

        def forget() -> None:
            with self._lock:
                self._forget(before, after)

        if cancels.finished(request_id, forget):
            self._forget(before, None)

    def _forget(self, before: Snapshot, after: Snapshot | None) -> None:
        try:
            self.rt.memory.forget_call(before, after)
        except ExecutorError as exc:  # the database failed meanwhile: the session goes on, its memory as it was
            LOG.warning("a cancelled call's action memory was not forgotten: %s", exc)

    def tools(self) -> list[types.Tool]:
        """The tools as listed, their schemas built once (the SDK also reads them before a host's first call)."""
        if self._tools is None:
            self._tools = [
                types.Tool(
                    name=name,
                    description=t.description,
                    inputSchema=input_schema(t),
                    outputSchema=output_schema(t),
                )
                for name, t in self.table.all.items()
            ]
        return self._tools

    def warm_up(self) -> None:
        """Run the whole lookup path before the server reports ready, so that a host's first lookup is as fast as
        its tenth: jieba's dictionary, the modules a lookup imports on first use, the embedder, the vector store's
        first search, the KB's keyword index, vocabulary and profiles, the database statements of the action
        memory and the log, and (a KB with a graph) graph expansion and its store. These are real calls (an
        English and a Chinese lookup, each expanded) in a session of their own, which is forgotten afterwards:
        its memory and its log rows, since no host made them. A store that fails raises its error (ExecutorError)."""
        from executor.retrieval.graph_build import has_graph

        session = f"mcp-warm-up-{uuid.uuid4().hex[:12]}"
        self.tools()
        with self._lock:
            row = self.rt.catalog.get(self.kb)
            if row is None:  # nothing to look up in: the first call says so, at no cost
                return
            try:
                for query in ("How do I warm up the service?", "服务怎么预热？"):
                    out = self.table.invoke(LOOKUP, ToolCall(session, self.kb), {"query": query})
                    if out.failure is not None and out.raised is not None:
                        # a store this process cannot use (another server holds the Milvus Lite file, it is
                        # damaged): one error now, not a server that says it is ready and fails every lookup
                        raise out.raised
                    if out.result is not None and has_graph(row.extract_config):  # expanded even when not thin
                        expansion_text(self.table.expand(out.result))
                self.rt.memory.snapshot(session)  # what every host call reads before and after it runs
            finally:
                self.rt.memory.clear(session)
                self.rt.log.forget(session)

    def open_stores(self) -> None:
        """Open the vector store before the stdio server answers `initialize` (a home with a knowledge base only: a
        new home gets no Milvus Lite file from it). A store this process cannot use (another server holds the Lite
        file, it is damaged, the Milvus server is down) raises its error now, as `warm_up` does over HTTP: the
        server answered `initialize` and failed every call, so a host showed a server that runs (hostile21 finding
        6). Only the store: `warm_up`'s lookups (the embedder, the graph server) would keep a host waiting for
        `initialize`, and a host starts a stdio server with each window."""
        if self.rt.catalog.names():
            self.rt.vectors.has(self.kb)

    def _register(self) -> None:
        server = self.server

        @server.list_tools()
        async def list_tools() -> list[types.Tool]:
            return self.tools()

        # arguments are checked by the tool's own model (tools.registry.parse_arguments), not by the SDK's JSON
        # schema check: its errors name the argument and its limit and never echo the value (a 2,000-character
        # query), and it takes what hosts' CLIs send as text ("2" for an integer, "A,B" for an array)
        @server.call_tool(validate_input=False)
        async def call_tool(name: str, arguments: dict | None):
            tool = self.table.named(name)
            if tool is None:
                raise ToolFailed(f"there is no tool named {str(name)[:80]!r}")
            args = dict(arguments or {})
            session = self.session_id(None if has_own_session(tool) else args.pop("session", None))
            request = (CANCELS.get(), self.server.request_context.request_id)
            text, structured = await anyio.to_thread.run_sync(self.call, name, session, args, request)
            content = [types.TextContent(type="text", text=text)]
            return (content, structured) if structured is not None else content

        @server.list_prompts()
        async def list_prompts() -> list[types.Prompt]:
            return [
                types.Prompt(
                    name="retrieval_rules",
                    description="The four rules for calling lookup_knowledge without repeating yourself",
                    arguments=[types.PromptArgument(name="lang", description="en or zh", required=False)],
                )
            ]

        @server.get_prompt()
        async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
            if name != "retrieval_rules":
                raise McpError(
                    types.ErrorData(code=types.INVALID_PARAMS, message=f"there is no prompt named {str(name)[:80]!r}")
                )
            arguments = arguments or {}
            unknown = sorted(set(arguments) - {"lang"})
            lang = arguments.get("lang", "en")
            if unknown or lang not in RULES:
                # "lang: fr" was answered in English and an unknown argument ignored, where a tool refuses both
                what = (
                    f"unknown argument {printable(unknown[0])[:40]!r}" if unknown else f"lang {printable(lang)[:20]!r}"
                )
                raise McpError(
                    types.ErrorData(
                        code=types.INVALID_PARAMS,
                        message=f"retrieval_rules: {what}; it takes lang, one of {', '.join(sorted(RULES))}",
                    )
                )
            return types.GetPromptResult(
                description="retrieval rules",
                messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=RULES[lang]))],
            )

        @server.list_resources()
        async def list_resources() -> list[types.Resource]:
            return [
                types.Resource(
                    uri=AnyUrl(RULES_URI),
                    name="retrieval rules",
                    mimeType="text/plain",
                    description="the four retrieval rules, in English and Chinese",
                ),
                types.Resource(
                    uri=AnyUrl(KBS_URI),
                    name="knowledge bases",
                    mimeType="application/json",
                    description="the knowledge bases: name, description, documents, graph or not",
                ),
            ]

        # none: listed so that a host which asks (the Inspector, on connecting) is answered, not "Method not found"
        @server.list_resource_templates()
        async def list_resource_templates() -> list[types.ResourceTemplate]:
            return []

        # each with the type `resources/list` gives it (a bare string is sent as text/plain, and is deprecated)
        @server.read_resource()
        async def read_resource(uri) -> list[ReadResourceContents]:
            if str(uri) == RULES_URI:
                return [ReadResourceContents(f"{RULES['en']}\n\n{RULES['zh']}", mime_type="text/plain")]
            if str(uri) == KBS_URI:
                kbs = await anyio.to_thread.run_sync(lambda: knowledge_bases(self.rt.catalog))
                listing = json.dumps([k.model_dump() for k in kbs], ensure_ascii=False)
                return [ReadResourceContents(listing, mime_type="application/json")]
            raise McpError(
                types.ErrorData(
                    code=RESOURCE_NOT_FOUND,
                    message=f"there is no resource {str(uri)[:200]}",
                    data={"uri": str(uri)[:200]},
                )
            )

    # -- transports ---------------------------------------------------------
    async def run_stdio(self) -> None:
        try:
            await self._on_own_stdout()
        except* BrokenPipeError:
            # the host closed its end of our stdout (it exited or crashed) and a message could not be written: the
            # error was "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)", a class name
            raise ExecutorError("the MCP host closed the connection (stdout is a broken pipe)") from None

    async def _on_own_stdout(self) -> None:
        """The protocol on a descriptor of its own, descriptor 1 pointed at stderr meanwhile: a Milvus Lite server
        started mid-session (the first lookup, or one that died) has descriptor 1 sent to its log for a moment
        (`fs.stderr_to`), and an answer written then went into that log, never to the host; a library's stray
        print cannot reach the protocol either."""
        protocol, saved = os.dup(1), os.dup(1)
        os.dup2(2, 1)
        try:
            with open(protocol, "wb", closefd=True) as out:
                stdout = anyio.wrap_file(TextIOWrapper(out, encoding="utf-8"))
                await self._run_stdio(_Delivered(stdout, self._lost))
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)

    async def _lost(self, request_id: types.RequestId) -> None:
        """An answer the host never got (it went away): its call is forgotten as a cancelled one's (`Cancels`)."""
        cancels = self.server.cancels
        forget = cancels.cancel(request_id) if cancels is not None else None
        if forget is not None:
            await anyio.to_thread.run_sync(forget)

    async def _run_stdio(self, stdout) -> None:
        from mcp.server.stdio import stdio_server

        # stdin through a reader of bounded lines: the SDK's own reads a line whole, however long
        async with stdio_server(stdin=_BoundedLines(sys.stdin.buffer, MAX_BODY_BYTES), stdout=stdout) as (read, sent):  # type: ignore[arg-type]
            parsed_send, parsed = anyio.create_memory_object_stream(0)
            write = _Answered(sent)

            async def answer_unparsable_lines():
                # the SDK hands a line that is not JSON-RPC on as an exception, which its server answers with
                # a log notification ("Internal Server Error") and a multi-line warning on stderr, and a request
                # whose id is of the wrong type on as a notification (an id is all it lacks), which nobody
                # answers: the host would wait for ever. JSON-RPC 2.0 says: an error whose id is null, -32700
                # for a line that is not JSON, -32600 for JSON that is no request
                async with parsed_send:
                    async for line in read:
                        item = _reread(line)
                        error = _stdio_error(item)
                        root = item.message.root if isinstance(item, SessionMessage) else None
                        request = root if isinstance(root, types.JSONRPCRequest) else None
                        bad = _non_finite_params(request.params) if request is not None else None
                        if error is not None:
                            await write.send(SessionMessage(_NullIdError(*error)))  # type: ignore[arg-type]
                        elif request is not None and bad is not None:  # answered with its id: the host waits for it
                            refusal = types.JSONRPCError(
                                jsonrpc="2.0", id=request.id, error=types.ErrorData(code=bad[0], message=bad[1])
                            )
                            await write.send(SessionMessage(types.JSONRPCMessage(refusal)))
                        elif isinstance(root, types.JSONRPCResponse | types.JSONRPCError):
                            # this server sends the host no requests, so a response answers none: JSON-RPC answers
                            # no response, and the SDK's "unknown request ID" was an "Internal Server Error" log
                            # notification, a stderr line and (once, at end of input) an exit 1
                            continue
                        else:
                            if request is not None:
                                write.expect(request.id)
                            await parsed_send.send(item)
                    # the end of input: the SDK cancels the requests still running when its input ends, so
                    # `printf '...' | executor mcp` was answered nothing, exit 0; the input ends once they are answered
                    await write.all_answered()

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(answer_unparsable_lines)
                await self.server.run(parsed, write, self.server.create_initialization_options())
                tasks.cancel_scope.cancel()

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

        from executor.core.local_http import LocalGuard, own_hosts

        hosts = own_hosts(host, port)
        security = TransportSecuritySettings(  # the library's own check too, on the same exact names
            enable_dns_rebinding_protection=True,
            allowed_hosts=sorted(hosts),
            allowed_origins=sorted(f"http://{h}" for h in hosts) + sorted(f"https://{h}" for h in hosts),
        )
        logging.getLogger("mcp.server.streamable_http").addFilter(_closed_normally)  # once: filters are a set
        self.server.reordered = True  # each message is a POST of its own: a cancel may overtake its request
        manager = StreamableHTTPSessionManager(app=self.server, security_settings=security)
        app = Starlette(
            routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))], lifespan=lambda app: manager.run()
        )
        return LocalGuard(_ValidIds(app), hosts, token=token, error_body=_refused)


def _closed_normally(record: logging.LogRecord) -> bool:
    """False (not logged) for the SDK's "Error in standalone SSE writer" with its traceback when a host ends its
    session: the transport's terminate (a DELETE, or the session discarded) closes the stream that writer reads, and
    the SDK logs that closing as an error. Only the transport closes that stream, so ClosedResourceError there is
    always a normal close; any other error the writer meets is still logged."""
    closed = record.exc_info is not None and isinstance(record.exc_info[1], anyio.ClosedResourceError)
    return not (closed and record.getMessage() == "Error in standalone SSE writer")


# the methods a client may call, each with its request model (MCP's ClientRequest union): the SDK validates a request
# against that union, so an unknown method, or a known one with params of the wrong shape (`arguments` not an object,
# `name` not a string), fails as a bare "Invalid request parameters" (-32602) naming nothing, and logs the union's
# validation errors
REQUEST_MODELS = {
    get_args(request.model_fields["method"].annotation)[0]: request
    for request in get_args(types.ClientRequest.model_fields["root"].annotation)
}


def _valid_notification(root: types.JSONRPCNotification) -> bool:
    """A host's notification as MCP defines it (the SDK's own check: the ClientNotification union)."""
    try:
        types.ClientNotification.model_validate(root.model_dump(by_alias=True, exclude_none=True))
    except ValidationError:
        return False
    return True


def request_error(root: types.JSONRPCRequest) -> types.ErrorData | None:
    """JSON-RPC's error for a request the SDK would refuse without a word on why, or None: -32601 Method not found
    naming the method, -32602 Invalid params naming the field and what it should be."""
    model = REQUEST_MODELS.get(root.method)
    if model is None:
        return types.ErrorData(code=types.METHOD_NOT_FOUND, message=f"Method not found: {printable(root.method)[:100]}")
    try:  # the SDK's own validation, on the one model the method names (the union's errors name every model)
        model.model_validate(root.model_dump(by_alias=True, mode="json", exclude_none=True))
    except ValidationError as exc:
        err = exc.errors()[0]  # pydantic's message names the type wanted, never the value sent
        where = printable(".".join(str(p) for p in err["loc"]))[:100]
        return types.ErrorData(code=types.INVALID_PARAMS, message=f"Invalid params: {where}: {err['msg']}")
    if root.method.endswith("/list") and (root.params or {}).get("cursor") is not None:
        # every list fits one page (no answer holds a nextCursor), so a cursor is none this server gave: MCP's
        # pagination says an invalid cursor is -32602; the first page again, as answered, made a host that pages
        # take the same items twice
        return types.ErrorData(
            code=types.INVALID_PARAMS, message="Invalid params: cursor: this server lists everything on one page"
        )
    return None


INITIALIZED = "notifications/initialized"
_BEFORE_HANDSHAKE = ("initialize", "ping")  # what the SDK's session takes before the host says it is initialized


def uninitialized_error(method: str) -> types.ErrorData | None:
    """JSON-RPC's error for a request the session cannot take yet (the host has not finished MCP's handshake), or
    None."""
    if method in _BEFORE_HANDSHAKE:
        return None
    return types.ErrorData(
        code=types.INVALID_REQUEST,
        message="Invalid Request: the session is not initialized; send initialize, then notifications/initialized",
    )


class _Server(Server):
    """The SDK's server, answering a request it would refuse with a bare "Invalid request parameters" as JSON-RPC
    2.0 says, naming what is wrong (`request_error`), and letting a cancelled lookup run on to its one answer, its
    records in action memory forgotten (`Cancels`); over stdio and HTTP alike: both transports hand their streams
    to `run`."""

    reordered = False  # True when the transport may hand the host's messages over out of order (HTTP)
    cancels: Cancels | None = None  # the latest connection's (stdio has one)

    def unserved_error(self, method: str) -> types.ErrorData | None:
        """-32601 naming a method MCP defines that this server does not serve (`logging/setLevel`,
        `completion/complete`, `resources/subscribe`), or None: the SDK said "Method not found" alone, where a method
        MCP does not define is named (`request_error`). `initialize` is the session's own."""
        model = REQUEST_MODELS.get(method)
        if model is None or method == "initialize" or model in self.request_handlers:
            return None
        return types.ErrorData(code=types.METHOD_NOT_FOUND, message=f"Method not found: {method}")

    async def run(self, read_stream, write_stream, *args, **kwargs):
        valid_send, valid = anyio.create_memory_object_stream(0)
        cancels = self.cancels = Cancels(early_s=Cancels.EARLY_S if self.reordered else 0.0)
        CANCELS.set(cancels)  # this connection's: its request handlers run in tasks started from this one

        async def answer_invalid_requests():
            initialized = False
            async with valid_send:
                try:
                    async for item in read_stream:
                        root = getattr(getattr(item, "message", None), "root", None)
                        error = request_error(root) if isinstance(root, types.JSONRPCRequest) else None
                        if isinstance(root, types.JSONRPCRequest) and error is None:
                            error = self.unserved_error(root.method)
                        if isinstance(root, types.JSONRPCNotification) and root.method == INITIALIZED:
                            initialized = True
                        elif isinstance(root, types.JSONRPCRequest) and not initialized and error is None:
                            # the SDK answers a request before the handshake "Invalid request parameters", naming
                            # nothing, and logs "Failed to validate request" on stderr
                            error = uninitialized_error(root.method)
                        if isinstance(root, types.JSONRPCNotification) and root.method == CANCELLED:
                            # a lookup runs in a thread, which cannot be stopped: the SDK answered "Request
                            # cancelled" at once, then the finished handler answered again and its "Request already
                            # responded to" ended the stdio server (exit 1) and, over HTTP, the MCP session (every
                            # later call "Session not found"). MCP lets a request that cannot stop run on: it is
                            # answered once, when done, and the host ignores the answer it no longer wants; what the
                            # call recorded in action memory is forgotten, before the host's next message is read
                            request_id = (root.params or {}).get("requestId")
                            forget = cancels.cancel(request_id) if _valid_id(request_id) else None
                            if forget is not None:
                                await anyio.to_thread.run_sync(forget)
                            continue
                        if isinstance(root, types.JSONRPCNotification) and not _valid_notification(root):
                            # the SDK logged its own warning with pydantic's dump of every notification model (40
                            # lines) for a host's malformed `notifications/progress` (hostile19b finding 19)
                            LOG.warning("dropped the host's %r notification: not one MCP defines", root.method[:100])
                            continue
                        if isinstance(root, types.JSONRPCRequest) and error is not None:
                            reply = types.JSONRPCError(jsonrpc="2.0", id=root.id, error=error)
                            await write_stream.send(SessionMessage(types.JSONRPCMessage(reply)))
                        else:
                            if isinstance(root, types.JSONRPCRequest):
                                cancels.received(root.id)
                            await valid_send.send(item)
                except anyio.ClosedResourceError:
                    # the transport closed its stream: over HTTP, the host ended its session (DELETE) or the
                    # session was discarded. The SDK's own reader takes this as the normal end; raised from here,
                    # it failed the session's server and the SDK logged "Session ... crashed"
                    pass

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(answer_invalid_requests)
            await super().run(valid, write_stream, *args, **kwargs)
            tasks.cancel_scope.cancel()


class _ValidIds:
    """ASGI middleware: a POSTed body that is not JSON-RPC gets JSON-RPC's own error, as over stdio: one that is not
    UTF-8 JSON (or nests too deeply for the parser) -32700 Parse error, where the SDK answers 500 and logs a
    traceback; a batch, a message without `"jsonrpc": "2.0"` or one whose `id` is neither a string nor an integer
    (`{}`, null, 1.5, true) -32600 Invalid Request. The SDK answers the first two -32602 with pydantic's dump, and
    the last it takes for a notification (a method and no valid id), answered 202 with nothing: the client would
    wait for ever. The SDK's transport parses the body again: it has no hook between its parse and its answer
    (a notification's 202 is sent before the message reaches the server). The body is bounded by LocalGuard."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        posted = await posted_json(receive)
        if posted is None:
            return
        body, message = posted
        if message is NOT_JSON:
            error = types.PARSE_ERROR, "Parse error: the body is not a JSON-RPC 2.0 message"
        else:
            error = invalid_message(message)
        if error is not None:
            return await _invalid_request(send, *error)
        session = dict(scope.get("headers") or []).get(b"mcp-session-id")
        if session is None or not isinstance(message, dict) or "method" not in message or "id" not in message:
            return await self.app(scope, replaying(body, receive), send)
        return await self._unless_host_leaves(scope, replaying(body, receive), send, message["id"])

    async def _unless_host_leaves(self, scope, receive, send, request_id) -> None:
        """A request whose host goes away before its answer is sent is cancelled, as if the host had cancelled it:
        the answer is lost (no event store keeps it for a reconnection), so what the call recorded in action memory
        is forgotten (`Cancels`). A lookup whose connection dropped mid-call was recorded as sent, and the host's
        retry in the same session was DEDUPED on a page it never read."""
        answered = gone = False

        async def watched_receive():
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        async def watched_send(message):
            nonlocal answered
            # the request's answer is a JSON-RPC result or error in the body (an SSE event, or the JSON response)
            chunk = message.get("body", b"") if message["type"] == "http.response.body" else b""
            answered = answered or (b'"jsonrpc"' in chunk and (b'"result"' in chunk or b'"error"' in chunk))
            await send(message)

        await self.app(scope, watched_receive, watched_send)
        if gone and not answered:
            await self._cancel(scope, request_id)

    async def _cancel(self, scope, request_id) -> None:
        """MCP's `notifications/cancelled` for `request_id`, through the transport as the host would send it (on
        the same session, with the same headers); its 202 is read by nobody."""
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "method": CANCELLED,
                "params": {"requestId": request_id, "reason": "the host went away before the answer"},
            }
        ).encode()
        headers = [(k, v) for k, v in scope.get("headers") or [] if k.lower() != b"content-length"]
        cancel_scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        delivered = False

        async def receive():
            nonlocal delivered
            if delivered:
                return {"type": "http.disconnect"}
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def nobody(message) -> None:
            pass

        await self.app(cancel_scope, receive, nobody)


def invalid_message(message) -> tuple[int, str] | None:
    """JSON-RPC's error for a parsed message that is no JSON-RPC 2.0 message MCP takes, or None."""
    if isinstance(message, list):  # MCP 2025-06-18 dropped batches; the SDK never took them
        return types.INVALID_REQUEST, "Invalid Request: batches are not supported, send one message per request"
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return types.INVALID_REQUEST, 'Invalid Request: a message is a JSON object with "jsonrpc": "2.0"'
    if "id" in message and not _valid_id(message["id"]):
        return types.INVALID_REQUEST, "Invalid Request: the id must be a string or an integer"
    if "method" in message and not isinstance(message["method"], str):
        return types.INVALID_REQUEST, "Invalid Request: the method must be a string"
    if "params" in message and not isinstance(message["params"], dict):  # MCP's params are by name
        return types.INVALID_REQUEST, "Invalid Request: params must be an object"
    return _non_finite_params(message.get("params"))


def _non_finite_params(params) -> tuple[int, str] | None:
    """-32602 naming the first number in `params` that is not finite (1e309, -1e309, NaN), or None: the SDK
    re-reads a request in JSON mode, where such a number becomes null, so `"hops": 1e309` ran with the default
    hops instead of being refused."""
    for path, value in json_leaves(params):
        if isinstance(value, float) and not math.isfinite(value):
            where = ".".join(("params", *map(str, path)))
            return types.INVALID_PARAMS, f"Invalid params: {where[:200]}: {value!r} is not a finite number"
    return None


def _valid_id(value) -> TypeGuard[types.RequestId]:
    # MCP's RequestId: a string or an integer (JSON-RPC's null is excluded by MCP; a bool is not an integer in JSON)
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _refused(message: str) -> dict:
    """LocalGuard's refusal (a body over the bound, a wrong Host or token) as JSON-RPC's error, which an MCP host
    reads: it was OpenAI's error object (hostile22 finding 12). The id is null: the request was not read."""
    return {"jsonrpc": "2.0", "id": None, "error": {"code": types.INVALID_REQUEST, "message": message}}


async def _invalid_request(send, code: int, message: str) -> None:
    # the id is null, as JSON-RPC 2.0 says when the request's id cannot be read
    await send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})


# what `_BoundedLines` hands on for a line past its bound: no JSON, so the SDK's parse fails on it, and
# `_stdio_error` finds it in the error's input
TOO_LONG = "\x00a line past the bound\n"


class _BoundedLines:
    """A binary stream's lines as text, for the SDK's stdio transport, each read within `limit` bytes: a longer
    one is read on to its end in pieces of that size and handed on as TOO_LONG (answered -32600, as HTTP answers
    a body past the same bound 413), so no line is ever held whole. The host is trusted, but a stuck or broken
    one must not grow this process without bound."""

    def __init__(self, stream, limit: int):
        self._stream, self._limit = stream, limit

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        while line := await anyio.to_thread.run_sync(self._stream.readline, self._limit + 1):
            if len(line) > self._limit and not line.endswith(b"\n"):
                while (rest := await anyio.to_thread.run_sync(self._stream.readline, self._limit)) and not (
                    rest.endswith(b"\n")
                ):
                    pass
                yield TOO_LONG
                continue
            yield line.decode("utf-8", errors="replace")  # as the SDK's own reader decodes stdin


def _reread(item):
    """A line the SDK's JSON parser refused that Python's takes, validated as the SDK's HTTP transport reads a body
    (`json.loads`, then the model), or `item` as it was. pydantic's parser refuses a lone surrogate escape
    (`"\\ud800"`), so over stdio the line was -32700 "not JSON" with a null id, where over HTTP the request ran
    and its tool named the argument: the same request gets the same answer on both transports."""
    if not isinstance(item, ValidationError):
        return item
    line = next((e.get("input") for e in item.errors() if e["type"] == "json_invalid"), None)
    if not isinstance(line, str) or line == TOO_LONG:
        return item
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # not JSON to Python either (or nested past its recursion limit)
        return item
    try:
        return SessionMessage(types.JSONRPCMessage.model_validate(message))
    except ValidationError as exc:  # JSON, but no JSON-RPC message: -32600, as any such line
        return exc


def _stdio_error(item) -> tuple[int, str] | None:
    """The error a line read over stdio gets (the SDK's parse of it, or the exception it raised), or None."""
    if isinstance(item, ValidationError):
        if any(e.get("input") == TOO_LONG for e in item.errors()):
            return types.INVALID_REQUEST, f"Invalid Request: the line exceeds {MAX_BODY_BYTES} bytes"
        if any(e["type"] == "json_invalid" for e in item.errors()):
            return types.PARSE_ERROR, "Parse error: the line is not JSON"
        return types.INVALID_REQUEST, "Invalid Request: the line is JSON but not a JSON-RPC 2.0 message MCP takes"
    if isinstance(item, Exception):
        return types.PARSE_ERROR, "Parse error: the line is not a JSON-RPC 2.0 message"
    root = item.message.root
    if isinstance(root, types.JSONRPCNotification) and "id" in (root.model_extra or {}):
        return types.INVALID_REQUEST, "Invalid Request: the id must be a string or an integer"
    return None


CANCELLED = "notifications/cancelled"
# the requests a host cancelled on the connection a handler serves (set by `_Server.run` for each connection)
CANCELS: ContextVar[Cancels] = ContextVar("executor_mcp_cancels")


class Cancels:
    """The tool calls a host cancelled on one connection, and how to forget what each recorded in action memory.

    The host never reads a cancelled call's answer, so the documents it marked as sent were never sent: a later
    lookup must send them again, not be DEDUPED on them. A call cannot be stopped (it runs in a thread), so a
    cancel meets it running (it forgets its records when it ends) or ended (the forgetting it left is run then).
    Calls end in a worker thread and cancels arrive on the event loop: the two meet under a lock of their own.

    A cancel of a request not yet received is ignored where messages come in order (stdio: MCP says a cancel
    refers to a request in progress; kept, it made a later request under that id forget its answered call's
    records, hostile17 finding 14). Over HTTP each message is a POST of its own, and a host that cancels at once
    has its cancel's POST served before its request's now and then (CI, session 25: the lookup answered, its page
    DEDUPED on the retry though the host never read it); there a cancel holds for its request for `early_s`."""

    KEPT = 64  # cancels of requests not (yet) seen to end, and ended calls' forgetting, kept per connection
    EARLY_S = 5.0  # how long a cancel waits for its request over HTTP: two POSTs of one host, sent together

    def __init__(self, early_s: float = 0.0):
        self._lock = threading.Lock()
        self._early_s = early_s
        self._early: OrderedDict[types.RequestId, float] = OrderedDict()
        self._received: OrderedDict[types.RequestId, None] = OrderedDict()
        self._cancelled: OrderedDict[types.RequestId, None] = OrderedDict()
        self._forget: OrderedDict[types.RequestId, Callable[[], None]] = OrderedDict()

    def received(self, request_id: types.RequestId) -> None:
        """The host sent this request (a cancel may refer to it from now on)."""
        with self._lock:
            _keep(self._received, request_id, None)
            cancelled_at = self._early.pop(request_id, None)
            if cancelled_at is not None and time.monotonic() - cancelled_at <= self._early_s:
                _keep(self._cancelled, request_id, None)

    def finished(self, request_id: types.RequestId, forget: Callable[[], None]) -> bool:
        """A call ended: True if the host cancelled it (its caller forgets its records now); if not, `forget` is
        kept for a cancel that may come later."""
        with self._lock:
            if request_id in self._cancelled:
                del self._cancelled[request_id]
                return True
            _keep(self._forget, request_id, forget)
            return False

    def cancel(self, request_id: types.RequestId) -> Callable[[], None] | None:
        """The host cancelled a request: what forgets the records of its call if that has ended, else None (a
        call still running forgets them when it ends; one not yet received, over HTTP, when it ends)."""
        with self._lock:
            if request_id not in self._received:
                if self._early_s > 0:
                    _keep(self._early, request_id, time.monotonic())
                return None
            forget = self._forget.pop(request_id, None)
            if forget is None:
                _keep(self._cancelled, request_id, None)
            return forget


def _keep(kept: OrderedDict, key, value) -> None:
    kept[key] = value
    while len(kept) > Cancels.KEPT:  # a host's ids are its own: never more than the latest few kept
        kept.popitem(last=False)


class _Answered:
    """The stdio writer, noting which of the requests handed to the server it has answered."""

    def __init__(self, stream):
        self._stream, self._pending, self._changed = stream, set(), anyio.Event()

    def expect(self, request_id) -> None:
        self._pending.add(request_id)

    async def send(self, message) -> None:
        await self._stream.send(message)
        root = getattr(getattr(message, "message", None), "root", None)
        if isinstance(root, (types.JSONRPCResponse, types.JSONRPCError)) and root.id in self._pending:
            self._pending.discard(root.id)
            self._changed.set()

    async def all_answered(self) -> None:
        while self._pending:
            self._changed = anyio.Event()
            await self._changed.wait()

    def __getattr__(self, name):  # close, aclose, statistics...: the stream's own
        return getattr(self._stream, name)

    async def __aenter__(self):
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._stream.__aexit__(*exc)


class _Delivered:
    """The stdio server's stdout, for the SDK's writer (`write`, then `flush`, a message a line): an answer that
    cannot be written because the host closed its end (it went away mid-call) is `lost`, then the error goes on (the
    server ends). A host sharing a `session` across connections was told DEDUPED, on its next connection, for the
    pages of a lookup whose answer it never read."""

    def __init__(self, stream, lost: Callable[[types.RequestId], Awaitable[None]]):
        self._stream, self._lost, self._line = stream, lost, ""

    async def write(self, text: str) -> None:
        self._line = text
        await self._delivered(self._stream.write(text))

    async def flush(self) -> None:
        await self._delivered(self._stream.flush())

    async def _delivered(self, written: Awaitable) -> None:
        try:
            await written
        except BrokenPipeError:
            try:
                message = json.loads(self._line)
            except ValueError:
                message = None
            if isinstance(message, dict) and ("result" in message or "error" in message):
                if _valid_id(message.get("id")):
                    await self._lost(message["id"])
            raise


class _NullIdError:
    """A JSON-RPC error whose id is null, as the SDK's stdio writer serialises a message (`model_dump_json`); the
    SDK's own model cannot hold the null id an error about an unreadable request must carry."""

    def __init__(self, code: int, message: str):
        self.code, self.message = code, message

    def model_dump_json(self, **_: object) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": self.code, "message": self.message}})
