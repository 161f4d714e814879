"""One conversational turn through the executor graph, as the CLI and the eval runner run it."""

from __future__ import annotations

import time
from collections.abc import Callable

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from pydantic import BaseModel

from executor.agent.routing import recursion_limit
from executor.core.validation import check_session_id, clean_query
from executor.nodes.common import open_tool_calls, text_of
from executor.nodes.state import Context
from executor.tools.registry import LOOKUP


class TurnResult(BaseModel):
    answer: str
    citations: list[dict]
    trace: list[dict]
    executed_lookups: int
    blocked_lookups: int
    proposed_lookups: int
    graph_paths: list[str]
    session: str
    mode: str
    latency_ms: float
    tool_output_chars: int  # characters of tool messages the LLM was sent this turn
    rounds: int = 0  # LLM rounds (executor node calls) this turn


def run_turn(
    app,
    question: str,
    session: str,
    context: Context,
    mode: str,
    on_update: Callable[[str, dict], None] | None = None,
    on_token: Callable[[str], None] | None = None,
    max_query_chars: int = 2000,
    as_blocks: bool = False,
) -> TurnResult:
    """Run one turn; `on_update(node, update)` sees each node's output, `on_token` the answer as it streams.
    `as_blocks`: send the question as a text content block, as LangChain's chat UI does (the eval checks both
    shapes read the same)."""
    question = clean_query(question, max_query_chars)
    check_session_id(session)
    config = {"configurable": {"thread_id": session}, "recursion_limit": recursion_limit(context)}
    started = time.perf_counter()
    tool_chars = 0
    for kind, payload in app.stream(
        {"messages": [HumanMessage([{"type": "text", "text": question}] if as_blocks else question)]},
        config,
        context=context,
        stream_mode=["updates", "messages"],
    ):
        if kind == "messages":
            chunk, meta = payload
            if on_token and isinstance(chunk, AIMessageChunk) and meta.get("langgraph_node") in ("executor", "answer"):
                if chunk.content and not chunk.tool_call_chunks:
                    on_token(text_of(chunk))
            continue
        for node, update in (payload or {}).items():
            for message in (update or {}).get("messages", []) or []:
                if getattr(message, "type", "") == "tool":
                    tool_chars += len(text_of(message))
            if on_update:
                on_update(node, update or {})
    state = app.get_state(config).values
    trace = state.get("trace", [])
    return TurnResult(
        answer=state.get("answer", ""),
        citations=state.get("citations", []),
        trace=trace,
        executed_lookups=state.get("executed_lookups", 0),
        blocked_lookups=state.get("blocked_lookups", 0),
        proposed_lookups=sum(1 for t in trace if t["tool"] == LOOKUP),
        graph_paths=state.get("graph_paths", []),
        session=session,
        mode=mode,
        latency_ms=round((time.perf_counter() - started) * 1000, 1),
        tool_output_chars=tool_chars,
        rounds=state.get("rounds", 0),
    )


CANCELLED = "(cancelled)"


def close_cancelled_turn(app, session: str) -> None:
    """After a turn was interrupted (Ctrl-C): answer the tool calls it left open and end it.

    The checkpoint keeps everything the finished steps did (and the action memory already recorded it), so
    the session stays consistent with what was retrieved; an OpenAI-style endpoint rejects a conversation
    with a tool call that has no result, so each gets one saying it was cancelled."""
    config = {"configurable": {"thread_id": session}}
    state = app.get_state(config)
    messages = (state.values or {}).get("messages", [])
    # only the last assistant message's open calls: a result appended after a later message answers no call, and
    # the endpoint refuses the conversation (ids repeat across turns, so matching by id alone found such results)
    closing = [
        ToolMessage("cancelled by the user", tool_call_id=call_id, name=name)
        for call_id, name in open_tool_calls(messages)
    ]
    if not (state.next or closing or (messages and isinstance(messages[-1], HumanMessage))):
        return  # nothing was left half done
    app.update_state(config, {"messages": [*closing, AIMessage(CANCELLED)], "answer": CANCELLED}, as_node="answer")


def clear_session(session_id: str, checkpointer, memory) -> int:
    """Forget a session: its conversation (the checkpointer's thread), then what it retrieved (the action memory).
    The conversation goes first: if the checkpoint store fails, the memory is still there (no half-cleared
    session). Returns how many documents were forgotten."""
    check_session_id(session_id)
    checkpointer.delete_thread(session_id)
    return memory.clear(session_id)
