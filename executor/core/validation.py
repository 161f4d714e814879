"""Input validation every surface shares: knowledge base names, session ids, query text.

One place, so the command line, the MCP server, the graph and the services refuse the same input with the
same one-line message (an InputError), before any store is opened or any row written.
"""

from __future__ import annotations

import re
import unicodedata

from executor.core.errors import InputError

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
SURROGATE = re.compile(r"[\ud800-\udfff]")
SESSION_ID = re.compile(r"^[\w.:\-]{1,128}$")
MAX_KB_NAME_CHARS = 48
KB_NAME = re.compile(
    rf"[a-z][a-z0-9_]{{0,{MAX_KB_NAME_CHARS - 1}}}"
)  # also a Milvus collection suffix and a graph label value


def validate_kb_name(name: str) -> str:
    if len(name or "") > MAX_KB_NAME_CHARS:
        raise InputError(
            f"invalid knowledge base name {name[:40]!r}... ({len(name):,} characters): a name may have at most "
            f"{MAX_KB_NAME_CHARS} characters"
        )
    if not KB_NAME.fullmatch(name or ""):
        raise InputError(
            f"invalid knowledge base name {name!r}: use lowercase letters, digits and '_', starting with a letter"
        )
    return name


MAX_DESCRIPTION_CHARS = 1000  # a description is one line the LLM reads in every system prompt: a sentence, not a file


def check_description(description: str) -> str:
    if len(description or "") > MAX_DESCRIPTION_CHARS:
        raise InputError(
            f"--description is {len(description):,} characters long; a knowledge base's description may have at "
            f"most {MAX_DESCRIPTION_CHARS:,}"
        )
    return description or ""


def check_session_id(session_id: str) -> str:
    if not SESSION_ID.fullmatch(session_id or ""):  # match() with `$` let a trailing newline through
        raise InputError("a session id is 1-128 letters, digits, '_', '-', '.' or ':'")
    return session_id


def clean_query(query: str | None, max_chars: int, what: str = "the query") -> str:
    """The query (or another text argument, named by `what`) with its whitespace folded; InputError when it is
    empty, too long or holds control characters."""
    if query is None or not str(query).strip():
        raise InputError(f"{what} is empty")
    if not _visible(str(query)):
        raise InputError(f"{what} is empty: it holds only invisible characters (zero-width spaces, joiners, marks)")
    query = within_limit(str(query), max_chars, what)
    return " ".join(no_control_characters(query, what).split())


def within_limit(text: str, max_chars: int, what: str) -> str:
    """`text`, or InputError when it is longer than `max_chars` (naming its length and the limit)."""
    if len(text) > max_chars:
        raise InputError(f"{what} is {len(text):,} characters long; the limit is {max_chars:,}")
    return text


def _visible(text: str) -> bool:
    """Whether `text` shows anything: a query of spaces and invisible format characters alone (zero-width space,
    joiners, BOM, direction marks; Unicode's Cf) was looked up, and answered "nothing relevant" to a question
    nobody could see."""
    return any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in text)


def no_control_characters(text: str, what: str) -> str:
    """`text`, or InputError when it holds control characters (tab and newlines are text) or bytes that are not
    UTF-8 (read from a pipe they reach Python as lone surrogates: `executor chat` sent such a question on, it failed
    inside the turn with a UnicodeEncodeError and stayed in the thread with an empty answer)."""
    if CONTROL.search(text):
        raise InputError(f"{what} contains control characters")
    if SURROGATE.search(text):
        raise InputError(f"{what} is not valid text: it holds bytes that are not UTF-8")
    return text
