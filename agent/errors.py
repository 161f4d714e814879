"""User-facing errors: one line that says what is wrong and what to do."""


def first_line(exc, limit: int = 300) -> str:
    """An exception from a library as one line for an error message (its class name if it says nothing)."""
    text = str(exc).strip() or exc.__class__.__name__
    return text.splitlines()[0][:limit]


EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


def describe(exc: BaseException) -> tuple[str, int]:
    """(one line for a person, exit code) for anything a command can raise; see agent/cli.py."""
    if hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int):
        # click's exceptions (which Typer vendors): usage errors carry exit code 2 and the command's context
        ctx = getattr(exc, "ctx", None)
        where = f" (see '{ctx.command_path} -h')" if exc.exit_code == EXIT_USAGE and ctx is not None else ""
        return exc.format_message() + where, exc.exit_code
    if isinstance(exc, KeyboardInterrupt) or type(exc).__name__ == "Abort":
        return "interrupted", EXIT_INTERRUPTED
    if isinstance(exc, InputError):
        return str(exc), EXIT_USAGE
    if isinstance(exc, ExecutorError):
        return str(exc), EXIT_FAILED
    return f"{exc.__class__.__name__}: {first_line(exc)} (run 'executor --debug ...' for the traceback)", EXIT_FAILED


def printable(text: str) -> str:
    """One line a terminal shows as it is: control characters (ESC, OSC, ...) and lone surrogates escaped."""
    flat = " ".join(str(text).split())
    flat = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in flat)
    return flat.encode("utf-8", "backslashreplace").decode("utf-8")


class ExecutorError(Exception):
    """Raised for anything a person can fix: bad input, a backend down, a mismatch."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class InputError(ExecutorError):
    """The request itself is malformed (empty query, unknown knowledge base, ...)."""


class BackendError(ExecutorError):
    """A store could not be reached, is locked, or holds incompatible data."""
