"""What every HTTP server of ours checks before a request reaches it (`executor mcp --http`, `executor llm serve`):
the Host header, the Origin, a token where one is required, and the size of the body, before the body is read.

A server on 127.0.0.1 is reachable by any web page the user opens: through DNS rebinding (a name that resolves
to 127.0.0.1, so the Host header is that name) and through "simple" cross-site POSTs (text/plain, no preflight,
with an Origin header). So the Host must be one of the server's own names with its own port, compared whole
(`127.0.0.1:8765@evil.example` is not `127.0.0.1:8765`), and an Origin, when a browser sends one, must be one of
them too. A plain ASGI middleware: no dependency, and the app behind it is unchanged.

Below the app, `server_config` is how both serve HTTP: uvicorn's h11 protocol, whose request head is bounded
(uvicorn's default httptools protocol buffers any header), with a deadline for reading each request.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Callable, Iterator

MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_HEAD_BYTES = 64 * 1024  # a request line and headers; a browser sends a few kB
READ_TIMEOUT_S = 10.0  # to receive a whole request (head and body): a loopback client needs milliseconds
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_HOST = re.compile(r"(?:[a-z0-9.\-]+|\[[0-9a-f:.]+\]):\d{1,5}")


def is_loopback(host: str) -> bool:
    return host.lower() in ("127.0.0.1", "localhost", "::1", "[::1]")  # host names are case-insensitive


WILDCARDS = ("0.0.0.0", "::", "")


def own_hosts(bind: str, port: int, extra: tuple[str, ...] = ()) -> set[str]:
    """The Host values a server bound to `bind`:`port` answers to: each of `own_names` with the port."""
    return {f"{name}:{port}" for name in own_names(bind, extra)}


def own_names(bind: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The names a server bound to `bind` answers to, loopback first, then the host's names, then addresses: the
    loopback names, and for another address that address, the machine's own names and addresses, and `extra`.
    Bound to every interface, every interface's address: a client on the network names the machine by the address
    it connects to, and was refused 421 when the host name resolved to 127.0.0.1 alone, as in a stock /etc/hosts
    (hostile22 finding 8). An ordered list: a server's start line names them for the user (round 22's leftover)."""
    names = set(LOOPBACK_NAMES) | {n.lower() for n in extra}
    if not is_loopback(bind):
        import socket

        if bind not in WILDCARDS:
            names.add(f"[{bind}]" if ":" in bind else bind)
        hostname = socket.gethostname()
        names |= {hostname.lower(), socket.getfqdn().lower()}
        addresses = interface_addresses() if bind in WILDCARDS else set()
        try:
            addresses |= {str(addr[0]) for *_, addr in socket.getaddrinfo(hostname, None)}
        except OSError:
            pass
        names |= {f"[{ip}]" if ":" in ip else ip for ip in addresses}
    return sorted(names, key=_listing_order)


def _listing_order(name: str) -> tuple[int, int, str]:
    """Loopback names first (as LOOPBACK_NAMES lists them), then host names, then IPv4, then IPv6 addresses."""
    import ipaddress

    if name in LOOPBACK_NAMES:
        return (0, LOOPBACK_NAMES.index(name), "")
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return (1, 0, name)
    return (2 + (address.version == 6), int(address), "")


def interface_addresses() -> set[str]:
    """The addresses of this machine's interfaces, as Linux lists them (the standard library has no getifaddrs):
    IPv4 from the kernel's local routes (secondary addresses too), IPv6 from /proc/net/if_inet6. Elsewhere, or
    where /proc is not mounted, none: the host name's addresses remain."""
    import ipaddress

    found = set()
    try:
        with open("/proc/net/fib_trie") as fh:
            last = None
            for line in fh:
                words = line.split()
                if words[:1] == ["|--"]:
                    last = words[1]
                elif words[:3] == ["/32", "host", "LOCAL"] and last is not None:
                    found.add(last)
    except OSError:
        pass
    try:
        with open("/proc/net/if_inet6") as fh:
            found |= {str(ipaddress.IPv6Address(bytes.fromhex(line.split()[0]))) for line in fh if line.strip()}
    except (OSError, ValueError):
        pass
    return found


class LocalGuard:
    """ASGI middleware: refuse a request whose Host is not `hosts` (421), whose Origin is not one of them (403),
    that lacks the bearer `token` when one is set (401), or whose body exceeds `max_body` bytes (413), before
    the app sees it and before more than `max_body` bytes of it are read. A WebSocket handshake passes the same
    Host, Origin and token checks (refused with 403)."""

    def __init__(
        self,
        app,
        hosts: set[str],
        token: str | None = None,
        max_body: int = MAX_BODY_BYTES,
        origins: tuple[str, ...] = (),
        error_body: Callable[[str], dict] | None = None,
        other_origins: str = "",
    ):
        """`origins`: pages of other sites the server answers too (LangGraph Studio's, for `langgraph dev`);
        `error_body`: a refusal's JSON in the protocol the app speaks (OpenAI's error object when None);
        `other_origins`: what the refusal of another page's Origin adds, how to allow one (when the server can)."""
        self.app = app
        self.error_body = error_body or openai_error
        self.hosts = {h.lower() for h in hosts}
        self.origins = {f"http://{h}" for h in self.hosts} | {f"https://{h}" for h in self.hosts}
        self.origins |= {o.lower() for o in origins}
        # compared without the spaces at its ends: HTTP strips them from a header's value (and httpx refuses to send
        # them), so a token given as "T " (a file's trailing space) made every request 401
        self.token = token.strip() if token is not None else None
        self.other_origins = other_origins
        self.max_body = max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):  # lifespan: the server's own start and stop
            return await self.app(scope, receive, send)
        headers = {}
        for key, value in scope.get("headers") or []:
            headers.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
        refusal = self._refusal(headers)
        if refusal is not None:
            return await refuse(scope, receive, send, *refusal, error_body=self.error_body)
        # names are case-insensitive (RFC 9110): what passed here reaches the app lower-cased, so that a check of
        # its own (the MCP SDK compares Host and Origin exactly) agrees with this one
        scope = {
            **scope,
            "headers": [
                (key, value.lower() if key.lower() in (b"host", b"origin") else value)
                for key, value in scope.get("headers") or []
            ],
        }
        if scope["type"] == "websocket":  # no request body: its frames are the app's to bound
            return await self.app(scope, receive, send)
        length = headers.get("content-length")
        if length is not None:
            if len(length) != 1 or not length[0].strip().isdigit():
                return await self._reply(send, 400, "invalid Content-Length")
            if int(length[0]) > self.max_body:
                return await self._reply(send, 413, f"the request body exceeds {self.max_body} bytes")
        elif scope.get("method") in ("GET", "HEAD", "DELETE", "OPTIONS"):
            return await self.app(scope, receive, send)
        # read here, within the bound (a chunked body declares no length), and hand the app what was read: a client
        # that goes away mid-body (or is cut off by the server's read deadline) ends the request here, quietly,
        # not as the app's ClientDisconnect traceback
        body = await read_body(receive, self.max_body)
        if body is None:
            return
        if len(body) > self.max_body:
            return await self._reply(send, 413, f"the request body exceeds {self.max_body} bytes")
        return await self.app(scope, replaying(body, receive), send)

    async def _reply(self, send, status: int, message: str) -> None:
        await send_json(send, status, self.error_body(message), close=True)

    def _refusal(self, headers: dict[str, list[str]]) -> tuple[int, str] | None:
        host = headers.get("host") or []
        if len(host) != 1 or not _HOST.fullmatch(host[0].strip().lower()) or host[0].strip().lower() not in self.hosts:
            return 421, "this server does not answer to that Host"
        origin = headers.get("origin")
        if origin is not None and (len(origin) != 1 or origin[0].strip().lower() not in self.origins):
            return 403, f"cross-origin requests are refused{self.other_origins}"
        if self.token is not None:
            given = headers.get("authorization") or []
            scheme, _, credentials = (given[0] if len(given) == 1 else "").strip().partition(" ")
            # the scheme is case-insensitive (RFC 7235: "bearer" is "Bearer"); the token itself is compared exactly
            if scheme.lower() != "bearer" or not hmac.compare_digest(credentials.strip().encode(), self.token.encode()):
                return 401, "a bearer token is required (Authorization: Bearer ...)"
        return None


async def refuse(scope, receive, send, status: int, message: str, error_body: Callable[[str], dict] | None = None):
    """Refuse a request before its body is read: `status` with `message` in `error_body`'s JSON (OpenAI's error
    object when None), the connection closed after it."""
    if scope["type"] == "websocket":
        # a WebSocket handshake is not bound by CORS: any page may open one to 127.0.0.1, so it passes the same
        # checks; closing before accepting is the ASGI way to refuse it (the server answers 403)
        await receive()  # the handshake's websocket.connect
        return await send({"type": "websocket.close", "code": 1008})
    await send_json(send, status, (error_body or openai_error)(message), close=True)


def openai_error(message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error"}}


async def send_json(send, status: int, value, close: bool = False) -> None:
    """A whole JSON response: `value` with `status`; `close` ends the connection after it (a request refused before
    its body was read)."""
    body = json.dumps(value).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": headers + ([(b"connection", b"close")] if close else []),
        }
    )
    await send({"type": "http.response.body", "body": body})


NOT_JSON = object()  # `posted_json`'s parse of a body that is not UTF-8 JSON


async def posted_json(receive) -> tuple[bytes, object] | None:
    """A request's body and its parse, for a middleware that looks into a request before the app parses it again:
    (body, the JSON value, or NOT_JSON when the body is not UTF-8 JSON or nests too deeply), or None when the client
    went away. The body is bounded by LocalGuard in front; the app is handed it with `replaying(body, receive)`."""
    body = await read_body(receive)
    if body is None:
        return None
    try:
        return body, json_body(body)
    except ValueError:
        return body, NOT_JSON


async def read_body(receive, max_body: int | None = None) -> bytes | None:
    """An ASGI request's whole body, or None when the client went away. Past `max_body` bytes reading stops and
    what was read (longer than the bound) is returned, for the caller to refuse."""
    body, more = bytearray(), True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        more = message.get("more_body", False)
        if max_body is not None and len(body) > max_body:
            break
    return bytes(body)


def replaying(body: bytes, receive):
    """A `receive` that hands the app the body already read, then the connection's own messages."""
    replayed = False

    async def replay():
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def json_body(body: bytes):
    """A request body parsed as JSON, or ValueError when it is not UTF-8 JSON or nests beyond what Python's parser
    recurses into (`[[[[...` of a few MB is a RecursionError, not a JSONDecodeError)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise ValueError("the JSON nests too deeply") from None


def json_leaves(value) -> Iterator[tuple[tuple, object]]:
    """Every string key and every value that is no object or array in parsed JSON, in document order, each with
    its path (the keys and indexes above it; a key with its object's path). A loop, not recursion: a body may nest
    as deeply as the parser went."""
    stack: list[tuple[tuple, object, bool]] = [((), value, False)]
    while stack:
        path, item, is_key = stack.pop()
        if is_key or not isinstance(item, dict | list):
            yield path, item
            continue
        children = list(item.items() if isinstance(item, dict) else enumerate(item))
        for key, child in reversed(children):
            stack.append(((*path, key), child, False))
            if isinstance(key, str):
                stack.append((path, key, True))


def server_config(app, **options):
    """The uvicorn configuration our servers run `app` with: the request head bounded to MAX_HEAD_BYTES and each
    request read within READ_TIMEOUT_S."""
    import uvicorn

    return uvicorn.Config(app, http=_bounded_h11(), h11_max_incomplete_event_size=MAX_HEAD_BYTES, **options)


def _bounded_h11():
    """uvicorn's h11 protocol with a deadline for receiving a request. uvicorn waits for ever for the rest of a
    head or a body, so a client that sends a byte now and then (slowloris) holds a connection for as long as it
    likes, and a few thousand of them hold every file descriptor the server has. Once the deadline has passed
    with a request still arriving, the connection is closed (the app, if it was reading the body, sees the
    client go away); one that is idle between requests is uvicorn's keep-alive timeout's to close."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundedH11(H11Protocol):
        _deadline = None

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self):
            super().on_response_complete()
            self._arm()  # the next request on this connection gets a deadline of its own

        def connection_lost(self, exc):
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

        def _arm(self):
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(READ_TIMEOUT_S, self._expire)

        def _expire(self):
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
                self.transport.close()

    return BoundedH11
