"""Feedback on an answer: the service that `executor feedback`, chat's /good and /bad, and the MCP tool call.

The turn is read back from the session's checkpoints (thread id = session id),
so feedback can come long after the answer, from another process: turn N is
the state after the N-th question of the session was answered.
"""

from __future__ import annotations

from contextlib import nullcontext

from core.errors import InputError
from retrieval.lookup import CONTROL, check_session_id
from stores.feedback import VERDICTS, FeedbackRow, FeedbackStore, TurnRecord

MAX_NOTE_CHARS = 2000


def turn_from_state(session: str, turn: int, values: dict) -> TurnRecord:
    """A TurnRecord from the executor state at the end of a turn (a checkpoint's values, or a live state)."""
    question = values.get("question") or ""
    evidence = values.get("evidence") or []
    levels = [{k: t.get(k) for k in ("tool", "query", "relevance_level", "blocked", "dedup_reason")}
              for t in values.get("trace") or []]
    return TurnRecord(
        session_id=session, turn=turn, query=question,
        kb=next((e.get("kb") for e in evidence if e.get("kb")), None),
        levels=levels,
        documents=list(dict.fromkeys(e["doc_key"] for e in evidence)),
        cited=list(dict.fromkeys(c["doc_key"] for c in values.get("citations") or [])),
    )


def _humans(values: dict) -> int:
    return sum(1 for m in values.get("messages") or [] if getattr(m, "type", "") == "human")


def turn_from_checkpoints(checkpointer, session: str, turn: int | str) -> TurnRecord:
    """Turn `turn` (1-based, or "last") of `session`, from the newest checkpoint of that turn."""
    finals: dict[int, dict] = {}
    for saved in checkpointer.list({"configurable": {"thread_id": session}}):  # newest first
        values = saved.checkpoint.get("channel_values") or {}
        n = _humans(values)
        if n and n not in finals:
            finals[n] = values
    if not finals:
        raise InputError(f"session {session!r} has no answered turn")
    number = max(finals) if turn == "last" else turn
    if number not in finals:
        raise InputError(f"session {session!r} has no turn {number} (it has {max(finals)})")
    values = finals[number]
    if not values.get("answer"):
        raise InputError(f"turn {number} of session {session!r} has no answer yet")
    return turn_from_state(session, number, values)


def parse_turn(turn: str | int) -> int | str:
    if isinstance(turn, int) or str(turn).strip().isdigit():
        number = int(turn)
        if number >= 1:
            return number
    elif str(turn).strip().lower() == "last":
        return "last"
    raise InputError("a turn is a number from 1 (the session's first question) or 'last'")


def check_feedback(verdict: str, note: str | None) -> tuple[str, str | None]:
    verdict = str(verdict or "").strip().lower()
    if verdict not in VERDICTS:
        raise InputError(f"feedback is 'good' or 'bad', not {verdict!r}")
    if note is not None:
        note = " ".join(str(note).split()) or None
        if note and len(note) > MAX_NOTE_CHARS:
            raise InputError(f"the note is {len(note):,} characters long; the limit is {MAX_NOTE_CHARS:,}")
        if note and CONTROL.search(note):
            raise InputError("the note contains control characters")
    return verdict, note


def record_feedback(rt, session: str, turn: int | str, verdict: str, note: str | None = None,
                    checkpointer=None) -> FeedbackRow:
    """Validate, read the turn from the session's checkpoints, and store the verdict (replacing an earlier one).

    `checkpointer`: one the caller already holds open (chat, the MCP server); else the configured one is opened.
    """
    from agent.checkpoints import open_checkpointer

    check_session_id(session)
    number = parse_turn(turn)
    verdict, note = check_feedback(verdict, note)
    with nullcontext(checkpointer) if checkpointer is not None else open_checkpointer(rt.settings) as saver:
        record = turn_from_checkpoints(saver, session, number)
    return FeedbackStore(rt.db).record(record, verdict, note)
