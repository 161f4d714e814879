"""settle: a turn the LLM does not advance ends in an answer from the knowledge base, never at the rounds bound.

A small model can circle on a call that reads no knowledge (SmolLM2-135M calls list_knowledge_bases again and
again) until the rounds bound ends the turn with nothing retrieved and nothing to cite. With the rules on,
`routing.after_executor` sends such a round here instead of to the guard (`stalled`):
- every call of the round repeats, word for word (same tool, same arguments), one this turn already proposed: its
  result is already above, and a model that proposes it again has nothing new to ask (a lookup run again would
  count against the budget and find what it found; a rephrasing is not a repeat here, the lookup's own rules
  judge it), or
- from the second round on, still no knowledge has been read this turn and the round proposes no well-formed
  call that reads it.
The round's calls are answered without running them; when the turn has read no knowledge yet, or every lookup it
ran found nothing and none of them asked the user's question (the model searched words of its own: the bundled
model once looked up "lookup_knowledge_graph"), the lookup of the user's question runs (proposed by an AI message
of the graph's own, so that every tool result answers a call); then the turn goes to the answer, written from
what was retrieved. A rephrasing of the question that found nothing is judged by the lookup's own repeat rule
(DEDUPED `not_found_repeated`, nothing searched). The question's lookup runs only within the turn's lookup
budget (the routing sends a turn that spent it to the answer before settle; checked here too).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime as RunContext

from executor.nodes.common import lang_of, last_ai, session_of
from executor.nodes.guard import trace_entry
from executor.nodes.state import Context, ExecutorState
from executor.prompts.executor import not_run_message
from executor.tools.registry import AGENT_TOOL_NAMES, LOOKUP, NAVIGATE, RETRIEVAL_TOOLS, ToolTable

# rounds after which a turn that has read no knowledge is taken over (the first may list the knowledge bases)
IDLE_ROUNDS = 2


def reads_knowledge(name: str) -> bool:
    """A call that fetches from the knowledge base: a lookup, a knowledge-graph query, graph navigation."""
    return name in RETRIEVAL_TOOLS or name == NAVIGATE


def _signature(call: Mapping[str, Any]) -> tuple[str, str]:
    return str(call.get("name")), json.dumps(call.get("args"), sort_keys=True, ensure_ascii=False, default=str)


def _calls(ai: AIMessage) -> list[Mapping[str, Any]]:
    return [*ai.tool_calls, *ai.invalid_tool_calls]


def _well_formed(call: Mapping[str, Any], ai: AIMessage) -> bool:
    """A parsed call of one of the LLM's tools (the guard checks its arguments when it runs)."""
    return call in ai.tool_calls and call.get("name") in AGENT_TOOL_NAMES and isinstance(call.get("args"), dict)


def earlier_calls(state: ExecutorState) -> list[Mapping[str, Any]]:
    """The calls proposed this turn before the latest round (the AI messages after the user's last message)."""
    messages = state.get("messages", [])
    start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return [c for m in messages[start + 1 : -1] if isinstance(m, AIMessage) for c in _calls(m)]


def read_knowledge(state: ExecutorState) -> bool:
    """This turn ran a call that reads knowledge (the guard let it through)."""
    return any(reads_knowledge(t["tool"]) and not t["blocked"] for t in state.get("trace", []))


def _found_nothing(entry: Mapping[str, Any]) -> bool:
    """A call that reads knowledge and found nothing: it searched and came back empty (NONE), or the lookup's own
    rule blocked it as a rephrasing of a lookup of the session that found nothing."""
    empty = entry.get("relevance_level") == "NONE" or entry.get("dedup_reason") == "not_found_repeated"
    return empty and not entry.get("sent") and not entry.get("recalled") and not entry.get("error")


def _same_words(a: str | None, b: str) -> bool:
    return " ".join(str(a or "").split()).casefold() == " ".join(b.split()).casefold()


def question_unasked(state: ExecutorState) -> bool:
    """The turn holds nothing from the knowledge base on the user's question: it has read no knowledge, or every
    call that read some found nothing and none of them was the question itself."""
    if not read_knowledge(state):
        return True
    question = state.get("question", "")
    ran = [t for t in state.get("trace", []) if reads_knowledge(t["tool"]) and (not t["blocked"] or _found_nothing(t))]
    return all(_found_nothing(t) and not _same_words(t.get("query"), question) for t in ran)


def stall_reason(state: ExecutorState) -> str | None:
    """Why the latest round does not advance the turn ("repeated_call", "idle_round"), or None when it does."""
    ai = last_ai(state)
    calls = _calls(ai) if ai is not None else []
    if ai is None or not calls:
        return None
    sound = [c for c in calls if _well_formed(c, ai)]
    before = {_signature(c) for c in earlier_calls(state)}
    proposes_knowledge = any(reads_knowledge(c["name"]) for c in sound)
    if all(_signature(c) in before for c in calls):
        return "repeated_call"
    if state.get("rounds", 0) >= IDLE_ROUNDS and not proposes_knowledge and not read_knowledge(state):
        return "idle_round"
    return None


def found_nothing_new(state: ExecutorState) -> bool:
    """Every call of the latest round was a lookup that ran and found only pages this turn had already sent (a
    rephrasing within the turn, of a lookup better than REFERENCE): the next rephrasing would too, so the turn
    answers from what it has."""
    messages = state.get("messages", [])
    ai = next((m for m in reversed(messages) if isinstance(m, AIMessage) and _calls(m)), None)
    trace = state.get("trace", [])
    n = len(_calls(ai)) if ai is not None else 0
    if not n or n > len(trace):
        return False
    earlier, latest = trace[:-n], trace[-n:]
    # after a REFERENCE the DEDUPED result tells the LLM how to ask for the missing dimension: it gets to
    had = {k for t in earlier if t.get("relevance_level") != "REFERENCE" for k in t.get("sent") or []}
    return bool(had) and all(
        t["tool"] in RETRIEVAL_TOOLS
        and not t.get("error")
        and not t.get("sent")
        and bool(t.get("recalled"))
        and set(t["recalled"]) <= had
        for t in latest
    )


def make_settle(tools: ToolTable):
    """`tools`: the LLM's tools, whose log gets a `tool_invocation` row for each call not run, as a blocked one does."""

    def settle(state: ExecutorState, runtime: RunContext[Context], config: RunnableConfig) -> ExecutorState:
        ctx, session, lang = runtime.context or Context(), session_of(config), lang_of(state)
        reason = stall_reason(state) or "idle_round"
        trace, messages = list(state.get("trace", [])), []
        ai = last_ai(state)
        for call in _calls(ai) if ai is not None else []:
            name, args = call.get("name") or "?", call.get("args")
            entry = trace_entry(tools.agent.get(name), name, args)
            entry.update(blocked=True, dedup_reason=reason, error=None)
            trace.append(entry)
            messages.append(ToolMessage(not_run_message(reason, lang), tool_call_id=call["id"], name=name))
            tools.log_call(session, name, ctx.kb, args, dedup_reason=reason, blocked=True)
        pending, question = [], state.get("question", "")
        if question and question_unasked(state) and state.get("attempted_lookups", 0) < ctx.lookup_budget:
            args = {"query": question}
            ai = AIMessage(
                "",
                id=f"settle-{uuid.uuid4().hex[:12]}",
                tool_calls=[{"name": LOOKUP, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}],
            )
            messages.append(ai)
            pending.append(
                {"id": ai.tool_calls[0]["id"], "name": LOOKUP, "args": args, "trace_index": len(trace), "batch": ai.id}
            )
            trace.append(trace_entry(tools.agent.get(LOOKUP), LOOKUP, args))
        return {"messages": messages, "trace": trace, "pending": pending, "settled": True}

    return settle
