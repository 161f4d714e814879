"""guard: checks every tool call the LLM proposed before anything runs.

Blocked calls get a tool message that says why, a trace entry, and a row in
the invocation log, like executed ones. With guards off only malformed calls
are refused (there is nothing to run for them).
"""

from __future__ import annotations

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime as RunContext

from executor.core.relevance import Level
from executor.nodes.common import lang_of, last_ai, session_of
from executor.nodes.state import Context, ExecutorState
from executor.prompts.executor import blocked_message
from executor.tools.registry import LOOKUP, Tool, ToolTable, parse_arguments

# reasons that stop a well-formed lookup (rules); the others are malformed calls
RULE_REASONS = ("precise_reached", "budget_spent")


def trace_entry(tool: Tool | None, name: str, args) -> dict:
    args = args if isinstance(args, dict) else {}
    return {
        "tool": name,
        "query": tool.query_of(args) if tool else args.get("query"),
        "missing_dimension": args.get("missing_dimension"),
        "relevance_level": None,
        "dedup_reason": None,
        "blocked": False,
        "error": None,
        "domain": None,  # where a lookup landed
        "sent": [],  # doc keys whose content went to the LLM
        "recalled": [],  # doc keys the session already had, which a deduplicated lookup pointed back to
        "repeat_of": None,  # the earlier lookup of the session this one repeats in meaning
        "withheld": [],  # new doc keys a blocked call found and did not send (weaker than a page the session has)
    }


def block_reason(
    tool: Tool | None, name: str, args, state: ExecutorState, ctx: Context, planned: int
) -> tuple[str | None, str]:
    if tool is None:
        return "unknown_tool", str(name)[:80]
    try:
        parse_arguments(tool.args, args)
    except ValueError as exc:
        return "invalid_arguments", str(exc)
    if tool.retrieval and ctx.guards:
        if state.get("precise"):
            return "precise_reached", ""
        if state.get("attempted_lookups", 0) + planned >= ctx.lookup_budget:
            return "budget_spent", ""
    return None, ""


def make_guard(tools: ToolTable):
    """`tools`: the table whose agent tools the LLM may call; a blocked or refused call gets its `tool_invocation`
    row in its log."""

    def guard(state: ExecutorState, runtime: RunContext[Context], config: RunnableConfig) -> ExecutorState:
        ctx, session, lang = runtime.context, session_of(config), lang_of(state)
        trace, messages, approved = list(state.get("trace", [])), [], []
        blocked, planned = state.get("blocked_lookups", 0), 0
        ai = last_ai(state)
        assert ai is not None  # routing.wants_tools: the last message asks for tools
        calls = [(c, None) for c in ai.tool_calls] + [(c, "not valid JSON") for c in ai.invalid_tool_calls]
        for call, unparsable in calls:
            name, args = call.get("name") or "?", call.get("args")
            tool = tools.agent.get(name)
            entry = trace_entry(tool, name, args)
            if unparsable:
                reason, detail = "invalid_arguments", unparsable
            else:
                reason, detail = block_reason(tool, name, args, state, ctx, planned)
            if reason is None:
                assert tool is not None  # block_reason refuses an unknown tool
                # batch: the message the call came in; its sibling lookups are never repeats of each other
                approved.append(
                    {"id": call["id"], "name": name, "args": args, "trace_index": len(trace), "batch": ai.id}
                )
                planned += tool.retrieval
            else:
                entry.update(blocked=True, dedup_reason=reason)
                if reason in RULE_REASONS:
                    entry["relevance_level"] = Level.DEDUPED.value
                else:
                    entry["error"] = blocked_message(reason, lang, detail)
                blocked += name == LOOKUP
                messages.append(ToolMessage(blocked_message(reason, lang, detail), tool_call_id=call["id"], name=name))
                tools.log_call(
                    session,
                    name,
                    ctx.kb,
                    args,
                    relevance_level=entry["relevance_level"],
                    dedup_reason=reason,
                    blocked=True,
                    error=entry["error"],
                )
            trace.append(entry)
        return {"pending": approved, "messages": messages, "trace": trace, "blocked_lookups": blocked}

    return guard
