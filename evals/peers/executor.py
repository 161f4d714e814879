"""Executor in the benchmark: the project's own graph (`Runtime.app`), run as the eval suite runs it."""

from __future__ import annotations

import uuid

from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError

from evals.peers.common import LLMCalls, Turn, rephrasing_batches, tool_results, with_counter
from evals.policy import ScriptedPolicy
from evals.scenarios_model import Scenario
from executor.agent.routing import EXTRA_ROUNDS
from executor.agent.session import run_turn
from executor.core.errors import ExecutorError
from executor.nodes.settle import reads_knowledge
from executor.nodes.state import Context
from executor.prompts.executor import BLOCKED, NOT_RUN

# why a proposed call never reached its tool: the guard's rules and refusals, settle's rounds that did not advance
NEVER_RAN = {*BLOCKED, *NOT_RUN}


def searched(entry: dict) -> bool:
    """A call that read the knowledge base: it reached its tool and searched (a lookup the session's memory
    deduplicated after its search counts; one the guard blocked, or one its tool blocked from the queries alone,
    `searched` False, never searched) and did not fail."""
    ran = not entry["blocked"] or entry["dedup_reason"] not in NEVER_RAN
    return reads_knowledge(entry["tool"]) and ran and entry.get("searched", True) and not entry.get("error")


def retrieved(new: list, trace: list[dict]) -> list[str]:
    """The results of the turn's calls that searched, as the peers' figure counts their retriever's results only: a
    call the guard or settle refused, or one blocked from its query alone, brought no retrieved text (its refusal is
    in the turn's `tool_text_chars`). A trace entry answers each call of the turn's AI messages, in order."""
    ids = [c.get("id") for m in new if isinstance(m, AIMessage) for c in [*m.tool_calls, *m.invalid_tool_calls]]
    ran = {i for i, t in zip(ids, trace, strict=True) if searched(t)}
    return [str(m.content) for m in tool_results(new) if m.tool_call_id in ran]


def run_session(rt, scenario: Scenario, policy: str, model, rounds: int) -> list[Turn]:
    """One scenario as one session: the scripted policy replays the scenario's own calls (answers are
    extractive), `llm` asks `model`; guards on, at most `rounds` LLM rounds a turn."""
    saver, counter = InMemorySaver(), LLMCalls()
    session = f"peers-executor-{scenario.id}-{uuid.uuid4().hex[:6]}"
    context = Context(kb=scenario.kb, lookup_budget=rt.settings.lookup_budget, guards=True, max_rounds=rounds)
    config = {"configurable": {"thread_id": session}}
    turns = []
    for turn in scenario.turns:
        if policy == "scripted":
            chat, mode = ScriptedPolicy(batches=rephrasing_batches(turn), callbacks=[counter]), "offline"
        else:
            chat, mode = with_counter(model, counter), "llm"
        app = rt.app(chat, mode, checkpointer=saver)
        before = len(app.get_state(config).values.get("messages", []))
        calls = len(counter.inputs)
        try:
            result = run_turn(app, turn.question, session, context, mode, max_query_chars=rt.settings.max_query_chars)
        except GraphRecursionError:  # its rounds bound exists so that this never happens
            raise ExecutorError(f"{scenario.id}: an Executor turn ended in a recursion error") from None
        state = app.get_state(config).values
        new = state["messages"][before:]
        budget_spent = state.get("attempted_lookups", 0) >= context.lookup_budget
        # the model still wanted tools in its last round, and no rule (PRECISE, the budget, settle) ended the turn:
        # the rounds bound did
        still_calling = sum(1 for m in new if isinstance(m, AIMessage) and m.tool_calls) >= result.rounds > 0
        bound = min(context.max_rounds, context.lookup_budget + EXTRA_ROUNDS)
        ended_by_rule = state.get("precise") or budget_spent or state.get("settled")
        limit = still_calling and result.rounds >= bound and not ended_by_rule
        turns.append(
            Turn(
                question=turn.question,
                answer=result.answer,
                delivered=retrieved(new, result.trace),
                retrieval_calls=sum(map(searched, result.trace)),
                llm_inputs=counter.since(calls),
                citations=[c["doc_key"] for c in result.citations],
                limit=limit,
                ms=result.latency_ms,
                calls=[
                    f"{t['tool']}: {t.get('query') or ''}" + (f" ({t['dedup_reason']})" if t["blocked"] else "")
                    for t in result.trace
                ],
                extra={
                    "blocked_calls": result.blocked_lookups,
                    # searches that ran and sent nothing new (the session's memory answered them)
                    "deduplicated_calls": sum(1 for t in result.trace if searched(t) and t["blocked"]),
                    "settled": bool(state.get("settled")),
                    "budget_ending": budget_spent and still_calling,
                    "rounds": result.rounds,
                    # every tool result the turn added, refusals included
                    "tool_text_chars": sum(len(str(m.content)) for m in tool_results(new)),
                },
            )
        )
    return turns
