"""User-facing errors: one line that says what is wrong and what to do."""


class ExecutorError(Exception):
    """Raised for anything a person can fix: bad input, a backend down, a mismatch."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class InputError(ExecutorError):
    """The request itself is malformed (empty query, unknown knowledge base, ...)."""


class BackendError(ExecutorError):
    """A store could not be reached, is locked, or holds incompatible data."""
