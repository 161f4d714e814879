"""User-facing errors: one line that says what is wrong and what to do."""


def first_line(exc, limit: int = 300) -> str:
    """An exception from a library as one line for an error message (its class name if it says nothing)."""
    text = str(exc).strip() or exc.__class__.__name__
    return text.splitlines()[0][:limit]


def validation_line(exc, where_default: str) -> str:
    """A pydantic ValidationError's first error as one line: `messages.0.role: Input should be ...`."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or where_default
    return f"{where}: {err['msg']}"


class ExecutorError(Exception):
    """Raised for anything a person can fix: bad input, a backend down, a mismatch."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class InputError(ExecutorError):
    """The request itself is malformed (empty query, unknown knowledge base, ...)."""


class BackendError(ExecutorError):
    """A store could not be reached, is locked, or holds incompatible data."""
