"""What `langgraph dev` mounts in front of its API (langgraph.json's `http.app`): no routes, only the checks every
local server of ours makes (`core.local_http.LocalGuard`). The LangGraph API answers any Origin with
`Access-Control-Allow-Origin: *` and checks no Host, so without this any web page the user opens could start runs
of the executor graph on their knowledge bases and read the answers and the threads (a cross-site fetch, or DNS
rebinding). The Host must be this server's own name with its port, the Origin absent, its own, or LangGraph
Studio's, which is a page on smith.langchain.com talking to the local server."""

from __future__ import annotations

import json
import re

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware

from executor.core.errors import printable, validation_line
from executor.core.local_http import LocalGuard, own_hosts, posted_json, replaying, send_json

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
            guard = self._guards[(host, port)] = LocalGuard(
                ReadableMessages(self.app), own_hosts(host, port), origins=STUDIO_ORIGINS
            )
        return await guard(scope, receive, send)


class ReadableMessages:
    """ASGI middleware: a request that would write messages LangChain cannot read into a thread (a run's input, a
    Command's update, `update_state`'s values, a thread's supersteps) is refused, 422 with one line naming the
    message, before the API writes anything. LangGraph writes them as sent and reads them only when the messages
    reducer runs: a run's input `{"content": 42}` (or a role "bogus", a list inside a list of content blocks) failed
    the run with pydantic's many-line dump, and `get_state` of the thread was that dump (400) until the next run; a
    Command's update of one kept the thread failing every later run and every read of its state for good.

    The same pass hands a history request's `before` to the API as its runtime reads it (`_history_before`)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        posted = await posted_json(receive)
        if posted is None:
            return
        body, payload = posted  # a body that is not JSON is the API's to answer
        refusal = unreadable(payload)
        if refusal is not None:
            return await send_json(send, 422, {"detail": refusal})
        paged = _history_before(scope, payload)
        if paged is not None:
            body = json.dumps(paged).encode()
            scope = {**scope, "headers": _with_length(scope.get("headers") or [], len(body))}
        return await self.app(scope, replaying(body, receive), send)


_HISTORY = re.compile(r"/threads/[^/]+/history/?")


def _history_before(scope, payload) -> dict | None:
    """A history request with its `before` as the config langgraph-api's in-memory runtime reads it, or None to leave
    the request as it is. Both SDKs page a thread's history by sending the checkpoint of the previous page's last state
    (`threads.get_history(..., before=state["checkpoint"])`), which the API validates as such and the runtime hands
    to the checkpointer as if it were a config: a 500 (`KeyError: 'configurable'`), so a thread's history could not
    be read past its first page. The same checkpoint under `configurable` is what the checkpointer reads."""
    if (
        scope.get("method") != "POST"
        or not _HISTORY.fullmatch(scope.get("path") or "")
        or not isinstance(payload, dict)
    ):
        return None
    before = payload.get("before")
    if not isinstance(before, dict) or not before.get("checkpoint_id") or "configurable" in before:
        return None
    return {**payload, "before": {**before, "configurable": before}}


def _with_length(headers, length: int) -> list:
    return [*((k, v) for k, v in headers if k.lower() != b"content-length"), (b"content-length", str(length).encode())]


def unreadable(payload) -> str | None:
    """One line naming the first message in a request body that LangChain cannot read, or None. The places a
    client's messages reach a thread from: `input`, `command.update` (an object, or a list of [key, value] pairs),
    `values` (update_state: an object or a list of them), `supersteps[].updates[]` (a thread made with its history),
    each in every run of a batch."""
    for where, value in _messages_in(payload):
        problem = _unreadable_messages(value)
        if problem is not None:
            return f"invalid {where}: {problem}"
    return None


def _messages_in(payload, where: str = ""):
    if isinstance(payload, list):  # /runs/batch
        for i, item in enumerate(payload):
            yield from _messages_in(item, f"{where}{i}.")
        return
    if not isinstance(payload, dict):
        return
    yield from _messages_of(payload.get("input"), f"{where}input")
    command = payload.get("command")
    if isinstance(command, dict):
        yield from _messages_of(command.get("update"), f"{where}command.update")
    values = payload.get("values")
    for i, item in enumerate(values if isinstance(values, list) else [values]):
        yield from _messages_of(item, f"{where}values" + (f".{i}" if isinstance(values, list) else ""))
    for i, step in enumerate(payload.get("supersteps") or [] if isinstance(payload.get("supersteps"), list) else []):
        for j, update in enumerate(step.get("updates") or [] if isinstance(step, dict) else []):
            yield from _messages_in(update, f"{where}supersteps.{i}.updates.{j}.")


def _messages_of(update, where: str):
    """(where, messages) of a state update: an object's `messages`, or the `messages` pairs of a list of them."""
    if isinstance(update, dict) and "messages" in update:
        yield f"{where}.messages", update["messages"]
    elif isinstance(update, list):
        for i, pair in enumerate(update):
            if isinstance(pair, list | tuple) and len(pair) == 2 and pair[0] == "messages":
                yield f"{where}.{i}", pair[1]


def _unreadable_messages(value) -> str | None:
    """What the messages reducer (`add_messages`) would fail on in `value` (a message or a list of them), or None."""
    from langgraph.graph.message import add_messages

    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        try:
            add_messages([], [item])
        except ValidationError as exc:
            return printable(f"{i}.{validation_line(exc, 'message')}")[:300]
        except (ValueError, TypeError, NotImplementedError) as exc:
            return printable(f"{i}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")[:300]
    return None


app = Starlette(middleware=[Middleware(StudioGuard)])
