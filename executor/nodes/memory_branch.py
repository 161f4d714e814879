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

from executor.stores.memory import BRANCH


def unmarked(thread: str) -> dict:
    return {"session": thread, "lookups": [], "documents": []}


def branch_session(mark: dict | None, thread: str, memory) -> str:
    """The memory session a run's tools use, given the state's mark (forking the memory when the run does not
    start from the branch's latest point)."""
    mark = mark or unmarked(thread)
    if memory.mark(mark["session"]) == {**mark, "documents": sorted(mark["documents"])}:
        return mark["session"]
    fork = f"{thread[:100]}{BRANCH}{uuid.uuid4().hex[:12]}"
    memory.branch(mark, fork)
    return fork
