"""The executor graph on the real stores, driven by scripted LLMs and by the offline planner."""

import uuid

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from scripted_model import EndlessLookups, ScriptedChatModel, lookup_call, raw_call, tool_message

from executor.agent import routing
from executor.agent.planner import OfflinePlanner, plan, split_question
from executor.agent.session import run_turn
from executor.nodes.state import Context

POOL_STORM = [
    "数据库连接池配置",
    "HikariCP 参数",
    "连接池耗尽排查",
    "maximumPoolSize 设置多少",
    "数据库连接数上限",
    "连接池大小怎么调",
    "MySQL 连接池",
    "Spring Boot 连接池配置",
    "连接池 timeout",
    "连接池最佳实践",
    "数据库连接池参数说明",
    "连接池监控指标",
    "连接泄漏检测",
    "连接池预热",
    "连接池满了怎么办",
    "HikariCP maxLifetime",
    "连接池 keepalive",
    "数据库连接复用",
    "连接池配置示例",
    "连接池调优",
]


def session() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def turn(rt, model, question, sid=None, mode="llm", **ctx):
    app = rt.app(model, mode, checkpointer=InMemorySaver())
    return run_turn(app, question, sid or session(), Context(**ctx), mode)


# -- routing rules (pure) --------------------------------------------------------
def with_tools():
    return [AIMessage("", tool_calls=[lookup_call("x")])]


@pytest.mark.parametrize(
    "state, ctx, expected",
    [
        ({"messages": with_tools()}, Context(), "guard"),
        ({"messages": [AIMessage("done")]}, Context(), "answer"),
    ],
)
def test_after_executor(state, ctx, expected):
    assert routing.after_executor(state, ctx) == expected


@pytest.mark.parametrize(
    "state, ctx, expected",
    [
        ({"pending": [{"id": 1}]}, Context(), "call_tools"),
        ({"pending": [], "precise": True}, Context(), "answer"),
        ({"pending": [], "precise": True}, Context(guards=False), "executor"),
        ({"pending": [], "attempted_lookups": 3}, Context(lookup_budget=3), "answer"),
        ({"pending": [], "attempted_lookups": 2}, Context(lookup_budget=3), "executor"),
        ({"pending": [], "rounds": 25}, Context(guards=False), "answer"),
        ({"pending": [], "rounds": 6}, Context(lookup_budget=3), "answer"),  # rounds without lookups are bounded
        ({"pending": [], "rounds": 6}, Context(lookup_budget=3, guards=False), "executor"),
    ],
)
def test_after_guard(state, ctx, expected):
    assert routing.after_guard(state, ctx) == expected


@pytest.mark.parametrize(
    "state, expected",
    [
        ({"pending_expansions": [{"id": 1}], "precise": True}, "graph_expand"),
        ({"precise": True}, "answer"),
        ({"last_level": "HIGHLY_RELEVANT"}, "executor"),
        ({"attempted_lookups": 3}, "answer"),
    ],
)
def test_after_call_tools(state, expected):
    assert routing.after_call_tools(state, Context()) == expected


def test_recursion_limit_leaves_room_for_every_round():
    assert routing.recursion_limit(Context(max_rounds=25)) > 4 * 25


# -- the rules on the real stores ------------------------------------------------
def test_a_rephrasing_storm_runs_at_most_the_budget(sample_rt):
    """ISS-002: twenty rephrasings of one topic in one go; the budget runs, the rest are blocked with reasons."""
    model = ScriptedChatModel(responses=[tool_message(*(lookup_call(q) for q in POOL_STORM))], answer="池配置见文档")
    sid = session()
    result = turn(sample_rt, model, "数据库连接池怎么配置？", sid)
    assert result.answer == "池配置见文档"
    assert result.proposed_lookups == 20 and 1 <= result.executed_lookups <= 3
    blocked = [t for t in result.trace if t["blocked"]]
    assert len(blocked) == 20 - result.executed_lookups
    assert sum(t["dedup_reason"] == "budget_spent" for t in blocked) == 17
    assert all(t["dedup_reason"] in ("budget_spent", "query_repeated", "doc_retrieved") for t in blocked)
    assert result.citations[0]["domain"] == "infrastructure"
    # every blocked call is in the invocation log with its reason, like the executed ones
    rows = sample_rt.log.rows(session_id=sid, tool_name="lookup_knowledge")
    assert len(rows) == 20
    assert sorted(r.dedup_reason for r in rows if r.dedup_reason) == sorted(t["dedup_reason"] for t in blocked)


def test_a_storm_one_call_per_round_ends_early(sample_rt):
    model = ScriptedChatModel(responses=[tool_message(lookup_call(q)) for q in POOL_STORM[1:]], answer="ok")
    result = turn(sample_rt, model, "HikariCP 连接池参数怎么调？")
    assert result.answer == "ok" and result.executed_lookups <= 3
    assert model.i <= 4  # the turn ended long before the script did


def test_precise_ends_the_turn_and_blocks_the_next_lookup(sample_rt):
    model = ScriptedChatModel(
        responses=[
            tool_message(lookup_call("ERR_TIMEOUT 是什么")),
            tool_message(lookup_call("ERR_TIMEOUT 的排查步骤")),
        ],
        answer="ERR_TIMEOUT 表示请求超时",
    )
    result = turn(sample_rt, model, "ERR_TIMEOUT 是什么？")
    assert [t["relevance_level"] for t in result.trace] == ["PRECISE"]
    assert model.i == 1  # PRECISE went straight to the answer: the LLM was not asked again
    assert result.citations[0]["doc_key"] == "troubleshooting/err-timeout.md"


def test_a_lookup_after_precise_is_answered_blocked_not_run(sample_rt):
    # two rounds in which the LLM ignores the PRECISE result: with a larger budget the guard still blocks
    model = ScriptedChatModel(
        responses=[
            tool_message(lookup_call("ERR_TIMEOUT 是什么")),
            tool_message(lookup_call("ERR_TIMEOUT 的排查步骤")),
        ],
    )
    app = sample_rt.app(model, "llm", checkpointer=InMemorySaver())
    sid = session()
    config = {"configurable": {"thread_id": sid}}
    # start from a state where this turn already has its PRECISE result
    app.invoke({"messages": [HumanMessage("ERR_TIMEOUT?")]}, config, context=Context())
    state = app.get_state(config).values
    assert state["precise"] and state["executed_lookups"] == 1
    guard_state = {**state, "messages": state["messages"] + [tool_message(lookup_call("ERR_TIMEOUT 的排查步骤"))]}
    from executor.nodes.guard import block_reason

    assert (
        block_reason(
            sample_rt.tools.agent["lookup_knowledge"],
            "lookup_knowledge",
            {"query": "ERR_TIMEOUT 的排查步骤"},
            guard_state,
            Context(),
            0,
        )[0]
        == "precise_reached"
    )


def test_reference_then_a_named_missing_dimension_is_allowed(sample_rt):
    model = ScriptedChatModel(
        responses=[
            tool_message(lookup_call("my service keeps restarting")),
            tool_message(lookup_call("how do I read the logs of a crashing service", missing_dimension="log analysis")),
            AIMessage("Read the logs first. [troubleshooting/log-analysis-steps.md]"),
        ]
    )
    result = turn(sample_rt, model, "my service keeps restarting, what do I do?", graph_expansion=False)
    assert [(t["relevance_level"], t["blocked"]) for t in result.trace] == [("REFERENCE", False), ("REFERENCE", False)]
    assert result.executed_lookups == 2
    assert result.citations == [
        {
            "doc_key": "troubleshooting/log-analysis-steps.md",
            "title": result.citations[0]["title"],
            "domain": "troubleshooting",
        }
    ]


def test_reference_then_a_plain_rephrasing_is_blocked(sample_rt):
    model = ScriptedChatModel(
        responses=[
            tool_message(lookup_call("my service keeps restarting")),
            tool_message(lookup_call("my service restarts over and over")),
            AIMessage("Answer from what I have."),
        ]
    )
    result = turn(sample_rt, model, "my service keeps restarting, what do I do?", graph_expansion=False)
    assert [(t["relevance_level"], t["dedup_reason"]) for t in result.trace] == [
        ("REFERENCE", None),
        ("DEDUPED", "query_repeated"),
    ]
    assert result.trace[1]["repeat_of"] == "my service keeps restarting"
    # the LLM saw what happened: the earlier lookup, that it was only a REFERENCE, and how to ask for more
    blocked_msg = [m for m in model.calls[-1] if isinstance(m, ToolMessage)][-1]
    assert "DEDUPED" in blocked_msg.content and "query_repeated" in blocked_msg.content
    assert "my service keeps restarting" in blocked_msg.content and "REFERENCE" in blocked_msg.content
    assert "missing_dimension" in blocked_msg.content and "good enough" not in blocked_msg.content


def test_a_model_that_never_stops_still_ends_with_an_answer(sample_rt):
    guarded = turn(sample_rt, EndlessLookups(responses=[], answer="stopped"), "数据库连接池怎么配置？")
    assert guarded.answer == "stopped" and guarded.executed_lookups <= 3
    # without the rules only the rounds bound stops it, and it is an answer, not a GraphRecursionError
    unguarded = turn(
        sample_rt,
        EndlessLookups(responses=[], answer="stopped"),
        "数据库连接池怎么配置？",
        guards=False,
        max_rounds=12,
        graph_expansion=False,
    )
    assert unguarded.answer == "stopped"
    assert unguarded.executed_lookups == 12 and unguarded.blocked_lookups == 0


def test_malformed_tool_calls_get_clear_errors(sample_rt):
    bad = tool_message(
        raw_call("lookup_knowledge", {}),
        raw_call("lookup_knowledge", {"query": "   "}),
        raw_call("lookup_knowledge", {"query": 42}),
        raw_call("drop_tables", {"x": 1}),
    )
    # what ChatOpenAI makes of arguments that are not JSON
    bad.invalid_tool_calls = [
        {
            "name": "lookup_knowledge",
            "args": "{query: oops",
            "id": "call_bad",
            "error": "Expecting property name",
            "type": "invalid_tool_call",
        }
    ]
    model = ScriptedChatModel(responses=[bad, AIMessage("I could not look that up.")])
    result = turn(sample_rt, model, "anything")
    errors = [t["error"] for t in result.trace]
    assert len(errors) == 5 and all(errors)
    assert "query" in errors[0] and "blank" in errors[1] and "drop_tables" in errors[3] and "JSON" in errors[4]
    assert result.executed_lookups == 0 and result.answer == "I could not look that up."
    sent = [m for m in model.calls[-1] if isinstance(m, ToolMessage)]
    assert len(sent) == 5 and all("\n" not in m.content for m in sent)


def test_raw_scores_never_reach_the_llm(sample_rt):
    model = ScriptedChatModel(responses=[tool_message(lookup_call("how should we store passwords")), AIMessage("ok")])
    turn(sample_rt, model, "how should we store passwords?")
    tool_text = "\n".join(m.content for m in model.calls[-1] if isinstance(m, ToolMessage))
    assert "relevance_level:" in tool_text
    for leak in ("similarity", "distance", "l1_", "lambda", "0.2", "0.3", "0.4", "0.5", "0.6"):
        assert leak not in tool_text.split("\n[")[0], leak


# -- offline mode -----------------------------------------------------------------
def test_split_question():
    assert split_question("数据库连接池怎么配置，以及 ERR_TIMEOUT 是什么？") == [
        "数据库连接池怎么配置",
        "ERR_TIMEOUT 是什么",
    ]
    assert split_question("How do I roll back a Helm release and how do I rotate secrets in Vault?") == [
        "How do I roll back a Helm release",
        "how do I rotate secrets in Vault",
    ]
    assert split_question("Redis and Kafka") == ["Redis and Kafka"]


@pytest.mark.parametrize(
    "question, parts",
    [
        # a word left on a line of its own, or after the "?", is part of the question, never a lookup of its own
        ("How do I fix ERR_TIMEOUT?\nthanks", ["How do I fix ERR_TIMEOUT thanks"]),
        ("ERR_TIMEOUT\n怎么办", ["ERR_TIMEOUT 怎么办"]),
        ("连接池满了怎么办？\n谢谢", ["连接池满了怎么办 谢谢"]),
        ("Hi\nHow do I roll back a Helm release?", ["Hi How do I roll back a Helm release"]),
        # a short part that names something is a question of its own
        ("ERR_TIMEOUT?\nERR_POOL_EXHAUSTED?", ["ERR_TIMEOUT", "ERR_POOL_EXHAUSTED"]),
    ],
)
def test_a_fragment_cut_off_by_a_line_break_joins_its_question(question, parts):
    assert split_question(question) == parts


@pytest.mark.parametrize(
    "question, calls",
    [
        (
            "How do I expose ComfyUI on port 8188 and what does it depend on?",
            [("lookup_knowledge", "How do I expose ComfyUI on port 8188"), ("navigate_graph", "ComfyUI")],
        ),
        (
            "ComfyUI 怎么部署，以及它依赖什么？",
            [("lookup_knowledge", "ComfyUI 怎么部署"), ("navigate_graph", "ComfyUI")],
        ),
        ("ComfyUI 依赖什么", [("navigate_graph", "ComfyUI")]),
        (
            "How do I roll back a Helm release and how do I rotate its secrets?",
            [
                ("lookup_knowledge", "How do I roll back a Helm release"),
                ("lookup_knowledge", "how do I rotate Helm secrets"),
            ],
        ),
        ("ERR_TIMEOUT 是什么？", [("lookup_knowledge", "ERR_TIMEOUT 是什么")]),
    ],
)
def test_the_planner_keeps_the_subject_and_sends_dependency_questions_to_the_graph(question, calls):
    planned = plan(question)
    assert [(c["name"], c["args"].get("query") or c["args"].get("entity")) for c in planned] == calls
    walks = [c["args"] for c in planned if c["name"] == "navigate_graph"]
    assert all(w["relations"] == ["DEPENDS_ON"] and w["outgoing"] for w in walks)


def test_offline_answer_names_what_the_subject_depends_on(sample_rt):
    result = turn(
        sample_rt, OfflinePlanner(), "How do I expose ComfyUI on port 8188 and what does it depend on?", mode="offline"
    )
    assert [(t["tool"], t["query"]) for t in result.trace] == [
        ("lookup_knowledge", "How do I expose ComfyUI on port 8188"),
        ("navigate_graph", "ComfyUI"),
    ]
    graph_part = result.answer.split("From the knowledge graph:")[1]
    assert "- ComfyUI -DEPENDS_ON-> Docker" in graph_part
    assert "<-" not in graph_part  # only what ComfyUI depends on, not what depends on its dependencies
    assert "8188" in result.answer.split("From the knowledge graph:")[0]


def test_offline_definition_answer_opens_with_the_defining_sentence(sample_rt):
    """The ERR_TIMEOUT document reaches the turn as a supplement chunk of steps; the answer still opens its
    section with the sentence that says what ERR_TIMEOUT is."""
    result = turn(sample_rt, OfflinePlanner(), "数据库连接池怎么配置，以及 ERR_TIMEOUT 是什么？", mode="offline")
    section = result.answer.split("[troubleshooting/err-timeout.md]\n")[1]
    assert section.startswith("ERR_TIMEOUT 表示服务在规定时间内没有完成请求。")


def test_offline_mode_end_to_end(sample_rt):
    result = turn(
        sample_rt,
        OfflinePlanner(),
        "How do I roll back a Helm release and how do I rotate secrets in Vault?",
        mode="offline",
    )
    assert result.mode == "offline" and result.answer.startswith("(Offline mode")
    assert [t["query"] for t in result.trace] == [
        "How do I roll back a Helm release",
        "how do I rotate secrets in Vault",
    ]
    domains = {c["domain"] for c in result.citations}
    assert {"deployment", "security"} <= domains
    assert all(f"[{c['doc_key']}]" in result.answer for c in result.citations)


def test_offline_mode_says_when_the_kb_has_nothing(sample_rt):
    result = turn(sample_rt, OfflinePlanner(), "What is a good recipe for sourdough bread?", mode="offline")
    assert "nothing on this" in result.answer and result.citations == []


def test_a_second_turn_answers_from_the_session_without_resending(sample_rt):
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver())
    sid = session()
    first = run_turn(app, "数据库连接池怎么配置？", sid, Context(), "offline")
    again = run_turn(app, "数据库连接池怎么配置？", sid, Context(), "offline")
    assert first.executed_lookups == 1 and again.executed_lookups == 0
    assert again.trace[0]["dedup_reason"] == "doc_retrieved"
    assert again.citations and again.citations[0]["doc_key"] == first.citations[0]["doc_key"]
    assert again.tool_output_chars < first.tool_output_chars / 3  # titles only, not the documents again
    assert len(app.get_state({"configurable": {"thread_id": sid}}).values["messages"]) >= 6


def test_a_model_that_only_navigates_the_graph_still_ends(sample_rt):
    class EndlessNavigation(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            from langchain_core.outputs import ChatGeneration, ChatResult

            if not self.tools_bound:
                return ChatResult(generations=[ChatGeneration(message=AIMessage(self.answer))])
            parent = self.__dict__.get("_parent", self)
            parent.i += 1
            call = tool_message(raw_call("navigate_graph", {"entity": "Docker"}))
            return ChatResult(generations=[ChatGeneration(message=call)])

    model = EndlessNavigation(responses=[], answer="done")
    result = turn(sample_rt, model, "What is Docker related to?", lookup_budget=3)
    # the same navigation proposed again, word for word, is not run: its result is above, the turn answers
    assert result.answer == "done" and model.i == 2
    assert [(t["tool"], t["blocked"], t["dedup_reason"]) for t in result.trace] == [
        ("navigate_graph", False, None),
        ("navigate_graph", True, "repeated_call"),
    ]
