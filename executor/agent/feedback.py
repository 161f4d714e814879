"""Feedback on an answer: the service that `executor feedback`, chat's /good and /bad, and the MCP tool call.

The turn is read back from the session's checkpoints (thread id = session id),
so feedback can come long after the answer, from another process: turn N is
the state after the N-th question of the session was answered.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from executor.core.errors import InputError
from executor.core.validation import CONTROL, SESSION_ID, check_session_id
from executor.stores.feedback import VERDICTS, FeedbackRow, FeedbackStore, TurnRecord
from executor.tools.call import ToolCall, ToolOutput
from executor.tools.registry import Tool, ToolArgs

MAX_NOTE_CHARS = 2000


def turn_from_state(session: str, turn: int, values: dict) -> TurnRecord:
    """A TurnRecord from the executor state at the end of a turn (a checkpoint's values, or a live state)."""
    question = values.get("question") or ""
    evidence = values.get("evidence") or []
    levels = [
        {k: t.get(k) for k in ("tool", "query", "relevance_level", "blocked", "dedup_reason")}
        for t in values.get("trace") or []
    ]
    return TurnRecord(
        session_id=session,
        turn=turn,
        query=question,
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


@dataclass(frozen=True)
class Feedback:
    """Recording verdicts: `store` keeps them; `checkpoints()` opens the session checkpoints for one use."""

    store: FeedbackStore
    checkpoints: Callable[[], AbstractContextManager]

    def record(self, session: str, turn: int | str, verdict: str, note: str | None = None) -> FeedbackRow:
        """Validate, read the turn from the session's checkpoints, and store the verdict (replacing an earlier one)."""
        check_session_id(session)
        number = parse_turn(turn)
        verdict, note = check_feedback(verdict, note)
        with self.checkpoints() as saver:
            record = turn_from_checkpoints(saver, session, number)
        return self.store.record(record, verdict, note)


class feedback(ToolArgs):  # noqa: N801 - ToolArgs: an argument it does not take is refused by name
    """Say whether an executor answer was good or bad; kept with its question, levels and documents for calibration."""

    session: str = Field(
        description="the executor session the answer was given in (the --session of ask or chat)",
        pattern=SESSION_ID.pattern,
    )
    turn: Annotated[int, Field(ge=1)] | Literal["last"] = Field(
        default="last", description="which answer: 1 for the session's first question, or 'last'"
    )
    verdict: Literal["good", "bad"] = Field(description="good or bad")
    comment: str | None = Field(default=None, description="what was wrong (or right)", max_length=MAX_NOTE_CHARS)


def feedback_tool(service: Callable[[], Feedback]) -> Tool:
    """The MCP `feedback` tool, a host's only (the composition root puts it in the table's host tools: the executor
    LLM is never offered it). The rated session is the tool's own `session` argument, not the MCP session the call
    arrives in (a host rates answers that `executor ask` or `chat` gave)."""

    def handler(call: ToolCall, args) -> ToolOutput:
        row = service().record(args.session, args.turn, args.verdict, args.comment)
        return ToolOutput(
            text=f"recorded {row.verdict} for turn {row.turn} of {row.session_id}: {row.query} "
            f"({len(row.documents)} documents, {len(row.cited)} cited)",
            details={"verdict": row.verdict, "turn": row.turn, "rated_session": row.session_id},
        )

    return Tool(
        feedback,
        handler,
        prompt={
            "zh": "feedback(session, turn, verdict, comment?)：评价一个回答的好坏。",
            "en": "feedback(session, turn, verdict, comment?): say whether an answer was good or bad.",
        },
    )
