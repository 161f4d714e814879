"""Which action memory a run's tools use: the memory its checkpoint had seen, never more, never less.

The memory lives in the app database keyed by session (MCP calls and other processes read it), but a LangGraph
thread can be resumed from any of its checkpoints: the chat UI's edit and regenerate, Studio's fork and replay,
a run given an earlier `checkpoint_id`. Such a run restores the conversation as it was, so its memory must be
as it was too: otherwise its lookups find "already sent" documents the restored conversation never received
(`doc_retrieved`) and the turn answers "nothing found".

So the state carries a mark of the memory (`memory`: the session it is kept under, its lookup row ids and sent
documents; ids and keys only, a few hundred bytes) written by every node that lets tools write memory. Before
tools run, the mark is compared with the database: equal, the run continues the branch; different, the run
started from an earlier checkpoint (rows were added after it), so the marked part is copied into a new session
(`<thread>:fork-<random>`) and the branch goes on there. Copy on fork keeps the common path one small query and
leaves the lookup service, the repeat rule and MCP untouched; versioning every row by checkpoint id would not.
A thread with no mark yet (its first turn, or a fork from before any lookup) has seen no memory.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from executor.core.errors import InputError
from executor.stores.memory import BRANCH


def unmarked(thread: str) -> dict:
    return {"session": thread, "lookups": [], "documents": []}


def is_mark(value) -> bool:
    """`value` is a memory mark as `ActionMemory.mark` writes it: the session, its lookup ids, its [kb, doc_key]s."""
    return (
        isinstance(value, Mapping)
        and set(value) == {"session", "lookups", "documents"}
        and isinstance(value["session"], str)
        and isinstance(value["lookups"], list)
        and all(isinstance(i, int) and not isinstance(i, bool) for i in value["lookups"])
        and isinstance(value["documents"], list)
        and all(_is_document(d) for d in value["documents"])
    )


def _is_document(value) -> bool:
    """[kb, doc_key]: a document the memory sent."""
    return isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(x, str) for x in value)


def is_evidence_map(value) -> bool:
    """`value` is a `session_evidence` as the tools write it: doc_key -> that document's evidence (its doc_key the
    same, its content text)."""
    return isinstance(value, Mapping) and all(
        isinstance(e, Mapping) and e.get("doc_key") == k and isinstance(e.get("content"), str) for k, e in value.items()
    )


# the session's fields a state edit (Studio's editor, `update_state`) must write in the shape the graph writes them
# in: of another shape, every later run of the thread failed ("string indices must be integers"), or a list of
# forged pages was taken as sent and the next lookup answered "nothing" (hostile22 finding 4)
SESSION_SHAPES = {
    "memory": (is_mark, "a memory mark as the graph writes it ({session, lookups, documents})"),
    "session_evidence": (is_evidence_map, "an object of doc_key -> that document's evidence ({doc_key, content, ...})"),
}


def check_session_edit(values) -> None:
    """Raises the InputError a state edit of a session field of another shape is refused with (null, which the
    graph reads as unset, is taken)."""
    if not isinstance(values, Mapping):
        return
    for field, (fits, shape) in SESSION_SHAPES.items():
        if values.get(field) is not None and not fits(values[field]):
            raise InputError(f"invalid state edit of {field!r}: it must be {shape}; leave it to the graph")


def branch_session(mark: dict | None, thread: str, memory) -> str:
    """The memory session a run's tools use, given the state's mark (forking the memory when the run does not
    start from the branch's latest point)."""
    mark = mark or unmarked(thread)
    if memory.mark(mark["session"]) == {**mark, "documents": sorted(mark["documents"])}:
        return mark["session"]
    fork = f"{thread[:100]}{BRANCH}{uuid.uuid4().hex[:12]}"
    memory.branch(mark, fork)
    return fork


def branch_of(state, thread: str, memory) -> tuple[str, dict[str, dict]]:
    """The memory session a run's tools use, and the evidence of the documents the session sent (what a lookup that
    points back to one recalls). Either field of another shape (a state edit made before edits were checked): the
    memory of a thread that has seen nothing, so the documents are sent again. Read alone, the mark made the
    lookups find "already sent" documents whose evidence was unreadable, and the turn answered "nothing" (hostile22
    finding 4)."""
    mark, evidence = state.get("memory"), state.get("session_evidence")
    if (evidence is not None and not is_evidence_map(evidence)) or (mark is not None and not is_mark(mark)):
        return branch_session(unmarked(thread), thread, memory), {}
    return branch_session(mark, thread, memory), dict(evidence or {})
