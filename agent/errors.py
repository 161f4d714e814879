"""User-facing errors: one line that says what is wrong and what to do."""


def first_line(exc, limit: int = 300) -> str:
    """An exception from a library as one line for an error message (its class name if it says nothing)."""
    text = str(exc).strip() or exc.__class__.__name__
    return text.splitlines()[0][:limit]


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
