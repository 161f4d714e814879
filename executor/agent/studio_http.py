"""What `langgraph dev` mounts in front of its API (langgraph.json's `http.app`): no routes, only the checks every
local server of ours makes (`core.local_http.LocalGuard`). The LangGraph API answers any Origin with
`Access-Control-Allow-Origin: *` and checks no Host, so without this any web page the user opens could start runs
of the executor graph on their knowledge bases and read the answers and the threads (a cross-site fetch, or DNS
rebinding). The Host must be this server's own name with its port, the Origin absent, its own, LangGraph Studio's
(a page on smith.langchain.com talking to the local server), or one the user names in `EXECUTOR_STUDIO_ORIGINS`
(the Agent Chat UI's).

Behind the guard, two passes mend what the API answers: a request that stores something to run later (an assistant,
a cron) is refused when every run of it would be, a run asked to wait past `MAX_AFTER_SECONDS` is refused, and so is
a run without input that has nothing to continue (`ReadableMessages`); a run's wait is answered from the run's own
end, not from the thread's values (`RunOutcomes`). The API's calls to itself (its MCP and A2A endpoints) get a failed
run's reason, not its kind alone (`ErrorReasons`). A search of the threads' values is mended in the runtime itself
(`_values_search_mended`)."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from functools import cache

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware

from executor.core.errors import InputError, printable, register_secret, validation_line
from executor.core.local_http import LocalGuard, is_loopback, own_hosts, posted_json, refuse, replaying, send_json
from executor.nodes.begin_turn import NO_STOPPED_RUN
from executor.nodes.memory_branch import check_session_edit

STUDIO_ORIGINS = ("https://smith.langchain.com", "https://eu.smith.langchain.com")


def in_process(scope) -> bool:
    """A request the server makes to itself, in process: langgraph-api's own MCP endpoint (`/mcp`), A2A and webhooks
    call the API through `langgraph_sdk.get_client(url=None)`, an httpx ASGI transport mounted at `/noauth` whose
    requests name the server `http://api` (no port). No request read from a socket has either: uvicorn gives the
    address it listens on, with its port, and no root path. Refused here for its Host, every `tools/list` of
    `/mcp` was a 500."""
    server = scope.get("server") or (None, 0)
    return scope.get("root_path") == "/noauth" and server[1] is None


TOKEN_VARIABLE = "EXECUTOR_STUDIO_TOKEN"
MIN_TOKEN_CHARS = 16  # as `executor mcp --http`'s token
# the pages of other sites the user lets talk to this server from the browser: LangChain's Agent Chat UI
# (`npx create-agent-chat-app` on http://localhost:3000, or its hosted page) was refused 403 with no way to allow it
ORIGINS_VARIABLE = "EXECUTOR_STUDIO_ORIGINS"
_ORIGIN = re.compile(r"https?://(?:[a-z0-9.\-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?")
OTHER_ORIGINS = (
    f" (this server's own pages and LangGraph Studio's are taken; to let another page talk to it, the Agent Chat UI "
    f"for one, name its origin in {ORIGINS_VARIABLE}, e.g. http://localhost:3000)"
)


def allowed_origins() -> tuple[str, ...]:
    """LangGraph Studio's origins and those `EXECUTOR_STUDIO_ORIGINS` names (comma-separated, each a whole origin:
    scheme, host, port); ValueError naming the first value that is none (a wildcard, a path, no scheme)."""
    given = [o.strip().lower() for o in os.environ.get(ORIGINS_VARIABLE, "").split(",") if o.strip()]
    for origin in given:
        if not _ORIGIN.fullmatch(origin):
            raise ValueError(
                f"{ORIGINS_VARIABLE}: {printable(origin)[:100]!r} is not an origin: name each page as "
                "scheme://host[:port] (http://localhost:3000), comma-separated, with no path or wildcard"
            )
    return STUDIO_ORIGINS + tuple(given)


class StudioGuard:
    """LocalGuard for the address each request came in on: `langgraph dev --host/--port` are not ours to read, the
    ASGI scope's `server` is that address. A request that came in on an address other than loopback (`--host
    0.0.0.0` on a shared machine) must carry `EXECUTOR_STUDIO_TOKEN` as a bearer token, as `executor mcp --http`
    beyond 127.0.0.1 must: anyone on the network could otherwise run the graph on every KB of the home, with the
    server's LLM key, and read every thread. Without the variable such requests are refused, 403 naming it. Loopback
    stays open: Studio's page on smith.langchain.com talks to the server from the user's own browser."""

    def __init__(self, app):
        self.app = app
        self._guards: dict[tuple[str, int, str | None, tuple[str, ...]], LocalGuard] = {}
        _values_search_mended()  # made with the server's app: its runtime is loaded, no request is served yet

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if in_process(scope):
            return await ErrorReasons(self.app)(scope, receive, send)
        host, port = scope.get("server") or ("127.0.0.1", 0)
        # without the spaces at its ends, as a client can send it (HTTP strips a header value's ends)
        token = None if on_loopback(host) else os.environ.get(TOKEN_VARIABLE, "").strip()
        if token is not None and len(token) < MIN_TOKEN_CHARS:
            return await refuse(scope, receive, send, 403, _untokened(host, token))
        try:
            origins = allowed_origins()
        except ValueError as exc:  # refused whole: a bad value is said on the first request, not as a failed page
            return await refuse(scope, receive, send, 403, str(exc))
        guard = self._guards.get((host, port, token, origins))
        if guard is None:
            register_secret(token)
            guard = self._guards[(host, port, token, origins)] = LocalGuard(
                ReadableMessages(RunOutcomes(self.app)),
                own_hosts(host, port),
                token=token,
                origins=origins,
                other_origins=OTHER_ORIGINS,
            )
        return await guard(scope, receive, send)


class ErrorReasons:
    """ASGI middleware for the API's calls to itself: langgraph-api's MCP endpoint (`/mcp`) and A2A endpoint run the
    graph in process (`runs.wait`, `runs.join`) and show a failed run by its `__error__.error` alone, the
    exception's kind: a host was told "InputError" (an unknown knowledge base, a question with control characters,
    an assistant message last) and not why. Folded into the kind here ("InputError: unknown knowledge base 'nope'
    ..."), the reason reaches the host; `message` is kept as it was."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if not _IN_PROCESS_WAIT.search(scope.get("path") or ""):
            return await self.app(scope, receive, send)
        start: dict | None = None
        held = bytearray()

        async def sending(message):
            nonlocal start
            if message["type"] == "http.response.start":
                start = message  # sent with the body, whose length may change
                return None
            if message["type"] != "http.response.body" or start is None:
                return await send(message)
            held.extend(message.get("body", b""))
            if message.get("more_body", False):
                return None
            body = _with_reason(bytes(held))
            headers = [(k, v) for k, v in start.get("headers") or [] if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        return await self.app(scope, receive, sending)


# a run's answer waited for: `runs.wait` (POST, the MCP endpoint's) or `runs.join` (GET, the A2A endpoint's)
_IN_PROCESS_WAIT = re.compile(r"/runs/(wait|[^/]+/join)/?$")


def _with_reason(body: bytes) -> bytes:
    """A run's answer whose `__error__` kind carries its message too; any other body as it is."""
    try:
        answer = json.loads(body)
    except ValueError:
        return body
    error = answer.get("__error__") if isinstance(answer, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("error"), str) or not error.get("message"):
        return body
    kind, message = error["error"], str(error["message"])
    if message in kind:  # folded already
        return body
    return json.dumps({**answer, "__error__": {**error, "error": f"{kind}: {message}"}}).encode()


def on_loopback(address: str) -> bool:
    """Whether the address a request came in on is this machine's loopback: 127.0.0.0/8, ::1, or 127.0.0.1 as a
    dual-stack socket bound to `::` names it (::ffff:127.0.0.1)."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return is_loopback(address)  # a name, not an address (an ASGI server that gives one)
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _untokened(host: str, token: str) -> str:
    """Why a request that came in on `host` (not loopback) is refused when the token is unset or too short."""
    what = f"{TOKEN_VARIABLE} has fewer than {MIN_TOKEN_CHARS} characters" if token else f"{TOKEN_VARIABLE} is not set"
    return (
        f"this server answers on {host}, beyond this machine, only with a token, and {what}: start langgraph dev "
        f"with {TOKEN_VARIABLE} set ({MIN_TOKEN_CHARS}+ characters; clients send `Authorization: Bearer TOKEN`), "
        "or with --host 127.0.0.1"
    )


class ReadableMessages:
    """ASGI middleware: a request that would write messages LangChain cannot read into a thread (a run's input, a
    Command's update, `update_state`'s values, a thread's supersteps) is refused, 422 with one line naming the
    message, before the API writes anything. LangGraph writes them as sent and reads them only when the messages
    reducer runs: a run's input `{"content": 42}` (or a role "bogus", a list inside a list of content blocks) failed
    the run with pydantic's many-line dump, and `get_state` of the thread was that dump (400) until the next run; a
    Command's update of one kept the thread failing every later run and every read of its state for good.

    An assistant or a cron every run of which the graph would refuse is refused too, when it is stored
    (`refused_runs`), and so is a run asked to wait longer than `MAX_AFTER_SECONDS` (`late_run`). The same pass
    hands a history request's `before` to the API as its runtime reads it (`_history_before`)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        posted = await posted_json(receive)
        if posted is None:
            return
        body, payload = posted  # a body that is not JSON is the API's to answer
        refusal = (
            unreadable(payload, scope)
            or no_input(scope, payload)
            or await nothing_to_continue(scope, payload)
            or late_run(scope, payload)
            or await refused_runs(scope, payload)
        )
        if refusal is not None:
            return await send_json(send, 422, {"detail": refusal})
        paged = _history_before(scope, payload)
        if paged is not None:
            body = json.dumps(paged).encode()
            scope = {**scope, "headers": _with_length(scope.get("headers") or [], len(body))}
        return await self.app(scope, replaying(body, receive), send)


# The longest a run may be asked to wait before it starts (`after_seconds`): a year. langgraph-api bounds it not at
# all and dates the run `now + after_seconds`; past what a datetime holds (the year 9999, about 2.5e11 s from now and
# less every day) that was a 500 (`OverflowError: date value out of range`) that reset the client's connection. A
# bound of our own reads the same every day and keeps the run's date far inside any datetime; a local server asked
# to hold one run for more than a year was asked by mistake (what recurs is a cron).
MAX_AFTER_SECONDS = 365 * 24 * 3600
# what creates runs: a thread's, a stateless one, streamed, waited for, or a batch of stateless ones
_RUNS = re.compile(r"/(threads/[^/]+/)?runs(/stream|/wait|/batch)?/?")


def late_run(scope, payload) -> str | None:
    """One line naming the first run in a request that asks to wait longer than `MAX_AFTER_SECONDS`, or None."""
    if scope.get("method") != "POST" or not _RUNS.fullmatch(scope.get("path") or ""):
        return None
    batch = isinstance(payload, list)  # /runs/batch: each run named by its place, as `unreadable` names them
    for i, run in enumerate(payload if batch else [payload]):
        after = run.get("after_seconds") if isinstance(run, dict) else None
        # `not <=`: NaN and infinity are refused too; what is not a number is the API's to refuse
        if isinstance(after, int | float) and not after <= MAX_AFTER_SECONDS:
            where = f"{i}.after_seconds" if batch else "after_seconds"
            return f"invalid {where}: a run may wait at most {MAX_AFTER_SECONDS:,} seconds (a year)"
    return None


# the runs that have no thread: nothing to continue, so their input is the whole run
_STATELESS_RUNS = re.compile(r"/runs(/stream|/wait|/batch)?/?")
NO_INPUT = (
    'a run without a thread has no input: send the question as {"messages": [{"role": "user", "content": "..."}]}'
)


def no_input(scope, payload) -> str | None:
    """One line naming the first run without a thread that brings neither an input nor a Command, or None. It was
    LangGraph's "EmptyInputError: Received no input for __start__", an internal node's name. A thread's run with
    no input continues the thread (a breakpoint, Studio's fork), and is the graph's to judge."""
    if scope.get("method") != "POST" or not _STATELESS_RUNS.fullmatch(scope.get("path") or ""):
        return None
    batch = isinstance(payload, list)
    for i, run in enumerate(payload if batch else [payload]):
        if isinstance(run, dict) and run.get("input") is None and run.get("command") is None:
            return f"invalid {i}.input: {NO_INPUT}" if batch else f"invalid input: {NO_INPUT}"
    return None


# a run on a thread: its thread id, from the path
_THREAD_RUNS = re.compile(r"/threads/([^/]+)/runs(/stream|/wait)?/?")


async def nothing_to_continue(scope, payload) -> str | None:
    """One line for a thread's run with neither an input nor a Command that has nothing to continue, or None. A
    thread holding no state yet (a new one, or one `if_not_exists` makes) was LangGraph's "EmptyInputError: Received
    no input for __start__"; a thread whose turn is over (no next node) ran nothing and answered 200, so a question a
    state edit appended (`update_state`, then the SDK's "continue") was never answered and nothing said so. A run
    from a checkpoint is judged by that checkpoint (Studio's fork and regenerate continue from one that has a next
    node); a checkpoint the thread does not hold is the graph's to refuse by name. The state is read through the API
    in process."""
    found = _THREAD_RUNS.fullmatch(scope.get("path") or "") if scope.get("method") == "POST" else None
    if found is None or not isinstance(payload, dict) or payload.get("input") is not None or payload.get("command"):
        return None
    from langgraph_sdk.errors import APIStatusError, NotFoundError

    thread, checkpoint = printable(found[1])[:64], _checkpoint_id(payload)
    try:
        state = await _api().threads.get_state(found[1], checkpoint_id=checkpoint)
    except NotFoundError:  # a thread the run makes (`if_not_exists`) holds nothing either; else the API's 404
        state = {} if payload.get("if_not_exists") == "create" else None
    except APIStatusError:  # an id that is none: the run's own request is the API's to refuse
        state = None
    if state is None or (checkpoint and not state.get("checkpoint")):
        return None
    if not state.get("checkpoint") and not state.get("values"):
        return f"invalid input: thread {thread} has no turn to continue: {ASK_IN_INPUT}"
    if not state.get("next"):
        return f"invalid input: thread {thread} {NO_STOPPED_RUN}: {ASK_IN_INPUT}"
    return None


ASK_IN_INPUT = 'send the question as the run\'s input, {"messages": [{"role": "user", "content": "..."}]}'


def _checkpoint_id(payload: dict) -> str | None:
    """The checkpoint a run starts from (`checkpoint_id`, or `checkpoint.checkpoint_id`), or None for the head."""
    checkpoint = payload.get("checkpoint")
    named = payload.get("checkpoint_id") or (checkpoint.get("checkpoint_id") if isinstance(checkpoint, dict) else None)
    return named if isinstance(named, str) and named else None


@cache
def _values_search_mended() -> None:
    """Mends the in-memory runtime's (`langgraph dev`'s) test of a thread's values against a search's `values`,
    `is_jsonb_contained(thread["values"], values)`, which failed on a thread never run (values null):
    `threads.search(values=...)` and `threads.count(values=...)` were a 500 (`TypeError: argument of type 'NoneType'
    is not iterable`) while the server held such a thread, and the client's connection was reset. Values that are
    not an object contain nothing, as with Postgres' `@>` the function stands in for: such a thread does not match.
    Mended in the runtime because nothing a request can hold keeps the runtime from reading those values; wrapped,
    so the objects it matches are matched as before."""
    if os.environ.get("LANGGRAPH_RUNTIME_EDITION") != "inmem":
        return  # another runtime: not this function
    from langgraph_runtime_inmem import ops

    contained = ops.is_jsonb_contained
    ops.is_jsonb_contained = lambda superset, subset: isinstance(superset, dict) and contained(superset, subset)


# what a client stores to be run later: (method, path, what it is called)
_STORED = (
    ("POST", re.compile(r"/assistants/?"), "assistant"),
    ("PATCH", re.compile(r"/assistants/[^/]+/?"), "assistant"),
    ("POST", re.compile(r"/(threads/[^/]+/)?runs/crons/?"), "cron"),
    ("PATCH", re.compile(r"/runs/crons/[^/]+/?"), "cron"),
)


async def refused_runs(scope, payload) -> str | None:
    """One line saying why every run of the assistant or cron a request stores would be refused, or None. The
    graph refuses a run for its context (an unknown knowledge base, field or value) and for the question its input
    brings (control characters, past the query limit, ending in a tool call: `check_run`); stored with either, an
    assistant was accepted and each of its runs refused, and a cron's each minute, for good. A cron's input is
    checked as a run's on a new thread: its own rules do not depend on the messages before it. The context is the
    request's, or else its config's `configurable`, which langgraph-api hands the graph as the context."""
    what = next((w for m, path, w in _STORED if scope.get("method") == m and path.fullmatch(scope["path"])), None)
    if what is None or not isinstance(payload, dict):
        return None
    run_input, config = payload.get("input"), payload.get("config")
    brought = run_input.get("messages") if isinstance(run_input, dict) else None
    context = payload.get("context") or (config.get("configurable") if isinstance(config, dict) else None)
    try:
        # in a thread: the catalog is opened and read from disk, and the server refuses blocking calls on its loop
        await asyncio.to_thread(lambda: _check_run()([], brought, context, []))
    except InputError as exc:
        return printable(f"every run of this {what} would be refused: {exc}")[:500]
    return None


_HANDED: dict[str, Callable] = {}  # what studio.py hands in where it builds the graph


def check_runs_with(check_run: Callable) -> None:
    """Hands in the graph's own `check_run`, from where the graph is built (executor/agent/studio.py): it reads the
    runtime's catalog, so a stored assistant or cron is checked on the knowledge bases the runs read, and this
    module opens no store of its own (it built a second Catalog on a second Database)."""
    _HANDED["check_run"] = check_run


def _check_run() -> Callable:
    # langgraph dev loads this file by its path, as a module of another name ("user_router_module"), beside the one
    # studio.py imports by its name and hands the check to: that one holds it
    from executor.agent import studio_http

    check = studio_http._HANDED.get("check_run")
    if check is None:
        raise RuntimeError(
            "the executor graph is not loaded in this server (langgraph.json names executor/agent/studio.py)"
        )
    return check


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


class RunOutcomes:
    """ASGI middleware: a run's wait on a thread (`POST /threads/{id}/runs/wait`, and the join a client reconnects
    to) is answered from how the run itself ended. langgraph-api answers it with the run's last values, or else the
    thread's: a run another client's run interrupted or rolled back (`multitask_strategy` "interrupt" or
    "rollback": two Studio tabs on one thread) was answered 200 with `{}`, with its own question and no answer, or
    with the other run's answer to the other question, and no error for `raise_error` to raise. A run that ended
    in any other way than success is answered with an error naming how (`__error__`, as the API answers a run that
    failed); the answer of a run that succeeded, or failed with its own error, is the API's. `/runs/wait` is left
    alone: its run has a thread of its own, deleted with the run once it ends."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not _WAITS.fullmatch(scope.get("path") or ""):
            return await self.app(scope, receive, send)
        run: tuple[str, str] | None = None  # (thread id, run id), from the answer's Content-Location
        held = bytearray()

        async def sending(message):
            nonlocal run
            if message["type"] == "http.response.start":
                location = dict(message.get("headers") or []).get(b"content-location", b"").decode("latin-1")
                found = _RUN.fullmatch(location)
                run = (found[1], found[2]) if message["status"] == 200 and found else None
                return await send(message)
            if message["type"] != "http.response.body" or run is None:
                return await send(message)
            chunk, more = message.get("body", b""), message.get("more_body", False)
            if more and not held and not chunk.strip():
                return await send(message)  # the whitespace the API sends while the run runs, to keep the line open
            held.extend(chunk)
            if not more:
                await send({"type": "http.response.body", "body": await ended(bytes(held), *run)})

        return await self.app(scope, receive, sending)


_WAITS = re.compile(r"/threads/[^/]+/runs/(wait|[^/]+/join)/?")
_RUN = re.compile(r"/threads/([^/]+)/runs/([^/]+)")
# how a run that did not succeed ended (its status), said to whoever waited for its answer
_ENDINGS = {
    "interrupted": (
        "RunInterrupted",
        "run {run} was interrupted before it answered: another run on thread {thread} took its place "
        '(multitask_strategy "interrupt"), or it was cancelled; ask again',
    ),
    None: (  # no such run: a rolled-back run is deleted
        "RunRolledBack",
        "run {run} was rolled back before it answered: another run on thread {thread} took its place "
        '(multitask_strategy "rollback"), or it was deleted; ask again',
    ),
    "timeout": ("RunTimeout", "run {run} timed out before it answered"),
    "error": ("RunError", "run {run} failed before it answered"),
}


async def ended(body: bytes, thread_id: str, run_id: str) -> bytes:
    """The answer to a wait for run `run_id`: `body` (the API's), or, for a run that did not succeed, an `__error__`
    saying how it ended, unless `body` is already its own error."""
    status = await _run_status(thread_id, run_id)
    if status not in _ENDINGS or _is_error(body):
        return body
    error, message = _ENDINGS[status]
    return json.dumps({"__error__": {"error": error, "message": message.format(run=run_id, thread=thread_id)}}).encode()


def _is_error(body: bytes) -> bool:
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    return isinstance(answer, dict) and isinstance(answer.get("__error__"), dict)


async def _run_status(thread_id: str, run_id: str) -> str | None:
    """The run's status, read through the API in process (`get_client(url=None)`, as langgraph-api's own MCP endpoint
    calls it), or None for a run that is gone (a rolled-back run is deleted)."""
    from langgraph_sdk.errors import NotFoundError

    try:
        return (await _api().runs.get(thread_id, run_id))["status"]
    except NotFoundError:
        return None


@cache
def _api():
    """A client of the API in this process; made on first use, once the server's app exists (langgraph-api loads
    this module before its own app is made)."""
    from langgraph_sdk import get_client

    return get_client(url=None)


def _with_length(headers, length: int) -> list:
    return [*((k, v) for k, v in headers if k.lower() != b"content-length"), (b"content-length", str(length).encode())]


def unreadable(payload, scope) -> str | None:
    """One line naming the first message in a request body that LangChain cannot read, or the first state edit of a
    session field of another shape (`check_session_edit`: every later run of the thread failed), or None. The
    places a client's messages reach a thread from: `input`, `command.update` (an object, or a list of [key, value]
    pairs), `values` (update_state: an object or a list of them), `supersteps[].updates[]` (a thread made with its
    history), each in every run of a batch. A search's `values` (`threads.search`, `threads.count`) is a filter
    that writes nothing: only the state's own `values` is an edit."""
    edit = scope.get("method") == "POST" and _STATE.fullmatch(scope.get("path") or "") is not None
    for where, update in _updates_in(payload, values=edit):
        if where.endswith("input") and update is not None and not isinstance(update, dict):
            # LangGraph's own words were "InvalidUpdateError: Expected dict, got what is ERR_TIMEOUT" and a URL
            return (
                f"invalid {where}: a run's input is an object with `messages` (got {_json_kind(update)}): send "
                'the question as {"messages": [{"role": "user", "content": "..."}]}'
            )
        for at, value in _messages_of(update, where):
            problem = _unreadable_messages(value)
            if problem is not None:
                return f"invalid {at}: {problem}"
        if where.endswith("input"):
            continue  # a run's input writes its messages alone (ExecutorInput)
        try:
            check_session_edit(dict(update) if isinstance(update, dict) else _pairs(update))
        except InputError as exc:
            return printable(f"{where}: {exc}")[:300]
    return None


def _json_kind(value) -> str:
    """What a JSON value is, in JSON's words (a Python `str` is "a string", `None` is "null")."""
    if isinstance(value, bool):
        return "a boolean"
    kinds = ((str, "a string"), (int | float, "a number"), (list, "an array"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "null")


def _pairs(update) -> dict:
    """A state update given as [key, value] pairs (a Command's), as an object."""
    pairs = update if isinstance(update, list) else []
    return {p[0]: p[1] for p in pairs if isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[0], str)}


# update_state: the one request whose `values` are written to a thread (a search's `values` only filter threads)
_STATE = re.compile(r"/threads/[^/]+/state/?")


def _updates_in(payload, where: str = "", values: bool = True):
    """(where, update) of each state update in a request body; its `values` only when `values` says they are one."""
    if isinstance(payload, list):  # /runs/batch
        for i, item in enumerate(payload):
            yield from _updates_in(item, f"{where}{i}.", values)
        return
    if not isinstance(payload, dict):
        return
    yield f"{where}input", payload.get("input")
    command = payload.get("command")
    if isinstance(command, dict):
        yield f"{where}command.update", command.get("update")
    edits = payload.get("values") if values else None
    for i, item in enumerate(edits if isinstance(edits, list) else [edits]):
        yield f"{where}values" + (f".{i}" if isinstance(edits, list) else ""), item
    for i, step in enumerate(payload.get("supersteps") or [] if isinstance(payload.get("supersteps"), list) else []):
        for j, update in enumerate(step.get("updates") or [] if isinstance(step, dict) else []):
            yield from _updates_in(update, f"{where}supersteps.{i}.updates.{j}.")


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
