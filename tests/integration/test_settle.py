"""A turn the LLM does not advance (settle): it ends in an answer from the knowledge base, never at the rounds bound."""

import uuid
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from scripted_model import ScriptedChatModel, raw_call, tool_message

from executor.agent import routing
from executor.agent.session import run_turn
from executor.nodes.state import Context

QUESTION = "How does API rate limiting work here?"
BROAD = "what limits apply to API clients"  # graded HIGHLY_RELEVANT on the sample KB


class EndlessListing(ScriptedChatModel):
    """What SmolLM2-135M does with the tools: list the knowledge bases, every round, forever."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if not self.tools_bound:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(self.answer))])
        parent = self.__dict__.get("_parent", self)
        parent.i += 1
        return ChatResult(generations=[ChatGeneration(message=tool_message(raw_call("list_knowledge_bases", {})))])


def turn(rt, model, question, sid, checkpointer, **ctx):
    app = rt.app(model, "llm", checkpointer=checkpointer)
    return app, run_turn(app, question, sid, Context(max_rounds=4, **ctx), "llm")


def test_a_model_that_only_lists_knowledge_bases_gets_the_question_looked_up_and_an_answer(sample_rt):
    model, sid = EndlessListing(responses=[], answer="Requests are limited per API key."), f"t-{uuid.uuid4().hex[:8]}"
    app, result = turn(sample_rt, model, QUESTION, sid, InMemorySaver())
    # the listing ran once; its repeat was not run, the question itself was looked up, then the turn answered
    assert model.i == 2 and result.rounds == 2
    assert [(t["tool"], t["blocked"], t["dedup_reason"]) for t in result.trace] == [
        ("list_knowledge_bases", False, None),
        ("list_knowledge_bases", True, "repeated_call"),
        ("lookup_knowledge", False, None),
    ]
    assert result.trace[2]["query"] == QUESTION and result.executed_lookups == 1
    assert result.answer == "Requests are limited per API key."
    assert result.citations[0]["doc_key"] == "api/rate-limiting.md"
    # every tool call of the conversation has its result, so the next turn starts from a well-formed one
    messages = app.get_state({"configurable": {"thread_id": sid}}).values["messages"]
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert sorted(calls) == sorted(m.tool_call_id for m in messages if isinstance(m, ToolMessage))


def test_a_second_round_that_still_reads_nothing_is_taken_over(sample_rt):
    model = ScriptedChatModel(
        responses=[tool_message(raw_call("list_knowledge_bases", {})), tool_message(raw_call("no_such_tool", {}))]
    )
    _, result = turn(sample_rt, model, QUESTION, f"t-{uuid.uuid4().hex[:8]}", InMemorySaver())
    assert [t["dedup_reason"] for t in result.trace] == [None, "idle_round", None]
    assert result.trace[-1]["tool"] == "lookup_knowledge" and result.citations


def test_without_the_rules_a_repeat_runs_as_proposed():
    repeat = [
        HumanMessage(QUESTION),
        AIMessage("", tool_calls=[raw_call("list_knowledge_bases", {})]),
        ToolMessage("- sample", tool_call_id="x"),
        AIMessage("", tool_calls=[raw_call("list_knowledge_bases", {})]),
    ]
    state = {"messages": repeat, "rounds": 2, "trace": []}
    assert routing.after_executor(state, Context()) == "settle"
    assert routing.after_executor(state, Context(guards=False)) == "guard"
    # a first round that only lists the knowledge bases is a model finding its way: it runs
    assert routing.after_executor({"messages": repeat[:2], "rounds": 1, "trace": []}, Context()) == "guard"


def test_a_lookup_proposed_again_word_for_word_is_not_run_and_the_turn_answers(sample_rt):
    # what the bundled small model does: the same lookup, round after round; each run would count against the
    # budget and send nothing new
    same = raw_call("lookup_knowledge", {"query": BROAD})  # HIGHLY_RELEVANT: the turn may go on (PRECISE stops it)
    model = ScriptedChatModel(responses=[tool_message(same), tool_message(same), tool_message(same)], answer="ok")
    _, result = turn(sample_rt, model, BROAD, f"t-{uuid.uuid4().hex[:8]}", InMemorySaver())
    assert [(t["tool"], t["blocked"], t["dedup_reason"]) for t in result.trace] == [
        ("lookup_knowledge", False, None),
        ("lookup_knowledge", True, "repeated_call"),
    ]
    assert result.executed_lookups == 1 and result.citations[0]["doc_key"] == "api/rate-limiting.md"


def test_a_rephrased_lookup_is_judged_by_the_lookup_not_settled(sample_rt):
    model = ScriptedChatModel(
        responses=[
            tool_message(raw_call("lookup_knowledge", {"query": BROAD})),
            tool_message(raw_call("lookup_knowledge", {"query": "API rate limits: how are requests throttled?"})),
        ],
        answer="ok",
    )
    _, result = turn(sample_rt, model, BROAD, f"t-{uuid.uuid4().hex[:8]}", InMemorySaver())
    assert [t["dedup_reason"] != "repeated_call" for t in result.trace] == [True, True]
