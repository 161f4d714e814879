"""What LangGraph's clients send and do, in-process on the real stores: messages as content blocks (the Agent Chat
UI's shape) read as their text, a run without a question says so, the run context is checked, and a run from an
earlier checkpoint (an edit, a regenerate, a Studio fork) sees exactly the action memory of that checkpoint."""

import uuid

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from evals import REPO_ROOT
from evals.runner import run_suite
from evals.scenarios_model import load_scenarios
from executor.agent.planner import OfflinePlanner
from executor.agent.session import run_turn
from executor.core.errors import InputError
from executor.nodes.state import Context
from executor.prompts.executor import NO_QUESTION, NOTHING_FOUND

SUITE = REPO_ROOT / "evals" / "scenarios"


def blocks(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


def sample_scenarios():
    """The suite's scenarios on the sample KB (those on documentation outside the repository need it ingested)."""
    scenarios = [s for s in load_scenarios([SUITE]) if s.kb == "sample"]
    assert len(scenarios) >= 40
    return scenarios


def outcome(results) -> list:
    """What a user compares: each lookup's level and dedup reason, and the documents cited."""
    return [
        (
            r.id,
            [(t["tool"], t.get("query"), t.get("relevance_level"), t.get("dedup_reason")) for t in r.trace],
            r.citations,
        )
        for r in results
    ]


def test_the_eval_scenarios_read_the_same_as_content_blocks(sample_rt):
    scenarios = sample_scenarios()
    as_strings = run_suite(sample_rt, scenarios, guards=True, progress=False)
    as_blocks = run_suite(sample_rt, scenarios, guards=True, progress=False, as_blocks=True)
    assert outcome(as_blocks) == outcome(as_strings)
    assert [r.passed for r in as_blocks] == [r.passed for r in as_strings]
    assert sum(r.passed for r in as_blocks) == len(scenarios)


def test_the_offline_planner_reads_content_blocks_as_their_text(sample_rt):
    """The planner splits the question's text, never its repr: the same lookups, levels and citations."""
    seen = {}
    for shape in (False, True):
        results = []
        for scenario in sample_scenarios():
            app, session = sample_rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver()), uuid.uuid4().hex
            for turn in scenario.turns:
                r = run_turn(app, turn.question, session, Context(kb=scenario.kb), "offline", as_blocks=shape)
                results.append(
                    (
                        [(t["query"], t["relevance_level"], t["dedup_reason"]) for t in r.trace],
                        [c["doc_key"] for c in r.citations],
                    )
                )
        seen[shape] = results
    assert seen[True] == seen[False]
    assert not any("'type'" in (q or "") or "}]" in (q or "") for trace, _ in seen[True] for q, *_ in trace)


def test_a_question_with_an_image_searches_its_text_and_says_what_was_not_read(sample_rt):
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    content = [*blocks("ERR_TIMEOUT 是什么？"), {"type": "image", "source_type": "url", "url": "http://x/y.png"}]
    out = app.invoke({"messages": [HumanMessage(content)]}, config, context=Context())
    assert [(t["query"], t["relevance_level"]) for t in out["trace"]] == [("ERR_TIMEOUT 是什么", "PRECISE")]
    assert out["citations"][0]["doc_key"] == "troubleshooting/err-timeout.md"
    assert "image" in out["answer"].splitlines()[-1]


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [HumanMessage("   ")],
        [HumanMessage(blocks(" \n"))],
        [HumanMessage([{"type": "image", "url": "http://x/y.png"}])],
    ],
)
def test_no_question_is_answered_as_such(sample_rt, messages):
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver())
    out = app.invoke({"messages": messages}, {"configurable": {"thread_id": uuid.uuid4().hex}}, context=Context())
    assert out["answer"].startswith(NO_QUESTION)
    assert not any(phrase in out["answer"] for phrase in NOTHING_FOUND.values())
    assert out["trace"] == [] and out["citations"] == []


@pytest.mark.parametrize(
    "context, message",
    [
        ({"lookup_budget": "lots"}, "invalid run context: lookup_budget: Input should be a valid integer"),
        ({"lookup_budget": 0}, "invalid run context: lookup_budget: Input should be greater than or equal to 1"),
        ({"kb": "Nope!"}, "invalid run context: kb: invalid knowledge base name 'Nope!'"),
        ({"budget": 3}, "invalid run context: budget: Extra inputs are not permitted"),
    ],
)
def test_a_bad_run_context_is_one_input_error(sample_rt, context, message):
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver())
    with pytest.raises(InputError) as caught:
        app.invoke(
            {"messages": [HumanMessage("ERR_TIMEOUT?")]},
            {"configurable": {"thread_id": uuid.uuid4().hex}},
            context=context,
        )
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, RuntimeError)  # a built-in kind: LangGraph's server passes its message on


@pytest.mark.parametrize("control", ["\x07", "\x00", "\x1b[31m", "\x7f", "\x9b"])
def test_a_question_with_control_characters_is_refused_not_answered_nothing_found(sample_rt, control):
    """From LangGraph's server (Studio, the SDKs) as from `executor ask`: the question is refused, naming why. Its
    lookups each failed on the control characters, and the turn answered that the knowledge base had nothing."""
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver())
    with pytest.raises(InputError) as caught:
        app.invoke(
            {"messages": [HumanMessage(blocks(f"What does ERR_TIMEOUT{control} mean?"))]},
            {"configurable": {"thread_id": uuid.uuid4().hex}},
            context=Context(),
        )
    assert str(caught.value) == "the question contains control characters"


def test_an_unknown_kb_in_the_run_context_names_the_known_ones_and_the_home(sample_rt):
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=InMemorySaver())
    with pytest.raises(InputError) as caught:
        app.invoke(
            {"messages": [HumanMessage("ERR_TIMEOUT?")]},
            {"configurable": {"thread_id": uuid.uuid4().hex}},
            context={"kb": "nope"},
        )
    # the shared home holds whatever KBs earlier tests made as well: sample is among those named
    said = str(caught.value)
    assert said.startswith("unknown knowledge base 'nope' (known: ") and "sample" in said.split("(known: ")[1]
    assert said.endswith(f"home: {sample_rt.settings.home})") and isinstance(caught.value, RuntimeError)


def test_the_context_form_describes_every_field():
    schema = Context.model_json_schema()
    assert all(field.get("description") for field in schema["properties"].values())


def _run(app, thread, question, checkpoint_id=None):
    configurable = {"thread_id": thread, **({"checkpoint_id": checkpoint_id} if checkpoint_id else {})}
    return app.invoke({"messages": [HumanMessage(blocks(question))]}, {"configurable": configurable}, context=Context())


def test_a_run_from_an_earlier_checkpoint_sees_the_memory_of_that_checkpoint(sample_rt):
    saver, thread = InMemorySaver(), f"fork-{uuid.uuid4().hex[:8]}"
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=saver)
    first = _run(app, thread, "ERR_TIMEOUT 是什么？")
    assert first["trace"][0]["relevance_level"] == "PRECISE"
    after_first = app.get_state({"configurable": {"thread_id": thread}}).config["configurable"]["checkpoint_id"]
    second = _run(app, thread, "MySQL 连接池怎么配置？")
    assert second["trace"][0]["relevance_level"] in ("PRECISE", "HIGHLY_RELEVANT")
    history = list(app.get_state_history({"configurable": {"thread_id": thread}}))
    before_any = history[-1].config["configurable"]["checkpoint_id"]  # the thread's first checkpoint

    # an edit of the first question (the chat UI forks from before it): nothing was sent yet on that branch
    edited = _run(app, thread, "ERR_TIMEOUT 是什么？", before_any)
    assert edited["trace"][0]["relevance_level"] == "PRECISE" and edited["trace"][0]["sent"]
    assert "troubleshooting/err-timeout.md" in [c["doc_key"] for c in edited["citations"]]

    # a fork after the first turn: ERR_TIMEOUT was sent on it (no less), the MySQL page was not (no more)
    again = _run(app, thread, "ERR_TIMEOUT 是什么？", after_first)
    assert again["trace"][0]["dedup_reason"] == "doc_retrieved"
    assert again["citations"][0]["doc_key"] == "troubleshooting/err-timeout.md"
    fork_mysql = _run(app, thread, "MySQL 连接池怎么配置？", after_first)
    assert fork_mysql["trace"][0]["sent"] == second["trace"][0]["sent"]  # sent again: the fork never had it

    # the main branch goes on with its own memory: both documents are there
    latest = history[0].config["configurable"]["checkpoint_id"]
    main = _run(app, thread, "MySQL 连接池怎么配置？", latest)
    assert main["trace"][0]["dedup_reason"] == "doc_retrieved" and not main["trace"][0]["sent"]


def test_clearing_a_session_forgets_its_forks_too(sample_rt):
    saver, thread = InMemorySaver(), f"clear-{uuid.uuid4().hex[:8]}"
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=saver)
    _run(app, thread, "ERR_TIMEOUT 是什么？")
    first = list(app.get_state_history({"configurable": {"thread_id": thread}}))[-1].config["configurable"]
    _run(app, thread, "MySQL 连接池怎么配置？", first["checkpoint_id"])
    fork_session = app.get_state({"configurable": {"thread_id": thread}}).values["memory"]["session"]
    assert fork_session.startswith(f"{thread}:fork-") and sample_rt.memory.lookups(fork_session)
    from executor.agent.session import clear_session

    clear_session(thread, saver, sample_rt.memory)
    assert not sample_rt.memory.lookups(thread) and not sample_rt.memory.lookups(fork_session)


def test_a_replay_from_inside_a_turn_sees_the_memory_of_its_checkpoint(sample_rt):
    """Studio's replay resumes mid-turn (input None): here at call_tools, before the first lookup ran."""
    saver, thread = InMemorySaver(), f"replay-{uuid.uuid4().hex[:8]}"
    app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=saver)
    first = _run(app, thread, "ERR_TIMEOUT 是什么？")
    history = list(app.get_state_history({"configurable": {"thread_id": thread}}))
    (before_lookup,) = [h for h in history if h.next == ("call_tools",)]
    replayed = app.invoke(None, before_lookup.config, context=Context())
    assert replayed["trace"][0]["relevance_level"] == "PRECISE"
    assert replayed["trace"][0]["sent"] == first["trace"][0]["sent"]  # sent again: that checkpoint had sent nothing
