"""User-facing errors: one line that says what is wrong and what to do, with no secret in it."""

from __future__ import annotations

import base64
import errno
import re
from urllib.parse import urlsplit, urlunsplit

# scheme://user:password@host -> scheme://***@host (FALKORDB_URL, MILVUS_URI, NEO4J_URI, database URLs)
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/@\s'\"]+@")
# ...?password=x&token=y and "api_key: x" as libraries print them
# a placeholder in our own help and messages ("Bearer TOKEN", "Bearer ...") is no credential: left as written
_PLACEHOLDER = r"(?!(?-i:TOKEN|KEY|API_KEY|SECRET|PASSWORD|\.\.\.)(?![A-Za-z0-9_~+/=\-]|\.\w))"
_SECRET_PARAM = re.compile(
    r"(?i)(?<![a-z])(?P<key>password|passwd|pwd|token|api[_-]?key|secret|authorization)(?P<sep>['\"]?\s*[=:]\s*['\"]?)(?!\*\*\*)"
    r"(?:(?:bearer|basic)\s+)?(?!(?:bearer|basic)\s)" + _PLACEHOLDER + r"[^\s&,;'\"`]+"
)
# values the settings hold (passwords, tokens, API keys): never printed, wherever a library puts them
_SECRETS: set[str] = set()
# C0 and C1 controls, and the invisible ones that reorder or hide text ("Trojan Source"): the bidi embeddings,
# overrides and isolates, the zero-width space, the word joiner and a stray BOM. Joiners (U+200C/D) and the
# direction marks stay: Persian, Indic and emoji text needs them, and they reorder nothing around them.
_INVISIBLE = "\u200b\u202a-\u202e\u2060\u2066-\u2069\ufeff"
_TERMINAL_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")
# what json.dumps(ensure_ascii=False) leaves as it is, but a terminal may obey: DEL and the C1 controls (CSI \x9b)
_JSON_CONTROL = re.compile(f"[\x7f-\x9f{_INVISIBLE}]")


_SECRET_PATTERN: re.Pattern | None = None
# "Bearer k9Z", "Basic ...": whatever follows is a credential, however short
_BEARER = re.compile(r"(?i)\b(?P<key>bearer|basic)(?P<sep>\s+)(?!\*\*\*)" + _PLACEHOLDER + r"[A-Za-z0-9._~+/=\-]+")


def register_secret(value: str | None) -> None:
    """Remember a secret from the configuration so that `redact` removes it from any text, however short (an
    endpoint may echo a 3-character key back)."""
    global _SECRET_PATTERN
    if value and value.strip() and value not in _SECRETS:
        _SECRETS.add(value)
        # as an endpoint may echo it back in base64 too (a Basic header decoded, a key re-encoded)
        encoded = base64.b64encode(value.encode("utf-8")).decode("ascii")
        _SECRETS.update({encoded, encoded.rstrip("=")})
        # a secret is removed where it stands as a token of its own, never from inside a longer word: a password
        # "neo4" must not turn /var/lib/neo4j into /var/lib/***j, nor a key "k" the argument `top_k` into `top_***`
        alternatives = "|".join(re.escape(v) for v in sorted(_SECRETS, key=len, reverse=True))
        _SECRET_PATTERN = re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])")


# MySQL's and MariaDB's "Access denied for user 'u'@'h' (using password: YES)": whether one was sent, never the password
MYSQL_DENIED = re.compile(r"using password: (?:YES|NO)\)?")
# the word a `password:`-style key ends: "/etc/passwd: no such folder" is a path and an error, not a credential
_WORD_BEFORE = re.compile(r"[^\s'\"`=]*\Z")


def _mask_param(m: re.Match) -> str:
    """`key: ***`, unless the key is the last part of a file path followed by a colon (a query's `token=` is
    always masked)."""
    if MYSQL_DENIED.fullmatch(m.string, max(0, m.start() - 6), m.end()):
        return m.group()
    before = _WORD_BEFORE.search(m.string, max(0, m.start() - 500), m.start())
    if "=" not in m.group("sep") and before is not None and ("/" in before.group() or "\\" in before.group()):
        return m.group()
    return f"{m.group('key')}{m.group('sep')}***"


def redact(text: str) -> str:
    """`text` without URL credentials, `password=`-style values, bearer tokens, or any registered secret."""
    text = _USERINFO.sub(r"\g<scheme>***@", str(text))
    text = _SECRET_PARAM.sub(_mask_param, text)
    text = _BEARER.sub(r"\g<key>\g<sep>***", text)
    if _SECRET_PATTERN is not None:
        text = _SECRET_PATTERN.sub("***", text)
    return text


def display_url(url: str | None) -> str:
    """A URL as it may be printed: no user or password (a path to a local file is returned as is)."""
    if not url or "://" not in url:
        return url or ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return redact(urlunsplit((parts.scheme, host, parts.path, "", "")))


def terminal_safe(text: str) -> str:
    """Text from documents as a terminal may show it: escape sequences (OSC, CSI) and other control
    characters are shown as visible escapes instead of being obeyed. Newlines and tabs stay."""
    return _TERMINAL_CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def json_safe(text: str) -> str:
    """JSON text for a terminal: DEL and C1 controls as \\u escapes (json.dumps escapes only those below 0x20).
    Outside its strings JSON has no such character, so the result is the same JSON."""
    return _JSON_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# the packages whose exceptions an LLM client raises when the endpoint is down, times out or refuses a request
LLM_TRANSPORT_PACKAGES = ("openai", "httpx", "httpcore")


def llm_transport(exc: BaseException) -> bool:
    """Whether `exc` is an LLM client's transport or API failure (not a bug of ours)."""
    return any(c.__module__.split(".")[0] in LLM_TRANSPORT_PACKAGES for c in type(exc).__mro__)


def llm_unreachable(exc: BaseException) -> bool:
    """Whether `exc` says the LLM endpoint cannot be reached at all (refused, no route, timed out), which every
    later request would meet too; an API error about one request (a page too long) is not."""
    return llm_transport(exc) and any("Connect" in c.__name__ or "Timeout" in c.__name__ for c in type(exc).__mro__)


def first_line(exc, limit: int = 300) -> str:
    """An exception from a library as one line for an error message (its class name if it says nothing)."""
    text = redact(str(exc).strip()) or exc.__class__.__name__
    lines = text.splitlines()
    line = lines[0]
    if line.endswith(":") and len(lines) > 1:  # "Couldn't connect to HOST (...):" has its reason on the next line
        line = f"{line} {lines[1].strip()}"
    return line[:limit]


EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130
EXIT_TERMINATED = 143  # 128 + SIGTERM: what a shell reports for a command a signal ended


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, a container or service manager stopping it) in a command that takes it as Ctrl-C
    (`executor ingest`): the command stops the way Ctrl-C stops it, its cleanup on the way out, and says so."""


def describe(exc: BaseException) -> tuple[str, int]:
    """(one line for a person, exit code) for anything a command can raise; see executor/cli/main.py."""
    format_message, code = getattr(exc, "format_message", None), getattr(exc, "exit_code", None)
    if callable(format_message) and isinstance(code, int):
        # click's exceptions (which Typer vendors): usage errors carry exit code 2 and the command's context
        ctx = getattr(exc, "ctx", None)
        where = f" (see '{ctx.command_path} -h')" if code == EXIT_USAGE and ctx is not None else ""
        if re.fullmatch(r"-\d[\d.]*", str(getattr(exc, "option_name", ""))):  # `feedback s1 -1`
            where = f"; a negative number is read as an option: put -- before the arguments{where}"
        return str(format_message()) + where, code
    if isinstance(exc, Terminated) or isinstance(exc.__cause__, Terminated):  # (Typer's Abort wraps it)
        return "terminated (SIGTERM)", EXIT_TERMINATED
    if isinstance(exc, KeyboardInterrupt) or type(exc).__name__ == "Abort":
        return "interrupted", EXIT_INTERRUPTED
    if isinstance(exc, (InputError, ConfigError)):  # asked wrongly: the input, or a setting, must change
        return str(exc), EXIT_USAGE
    if isinstance(exc, ExecutorError):
        return str(exc), EXIT_FAILED
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        # a cache or model file written after the stores (self-calibration's vocabulary): it said "OSError: [Errno
        # 28] No space left on device (run 'executor --debug ...')", where the stores' own writes say the disk is full
        where = f" (writing {exc.filename})" if exc.filename is not None else ""
        return printable(f"the disk is full{where}: free some space and run the command again"), EXIT_FAILED
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        # a file of the home that is a folder, one this user may not read, ...: the path and what is wrong with
        # it is what a person can act on, not the exception's class
        target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return printable(f"{exc.filename}{target}: {exc.strerror}"), EXIT_FAILED
    return f"{exc.__class__.__name__}: {first_line(exc)} (run 'executor --debug ...' for the traceback)", EXIT_FAILED


def printable(text: str) -> str:
    """One line a terminal shows as it is: control characters (ESC, OSC, ...) and lone surrogates escaped."""
    flat = " ".join(str(text).split())
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in flat)  # \\x1b, \\u202e
    return flat.encode("utf-8", "backslashreplace").decode("utf-8")


def warn(message: str) -> None:
    """One `warning: ...` line on stderr, shown as it is (`printable`), at once: a command that goes on past
    something the user must hear of (a cache it cannot keep, a damaged graph it answers without)."""
    import sys

    sys.stderr.write(printable(f"warning: {message}") + "\n")
    sys.stderr.flush()


def validation_line(exc, where_default: str) -> str:
    """A pydantic ValidationError's first error as one line: `messages.0.role: Input should be ...`."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or where_default
    return f"{where}: {err['msg']}"


class ExecutorError(RuntimeError):
    """Raised for anything a person can fix: bad input, a backend down, a mismatch.

    A RuntimeError because LangGraph's server passes on the message of built-in exception types only (others
    reach Studio, the SDKs and RemoteGraph as "An internal error occurred"); the kind is the class name."""

    def __init__(self, message: str):
        super().__init__(redact(" ".join(str(message).split())))


class InputError(ExecutorError):
    """The request itself is malformed (empty query, unknown knowledge base, ...)."""


class OutputError(ExecutorError):
    """stdout cannot take the command's output (a full device or disk behind it): the command is told, exit 1."""


class ConfigError(ExecutorError):
    """The configuration is wrong (a setting, the embedder, a model folder): no request can fix it."""


class BackendError(ExecutorError):
    """A store could not be reached, is locked, or holds incompatible data."""


class EmptyGraphError(BackendError):
    """The graph backend holds nothing at all: never built, or its files were removed. `where` names the graph;
    whoever knows the KB's documents tells "not built yet" from damage (their entities say a graph was built)."""

    def __init__(self, message: str, where: str):
        super().__init__(message)
        self.where = where


class DamagedError(BackendError):
    """A store's files are damaged (truncated, overwritten, removed): `path` names them. Not a server that is
    merely down: what a rebuild or a backup mends, so a caller that goes on without the store still says so."""

    def __init__(self, message: str, path):
        super().__init__(message)
        self.path = str(path)
